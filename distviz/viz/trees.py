"""Figures and tables of boosted trees from a trace: the tree of a round, top splits, Gain^reg vs Gain^ent,
gain importance over rounds, and the variance-vs-entropy criterion comparison of standalone trees.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .notation import math_names
from .palette import COORD_COLORS, OKABE_ITO, ROLE_COLORS
from .safe_text import plot_text
from .style import axis_grid, axis_key, make_figure

__all__ = ["trace_feature_names", "round_nodes", "tree_figure", "node_details", "leaf_value_names", "LABEL_FONT",
           "top_splits", "gain_scatter_figure", "importance_figure", "criterion_comparison_figure", "leafwise_nll"]


def trace_feature_names(trace) -> list:
    """The fit's feature names a trace keeps (its ``feature`` coordinate, when text), or [] when the fit had none."""
    if "feature" not in trace.coords or trace["feature"].dtype.kind not in "OSU":
        return []
    return [str(s) for s in trace["feature"].values]


def round_nodes(trace, r: int) -> pd.DataFrame:
    """The node table of round r (r >= 1) as a DataFrame, padding rows dropped."""
    cols = {}
    for k in trace.data_vars:
        if k.startswith("node_") and trace[k].dims[:2] == ("round", "node") and trace[k].ndim == 2:
            cols[k[5:]] = trace[k].values[r]
    df = pd.DataFrame(cols)
    if "n_samples" in df:
        df = df[df["n_samples"] >= 0]
    elif "depth" in df:
        df = df[df["depth"] >= 0]
    if "node_value" in trace:
        vals = trace["node_value"].values[r][: len(df)]
        df["value"] = [tuple(np.round(v, 4)) for v in vals]
    df.index.name = "node"
    return df


def _is_leaf(df):
    if "is_leaf" in df:
        return df["is_leaf"].to_numpy() == 1
    return df["left"].to_numpy() < 0


#: label text: large and dark enough to read on a projector
LABEL_FONT = dict(size=13, color="#1a1a1a")


def leaf_value_names(trace) -> tuple[list, str]:
    """(names of the coordinates a leaf's output is added to, 'η' or 'η*') from the trace's law coordinate."""
    import json

    coord = str(trace.attrs.get("coord", "natural"))
    key, sym = ("mean_names", "η*") if coord == "mean" else ("natural_names", "η")
    for k in (key, "param_names"):
        try:
            return math_names(json.loads(trace.attrs[k])), sym
        except (KeyError, TypeError, ValueError):
            continue
    return [], sym


