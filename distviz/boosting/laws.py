"""The five exponential-family boosting laws of mirror_vs_natural_boosting.tex, as engine laws.

| law           | pointwise law | additive in | tree target                                        | gain        |
|---------------|---------------|-------------|----------------------------------------------------|-------------|
| ``mgd``       | M-law         | eta*        | R = T(y) - eta*_t            (note, "Boosting of MGD") | Gain^reg |
| ``ngd``       | N-law         | eta         | U = g(eta_t)^-1 (T(y) - eta*_t) ("Boosting of NGD")    | Gain^NGD |
| ``gd``        | Euclidean GD  | eta         | T(y) - eta*_t (raw gradient, no metric, Sec. 1.1)      | Gain^reg |
| ``mgd_natural`` | M-law       | eta         | plug-in q^(M,eta) with T(y) for eta*(x) (crossed)      | Gain^reg |
| ``ngd_mean``  | N-law         | eta*        | plug-in q^(N,eta*) with T(y) for eta*(x) (crossed)     | Gain^reg |

The crossed laws ("Crossed realization of the M-law / N-law") replace the unknown eta*(x) of
the ideal increments q by the observation T(y_i).  Because grad A* (resp. grad A) is
nonlinear, E[q_i | x] differs from the ideal q(x) (Jensen): these pseudo-responses are BIASED,
which is exactly the note's point that the crossed realisations lose the unbiased targets of
the matched ones.

Every law keeps its iterate in one coordinate (``coord`` = "mean" for eta*, "natural" for eta);
an update that leaves the domain is either projected with the family's ``project_mean`` /
``project_natural`` (domain="project", to within the family's margin of the boundary) or has its step
shortened by the fraction-to-the-boundary rule (domain="backtrack", see ``_backtrack``); the rows are
counted either way and iterates never become NaN.
"""

from __future__ import annotations

import numpy as np

from distviz.boosting.law import Law
from distviz.errors import ConfigError
from distviz.families._rowmath import row_order_sums
from distviz.families.base import finite_rows

__all__ = ["LAWS", "ExpFamilyLaw", "FamilyData", "MGD", "NGD", "GD", "MGDNatural", "NGDMean", "bind_data_range", "make_law"]


class FamilyData:
    """Per-fit cache of y-only quantities: T(y) (n, d), log h(y) (n,) and the weights."""

    __slots__ = ("T", "log_h", "w", "n", "_H_root", "_fused")

    def __init__(self, family, y, w=None):
        """Compute T(y) and log h(y) once (note, 'Monitoring during training')."""
        self.T = np.ascontiguousarray(family.sufficient_stats(y), dtype=float)
        self.log_h = np.asarray(family.log_base_measure(y), dtype=float)
        self.w = w
        self.n = self.T.shape[0]
        self._H_root = None
        self._fused = None   # per-fit constants of a fused round (MGD.fused_round)


