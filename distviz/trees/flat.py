"""FlatForest: the tree records of any tree-based estimator concatenated, with compiled predictors.

Prediction, staged prediction and persistence of DistributionalBoosting, the NGBoost family (including
skGB's scikit-learn trees) and WGBoost go through it: ``from_records`` concatenates the prediction
columns of the fitted trees' records (distviz/trees/record.py), the model file stores them.  Tree
``t`` owns nodes ``tree_offsets[t] .. tree_offsets[t+1]-1`` and its child ids are local to the tree (0
is its root, -1 marks a leaf).  An internal node sends row ``x`` left when ``x[feature] <= threshold``;
a NaN value goes left when ``missing_left`` is 1, else right.  Tree ``t`` adds ``multiplier[t] *
value[leaf]`` to the output columns ``out_col[t] .. out_col[t] + K - 1``; trees are grouped into
boosting rounds by ``round_offsets`` (staged prediction stops after a round).

``validate_arrays`` checks arrays read from a file before any kernel sees them: every child id points
strictly forward inside its own tree (so traversal ends, never loops and never leaves the arrays) and
every feature id lies in [0, n_features).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from distviz.errors import DataError
from distviz.families._linalg import _chol
from distviz.families.base import BOX, LOG, MEAN_RANGE, PARABOLA, SIMPLEX, SPD_CENTRED, SPD_SCALED, Domain
from distviz.validation import kernel_array

from .record import NODE_DTYPE

__all__ = ["ARRAY_FIELDS", "FlatForest", "validate_arrays"]

#: array fields with their dtype kinds: integer ("iu"), float ("f") or flag ("iub")
ARRAY_FIELDS = {
    "feature": "iu", "threshold": "f", "missing_left": "iub", "left": "iu", "right": "iu", "value": "f",
    "tree_offsets": "iu", "round_offsets": "iu", "multiplier": "f", "out_col": "iu",
}
_BIG = np.finfo(np.float64).max  # stands in for a +inf threshold (a split of the last bin): same rule on finite x
_NONE_F = np.zeros(0)                  # _accumulate without a domain check
_NONE_U8 = np.zeros(0, dtype=np.uint8)
#: the compiled LOG test asks x[0] < log x[1] by this relative margin, so that it never admits a row that numpy's
#: log (whose last bit may differ from the compiled one) rejects; SIMPLEX asks sum(x) < 1 - _SUM_TOL * len(x) because
#: numpy may add the entries in another order
_LOG_TOL = 1e-12
_SUM_TOL = 4 * np.finfo(np.float64).eps


# rows per block of the predictors: a block's rows of X stay in cache while every tree reads them
_ROWS = 2048


@njit(cache=True)
def _walk_tables(feature, threshold, missing_left, left, right, tree_offsets):
    """Tables of the fixed-depth walk: (kids, feat, thr, nan_to, depth).

    For an internal node g: kids[2g] = right child, kids[2g + 1] = left child (local ids), feat and thr its
    split, nan_to the stand-in of a NaN value (-inf: goes left, NaN: goes right); a leaf's two kids are the
    leaf itself (reading feature 0), and depth[t] is the depth of tree t's deepest leaf: a walk of exactly
    depth[t] steps from the root ends at the row's leaf (see ``_leaves``).  Child ids point forward
    inside their tree (``validate_arrays``), so one pass in node order gives every node's depth.
    """
    M = left.shape[0]
    T = tree_offsets.shape[0] - 1
    kids = np.empty(2 * M, dtype=np.int64)
    feat = np.zeros(M, dtype=np.int64)
    thr = np.zeros(M)
    nan_to = np.zeros(M)
    node_depth = np.zeros(M, dtype=np.int64)
    depth = np.zeros(T, dtype=np.int64)
    for t in range(T):
        root = tree_offsets[t]
        for g in range(root, tree_offsets[t + 1]):
            if left[g] >= 0:
                kids[2 * g] = right[g]
                kids[2 * g + 1] = left[g]
                feat[g] = feature[g]
                thr[g] = threshold[g]
                nan_to[g] = -np.inf if missing_left[g] else np.nan
                node_depth[root + left[g]] = node_depth[g] + 1
                node_depth[root + right[g]] = node_depth[g] + 1
            else:
                kids[2 * g] = g - root
                kids[2 * g + 1] = g - root
                depth[t] = max(depth[t], node_depth[g])
    return kids, feat, thr, nan_to, depth


@njit(cache=True, inline="always")
def _leaves(X, root, depth, feat, thr, kids, nan_to, leaf):
    """leaf[i] = global node id of row i's leaf in the tree rooted at `root`, for the rows of X (a block).

    Level by level over the block's rows: each row takes exactly `depth` steps, its leaf looping to
    itself, and the child is read from kids at 2g + (x <= threshold), a NaN replaced by -inf (goes left) or
    NaN (goes right); an internal node sends x left when x <= threshold, a NaN left when missing_left.  The
    rows of one level are independent and the loops have no data-dependent branch (a walk that stops at
    its leaf, or `left if go else right`, is a branch the CPU mispredicts on about half the rows), so the
    CPU overlaps the rows' walks.
    """
    nb = X.shape[0]
    for i in range(nb):
        leaf[i] = root
    for _ in range(depth):
        for i in range(nb):
            g = np.uintp(leaf[i])
            x = X[i, np.uintp(feat[g])]
            x = x if x == x else nan_to[g]
            leaf[i] = root + kids[np.uintp(2) * g + np.uintp(x <= thr[g])]


@njit(cache=True)
def _inside_shape(v, kind, scale, M, L):
    """True when the row v (inside its box) meets its domain's shape condition ``kind`` (``families.base.Domain``);
    M, L: P x P scratch for the SPD kinds."""
    C = v.shape[0]
    if kind == PARABOLA:
        return v[1] - v[0] * v[0] > 0.0
    if kind == MEAN_RANGE:
        return v[0] + 2.0 * scale[0] * v[1] > 0.0 and v[0] + 2.0 * scale[1] * v[1] < 0.0
    if kind == LOG:
        lg = np.log(v[1])
        return v[0] < lg - _LOG_TOL * (1.0 + abs(lg))
    if kind == SIMPLEX:
        t = 0.0
        for c in range(C):
            t += v[c]
        return t < 1.0 - _SUM_TOL * C
    if kind == SPD_SCALED or kind == SPD_CENTRED:
        P = M.shape[0]
        j = P
        for r in range(P):
            for c in range(r, P):
                x = v[j] * scale[j - P] if kind == SPD_SCALED else v[j] - v[r] * v[c]
                if not abs(x) < np.inf:
                    return False
                M[r, c] = x
                M[c, r] = x
                j += 1
        return _chol(M, L)
    return True


@njit(cache=True)
def _inside(v, kind, lo, hi, scale, M, L):
    """True when the row v lies in the open domain (kind, lo, hi, scale): inside the box and its shape."""
    for c in range(v.shape[0]):
        if not (v[c] > lo[c] and v[c] < hi[c]):
            return False
    return kind == BOX or _inside_shape(v, kind, scale, M, L)


@njit(cache=True, parallel=True)
def _accumulate(X, kids, feat, thr, nan_to, depth, value, tree_offsets, multiplier, out_col, tree_round, col_stop,
                t0, t1, out, kind, lo, hi, scale, P, bad):
    """out[i, c + k] += multiplier[t] * value[leaf, k] for trees t0..t1-1 in order, when tree_round[t] <= col_stop[c + k].

    Blocks of rows run in parallel threads, each through all the trees in order: a row's sum adds the
    trees in the same order whatever the block size or the number of threads (the same bits).
    After each round's last tree, when bad.size > 0, bad[i] = 1 for a row whose entries of out lie outside the
    open domain (kind, lo, hi, scale) (``_inside``; P: the matrix size of the SPD kinds) (the per-round domain
    check of a law's prediction, see ``distviz.boosting.predict``).
    """
    K = value.shape[1]
    C = out.shape[1]
    n = X.shape[0]
    check = bad.shape[0] > 0
    for blk in prange((n + _ROWS - 1) // _ROWS):
        lo_r = blk * _ROWS
        hi_r = min(n, lo_r + _ROWS)
        nb = hi_r - lo_r
        xb = X[lo_r:hi_r]   # views indexed from 0 (no wrap-around checks on the row index)
        ob = out[lo_r:hi_r]
        leaf = np.empty(nb, dtype=np.int64)
        M = np.zeros((P, P))
        L = np.zeros((P, P))
        for t in range(t0, t1):
            c = out_col[t]
            r = tree_round[t]
            n_use = 0
            for k in range(K):
                if r <= col_stop[c + k]:
                    n_use += 1
            if n_use > 0:
                _leaves(xb, tree_offsets[t], depth[t], feat, thr, kids, nan_to, leaf)
                m = multiplier[t]
                if K == 1:
                    for i in range(nb):
                        ob[i, c] += m * value[np.uintp(leaf[i]), 0]
                else:
                    for i in range(nb):
                        g = np.uintp(leaf[i])
                        for k in range(K):
                            if n_use == K or r <= col_stop[c + k]:
                                ob[i, c + k] += m * value[g, k]
            if check and (t + 1 == t1 or tree_round[t + 1] != r):
                bb = bad[lo_r:hi_r]
                for i in range(nb):   # the box test inline (no call per row), the shape's only where there is one
                    if bb[i] == 0:
                        for cc in range(C):
                            v = ob[i, cc]
                            if not (v > lo[cc] and v < hi[cc]):
                                bb[i] = 1
                                break
                        if bb[i] == 0 and kind != BOX and not _inside_shape(ob[i], kind, scale, M, L):
                            bb[i] = 1


@njit(cache=True, parallel=True)
def _apply(X, kids, feat, thr, nan_to, depth, tree_offsets, t0, t1, out):
    """out[t - t0, i] = global leaf node id of row i in tree t, for trees t0..t1-1 (blocks of rows in parallel)."""
    n = X.shape[0]
    for blk in prange((n + _ROWS - 1) // _ROWS):
        lo = blk * _ROWS
        hi = min(n, lo + _ROWS)
        for t in range(t0, t1):
            _leaves(X[lo:hi], tree_offsets[t], depth[t], feat, thr, kids, nan_to, out[t - t0, lo:hi])


def validate_arrays(arrays: dict, n_features: int, n_outputs: int) -> str | None:
    """The first problem of a forest's arrays as a phrase, or None when a kernel may safely read them.

    Checks dtypes and shapes, offsets (start at 0, strictly increasing, end at the node / tree count),
    child ids (-1 at leaves on both sides; internal nodes point strictly forward inside their tree),
    feature ids in [0, n_features), flags in {0, 1}, finite thresholds, values and multipliers, and
    output columns in range.
    """
    for name, kinds in ARRAY_FIELDS.items():
        if name not in arrays:
            return f"the forest array '{name}' is missing"
        a = np.asarray(arrays[name])
        if a.dtype.kind not in kinds:
            return f"the forest array '{name}' has dtype {a.dtype}, not {'float' if kinds == 'f' else 'integer'}"
        want = 2 if name == "value" else 1
        if a.ndim != want:
            return f"the forest array '{name}' has {a.ndim} dimensions instead of {want}"
    if not (isinstance(n_features, (int, np.integer)) and 1 <= n_features < 2**31):
        return f"the feature count {n_features!r} is not a positive integer"
    if not (isinstance(n_outputs, (int, np.integer)) and 1 <= n_outputs < 2**31):
        return f"the output count {n_outputs!r} is not a positive integer"
    feature, left, right = (np.asarray(arrays[k]) for k in ("feature", "left", "right"))
    n = feature.shape[0]
    value = np.asarray(arrays["value"])
    for name in ("threshold", "missing_left", "left", "right"):
        if np.asarray(arrays[name]).shape != (n,):
            return f"the forest array '{name}' has {np.asarray(arrays[name]).shape[0]} entries for {n} nodes"
    if value.shape[0] != n or value.shape[1] < 1:
        return f"the forest array 'value' has shape {value.shape} for {n} nodes"
    K = value.shape[1]
    offs = np.asarray(arrays["tree_offsets"])
    if offs.size < 2 or offs[0] != 0 or offs[-1] != n or not (np.diff(offs) > 0).all():
        return "the tree offsets do not run strictly upwards from 0 to the node count"
    T = offs.size - 1
    roffs = np.asarray(arrays["round_offsets"])
    if roffs.size < 1 or roffs[0] != 0 or roffs[-1] != T or not (np.diff(roffs) > 0).all():
        return "the round offsets do not run strictly upwards from 0 to the tree count"
    for name in ("multiplier", "out_col"):
        if np.asarray(arrays[name]).shape != (T,):
            return f"the forest array '{name}' has {np.asarray(arrays[name]).size} entries for {T} trees"
    mult, out_col = np.asarray(arrays["multiplier"]), np.asarray(arrays["out_col"])
    if not np.isfinite(mult).all():
        return "a tree multiplier is not finite"
    if (out_col < 0).any() or (out_col > n_outputs - K).any():
        return f"a tree writes outside the {n_outputs} output columns"
    tree = np.repeat(np.arange(T), np.diff(offs))
    local = np.arange(n) - offs[tree]
    size = np.diff(offs)[tree]
    leaf = left == -1
    if (right[leaf] != -1).any():
        return "a leaf has a right child"
    inner = ~leaf
    for name, c in (("left", left), ("right", right)):
        ci = c[inner]
        if ((ci <= local[inner]) | (ci >= size[inner])).any():
            j = int(np.flatnonzero(inner)[np.flatnonzero((ci <= local[inner]) | (ci >= size[inner]))[0]])
            return (f"node {j} has {name} child {int(c[j])}, which does not point forward inside its tree "
                    f"(a cycle, a self loop or an id out of range)")
    fi = feature[inner]
    if ((fi < 0) | (fi >= n_features)).any():
        return f"a split uses a feature id outside [0, {n_features})"
    ml = np.asarray(arrays["missing_left"])
    if ((ml != 0) & (ml != 1)).any():
        return "a missing-value direction is neither 0 nor 1"
    if not np.isfinite(np.asarray(arrays["threshold"])).all():
        return "a split threshold is not finite"
    if not np.isfinite(value).all():
        return "a leaf value is not finite"
    return None


class FlatForest:
    """Flat node arrays of many trees (see module docstring) with compiled predict, staged predict and apply."""

    def __init__(self, feature, threshold, missing_left, left, right, value, tree_offsets, round_offsets=None,
                 multiplier=None, out_col=None, n_features=None, n_outputs=None, float32_input=False):
        """Store the arrays in their kernel dtypes; call validate_arrays first on anything read from a file."""
        self.feature = kernel_array(feature, np.int64)
        self.threshold = kernel_array(threshold, np.float64)
        self.missing_left = kernel_array(missing_left, np.uint8)
        self.left = kernel_array(left, np.int64)
        self.right = kernel_array(right, np.int64)
        self.value = kernel_array(value, np.float64)
        self.tree_offsets = kernel_array(tree_offsets, np.int64)
        T = self.tree_offsets.size - 1
        self.round_offsets = kernel_array(np.arange(T + 1) if round_offsets is None else round_offsets, np.int64)
        self.multiplier = kernel_array(np.ones(T) if multiplier is None else multiplier, np.float64)
        self.out_col = kernel_array(np.zeros(T) if out_col is None else out_col, np.int64)
        K = self.value.shape[1]
        self.n_outputs = int(K if n_outputs is None else n_outputs)
        self.n_features = int(n_features if n_features is not None else max(int(self.feature.max(initial=-1)) + 1, 1))
        #: compare x rounded to float32 (scikit-learn trees split float32 copies of X)
        self.float32_input = bool(float32_input)
        self._tree_round = np.repeat(np.arange(1, self.n_rounds + 1), np.diff(self.round_offsets)).astype(np.int64)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_records(cls, records, round_sizes=None, multiplier=None, out_col=None, n_features=None, n_outputs=None,
                     float32_input=False) -> "FlatForest":
        """Concatenate tree records (distviz.trees.record.TreeRecord, all with K value columns) in round order.

        Leaves get feature -1, threshold 0 and missing_left 0, a +inf threshold (a split of the last
        bin) becomes the largest float (the same rule on finite x), and internal nodes' values that are
        not finite become 0 (they are never read): the arrays validate_arrays accepts.
        """
        T = len(records)
        sizes = np.array([r.n_nodes for r in records], dtype=np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        K = records[0].value.shape[1] if T else (n_outputs or 1)
        nodes = np.concatenate([r.nodes for r in records]) if T else np.zeros(0, dtype=NODE_DTYPE)
        value = np.concatenate([r.value for r in records]) if T else np.zeros((0, K))
        leaf = nodes["left"] < 0
        thr = np.where(leaf, 0.0, nodes["threshold"])
        rs = np.ones(T, dtype=np.int64) if round_sizes is None else np.asarray(round_sizes, dtype=np.int64)
        return cls(np.where(leaf, -1, nodes["feature"]), np.where(thr == np.inf, _BIG, thr),
                   np.where(leaf, 0, nodes["missing_left"]), nodes["left"], np.where(leaf, -1, nodes["right"]),
                   np.where(leaf[:, None] | np.isfinite(value), value, 0.0), offs, np.concatenate([[0], np.cumsum(rs)]),
                   multiplier, out_col, n_features, n_outputs, float32_input)

    def arrays(self) -> dict:
        """The arrays of ARRAY_FIELDS by name (for saving)."""
        return {k: getattr(self, k) for k in ARRAY_FIELDS}

    @classmethod
    def from_arrays(cls, arrays: dict, n_features: int, n_outputs: int, float32_input=False) -> "FlatForest":
        """A forest from arrays read from a file; DataError (without a file name) on the first problem."""
        problem = validate_arrays(arrays, n_features, n_outputs)
        if problem is not None:
            raise DataError(problem)
        return cls(*(arrays[k] for k in ("feature", "threshold", "missing_left", "left", "right", "value",
                                         "tree_offsets", "round_offsets", "multiplier", "out_col")),
                   n_features=n_features, n_outputs=n_outputs, float32_input=float32_input)  # type: ignore[misc]

    # ------------------------------------------------------------------ sizes
    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return int(self.tree_offsets.size - 1)

    @property
    def n_rounds(self) -> int:
        """Number of boosting rounds."""
        return int(self.round_offsets.size - 1)

    # ------------------------------------------------------------------ prediction
    def _X(self, X) -> np.ndarray:
        X = kernel_array(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise DataError(f"X must have shape (n, {self.n_features}), got {X.shape}.")
        if self.float32_input:
            X = X.astype(np.float32).astype(np.float64)
        return X

    def _stops(self, n_rounds) -> np.ndarray:
        """Per-output-column last round used: all rounds, a round count, or one count per column."""
        if n_rounds is None:
            n_rounds = self.n_rounds
        stop = np.asarray(n_rounds, dtype=np.int64)
        return kernel_array(np.broadcast_to(stop, (self.n_outputs,)), np.int64)

    def _tables(self):
        """The fixed-depth walk tables (``_walk_tables``; O(nodes), built for each call from the current arrays)."""
        return _walk_tables(self.feature, self.threshold, self.missing_left, self.left, self.right, self.tree_offsets)

    def _add(self, X, out, t0, t1, stop, domain: Domain | None = None, bad=None):
        """Add trees t0..t1-1 to out (see _accumulate); domain with bad: the per-round check."""
        kind, lo, hi, scale = domain if domain is not None else (0, _NONE_F, _NONE_F, _NONE_F)
        P = int(round((np.sqrt(8 * out.shape[1] + 9) - 3) / 2)) if domain is not None and kind in (SPD_SCALED, SPD_CENTRED) else 0
        kids, feat, thr, nan_to, depth = self._tables()
        _accumulate(X, kids, feat, thr, nan_to, depth, self.value, self.tree_offsets, self.multiplier, self.out_col,
                    self._tree_round, stop, t0, t1, out, kind, lo, hi, scale, P, _NONE_U8 if bad is None else bad)

    def predict(self, X, init=None, n_rounds=None, domain: Domain | None = None, bad=None) -> np.ndarray:
        """init + sum over trees of multiplier * leaf value, shape (n, n_outputs); n_rounds: int or one per column.

        domain (``families.base.Domain`` over the n_outputs columns) with bad, a zeroed uint8 array (n,): bad[i]
        is set to 1 where row i's partial sum after some round lies outside the open domain.
        """
        X = self._X(X)
        out = self._init(X.shape[0], init)
        stop = self._stops(n_rounds)
        last = int(min(stop.max(initial=0), self.n_rounds))
        if domain is not None:
            domain = Domain(int(domain.kind), *(np.ascontiguousarray(a, dtype=np.float64)
                                                for a in (domain.lo, domain.hi, domain.scale)))
            if domain.lo.shape != (self.n_outputs,) or domain.hi.shape != (self.n_outputs,):
                raise ValueError("the domain needs one bound per output column")
            if bad is None or bad.dtype != np.uint8 or bad.shape != (X.shape[0],):
                raise ValueError("a domain needs bad, a uint8 array with one entry per row")
        self._add(X, out, 0, int(self.round_offsets[max(last, 0)]), stop, domain, bad)
        return out

    def staged_predict(self, X, init=None, n_rounds=None):
        """Yield the prediction after rounds 0, 1, ..., max(n_rounds) (a column past its own count stays put)."""
        X = self._X(X)
        out = self._init(X.shape[0], init)
        stop = self._stops(n_rounds)
        yield out.copy()
        for r in range(int(min(stop.max(initial=0), self.n_rounds))):
            self._add(X, out, int(self.round_offsets[r]), int(self.round_offsets[r + 1]), stop)
            yield out.copy()

    def _init(self, n, init) -> np.ndarray:
        out = np.zeros((n, self.n_outputs))
        if init is not None:
            out[:] = np.asarray(init, dtype=np.float64)
        return out

    def apply(self, X, trees=None) -> np.ndarray:
        """Global leaf node ids (n_trees, n) of every row in the given trees (a range; default all)."""
        X = self._X(X)
        t0, t1 = (0, self.n_trees) if trees is None else (trees.start, trees.stop)
        out = np.empty((t1 - t0, X.shape[0]), dtype=np.int64)
        kids, feat, thr, nan_to, depth = self._tables()
        _apply(X, kids, feat, thr, nan_to, depth, self.tree_offsets, t0, t1, out)
        return out

    def round_values(self, X, r: int) -> np.ndarray:
        """multiplier * leaf value (n, K) of round r's single tree (DistributionalBoosting's per-round step)."""
        t = int(self.round_offsets[r])
        leaf = self.apply(X, range(t, t + 1))[0]
        return self.multiplier[t] * self.value[leaf]