def tree_figure(trace, r: int, feature_names=None, *, gain_name=None, title=None) -> go.Figure:
    """The tree of round r: internal nodes show feature <= threshold, gain and Gain^ent; leaves show weight and
    their output per named coordinate (the law's η or η*).  `gain_name` defaults to the trace's own."""
    gain_name = gain_name or str(trace.attrs.get("gain_name", "Gain^reg"))
    vnames, sym = leaf_value_names(trace)
    # short coordinate names go into every leaf label; long ones (μ/σ², −1/(2 σ²)) become η1, η2, ...
    # in the labels, with the key in the legend entry, so neighbouring leaves' labels do not overlap
    short = vnames if all(len(n) <= 8 for n in vnames) else [f"{sym}{j + 1}" for j in range(len(vnames))]
    key = "; ".join(f"{a} = {n}" for a, n in zip(short, vnames) if a != n)
    df = round_nodes(trace, r)
    if df.empty:
        return make_figure([], dict(annotations=[dict(text="round 0 is the constant start: no tree", showarrow=False,
                                                      x=0.5, y=0.5, xref="paper", yref="paper")]), title=title, height=300)
    names = list(feature_names or trace_feature_names(trace))
    leaf = _is_leaf(df)
    left, right = df["left"].to_numpy(), df["right"].to_numpy()
    ids = df.index.to_numpy()
    pos = {}
    counter = [0]

    def place(i, depth):
        if i < 0 or i not in set(ids):
            return
        row = np.flatnonzero(ids == i)[0]
        if leaf[row]:
            pos[i] = (counter[0], depth)
            counter[0] += 1
            return
        place(int(left[row]), depth + 1)
        place(int(right[row]), depth + 1)
        kids = [pos[k][0] for k in (int(left[row]), int(right[row])) if k in pos]
        pos[i] = (float(np.mean(kids)) if kids else counter[0], depth)

    place(int(ids[0]), 0)
    ex, ey = [], []
    for row, i in enumerate(ids):
        if not leaf[row] and i in pos:
            for k in (int(left[row]), int(right[row])):
                if k in pos:
                    ex += [pos[i][0], pos[k][0], None]
                    ey += [-pos[i][1], -pos[k][1], None]
    tr = [dict(type="scatter", x=ex, y=ey, mode="lines", line=dict(color="#999999", width=1.5), hoverinfo="skip",
               showlegend=False)]
    gain = df["gain"].to_numpy() if "gain" in df else np.full(len(df), np.nan)
    gent = df["gain_ent"].to_numpy() if "gain_ent" in df else np.full(len(df), np.nan)
    feat = df["feature"].to_numpy() if "feature" in df else np.zeros(len(df), int)
    thr = df["threshold"].to_numpy() if "threshold" in df else np.full(len(df), np.nan)
    w = df["weight"].to_numpy() if "weight" in df else df["n_samples"].to_numpy()
    vals = df["value"].tolist() if "value" in df else [()] * len(df)
    xi, yi, ti, hi, xl, yl, tl, hl = [], [], [], [], [], [], [], []
    ni, nl = [], []   # node ids of the split and leaf markers (customdata: a click selects the node)
    for row, i in enumerate(ids):
        if i not in pos:
            continue
        x, d = pos[i]
        if leaf[row]:
            nl.append(int(i))
            parts = [f"{short[j] if j < len(short) else f'{sym}{j + 1}'} {a:+.3g}" for j, a in enumerate(vals[row])]
            full = [f"{vnames[j] if j < len(vnames) else f'{sym}{j + 1}'}: {a:+.4g}" for j, a in enumerate(vals[row])]
            xl.append(x)
            yl.append(-d)
            tl.append("<br>".join([f"w = {w[row]:.0f}"] + parts))
            hl.append(f"leaf {i}<br>weight {w[row]:.1f}<br>output added to {sym} (before × ν):<br>" + "<br>".join(full))
        else:
            f = int(feat[row])
            fname = plot_text(names[f]) if 0 <= f < len(names) else f"x{f + 1}"   # a column name of an upload
            ge = "—" if not np.isfinite(gent[row]) else f"{gent[row]:.3g}"
            ni.append(int(i))
            xi.append(x)
            yi.append(-d)
            ti.append(f"<b>{fname} ≤ {thr[row]:.3g}</b><br>{gain_name} {gain[row]:.3g}<br>Gain^ent {ge}")
            hi.append(f"node {i}: {fname} ≤ {thr[row]:.4g}<br>weight {w[row]:.1f}<br>{gain_name} {gain[row]:.4g}"
                      f"<br>Gain^ent {ge}")
    # a clicked node is selected (the page shows its details): the others stay readable, only a little lighter
    keep = dict(marker=dict(opacity=0.55), textfont=dict(color=LABEL_FONT["color"]))
    tr.append(dict(type="scatter", x=xi, y=yi, mode="markers", hovertext=hi, hoverinfo="text", customdata=ni,
                   unselected=dict(marker=keep["marker"]),
                   marker=dict(size=16, color=OKABE_ITO["blue"], symbol="square"), name="split (feature ≤ threshold)"))
    # split labels as boxed annotations above their node: the box hides the edge that runs into the node
    labels = [dict(x=x, y=y, text=t, showarrow=False, xref="x", yref="y", yanchor="bottom", yshift=10,
                   bgcolor="rgba(255,255,255,0.92)", font=LABEL_FONT, borderpad=1) for x, y, t in zip(xi, yi, ti)]
    tr.append(dict(type="scatter", x=xl, y=yl, mode="markers+text", text=tl, textposition="bottom center", hovertext=hl,
                   hoverinfo="text", customdata=nl, unselected=keep, marker=dict(size=12, color=OKABE_ITO["orange"]),
                   name=f"leaf: weight w, output added to {sym}" + (f" ({key})" if key else ""), textfont=LABEL_FONT))
    depth = int(max(p[1] for p in pos.values()))
    lines = 1 + max((len(v) for v in vals), default=0)  # text lines under a leaf
    below = 0.25 + 0.2 * lines  # room under the deepest leaves for their labels (in levels)
    layout = dict(xaxis=dict(visible=False, range=[-0.8, counter[0] - 0.2]),
                  yaxis=dict(visible=False, range=[-depth - below, 0.7]), annotations=labels)
    fig = make_figure(tr, layout, title=title, height=int(200 + 120 * depth + 40 * max(0, lines - 2)))
    # the axes are hidden: the legend sits right under the plot (no blank band where the x-axis title would be)
    fig.update_layout(legend=dict(y=0.0, yanchor="top"))
    return fig


