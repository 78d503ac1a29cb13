"""Hostile arrays into every estimator's fit and predict (issue 27, item 6), in one batched test.

Each case feeds one estimator one hostile input: NaN, inf or 1e308 in X, y or the weights, an empty
input, a single row, object dtype (text and numbers), a non-contiguous view, big-endian values
(``>f8``), negative, NaN, infinite, zero or overflowing weights, constant targets and wrong shapes.
A case passes when the call either raises ``DataError`` / ``ConfigError`` carrying one sentence, or
returns finite values (after a fit that returns: the model's predictions on clean rows are finite);
a crash (a numba kernel's segfault), a hang, another exception type or a silent NaN fails it.

One subprocess runs many cases and reports each; after a crash or a hang (no report within the
per-case timeout) the case is recorded as a failure and a fresh subprocess resumes after it.  Fits are
tiny (a few rounds on 48 rows) so that the whole batch stays fast.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from batched_cases import run_batched  # tests/ is on sys.path

CASE_TIMEOUT = 90.0  # seconds without a report before a case counts as a hang (imports and a cold numba cache)

CHILD = textwrap.dedent(r'''
    import json, sys, warnings
    import numpy as np
    from distviz.errors import DistvizError

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    N = 48
    X0 = rng.normal(size=(N, 3))
    y1 = X0[:, 0] + 0.5 * rng.normal(size=N)
    Y2 = np.c_[y1, X0[:, 1] + 0.5 * rng.normal(size=N)]
    XT = rng.normal(size=(7, 3))

    def factories():
        from distviz.baselines import MVNNetwork
        from distviz.estimators import DistributionalBoosting, WGBoost
        from distviz.baselines import skGB
        from distviz.estimators.ngboost import GB, NGB, IndepNGB, NGBoost
        from distviz.trees import HistTree
        out = {
            "DB-normal": (lambda: DistributionalBoosting("normal", n_estimators=3, trace_rows=10), 1, True, True),
            "DB-poisson": (lambda: DistributionalBoosting("poisson", n_estimators=3, trace_rows=10), 1, True, True),
            "DB-mvn": (lambda: DistributionalBoosting("mvn", n_estimators=3, trace_rows=10), 2, True, True),
            "NGBoost": (lambda: NGBoost("normal", n_estimators=3, early_stopping_rounds=None), 1, True, True),
            "NGB": (lambda: NGB(n_estimators=3, early_stopping_rounds=None), 2, True, True),
            "GB": (lambda: GB(n_estimators=3, early_stopping_rounds=None), 2, True, True),
            "IndepNGB": (lambda: IndepNGB(n_estimators=3, early_stopping_rounds=None), 2, True, True),
            "skGB": (lambda: skGB(n_estimators=3, early_stopping_rounds=None), 2, True, False),
            "WGBoost": (lambda: WGBoost("normal", n_particles=3, n_estimators=3, init="normal", trace_rows=10), 1,
                        False, True),
            "HistTree": (lambda: HistTree(max_depth=2), 1, True, True),
            "MVNNetwork": (lambda: MVNNetwork(hidden_layer_sizes=(5,), max_epochs=3, patience=None), 2, False, False),
        }
        try:
            from distviz.gp import SparseGP
            out["SparseGP"] = (lambda: SparseGP(n_inducing=5, max_iter=10), 1, False, False)
        except ImportError:
            pass
        return out

    FACT = factories()
    FITTED = {}

    def clean_y(est):
        return (Y2 if FACT[est][1] == 2 else (np.round(np.exp(y1 / 2)) if est == "DB-poisson" else y1)).copy()

    def fitted(est):
        if est not in FITTED:
            FITTED[est] = FACT[est][0]().fit(X0, clean_y(est))
        return FITTED[est]

    def be(a):
        return np.asarray(a, dtype=np.float64).astype(">f8")

    def strided(a):
        big = np.zeros((a.shape[0] * 2,) + a.shape[1:] + ((2,) if a.ndim == 2 else ()))
        if a.ndim == 2:
            big[::2, :, 0] = a
            v = big[::2, :, 0]
        else:
            big[::2] = a
            v = big[::2]
        assert not v.flags.c_contiguous and not v.flags.f_contiguous or a.ndim == 1
        return v

    def obj(a, text=None):
        o = np.asarray(a, dtype=float).astype(object)
        if text is not None:
            o.reshape(-1)[1] = text
        return o

    def put(a, v, where=(3, 1)):
        a = np.array(a, dtype=float)
        if a.ndim == 1:
            a[where[0]] = v
        else:
            a[where] = v
        return a

    # X variants: fit and predict (applied to the rows given)
    XV = {
        "nan_X": lambda X: put(X, np.nan),
        "all_nan_column": lambda X: put(X, np.nan, (slice(None), 1)),
        "inf_X": lambda X: put(X, np.inf),
        "neginf_X": lambda X: put(X, -np.inf),
        "1e308_X": lambda X: put(X, 1e308),
        "pm1e308_X": lambda X: put(put(X, 1e308, (0, 2)), -1e308, (1, 2)),
        "1e-310_X": lambda X: put(X, 1e-310),
        "empty_X": lambda X: X[:0],
        "one_row_X": lambda X: X[:1],
        "obj_text_X": lambda X: obj(X, "abc"),
        "obj_numbers_X": lambda X: obj(X),
        "obj_numeric_text_X": lambda X: obj(X, "1.5"),
        "noncontig_X": strided,
        "bigendian_X": be,
        "3d_X": lambda X: X[:, :, None],
        "wrong_features_X": lambda X: X[:, :2],
        "1d_X": lambda X: X[:, 0],
        "ragged_X": lambda X: [list(r) for r in X[:-1]] + [[1.0]],
        "constant_X": lambda X: np.ones_like(X),
    }
    # a conversion that predict shares with fit (one input check): run in fit only
    FIT_ONLY = ("obj_numbers_X",)
    # y variants (fit): the function gets the clean y
    YV = {
        "nan_y": lambda y: put(y, np.nan, (3, 0)),
        "inf_y": lambda y: put(y, np.inf, (3, 0)),
        "1e308_y": lambda y: put(y, 1e308, (3, 0)),
        "pm1e308_y": lambda y: put(put(y, 1e308, (3, 0)), -1e308, (4, 0)),
        "obj_text_y": lambda y: obj(y, "abc"),
        "obj_numbers_y": lambda y: obj(y),
        "noncontig_y": strided,
        "bigendian_y": be,
        "constant_y": lambda y: np.ones_like(y) * 2.0,
        "short_y": lambda y: y[:-1],
        "3d_y": lambda y: y[:, None, None] if y.ndim == 1 else y[:, :, None],
        "none_y": lambda y: None,
        "empty_y": lambda y: y[:0],
    }
    WV = {
        "negative_w": lambda w: put(w, -1.0, (3, 0)),
        "nan_w": lambda w: put(w, np.nan, (3, 0)),
        "inf_w": lambda w: put(w, np.inf, (3, 0)),
        "zero_w": lambda w: np.zeros_like(w),
        "1e308_w": lambda w: np.full_like(w, 1e308),
        "1e300_w": lambda w: np.full_like(w, 1e300),
        "1e-320_w": lambda w: np.full_like(w, 1e-320),
        "bigendian_w": be,
        "noncontig_w": strided,
        "obj_text_w": lambda w: obj(w, "abc"),
        "short_w": lambda w: w[:-1],
        "2d_w": lambda w: np.c_[w, w],
    }

    def predict_methods(est):
        """predict, and the first distribution-valued method the estimator has (they share one input check)."""
        m = FACT[est][0]()
        extra = [n for n in ("predict_dist", "predict_params", "predict_particles", "predict_latent") if hasattr(m, n)]
        return ["predict"] + extra[:1]

    def with_y_methods(est):
        m = FACT[est][0]()
        return [n for n in ("nll", "score", "predict_logpdf") if hasattr(m, n)]

    def finite(out, seen=0):
        """None when every number in out is finite, else a description."""
        if seen > 3:
            return None
        if out is None:
            return None
        if isinstance(out, (float, int, np.number)):
            return None if np.isfinite(out) else f"non-finite scalar {out}"
        if isinstance(out, np.ndarray):
            if out.dtype.kind in "fc" and not np.isfinite(out).all():
                return f"non-finite values in an array of shape {out.shape}"
            return None
        if isinstance(out, dict):
            for k, v in out.items():
                bad = finite(v, seen + 1)
                if bad:
                    return f"{k}: {bad}"
            return None
        if isinstance(out, (list, tuple)):
            for v in out:
                bad = finite(v, seen + 1)
                if bad:
                    return bad
            return None
        d = getattr(out, "__dict__", None)
        if d:
            return finite({k: v for k, v in d.items() if not k.startswith("_")}, seen + 1)
        return None

    def run_case(case):
        est, kind, variant, method = case["est"], case["kind"], case["variant"], case.get("method")
        make, dim, weights, nan_ok = FACT[est]
        y = clean_y(est)
        if kind == "fit":
            X, w = X0.copy(), None
            if variant in XV:
                X = XV[variant](X0.copy())
                if variant in ("empty_X", "one_row_X"):
                    y = y[:0] if variant == "empty_X" else y[:1]
            elif variant in YV:
                y = YV[variant](y)
            else:
                w = WV[variant](np.ones((N, 1)) + rng.random((N, 1)))
                if w.ndim == 2 and w.shape[1] == 1:
                    w = w[:, 0]
            m = make()
            if w is not None:
                m.fit(X, y, sample_weight=w)
            else:
                m.fit(X, y)
            return finite(np.asarray(m.predict(XT))) or finite(m.predict(X0[:5]))
        m = fitted(est)
        if kind == "score_w":   # score with hostile sample weights on clean rows
            return finite(m.score(XT, clean_y(est)[:7], sample_weight=WV[variant](np.ones((7, 1)))[..., 0]
                                  if variant != "2d_w" else WV[variant](np.ones(7))))
        X = XV[variant](XT.copy())
        if kind == "predict":
            return finite(getattr(m, method)(X))
        # methods with targets: rows of X with the matching number of clean targets
        yy = clean_y(est)[:len(X)]
        return finite(getattr(m, method)(X, yy))

    def main():
        for line in sys.stdin:
            case = json.loads(line)
            try:
                bad = run_case(case)
                res = {"result": "fail", "why": bad} if bad else {"result": "ok"}
            except DistvizError as e:
                msg = str(e)
                ok = msg.strip() and "\n" not in msg and len(msg) < 600 and "Traceback" not in msg
                res = {"result": "error"} if ok else {"result": "fail", "why": "not one sentence: " + msg[:300]}
            except Exception as e:
                res = {"result": "fail", "why": f"{type(e).__name__}: {str(e)[:300]}"}
            print(json.dumps({"i": case["i"], **res}), flush=True)

    if sys.argv[1] == "list":
        cases = []
        for est in FACT:
            weights = FACT[est][2]
            for v in list(XV) + list(YV) + (list(WV) if weights else []):
                cases.append({"est": est, "kind": "fit", "variant": v})
            for meth in predict_methods(est):
                for v in (v for v in XV if v not in FIT_ONLY):
                    cases.append({"est": est, "kind": "predict", "variant": v, "method": meth})
            for meth in with_y_methods(est):
                for v in ("nan_X", "1e308_X", "empty_X", "one_row_X", "bigendian_X", "noncontig_X"):
                    cases.append({"est": est, "kind": "with_y", "variant": v, "method": meth})
            for v in (WV if hasattr(FACT[est][0](), "score") else ()):
                cases.append({"est": est, "kind": "score_w", "variant": v, "method": "score"})
        print(json.dumps(cases))
    else:
        main()
''')


def _run(cases):
    """Run the cases in as few subprocesses as possible; a crash or a hang fails that case and restarts after it."""
    return run_batched([sys.executable, "-c", CHILD, "run"], cases, CASE_TIMEOUT)


def test_hostile_arrays_raise_one_sentence_or_give_finite_results():
    out = subprocess.run([sys.executable, "-c", CHILD, "list"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    cases = json.loads(out.stdout)
    for i, c in enumerate(cases):
        c["i"] = i
    assert len(cases) >= 1000
    results = _run(cases)
    fails = [(c["est"], c["kind"], c.get("method"), c["variant"], results[c["i"]]["why"])
             for c in cases if results[c["i"]]["result"] == "fail"]
    counts = {k: sum(r["result"] == k for r in results.values()) for k in ("ok", "error")}
    assert not fails, f"{len(fails)} failing cases (of {len(cases)}; {counts}):\n" + "\n".join(map(str, fails))


if __name__ == "__main__":   # a report of every failing case: python tests/test_hostile_arrays.py
    pytest.main([__file__, "-q", "-n", "0"])
