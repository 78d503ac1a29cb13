"""Fuzzing saved model files: one corrupted field per case, loaded in a subprocess with a watchdog.

Each case corrupts one variable or attribute of a saved DistributionalBoosting, NGB or WGBoost file
(value out of range, 1e9, negative, NaN, inf, self loop, wrong shape, wrong dtype, dropped variable,
truncated bytes, garbage JSON, wrong schema version).  Every case must either load and predict finite
values of the right shape, or raise DataError; a crash, a hang, another exception type or a NaN is a
failure.  One subprocess runs many cases and reports each; after a crash or a hang (no report within
the per-case timeout) the case is recorded as a failure and a fresh subprocess resumes after it.
"""

import json
import queue
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

N_PER_MODEL = 102  # 306 cases in all
CASE_TIMEOUT = 20.0  # seconds without a report before a case counts as a hang (the first includes start-up)

CHILD = textwrap.dedent(r'''
    import json, sys, traceback
    from pathlib import Path
    import numpy as np
    import xarray as xr
    from distviz.errors import DataError
    from distviz.boosting import DistributionalBoosting, WGBoost
    from distviz.boosting.ngboost import NGB

    CLASSES = {"db": DistributionalBoosting, "ngb": NGB, "wg": WGBoost}
    XT = np.random.default_rng(1).normal(size=(7, 3))

    def corrupt(src, dst, case):
        kind = case["kind"]
        if kind == "truncate":
            b = Path(src).read_bytes()
            Path(dst).write_bytes(b[: int(case["frac"] * len(b))])
            return
        with xr.open_dataset(src) as ds0:
            ds = ds0.load()
        rng = np.random.default_rng(case["seed"])
        var = case.get("var")
        if kind in ("attr_json", "attr_value"):
            ds.attrs[case["attr"]] = case["new"]
        elif kind == "drop":
            ds = ds.drop_vars(var)
        else:
            a = np.array(ds[var].values)
            if kind == "set":
                if a.size == 0:
                    a = np.zeros(1, dtype=a.dtype)
                flat = a.reshape(-1)
                j = int(rng.integers(flat.size))
                new = case["new"]
                if new == "self":
                    new = j
                try:
                    flat[j] = new
                except (ValueError, OverflowError):
                    a = a.astype(np.float64)
                    a.reshape(-1)[j] = new
            elif kind == "shape":
                a = a.reshape(-1)[:-1] if case["how"] == "short" else np.concatenate([a.reshape(-1), a.reshape(-1)[:1]])
            elif kind == "dtype":
                a = a.astype(case["dtype"])
            ds = ds.drop_vars(var)
            ds[var] = (tuple(f"{var}_fz{i}" for i in range(a.ndim)), a)
        ds.to_netcdf(dst)

    def check(model, m):
        if model == "db":
            out, shape = m.predict_mean(XT), (7, 2)
        elif model == "ngb":
            out, shape = m.predict_params(XT), (7, 5)
        else:
            out, shape = m.predict_particles(XT), (7, 4, 2)
        out = np.asarray(out)
        if out.shape != shape:
            return f"prediction shape {out.shape}, not {shape}"
        if not np.isfinite(out).all():
            return "non-finite prediction"
        return None

    def main():
        tmp = Path(sys.argv[1])
        for line in sys.stdin:
            case = json.loads(line)
            i = case["i"]
            dst = tmp / f"case{i}.nc"
            try:
                corrupt(case["src"], dst, case)
            except Exception as e:  # the corruption itself could not be written: nothing to test
                print(json.dumps({"i": i, "result": "skip", "why": type(e).__name__}), flush=True)
                continue
            try:
                m = CLASSES[case["model"]].load(dst)
                bad = check(case["model"], m)
                res = {"result": "fail", "why": bad} if bad else {"result": "loaded"}
            except DataError as e:
                msg = str(e)
                ok = "\n" not in msg and str(tmp) not in msg and dst.name in msg
                res = {"result": "dataerror"} if ok else {"result": "fail", "why": "bad sentence: " + msg[:200]}
            except Exception as e:
                res = {"result": "fail", "why": f"{type(e).__name__}: {str(e)[:200]}"}
            dst.unlink(missing_ok=True)
            print(json.dumps({"i": i, **res}), flush=True)

    main()
''')


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    from distviz.boosting import DistributionalBoosting, WGBoost
    from distviz.boosting.ngboost import NGB

    d = tmp_path_factory.mktemp("fuzz_models")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=120)
    Y = np.c_[y, X[:, 1] + 0.5 * rng.normal(size=120)]
    DistributionalBoosting("normal", n_rounds=8, trace_rows=20).fit(X, y).save(d / "db.nc")
    NGB(n_estimators=8, learning_rate=0.1, early_stopping_rounds=None).fit(X, Y).save(d / "ngb.nc")
    WGBoost("normal", n_particles=4, n_rounds=6, init="normal", tree_sharing="per_particle", display_size=10,
            random_state=0).fit(X, y).save(d / "wg.nc")
    return d


