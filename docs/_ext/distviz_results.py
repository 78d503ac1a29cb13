"""Sphinx extension: the results pages, written at build time from the studies' shipped output.

Before Sphinx reads any page (``builder-inited``) it writes ``results/generated/*.rst`` and their figures from

* the precomputed drifter comparison (``distviz/data/sample/drifters_comparison_default.nc``, written by
  ``scripts/make_drifter_sample.py``), read by :func:`distviz.experiments.drifters.load_precomputed`, which refuses
  a file made from another sample or with other settings;
* the precomputed out-of-distribution demo (``distviz/data/sample/posterior_ood_default.json``, written by
  ``scripts/make_posterior_ood_default.py``), read as JSON.

and, one page per study, from the archived study runs ``results/*.json`` at the repository's root (written by
``scripts/archive_study.py``, read by :func:`distviz.experiments.archive.load_records`; the tables are those of
:mod:`distviz.experiments.result_tables`, the same code that writes the README's tables).

Every number on those pages is formatted from these files; none is typed by hand. Run times recorded in the files
(``fit_s``, ``seconds``) are left out: timings belong to the benchmarks' output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

#: the metrics of a drifter table, in the study's order, with their column headings
DRIFTER_COLUMNS = (("NLL", "NLL (mean)"), ("NLL_median", "NLL (median)"), ("RMSE", "RMSE"),
                   ("PR90_cov", "90 % region coverage"), ("PR90_area", "90 % region area"), ("n", "rows"))
#: largest shipped result file read whole (the OOD demo's scores are a few tens of kB)
MAX_JSON_BYTES = 16 * 1024**2


def _fmt(v, digits: int = 4) -> str:
    """A table cell: integers as they are, floats to `digits` significant figures, missing values as an en dash."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "\u2013"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:,.0f}"
    return str(v)


def list_table(header: list[str], rows: list[list[str]], *, title: str = "", widths: str = "") -> str:
    """An rst ``list-table`` with a header row (class ``distviz-results``: right-aligned tabular figures)."""
    out = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", "   :class: distviz-results"]
    if widths:
        out.append(f"   :widths: {widths}")
    out.append("")
    for row in [header, *rows]:
        out.append(f"   * - {row[0]}")
        out.extend(f"     - {c}" for c in row[1:])
    return "\n".join(out) + "\n"


