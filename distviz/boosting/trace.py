"""Round-by-round record of a boosting fit as an ``xarray.Dataset`` (pages index it; they never refit).

Dimensions: ``round`` (0 = the constant start, r = after r trees), ``obs`` (the display subset of
training rows; all rows when n <= trace_rows), ``param`` (components of T(y)), ``node`` (tree
nodes, padded to the largest tree), ``feature`` (labelled with the column names when the fit's X had them)
and ``ydim``.

Variables: ``train_nll``, ``valid_nll`` (weighted mean NLL, note "Monitoring during training"),
``entropy`` (generalised entropy H = -sum_J W_J/W A*(eta*_J) of that round's partition, eta*_J the
leaf means of T(y); note "Entropy and the exact leafwise NLL criterion"), ``n_projected`` (training
rows projected back into the domain), ``n_nonfinite`` (rows whose pseudo-response was NaN / inf and got
no update that round), ``step_scale`` (line-search scale), ``seconds``; ``eta`` and
``eta_star`` (round, obs, param); ``X`` (obs, feature), ``y`` (obs, ydim), ``T`` (obs, param),
``obs_index`` (row of the training set); the trees' node tables ``node_<field>`` (round, node) and
``node_value`` (round, node, param) (NaN / -1 padding, round 0 has no tree).  Attributes say which
family, law, coordinate and split gain (``gain_name``: "Gain^reg" or "Gain^NGD") were used; ``stop_reason``
says why boosting ended early ("" when it ran every round), e.g. a round that would make the NLL non-finite.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

__all__ = ["TraceRecorder", "build_trace", "display_subset"]


def display_subset(n: int, trace_rows: int, rng) -> np.ndarray:
    """Sorted row indices of the display subset: all rows when n <= trace_rows, else a random subset."""
    if n <= trace_rows:
        return np.arange(n)
    return np.sort(np.random.default_rng(rng).choice(n, size=int(trace_rows), replace=False))


class TraceRecorder:
    """Engine callback that keeps the iterate of every round on a display subset (cheap: one copy per round).

    eta / eta* and the node tables are derived once, in :func:`build_trace`, in one batched call.
    """

    def __init__(self, law, idx: np.ndarray):
        """`idx`: training rows to record."""
        self.law = law
        self.idx = np.asarray(idx)
        self.F: list[np.ndarray] = []

    def start(self, F_train: np.ndarray) -> None:
        """Record the constant start (round 0)."""
        self.F.append(F_train[self.idx])

    def __call__(self, info) -> bool:
        """Store round `info.round`; never asks to stop."""
        self.F.append(info.F_train[self.idx])
        return False

    def iterates(self, n_rounds: int):
        """(eta, eta*) of rounds 0..n_rounds on the display subset, each (round, obs, param)."""
        F = np.stack(self.F[: n_rounds + 1])
        R, m, K = F.shape
        flat = F.reshape(R * m, K)
        eta = np.asarray(self.law.natural(flat), dtype=float).reshape(R, m, K)
        mean = np.asarray(self.law.mean(flat), dtype=float).reshape(R, m, K)
        return eta, mean


def _pad_nodes(tables: list[dict], K: int):
    """Stack per-round node tables into padded (round, node[, param]) arrays (round 0 empty)."""
    R = len(tables) + 1
    M = max([len(next(iter(t.values()))) for t in tables if t] + [1])
    fields: dict[str, np.ndarray] = {}
    for t in tables:
        for k, v in t.items():
            if k not in fields:   # padding: -1 for flags (int8) and integers (int64), NaN for floats
                kind = v.dtype.kind
                dt: type = np.int8 if kind == "b" else np.int64 if kind in "iu" else np.float64
                fields[k] = np.full((R, M) + v.shape[1:], np.nan if dt is np.float64 else -1, dtype=dt)
    for r, t in enumerate(tables, start=1):
        for k, v in t.items():
            if fields[k].shape[2:] == v.shape[1:]:
                fields[k][r, : len(v)] = v
    return fields, M


def build_trace(res, recorder: TraceRecorder, law, *, X, y, T, attrs: dict, n_rounds: int | None = None,
                feature_names=None) -> xr.Dataset:
    """Assemble the trace Dataset from an engine result and its recorder; feature_names label the ``feature``
    coordinate when the fit had them (the estimator's ``feature_names_in_``)."""
    R = len(res.rounds) if n_rounds is None else n_rounds
    fam = law.family
    K = law.dim
    idx = recorder.idx
    names = list(getattr(fam, "param_names", [f"p{k}" for k in range(K)]))
    Xs = np.asarray(X)[idx]
    ys = np.asarray(y, dtype=float)[idx]
    ys = ys[:, None] if ys.ndim == 1 else ys
    fields, M = _pad_nodes([rnd.trees[0].nodes_.as_dict() if rnd.trees else {} for rnd in res.rounds[:R]], K)
    eta, eta_star = recorder.iterates(R)
    data = {
        "train_nll": ("round", np.asarray(res.train_loss[: R + 1], dtype=float)),
        "valid_nll": ("round", np.asarray(res.valid_loss[: R + 1], dtype=float)),
        "entropy": ("round", np.asarray(res.entropy[: R + 1], dtype=float)),
        "n_projected": ("round", np.asarray(res.n_projected[: R + 1], dtype=np.int64)),
        "n_nonfinite": ("round", np.asarray(res.n_nonfinite[: R + 1], dtype=np.int64)),
        "step_scale": ("round", np.asarray(res.scales[: R + 1], dtype=float)),
        "seconds": ("round", np.asarray(res.seconds[: R + 1], dtype=float)),
        "eta": (("round", "obs", "param"), eta),
        "eta_star": (("round", "obs", "param"), eta_star),
        "X": (("obs", "feature"), Xs.astype(float)),
        "y": (("obs", "ydim"), ys),
        "T": (("obs", "param"), np.asarray(T)[idx]),
        "obs_index": ("obs", idx.astype(np.int64)),
    }
    for k, v in fields.items():
        dims = ("round", "node") + (() if v.ndim == 2 else ("feature",) if k == "feature_gains" else
                                    ("param",) if v.shape[2] == K else (f"{k}_dim",))
        data[f"node_{k}"] = (dims, v)
    coords = {"round": np.arange(R + 1), "obs": np.arange(len(idx)), "param": names, "node": np.arange(M)}
    if feature_names is not None:
        coords["feature"] = [str(s) for s in feature_names]
    full_attrs = {
        "family": fam.name,
        "param_names": json.dumps(names),
        "natural_names": json.dumps(list(getattr(fam, "natural_names", names))),
        "mean_names": json.dumps(list(getattr(fam, "mean_names", names))),
        "law": law.name,
        "coord": law.coord,
        "gain_name": law.gain_name,
        "law_description": law.description,
        "best_iteration": int(res.best_iteration),
        "n_iter": int(len(res.rounds)),
        "stop_reason": str(res.stop_reason),
    }

    full_attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v)
                       for k, v in attrs.items() if v is not None})
    return xr.Dataset(data, coords=coords, attrs=full_attrs)