class ExpFamilyLaw(Law):
    """Common machinery of the exponential-family laws (iterate in eta or eta*); subclasses give ``targets``.

    Parameters
    ----------
    family : ExponentialFamily
        The family of the pointwise law (``distviz.families``).
    domain : {"project", "backtrack"}
        How an update that leaves the domain is handled (:meth:`update`).

    Attributes
    ----------
    coord : {"mean", "natural"}
        The coordinate of the additive model: eta* ("mean") or eta ("natural").
    """

    coord = "mean"          # coordinate of the additive model: "mean" (eta*) or "natural" (eta)
    #: whether a fit bounds the family's domain by the training targets' range (``ExponentialFamily.with_data_range``)
    data_domain = False

    def __init__(self, family, domain: str = "project"):
        """Bind the law to an exponential family; `domain` says how updates that leave the domain are handled."""
        if domain not in ("project", "backtrack"):
            raise ConfigError(f"domain must be 'project' or 'backtrack', got {domain!r}.")
        self.family = family
        self.dim = int(family.dim)
        self.domain = domain

    # -------------------------------------------------------------- coordinates
    def prepare(self, y, w=None) -> FamilyData:
        """Cache T(y) and log h(y)."""
        return FamilyData(self.family, y, w)

    def natural(self, F) -> np.ndarray:
        """eta of an iterate F."""
        return self.family.to_natural(F) if self.coord == "mean" else F

    def mean(self, F) -> np.ndarray:
        """eta* of an iterate F."""
        return F if self.coord == "mean" else self.family.to_mean(F)

    def from_mean(self, m) -> np.ndarray:
        """The iterate whose eta* is m (m inside the mean domain)."""
        return m if self.coord == "mean" else self.family.to_natural(m)

    def init(self, data: FamilyData, w=None) -> np.ndarray:
        """Start at the weighted mean of T(y) (projected into the mean domain), in this law's coordinate."""
        m = np.average(data.T, axis=0, weights=w)[None, :]
        m = _project(self.family, m, "mean")
        return np.asarray(self.from_mean(m), dtype=float).reshape(-1)

    def loss(self, F, data: FamilyData) -> np.ndarray:
        """Per-row NLL A(eta) - <eta, T(y)> - log h(y) with the cached log h (note, 'Monitoring')."""
        eta = self.natural(F)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.family.log_partition(eta) - np.einsum("ij,ij->i", eta, data.T) - data.log_h

    def update(self, F, step):
        """F + step kept inside the domain; returns (F_new, mask of rows whose step was changed).

        domain="project" (default): rows that leave the domain are mapped back with the family's
        project_mean / project_natural.  domain="backtrack": their step is halved until the row goes at
        most half way to the boundary (``_backtrack``).  Rows whose sum is not finite (an overflowing step) keep
        their previous iterate.
        """
        if self.domain == "backtrack":
            return _backtrack(self.family, F, step, self.coord)
        with np.errstate(over="ignore", invalid="ignore"):
            Fn = F + step
        return _project(self.family, Fn, self.coord, return_mask=True, fallback=F)

    def coord_domain(self):
        """The open domain of this law's coordinate in compiled form (``ExponentialFamily.domain``)."""
        return self.family.domain(self.coord)

    def tree_kwargs(self, data: FamilyData) -> dict:
        """Extra arguments for the tree: the family and T(y), so it can record Gain^ent."""
        return {"family": self.family, "T": data.T}

    def entropy(self, tree, w, data: FamilyData) -> float:
        """Generalised entropy H = -sum_J W_J/W A*(eta*_J) of a fitted tree's partition (note, 'Monitoring', H_A).

        Gain^ent telescopes over the tree, so H = H(root) - sum of the internal nodes' Gain^ent; the
        root term is computed once per fit.  Falls back to the leaf sums when a gain is not finite.
        """
        nodes = tree.nodes_
        ge = np.asarray(nodes["gain_ent"], dtype=float)[~np.asarray(nodes["is_leaf"], dtype=bool)]
        if data._H_root is None:
            data._H_root = partition_entropy(self.family, None, data.T, w)
        if np.isfinite(data._H_root) and np.isfinite(ge).all():
            return float(data._H_root - ge.sum())
        return partition_entropy(self.family, tree.train_leaf_, data.T, w)