def _heading(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def drifter_table(table: dict) -> str:
    """One row per method of a comparison table ({method: {metric: value}}), in the columns of DRIFTER_COLUMNS."""
    rows = [[m, *(_fmt(v.get(k)) for k, _ in DRIFTER_COLUMNS)] for m, v in table.items()
            if isinstance(v, dict) and "NLL" in v]
    return list_table(["method", *(h for _, h in DRIFTER_COLUMNS)], rows)


def drifters_page(out: Path) -> None:
    """results/generated/drifters.rst: the shipped comparison's tables, settings and a map of the NLL gap."""
    from distviz.experiments.drifters import load_precomputed, precomputed_path

    res = load_precomputed()
    if res is None:
        raise RuntimeError(f"{precomputed_path()} is missing or stale (made from another sample or with other "
                           "settings); rerun scripts/make_drifter_sample.py")
    info = res.info
    text = [_heading("Ocean drifters: multivariate vs independent NGBoost", "=")]
    text.append(
        "The drifter study (``distviz study drifters --data sample``) on the synthetic North-Atlantic sample that "
        "ships with distviz: the 2-D velocity of a drifter predicted from winds, wind stress, the previous velocity, "
        "position and day of year. ``NGB`` fits a bivariate Normal with full covariance (multivariate NGBoost), "
        "``IndepNGB`` two independent Normals; the pools and mixtures average the two, with one weight for the whole "
        "basin (``global``) or one per region. ``Oracle`` is the true conditional law, known because the sample is "
        "simulated.\n\n"
        "The tables below are written when this site is built, from the precomputed comparison shipped as "
        f"``distviz/data/sample/{precomputed_path().name}`` (the app's first view of its Drifters page).\n")
    text.append(_heading("Test scores", "-"))
    text.append(f"Units: {info.get('units', '')}. Lower NLL, RMSE and area are better; the coverage of a 90 % region "
                "should be 0.9.\n")
    text.append(drifter_table(res.table))
    for name, sub in res.subsets.items():
        text.append(_heading(f"Subset: {name.replace('_', ' ')} ({_fmt(sub.get('n'))} test rows)", "-"))
        text.append(drifter_table(sub))
    av = res.averaging
    rows = [[k, _fmt(v.get("w_global")), _fmt(v.get("w_region_mean")), _fmt(v.get("n_regions_own_weight")),
             str(v.get("kind", ""))] for k, v in av.items() if isinstance(v, dict)]
    if rows:
        text.append(_heading("Averaging NGB and IndepNGB", "-"))
        text.append("Weight of NGB in each average, chosen on the validation rows.\n")
        text.append(list_table(["average", "global weight", "mean regional weight", "regions with own weight", "kind"],
                               rows))
        gaps = [[k.removesuffix("_minus_best"), _fmt(av[k]), _fmt(av.get(k + "_se")),
                 _fmt(av.get(k.removesuffix("_minus_best") + "_beats_both"))]
                for k in av if k.endswith("_minus_best")]
        if gaps:
            text.append(f"Test NLL of each average minus that of the better single model (best single NLL "
                        f"{_fmt(av.get('best_single_NLL'))}); the standard error is clustered by drifter.\n")
            text.append(list_table(["average", "NLL difference", "standard error", "beats both"], gaps))
    text.append(_heading("Settings", "-"))
    settings = {k: info.get(k) for k in ("n_rows", "n_drifters", "n_train", "n_val", "n_test", "rounds",
                                         "learning_rate", "patience", "max_depth", "seed") if k in info}
    text.append(list_table(["setting", "value"], [[k.replace("_", " "), _fmt(v)] for k, v in settings.items()]))
    text.append(f"Features: {', '.join('``' + f + '``' for f in info.get('features', []))}.\n")
    fig = _drifter_map(res, out.parent)
    if fig:
        text.append(_heading("Where multivariate NGBoost helps", "-"))
        text.append(f".. figure:: {fig}\n   :width: 90%\n   :alt: map of the NLL difference per 2-degree bin\n\n"
                    "   Test NLL of IndepNGB minus that of NGB per 2-degree bin (positive: the full covariance "
                    "predicts better), from the binned maps of the same file.\n")
    out.write_text("\n".join(text))


def _drifter_map(res, folder: Path) -> str | None:
    """A map of nll_IndepNGB - nll_NGB over the bins (PNG beside the page); None when the file lacks either map."""
    b = res.binned
    if not {"nll_NGB", "nll_IndepNGB"} <= set(b.data_vars):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    d = (b["nll_IndepNGB"] - b["nll_NGB"]).values
    lim = float(np.nanpercentile(np.abs(d), 95)) if np.isfinite(d).any() else 1.0
    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    m = ax.pcolormesh(b["lon_edge"].values, b["lat_edge"].values, d, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(m, ax=ax, label="NLL(IndepNGB) - NLL(NGB), nats")
    ax.set(xlabel="longitude", ylabel="latitude", aspect="equal")
    name = "drifters_nll_gap.png"
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


def _read_ood() -> dict:
    """The shipped OOD result as a dict, with its keys and types checked."""
    from distviz.data.paths import read_bounded, sample_file

    path = sample_file("posterior_ood_default.json")
    res = json.loads(read_bounded(path, MAX_JSON_BYTES))
    for k in ("accuracy", "pr_auc"):
        if not isinstance(res.get(k), (int, float)):
            raise RuntimeError(f"{path}: '{k}' is not a number")
    for k in ("score_in", "score_out"):
        if not (isinstance(res.get(k), list) and all(isinstance(v, (int, float)) for v in res[k])):
            raise RuntimeError(f"{path}: '{k}' is not a list of numbers")
    return res


def ood_page(out: Path) -> None:
    """results/generated/posterior_ood.rst: accuracy and OOD PR-AUC of categorical WGBoost, with its score histogram."""
    import numpy as np

    res = _read_ood()
    s = res.get("settings", {})
    text = [_heading("Out-of-distribution detection with Wasserstein boosting", "=")]
    text.append(
        "Categorical Wasserstein gradient boosting (:class:`distviz.estimators.WGBoost`) on the UCI image-segment data "
        "with the class 'sky' held out of training, as in Section 4.3 of the WGBoost paper. A row's score is "
        ":math:`1 / \\max_j \\mathrm{Var}_n[q_j^n(x)]`, the inverse of the largest variance over its particles of a "
        "class probability: high in distribution, low where the particles disagree. The numbers are read, when this "
        "site is built, from "
        "``distviz/data/sample/posterior_ood_default.json``, the precomputed first view of the app's Posterior page "
        "(written by ``scripts/make_posterior_ood_default.py``).\n")
    text.append(_heading("Scores", "-"))
    rows = [["test accuracy (in-distribution classes)", _fmt(res["accuracy"])],
            ["PR-AUC of the OOD score (held-out class vs test rows)", _fmt(res["pr_auc"])],
            ["training rows", _fmt(res.get("n_train"))], ["test rows", _fmt(res.get("n_test"))],
            ["held-out ('sky') rows", _fmt(res.get("n_ood"))]]
    text.append(list_table(["quantity", "value"], rows, widths="70 30"))
    text.append(_heading("Settings", "-"))
    text.append(list_table(["setting", "value"], [[k.replace("_", " "), _fmt(v)] for k, v in s.items()]))
    if res.get("classes"):
        text.append(f"Classes learnt: {', '.join(res['classes'])}.\n")
    fig = _ood_histogram(res, out.parent)
    text.append(f".. figure:: {fig}\n   :width: 80%\n   :alt: histograms of the OOD score\n\n"
                "   The score of the in-distribution test rows and of the held-out class (log scale); median "
                f"{_fmt(float(np.median(res['score_in'])))} and {_fmt(float(np.median(res['score_out'])))}.\n")
    out.write_text("\n".join(text))


def _ood_histogram(res: dict, folder: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    s_in, s_out = (np.log10(np.maximum(np.asarray(res[k], dtype=float), 1e-12)) for k in ("score_in", "score_out"))
    bins = np.linspace(min(s_in.min(), s_out.min()), max(s_in.max(), s_out.max()), 40)
    fig, ax = plt.subplots(figsize=(7, 3.5), layout="constrained")
    ax.hist(s_in, bins=bins, alpha=0.6, label=f"test rows ({len(s_in)})")
    ax.hist(s_out, bins=bins, alpha=0.6, label=f"held-out class ({len(s_out)})")
    ax.set(xlabel="log10 OOD score", ylabel="rows")
    ax.legend()
    name = "posterior_ood_scores.png"
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


def archived_pages(folder: Path, records=None) -> dict[str, str]:
    """{page name: rst text} of the archived study runs: ``archived`` (an index with a toctree) and one
    ``archived_<study>`` page per study, each table with its protocol, command, date, commit and load."""
    from distviz.experiments.archive import load_records
    from distviz.experiments.result_tables import protocol_note, tables_for

    records = load_records() if records is None else records
    by_study: dict[str, list[dict]] = {}
    for _, rec in records:
        by_study.setdefault(rec["study"], []).append(rec)
    pages = {}
    index = [_heading("Archived study runs", "="),
             "One page per study archived under ``results/`` (one JSON file per run, written by "
             "``scripts/archive_study.py``): its tables beside the paper's published numbers, and each run's "
             "protocol, command line, date, commit and load average. A run labelled *partial* ran part of the "
             "paper's protocol (fewer splits, replications or sizes) and is not the paper's protocol.\n"]
    fig = _uci_figure(by_study.get("wgboost-uci", []), folder)
    if fig:
        index.append(f".. figure:: {fig}\n   :width: 80%\n   :alt: test NLL per split of the archived WGBoost UCI runs\n\n"
                     "   Test NLL of each split of the archived WGBoost UCI runs (dots, one row per run) beside the "
                     "paper's mean and standard deviation over its 20 repeats (bar).\n")
    if by_study:
        index.append(".. toctree::\n   :maxdepth: 1\n\n" + "".join(f"   archived_{k}\n" for k in sorted(by_study)))
    else:
        index.append("No run is archived yet.\n")
    pages["archived"] = "\n".join(index)
    for study, recs in sorted(by_study.items()):
        text = [_heading(f"{study}: archived runs", "=")]
        for cap, header, rows in tables_for(study, recs):
            text.append(_heading(cap, "-"))
            text.append(list_table(header, rows))
        text.append(_heading("Runs", "-"))
        for rec in recs:
            ld = rec["load"]
            text.append(f"* ``{rec['command']}``: {protocol_note(rec)}; started {rec['date']}, commit "
                        f"``{rec['commit'][:12]}``, load average (1, 5, 15 min) {ld.get('start')} at the start and "
                        f"{ld.get('end')} at the end on {ld.get('cpus')} CPUs.\n")
            cfg = ", ".join(f"``{k}={v}``" for k, v in rec["config"].items())
            text.append(f"  Full protocol: {cfg}.\n")
        pages[f"archived_{study}"] = "\n".join(text)
    return pages


def _uci_figure(recs: list[dict], folder: Path) -> str | None:
    """A dot plot of the per-split test NLL of the wgboost-uci records beside the paper's mean +- sd (PNG beside the
    page); None without such records."""
    from distviz.experiments.wgboost import TABLE1

    runs = [r for r in recs if r["result"].get("per_split", {}).get("nll")]
    if not runs:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.45 * len(runs)), layout="constrained")
    labels = []
    for i, rec in enumerate(runs):
        c, nll = rec["config"], rec["result"]["per_split"]["nll"]
        ax.plot(nll, [i] * len(nll), "o", ms=4, alpha=0.6, color="C0", label="this run, per split" if i == 0 else None)
        ref = TABLE1.get(c.get("dataset"))
        if ref:
            ax.errorbar([ref[0][0]], [i + 0.25], xerr=[ref[0][1]], fmt="s", color="C3", ms=5, capsize=3,
                        label="paper: mean \u00b1 sd" if i == 0 else None)
        labels.append(f"{c.get('dataset')} ({c.get('split_source', 'hla')}, {c.get('protocol')})")
    ax.set_yticks(range(len(runs)), labels)
    ax.set(xlabel="test NLL (nats)")
    ax.invert_yaxis()
    fig.legend(loc="outside upper center", ncols=2, fontsize=8)
    name = "archived_uci_nll.png"
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name


PAGES = {"drifters": drifters_page, "posterior_ood": ood_page}


def write_pages(app) -> None:
    """builder-inited: write every results page into ``results/generated`` (rewritten only when its text changed,
    so that an unchanged page is not read again)."""
    folder = Path(app.srcdir) / "results" / "generated"
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in PAGES.items():
        tmp = folder / f".{name}.rst.new"
        make(tmp)
        dest = folder / f"{name}.rst"
        if dest.exists() and dest.read_text() == tmp.read_text():
            tmp.unlink()
        else:
            tmp.replace(dest)
    for name, text in archived_pages(folder).items():
        dest = folder / f"{name}.rst"
        if not (dest.exists() and dest.read_text() == text):
            dest.write_text(text)


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
