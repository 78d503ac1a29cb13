"""Fuzzing saved model files: corrupted fields, loaded in a subprocess with a watchdog.

Each random case corrupts one variable or attribute of a saved DistributionalBoosting, NGB or WGBoost
file (value out of range, 1e9, negative, NaN, inf, self loop, wrong shape, wrong dtype, dropped variable,
truncated bytes, garbage JSON, wrong schema version).  The structural cases corrupt several fields at
once (random single corruptions combined, every integer set to 1e18 at once) or the file's structure
(JSON nested 100k and 5k deep, the class name swapped for each other known class and loaded through
distviz.persistence.load, n_features 1e9, the schema as a string).  Every case must either load and
predict finite values of the right shape (or have its prediction refused with a one-line DataError), or
raise DataError naming the file; a crash, a hang, another exception type or a NaN is a failure.  One
subprocess runs many cases and reports each; after a crash or a hang (no report within the per-case
timeout) the case is recorded as a failure and a fresh subprocess resumes after it.
"""

import sys
import textwrap

import numpy as np
import pytest
from batched_cases import run_batched  # tests/ is on sys.path

N_PER_MODEL = 102  # 306 random single-field cases in all
N_MULTI = 2  # random multi-field cases per model file (besides the fixed structural ones)
CASE_TIMEOUT = 20.0  # seconds without a report before a case counts as a hang (the first includes start-up)