class MGD(ExpFamilyLaw):
    """M-law, matched: additive in eta*, target R = T(y) - eta*_t (note, 'Boosting of MGD')."""

    name, coord, gain_name = "mgd", "mean", "Gain^reg"
    description = "M-law additive in eta*: tree on R = T(y) - eta*_t"

    def targets(self, F, data, learning_rate):
        """R_i = T(y_i) - eta*_t(x_i)."""
        return data.T - F

    @property
    def supports_fused_round(self) -> bool:  # type: ignore[override]
        """True where the family has a fused row kernel of an MGD round (Poisson: ``fused_mgd_round``)."""
        return getattr(self.family, "fused_mgd_round", None) is not None

    def fused_round(self, F, leaf, value, mult, data, w, out=None):
        """update, loss and targets of one round in one pass over the rows, or None where the family has no fused kernel.

        F (n, 1) is the iterate, the round's step is ``mult * value[leaf]`` (value (n_nodes,) the
        tree's leaf values, leaf (n,) the training rows' leaves).  Returns (F_new, weighted mean
        NLL at F_new, next targets T(y) - F_new), equal to ``update``, ``loss`` and ``targets``
        (the NLL up to rounding: sum w A(eta) - <log F_new, w T> - sum w log h, the last term kept
        per fit), or None when a row leaves the mean domain (the caller then takes the
        unfused ``update``, which projects or backtracks it).  out: optional (F_new, targets) arrays
        (n, 1) to write into instead of new ones.
        """
        kern = getattr(self.family, "fused_mgd_round", None)
        if kern is None or F.ndim != 2 or F.shape[1] != 1 or data.T.shape[1] != 1:
            return None
        n = F.shape[0]
        if data._fused is None or data._fused[0] is not w:
            if w is None:
                data._fused = (w, np.ones(1), float(np.sum(data.log_h)), float(n))
            else:
                ww = np.ascontiguousarray(w, dtype=np.float64)
                data._fused = (w, ww, float(np.einsum("i,i...->...", ww, data.log_h)), float(ww.sum()))
        _, ww, s_logh, W = data._fused
        F_new, R_new = (np.empty((n, 1)), np.empty((n, 1))) if out is None else out
        n_bad, s_A, s_TlogF = kern(F.reshape(-1), leaf, value, float(mult), data.T.reshape(-1), ww, w is not None,
                                   F_new.reshape(-1), R_new.reshape(-1))
        if n_bad:
            return None
        return F_new, float((s_A - s_TlogF - s_logh) / W), R_new


class NGD(ExpFamilyLaw):
    """N-law, matched: additive in eta, target U = g(eta_t)^-1 (T(y) - eta*_t) (note, 'Boosting of NGD')."""

    name, coord, gain_name = "ngd", "natural", "Gain^NGD"
    description = "N-law additive in eta: tree on U = g(eta_t)^-1 (T(y) - eta*_t)"
    #: a leaf's step in eta is shared by rows whose Fisher metrics differ: for the Normal a row whose variance is far
    #: above its leaf's can see its eta_2 reach 0- and its variance and mean grow without limit (issue 28), so a fit
    #: bounds the natural domain by the targets' range (``Normal`` class doc)
    data_domain = True

    def targets(self, F, data, learning_rate):
        """U_i = g(eta_i)^-1 (T(y_i) - eta*_i)."""
        return _solve_fisher(self.family, F, data.T - self.family.to_mean(F))


class GD(ExpFamilyLaw):
    """Plain gradient descent in eta: the raw gradient T(y) - eta*_t, no metric (note, Sec. 'Gradient descent')."""

    name, coord, gain_name = "gd", "natural", "Gain^reg"
    description = "Euclidean GD additive in eta: tree on T(y) - eta*_t"

    def targets(self, F, data, learning_rate):
        """-grad_eta NLL_i = T(y_i) - eta*_i."""
        return data.T - self.family.to_mean(F)


class MGDNatural(ExpFamilyLaw):
    """M-law, crossed: additive in eta with plug-in target q^(M,eta) (BIASED; note, 'Crossed realization of the M-law').

    q_i = [grad A*((1 - lr) eta*_t + lr T(y_i)) - eta_t] / lr, i.e. the ideal q^(M,eta) with the
    observation T(y_i) in place of eta*(x_i); E[q_i | x] != q^(M,eta)(x) because grad A* is nonlinear.
    """

    name, coord, gain_name = "mgd_natural", "natural", "Gain^reg"
    description = "M-law additive in eta: tree on the plug-in q^(M,eta) (biased)"

    def targets(self, F, data, learning_rate):
        """Plug-in q^(M,eta)_i; the convex combination is projected into the mean domain first."""
        a = float(learning_rate)
        m = (1.0 - a) * self.family.to_mean(F) + a * data.T
        m = _project(self.family, m, "mean")
        return (self.family.to_natural(m) - F) / a