def node_details(trace, r: int, node: int, feature_names=None) -> pd.DataFrame:
    """One node of the tree of round r as a two-column table (what, value): its kind and depth, the path of
    conditions from the root, its weight and rows, for a split its feature, threshold and gains, for a leaf its
    output per coordinate (the law's η or η*, before the learning rate).  The tree view shows it for the node a
    click selects.  KeyError when round r has no node `node`."""
    df = round_nodes(trace, r)
    if node not in df.index:
        raise KeyError(f"round {r} has no node {node}")
    names = list(feature_names or trace_feature_names(trace))
    leaf = dict(zip(df.index, _is_leaf(df)))
    parent = {}
    for i, row in df.iterrows():
        if not leaf[i]:
            parent[int(row["left"])] = (int(i), "≤")
            parent[int(row["right"])] = (int(i), ">")

    def fname(i):
        f = int(df.at[i, "feature"]) if "feature" in df else 0
        return names[f] if 0 <= f < len(names) else f"x{f + 1}"

    path, i = [], int(node)
    while i in parent:
        p, op = parent[i]
        path.append(f"{fname(p)} {op} {float(df.at[p, 'threshold']):.4g}")
        i = p
    rows = [("node", f"{'leaf' if leaf[node] else 'split'} {int(node)} of round {int(r)}"),
            ("depth", str(int(df.at[node, "depth"])) if "depth" in df else str(len(path))),
            ("path from the root", " and ".join(reversed(path)) or "the root (all rows)")]
    if "weight" in df:
        rows.append(("weight (rows)", f"{float(df.at[node, 'weight']):.4g}"))
    if "n_samples" in df:
        rows.append(("training rows", str(int(df.at[node, "n_samples"]))))
    if leaf[node]:
        vnames, sym = leaf_value_names(trace)
        vals = df.at[node, "value"] if "value" in df else ()
        rows += [(f"output added to {sym}: {vnames[j] if j < len(vnames) else f'{sym}{j + 1}'}", f"{float(a):+.4g}")
                 for j, a in enumerate(vals)]
    else:
        gname = str(trace.attrs.get("gain_name", "Gain^reg"))
        rows.append(("split", f"{fname(node)} ≤ {float(df.at[node, 'threshold']):.4g} goes left"))
        for col, label in (("gain", gname), ("gain_ent", "Gain^ent")):
            if col in df and np.isfinite(float(df.at[node, col])):
                rows.append((label, f"{float(df.at[node, col]):.4g}"))
    return pd.DataFrame(rows, columns=["node detail", "value"])


def top_splits(trace, k: int = 15, feature_names=None) -> pd.DataFrame:
    """The k internal nodes with the largest gain over all rounds (round, node, depth, feature, threshold, gains).

    The split gain's column is named after the trace's `gain_name` (Gain^reg, or Gain^NGD for the natural law).
    """
    gname = str(trace.attrs.get("gain_name", "Gain^reg"))
    rows = []
    names = list(feature_names or trace_feature_names(trace))
    feat = trace["node_feature"].values
    gain = trace["node_gain"].values
    reg = trace["node_gain_reg"].values if "node_gain_reg" in trace else gain
    ent = trace["node_gain_ent"].values if "node_gain_ent" in trace else np.full_like(gain, np.nan)
    thr = trace["node_threshold"].values
    dep = trace["node_depth"].values if "node_depth" in trace else np.zeros_like(feat)
    w = trace["node_weight"].values if "node_weight" in trace else np.full_like(gain, np.nan)
    ok = np.isfinite(gain) & (feat >= 0)
    if "node_is_leaf" in trace:
        ok &= trace["node_is_leaf"].values == 0
    r_idx, n_idx = np.nonzero(ok)
    order = np.argsort(-gain[r_idx, n_idx], kind="stable")[:k]
    for o in order:
        r, n = r_idx[o], n_idx[o]
        f = int(feat[r, n])
        rows.append({"round": int(r), "node": int(n), "depth": int(dep[r, n]),
                     "feature": names[f] if 0 <= f < len(names) else f"x{f + 1}", "threshold": float(thr[r, n]),
                     "weight": float(w[r, n]), gname: float(reg[r, n]), "Gain^ent": float(ent[r, n])})
    return pd.DataFrame(rows).replace([np.inf, -np.inf], np.nan)