CHILD = textwrap.dedent(r'''
    import json, sys, traceback
    from pathlib import Path
    import numpy as np
    import xarray as xr
    from distviz.errors import DataError
    from distviz.estimators import DistributionalBoosting, WGBoost
    from distviz.estimators.ngboost import NGB
    from distviz.persistence import load as load_any

    CLASSES = {"db": DistributionalBoosting, "ngb": NGB, "wg": WGBoost}
    SOURCES = {}   # model file path -> its dataset, loaded into memory
    XT = np.random.default_rng(1).normal(size=(7, 3))

    def big_ints(obj):
        """Every integer inside a JSON value replaced by 10**18."""
        if isinstance(obj, bool):
            return obj
        if isinstance(obj, int):
            return 10**18
        if isinstance(obj, list):
            return [big_ints(x) for x in obj]
        if isinstance(obj, dict):
            return {k: big_ints(v) for k, v in obj.items()}
        return obj

    def apply(ds, case, rng):
        """One corruption of the in-memory dataset ds; returns the corrupted dataset."""
        kind = case["kind"]
        var = case.get("var")
        if kind == "multi":
            for op in case["ops"]:
                ds = apply(ds, op, rng)
        elif kind == "all_ints":
            for k, v in list(ds.attrs.items()):
                if k == "distviz_schema":
                    continue
                if case["where"] in ("json", "all") and isinstance(v, str) and v.startswith("{"):
                    ds.attrs[k] = json.dumps(big_ints(json.loads(v)))
                elif case["where"] in ("attrs", "all") and isinstance(v, (int, np.integer)):
                    ds.attrs[k] = np.int64(10**18)
            if case["where"] in ("arrays", "all"):
                for v in [v for v in ds.data_vars if str(v).startswith("model_")]:
                    if ds[v].dtype.kind in "iu" and ds[v].dtype.itemsize == 8:
                        ds[v] = ds[v].copy(data=np.full(ds[v].shape, 10**18, dtype=ds[v].dtype))
        elif kind == "fitted_key":
            d = json.loads(ds.attrs["distviz_fitted"])
            d[case["key"]] = case["new"]
            ds.attrs["distviz_fitted"] = json.dumps(d)
        elif kind in ("attr_json", "attr_value"):
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
        return ds

    def corrupt(src, dst, case):
        if case["kind"] == "truncate":
            b = Path(src).read_bytes()
            Path(dst).write_bytes(b[: int(case["frac"] * len(b))])
            return
        if src not in SOURCES:   # each model file is read once; every case corrupts a deep copy of it
            with xr.open_dataset(src) as ds0:
                SOURCES[src] = ds0.load()
        apply(SOURCES[src].copy(deep=True), case, np.random.default_rng(case["seed"])).to_netcdf(dst)

    def check(model, m):
        if type(m) is not CLASSES[model]:  # a swapped class name loaded as another estimator
            out = np.asarray(m.predict(XT))
            shape = out.shape if out.ndim in (1, 2) and out.shape[0] == 7 else "(7,) or (7, k)"
        elif model == "db":
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
                m = (load_any if case.get("any") else CLASSES[case["model"]].load)(dst)
                try:
                    bad = check(case["model"], m)
                except DataError as e:  # a consistent change (n_features) refused when predicting
                    bad = None if "\n" not in str(e) and str(tmp) not in str(e) else "bad sentence: " + str(e)[:200]
                    res = {"result": "fail", "why": bad} if bad else {"result": "predict_refused"}
                else:
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
    from distviz.estimators import DistributionalBoosting, WGBoost
    from distviz.estimators.ngboost import NGB

    d = tmp_path_factory.mktemp("fuzz_models")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=120)
    Y = np.c_[y, X[:, 1] + 0.5 * rng.normal(size=120)]
    DistributionalBoosting("normal", n_estimators=8, trace_rows=20).fit(X, y).save(d / "db.nc")
    NGB(n_estimators=8, learning_rate=0.1, early_stopping_rounds=None).fit(X, Y).save(d / "ngb.nc")
    WGBoost("normal", n_particles=4, n_estimators=6, init="normal", tree_sharing="per_particle", trace_rows=10,
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
                case["new"] = str(rng.choice(['{"', "[1, 2]", "null", '{"learning_rate": -1}', '{"n_estimators": 1e9}',
                                              '{"n_estimators": "x"}', '{"max_depth": -3}', '{"n_estimators": -5}',
                                              '{"nonsense": 1}', "\x00\xff", '{"n_particles": 0}', "1e999"]))
            else:  # attr_value: schema / class / forest sizes
                case["attr"] = str(rng.choice(attrs))
                case["new"] = [1, 3, -1, 10**9, 0, "DistributionalBoosting", "2"][int(rng.integers(7))]
            if isinstance(case.get("new"), float) and not np.isfinite(case["new"]):
                case["new"] = str(case["new"])  # JSON: passed as text, converted back below
            cases.append(case)
    cases += _structural_cases(model_files, rng)
    for i, c in enumerate(cases):
        c["i"] = i
    return cases


#: other known estimator classes (distviz.persistence._classes) swapped into each file's distviz_class: all of them
SWAPS = {"db": ["NGB", "WGBoost", "SparseGP"], "ngb": ["GB", "NGBoost", "DistributionalBoosting"],
         "wg": ["IndepNGB", "skGB"]}


def _structural_cases(model_files, rng):
    """Multi-field and structural corruptions: N_MULTI combined random ones and a fixed list per model file."""
    import xarray as xr

    cases = []
    deep = "[" * 100_000 + "]" * 100_000  # 200k characters
    deep_inside = '{"n_estimators": ' + "[" * 5_000 + "]" * 5_000 + "}"  # short enough to reach the depth check
    for k, model in enumerate(("db", "ngb", "wg")):
        src = str(model_files / f"{model}.nc")
        with xr.open_dataset(src) as ds:
            model_vars = [str(v) for v in ds.variables if str(v).startswith("model_")]
            json_attrs = [str(a) for a, v in ds.attrs.items() if isinstance(v, str) and v.startswith("{")
                          and str(a).startswith(("distviz_", "model_"))]
        base = {"model": model, "src": src}

        def one(model_vars=model_vars):
            kind = str(rng.choice(["set", "set", "shape", "dtype", "drop"]))
            op = {"kind": kind, "var": model_vars[int(rng.integers(len(model_vars)))]}
            if kind == "set":
                op["new"] = float([1e9, -1, 0, 2**40, 3, 1e18][int(rng.integers(6))])
            elif kind == "shape":
                op["how"] = str(rng.choice(["short", "long"]))
            elif kind == "dtype":
                op["dtype"] = str(rng.choice(["float32", "int32", "int8", "float64", "int64"]))
            return op

        for _ in range(N_MULTI):
            ops = [one() for _ in range(int(rng.integers(2, 6)))]
            ops = list({op["var"]: op for op in ops}.values())  # one corruption per variable
            cases.append({**base, "kind": "multi", "ops": ops, "seed": int(rng.integers(2**31))})
        cases.append({**base, "kind": "all_ints", "where": ("all", "arrays", "json")[k]})
        cases.append({**base, "kind": "attr_json", "attr": json_attrs[k % len(json_attrs)], "new": deep})
        for name in SWAPS[model]:  # another class's name, loaded by the class the file names
            cases.append({**base, "kind": "attr_value", "attr": "distviz_class", "new": name, "any": True})
        n_feat = [{"kind": "fitted_key", "key": "n_features", "new": v} for v in (10**9, 5)] + \
                 [{"kind": "attr_value", "attr": "model_forest_n_features", "new": v} for v in (10**9, 5)]
        cases.append({**base, "kind": "multi", "ops": n_feat[k % 2::2]})  # 1e9 both, 5 both (consistent)
        cases.append({**base, **n_feat[k % 2 * 3]})  # 1e9 in the fitted JSON, or 5 in the forest only
    cases.append({**base, "kind": "attr_json", "attr": "distviz_params", "new": deep_inside})
    cases.append({**base, "kind": "attr_value", "attr": "distviz_schema", "new": "2"})
    cases.append({**base, "kind": "attr_value", "attr": "distviz_params", "new": "n_estimators=3"})
    for c in cases:
        c.setdefault("seed", 0)
        c["structural"] = True
    return cases


def _run(cases, workdir):
    """Run the cases in as few subprocesses as possible; a crash or a hang fails that case and restarts the batch after it."""
    sent = [dict(c, new=float(c["new"])) if c.get("new") in ("nan", "inf", "-inf") else c for c in cases]
    return run_batched([sys.executable, "-c", CHILD, str(workdir)], sent, CASE_TIMEOUT)


def test_corrupted_model_files_load_cleanly_or_raise_data_error(model_files, tmp_path):
    cases = _cases(model_files)
    assert len(cases) >= 300
    results = _run(cases, tmp_path)
    fails = [(cases[i]["model"], cases[i]["kind"], cases[i].get("var"), cases[i].get("attr"), cases[i].get("new"),
              r.get("why")) for i, r in sorted(results.items()) if r["result"] == "fail"]
    counts = {k: sum(r["result"] == k for r in results.values())
              for k in ("loaded", "predict_refused", "dataerror", "skip")}
    assert not fails, f"{len(fails)} failing cases (of {len(cases)}; {counts}): {fails[:10]}"
    assert counts["dataerror"] >= len(cases) // 2 and counts["skip"] < len(cases) // 10, counts
    unwritten = [(c["model"], c["kind"]) for c in cases if c.get("structural") and results[c["i"]]["result"] == "skip"]
    assert not unwritten, f"structural corruptions that could not be written: {unwritten}"