class NGDMean(ExpFamilyLaw):
    """N-law, crossed: additive in eta* with plug-in target q^(N,eta*) (BIASED; note, 'Crossed realization of the N-law').

    q_i = [grad A(eta_t + lr g(eta_t)^-1 (T(y_i) - eta*_t)) - eta*_t] / lr, the ideal q^(N,eta*) with
    T(y_i) in place of eta*(x_i); E[q_i | x] != q^(N,eta*)(x) because grad A is nonlinear.
    """

    name, coord, gain_name = "ngd_mean", "mean", "Gain^reg"
    description = "N-law additive in eta*: tree on the plug-in q^(N,eta*) (biased)"

    def targets(self, F, data, learning_rate):
        """Plug-in q^(N,eta*)_i; a per-row N-step that leaves the natural domain is halved until it stays inside."""
        a = float(learning_rate)
        eta = self.family.to_natural(F)
        U = _solve_fisher(self.family, eta, data.T - F)
        e1 = _backtrack_natural(self.family, eta, a * U)
        with np.errstate(over="ignore", invalid="ignore"):
            q = (_rowwise(self.family.to_mean, e1) - F) / a
        bad = ~finite_rows(q)
        if bad.any():   # overflow of grad A (e.g. exp of a huge eta): fall back to the matched M-law target
            q[bad] = (data.T - F)[bad]
        return q


LAWS = {c.name: c for c in (MGD, NGD, GD, MGDNatural, NGDMean)}


def make_law(name: str, family, domain: str = "project") -> ExpFamilyLaw:
    """The law called `name` (one of LAWS) bound to `family`; ConfigError for unknown names."""
    key = str(name).lower()
    if key not in LAWS:
        raise ConfigError(f"Unknown law {name!r}; choose one of: {', '.join(LAWS)}.")
    return LAWS[key](family, domain=domain)


# ---------------------------------------------------------------------- helpers
def _solve_fisher(family, eta, v) -> np.ndarray:
    """g(eta)^-1 v per row (pseudo-inverse for rows whose Fisher matrix is numerically singular)."""
    try:
        out = np.asarray(family.solve_fisher(eta, v), dtype=float).reshape(v.shape)
    except np.linalg.LinAlgError:
        G = np.asarray(family.fisher(eta), dtype=float).reshape(v.shape[0], v.shape[1], v.shape[1])
        out = np.einsum("nij,nj->ni", np.linalg.pinv(G), v)
    return np.where(np.isfinite(out), out, 0.0)


def _in_domain(family, F, coord) -> np.ndarray:
    """Rows of F that are finite and inside the open domain of `coord`.

    The finiteness check goes column by column (``finite_rows``), and when every row is finite the
    domain test sees F itself, not a masked copy of it.
    """
    f = family.in_mean_domain if coord == "mean" else family.in_natural_domain
    ok = finite_rows(F)
    if ok.all():
        return np.asarray(f(F), dtype=bool).reshape(F.shape[0]).copy()
    if ok.any():
        ok[ok] = np.asarray(f(F[ok]), dtype=bool)
    return ok