def gain_scatter_figure(trace, *, current=None, title=None) -> go.Figure:
    """The split gain (the trace's gain_name) against Gain^ent of every split of every round, coloured by round."""
    gname = str(trace.attrs.get("gain_name", "Gain^reg"))
    reg = trace["node_gain_reg"].values if "node_gain_reg" in trace else trace["node_gain"].values
    ent = trace["node_gain_ent"].values if "node_gain_ent" in trace else np.full_like(reg, np.nan)
    rr = np.repeat(trace["round"].values[:, None], reg.shape[1], axis=1)
    ok = np.isfinite(reg) & np.isfinite(ent)
    if "node_is_leaf" in trace:
        ok &= trace["node_is_leaf"].values == 0
    tr = [dict(type="scatter", x=reg[ok], y=ent[ok], mode="markers", name="splits (colour: round)",
               marker=dict(color=rr[ok], colorscale="Cividis", size=7, opacity=0.75,
                           colorbar=dict(title=dict(text="round"), thickness=12)),
               hovertext=[f"round {int(a)}" for a in rr[ok]], hoverinfo="text+x+y")]
    if current is not None:
        c = ok & (rr == int(current))
        tr.append(dict(type="scatter", x=reg[c], y=ent[c], mode="markers", name=f"round {int(current)}",
                       marker=dict(color="rgba(0,0,0,0)", size=13, line=dict(color=ROLE_COLORS["marker"], width=2))))
    # short axis titles: the chart is half the page wide (about 290 px at 1024x768); the explainer says what they mean
    layout = dict(xaxis=dict(title=dict(text=f"{gname} (variance reduction)")),
                  yaxis=dict(title=dict(text="Gain^ent (nats per obs.)")))
    return make_figure(tr, layout, title=title, height=420)


def importance_shares(trace) -> np.ndarray:
    """(rounds + 1, features): each feature's share of the split gain summed over the rounds up to each round."""
    fg = trace["node_gain"].values
    feat = trace["node_feature"].values
    ok = np.isfinite(fg) & (feat >= 0)
    if "node_is_leaf" in trace:
        ok &= trace["node_is_leaf"].values == 0
    p = int(trace.sizes.get("feature", max(int(feat.max()) + 1, 1)))
    per_round = np.zeros((fg.shape[0], p))
    for j in range(p):
        per_round[:, j] = np.where(ok & (feat == j), fg, 0.0).sum(axis=1)
    cum = np.cumsum(per_round, axis=0)
    return cum / np.maximum(cum.sum(axis=1, keepdims=True), 1e-300)


def importance_figure(trace, feature_names=None, *, current=None, title=None) -> go.Figure:
    """Cumulative gain-based feature importance over rounds (share of the total split gain per feature)."""
    share = importance_shares(trace)
    p = share.shape[1]
    names = list(feature_names or trace_feature_names(trace) or [f"x{j + 1}" for j in range(p)])
    rounds = trace["round"].values
    tr = [dict(type="scatter", x=rounds, y=share[:, j], mode="lines", stackgroup="one",
               name=plot_text(names[j]) if j < len(names) else f"x{j + 1}",
               line=dict(color=COORD_COLORS[j % len(COORD_COLORS)], width=1))
          for j in range(p)]
    layout = dict(xaxis=dict(title=dict(text="boosting round")),
                  yaxis=dict(title=dict(text="share of cumulative split gain"), range=[0, 1]))
    if current is not None:
        layout["shapes"] = [dict(type="line", xref="x", yref="paper", x0=int(current), x1=int(current), y0=0, y1=1,
                                 line=dict(color=ROLE_COLORS["marker"], dash="dash"))]
    return make_figure(tr, layout, title=title, height=380)


def leafwise_nll(family, y, T, pred_mean) -> float:
    """Mean NLL when every row gets its leaf's mean of T(y) as eta* (projected into the mean domain)."""
    m = family.project_mean(np.asarray(pred_mean, dtype=float))
    eta = family.to_natural(m)
    return float(np.mean(family.nll(y, eta)))


def criterion_comparison_figure(x, T, preds: dict, *, stat_names, x_label="x", title=None, steps=True) -> go.Figure:
    """Leaf means of T(y) over x for standalone trees grown with different criteria (one panel per statistic)."""
    x = np.asarray(x, dtype=float)
    o = np.argsort(x, kind="stable")
    K = T.shape[1]
    cols = min(K, 3)
    layout, ref = axis_grid(1, cols, titles=[f"leaf mean of {s}" for s in math_names(stat_names[:cols])], hspace=0.08)
    colors = {"variance": OKABE_ITO["blue"], "entropy": OKABE_ITO["vermillion"]}
    tr = []
    for j in range(cols):
        tr.append(dict(type="scatter", x=x[o], y=T[o, j], mode="markers",
                       marker=dict(color=ROLE_COLORS["data"], size=4, opacity=0.4),
                       name="T(y) of the rows", showlegend=j == 0, **ref(1, j + 1)))
        for crit, P in preds.items():
            col = colors.get(crit, "#555")
            tr.append(dict(type="scatter", x=x[o], y=np.asarray(P)[o, j], mode="lines" if steps else "markers",
                           line=dict(color=col, width=2.5, shape="hv"), marker=dict(color=col, size=5),
                           name=f'criterion="{crit}"', showlegend=j == 0, **ref(1, j + 1)))
        layout[axis_key(ref(1, j + 1), "x")]["title"] = dict(text=plot_text(x_label))
    return make_figure(tr, layout, title=title, height=400)