def _cases(model_files):
    """N_PER_MODEL seeded corruption cases per model file."""
    import xarray as xr

    cases = []
    rng = np.random.default_rng(12345)
    values = [1e9, -1, -1e9, np.nan, np.inf, -np.inf, 0, 2**40, "self", 3, 7]
    for model in ("db", "ngb", "wg"):
        src = str(model_files / f"{model}.nc")
        with xr.open_dataset(src) as ds:
            model_vars = [v for v in ds.variables if str(v).startswith("model_")]
            attrs = [a for a in ds.attrs if str(a).startswith(("distviz_", "model_"))]
        forest_vars = [v for v in model_vars if "forest" in v]
        for _ in range(N_PER_MODEL):
            kind = rng.choice(["set", "set", "set", "set", "shape", "dtype", "drop", "truncate", "attr_json",
                               "attr_value"])
            case = {"model": model, "src": src, "kind": str(kind), "seed": int(rng.integers(2**31))}
            pool = forest_vars if rng.random() < 0.7 else model_vars
            case["var"] = str(pool[rng.integers(len(pool))])
            if kind == "set":
                v = values[rng.integers(len(values))]
                case["new"] = v if isinstance(v, str) else float(v)
            elif kind == "shape":
                case["how"] = str(rng.choice(["short", "long"]))
            elif kind == "dtype":
                case["dtype"] = str(rng.choice(["float32", "int32", "int8", "uint8", "float64", "int64"]))
            elif kind == "truncate":
                case["frac"] = float(rng.uniform(0.0, 0.99))
            elif kind == "attr_json":
                case["attr"] = str(rng.choice(["distviz_params", "distviz_fitted"] +
                                              [a for a in attrs if a.endswith("fitted")]))
                case["new"] = str(rng.choice(['{"', "[1, 2]", "null", '{"learning_rate": -1}', '{"n_rounds": 1e9}',
                                              '{"n_estimators": "x"}', '{"max_depth": -3}', '{"n_rounds": -5}',
                                              '{"nonsense": 1}', "\x00\xff", '{"n_particles": 0}', "1e999"]))
            else:  # attr_value: schema / class / forest sizes
                case["attr"] = str(rng.choice(attrs))
                case["new"] = [1, 3, -1, 10**9, 0, "DistributionalBoosting", "2"][int(rng.integers(7))]
            if isinstance(case.get("new"), float) and not np.isfinite(case["new"]):
                case["new"] = str(case["new"])  # JSON: passed as text, converted back below
            cases.append(case)
    for i, c in enumerate(cases):
        c["i"] = i
    return cases


def _pump(stream, q):
    """Forward the child's report lines to q, then None when it closes its output (exit or crash)."""
    for line in stream:
        q.put(line)
    q.put(None)


def _run(cases, workdir):
    """Run the cases in as few subprocesses as possible; a crash or a hang fails that case and restarts the batch after it."""
    results = {}
    start = 0
    while start < len(cases):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(workdir)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        q: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, q), daemon=True).start()
        for c in cases[start:]:
            c2 = dict(c)
            if c2.get("new") in ("nan", "inf", "-inf"):
                c2["new"] = float(c2["new"])
            proc.stdin.write(json.dumps(c2) + "\n")
        proc.stdin.close()
        i = start
        while i < len(cases):
            try:
                line = q.get(timeout=CASE_TIMEOUT)
            except queue.Empty:
                results[i] = {"result": "fail", "why": "hang (no answer within the timeout)"}
                proc.kill()
                break
            if line is None:
                results[i] = {"result": "fail", "why": f"crash (exit code {proc.wait()})"}
                break
            r = json.loads(line)
            results[r["i"]] = r
            i = r["i"] + 1
        proc.kill()
        proc.wait()
        start = i + 1 if i < len(cases) else i
    return results


def test_corrupted_model_files_load_cleanly_or_raise_data_error(model_files, tmp_path):
    cases = _cases(model_files)
    assert len(cases) >= 300
    results = _run(cases, tmp_path)
    fails = [(cases[i]["model"], cases[i]["kind"], cases[i].get("var"), cases[i].get("attr"), cases[i].get("new"),
              r.get("why")) for i, r in sorted(results.items()) if r["result"] == "fail"]
    counts = {k: sum(r["result"] == k for r in results.values()) for k in ("loaded", "dataerror", "skip")}
    assert not fails, f"{len(fails)} failing cases (of {len(cases)}; {counts}): {fails[:10]}"
    assert counts["dataerror"] >= len(cases) // 2 and counts["skip"] < len(cases) // 10, counts