def _backtrack(family, F, step, coord, max_halvings=40):
    """F + s * step per row: s = 1 when that stays in the domain, else the fraction-to-the-boundary rule.

    A row whose full step leaves the (convex) domain takes s = 2^-k with the smallest k >= 1 such that
    F + 2 s step is still inside, i.e. it goes at most half way to the boundary along its step.  Every
    family's slack (a variance, a rate, the least eigenvalue of a covariance, log E[y] - E[log y], a
    probability) is concave along the segment, so the slack of that row is at least half its previous
    value: a projected row never lands next to the boundary (where the NLL explodes), whatever the
    family's `margin`.  Rows that stay inside are untouched (s = 1), so fits in which no row leaves the
    domain are bit-identical to the unsafeguarded law.  s = 0 after `max_halvings`.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        Fn = F + step
    ok = _in_domain(family, Fn, coord)
    if ok.all():
        return Fn, np.zeros(F.shape[0], dtype=bool)
    changed = ~ok
    s = np.ones(F.shape[0])
    todo = np.flatnonzero(~ok)
    for _ in range(max_halvings):
        s[todo] *= 0.5
        with np.errstate(over="ignore", invalid="ignore"):
            probe = F[todo] + (2.0 * s[todo, None]) * step[todo]   # the point twice as far: still inside?
        good = _in_domain(family, probe, coord)
        done = todo[good]
        with np.errstate(over="ignore", invalid="ignore"):
            Fn[done] = F[done] + s[done, None] * step[done]
        todo = todo[~good]
        if todo.size == 0:
            break
    Fn[todo] = F[todo]
    return Fn, changed


def _backtrack_natural(family, eta, step, max_halvings=40) -> np.ndarray:
    """eta + s * step per row with s = 1, 1/2, 1/4, ... the first value inside the natural domain."""
    s = np.ones(eta.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        e1 = eta + step
    for _ in range(max_halvings):
        ok = _in_domain(family, e1, "natural")
        if ok.all():
            return e1
        s[~ok] *= 0.5
        e1[~ok] = eta[~ok] + s[~ok, None] * step[~ok]
    e1[~ok] = eta[~ok]
    return e1


def _rowwise(func, A) -> np.ndarray:
    """func(A) for a batch of rows; rows where a numerically singular matrix stops the batch give NaN."""
    try:
        return np.asarray(func(A), dtype=float)
    except np.linalg.LinAlgError:
        out = np.full(A.shape, np.nan)
        for i in range(A.shape[0]):
            try:
                out[i] = np.asarray(func(A[i:i + 1]), dtype=float)[0]
            except np.linalg.LinAlgError:
                pass
        return out


def _project(family, F, coord, return_mask=False, fallback=None):
    """Project rows of F outside the open domain back inside; non-finite rows take `fallback` rows."""
    ok = _in_domain(family, F, coord)
    if ok.all():
        return (F, np.zeros(F.shape[0], dtype=bool)) if return_mask else F
    bad = ~ok
    F = F.copy()
    nf = ~finite_rows(F)
    if nf.any():
        F[nf] = fallback[nf] if fallback is not None else np.nan_to_num(F[nf], nan=0.0, posinf=1e300, neginf=-1e300)
    F[bad] = family.project_mean(F[bad]) if coord == "mean" else family.project_natural(F[bad])
    return (F, bad) if return_mask else F


def partition_entropy(family, leaf, T, w=None) -> float:
    """H = -sum_J (W_J / W) A*(eta*_J), eta*_J the weighted leaf means of T(y) (note, 'Entropy ...').

    leaf None: one part, all rows (the root); its sums are added in row order as bincount adds them,
    without bincount's n-sized leaf, weight and product arrays.
    """
    if leaf is None:
        weighted = w is not None
        ww = np.ascontiguousarray(w, dtype=np.float64) if weighted else np.ones(1)
        W, s = row_order_sums(np.ascontiguousarray(T, dtype=np.float64), ww, weighted)
        WJ = np.array([W])
        keep = WJ > 0
        S = s[None, :][keep]
    else:
        leaf = np.asarray(leaf, dtype=np.int64)
        m = int(leaf.max()) + 1 if leaf.size else 0
        ww = np.ones(T.shape[0]) if w is None else np.asarray(w, dtype=float)
        WJ = np.bincount(leaf, weights=ww, minlength=m)
        keep = WJ > 0
        S = np.stack([np.bincount(leaf, weights=ww * T[:, k], minlength=m)[keep] for k in range(T.shape[1])], axis=1)
    m_J = S / WJ[keep, None]
    with np.errstate(all="ignore"):
        a = np.asarray(family.conjugate(m_J), dtype=float).reshape(-1)
        bad = ~np.isfinite(a)
        if bad.any():   # a leaf mean on the domain boundary: use the limit from inside
            a[bad] = family.conjugate(family.project_mean(m_J[bad]))
    return float(-(WJ[keep] * a).sum() / WJ.sum())


def bind_data_range(fam, law: str, y_range):
    """``fam.with_data_range(lo, hi)`` with (lo, hi) = y_range() when the law's fits bound the domain by the
    training targets' range (``ExpFamilyLaw.data_domain``: NGD) and the family has such a bound (``Normal``);
    else fam as it is, y_range not called (the Dask fit's range is a pass over y)."""
    from distviz.families.base import ExponentialFamily

    cls = LAWS.get(str(law).lower())
    if (cls is None or not cls.data_domain or not isinstance(fam, ExponentialFamily)
            or type(fam).with_data_range is ExponentialFamily.with_data_range):
        return fam
    lo, hi = y_range()
    return fam.with_data_range(float(lo), float(hi))
