"""The Lab's fit settings as widgets, shared by the Lab, Evolution and Split-gains pages, and the fits they show.

`config_widgets` draws the settings (values in the URL) and returns the `distviz.ui.fits.FitConfig` they name;
`fit_model` fits it through `distviz.ui.fits.fit_result` (one fit per configuration across sessions, within the
server's work budget and concurrency cap: distviz.ui.jobs) with a progress bar and shows the fit's warnings.
What an algorithm offers comes from the registry (distviz.ui.algorithms); no maths here.
"""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from distviz.errors import DataError

from . import algorithms as registry
from .fits import (
    DATASETS,
    DOMAIN_OPTIONS,
    LR_OPTIONS,
    MAX_UPLOAD_MB,
    MAX_UPLOAD_ROWS,
    N_OPTIONS,
    ROUNDS_OPTIONS,
    FitConfig,
    FitResult,
    available_datasets,
    data_hash,
    datasets_help,
    default_learning_rate,
    describe_config,
    fit_result,
    fit_warnings,
    load_data,
    parse_csv,
)
from .params import option_text
from .state import bound
from .uploads import content_hash

PAGE = "lab"


#: What a page shows while the server times its speed for the fit budget (distviz.ui.costs.speed_known).
SPEED_WAIT = ("Timing this server's speed for the fit budget … After an installation the first start also compiles "
              "the fit kernels, once (a minute or two); later starts load them from the cache.")


def fit_model(cfg: FitConfig, upload: bytes | None = None, *, progress_container=None) -> FitResult:
    """The fitted model for `cfg`: from the store, from another session's running fit of the same settings,
    or fitted now (within the server's budget and concurrency cap) with a progress bar in `progress_container`;
    the fit's warnings are shown on the page."""
    from .costs import machine_speed, speed_known

    if not speed_known():   # the fit budget's speed timing: at a server's first start it waits for the kernels
        with st.spinner(SPEED_WAIT):
            machine_speed()
    hit = fit_result(cfg, upload, progress_container=progress_container)
    show_fit_warnings(hit)
    return hit


def show_fit_warnings(res: FitResult) -> None:
    """One st.warning per sentence of fit_warnings(res), shown literally (a stop reason comes from the model's trace)."""
    from .safe_text import show_warning

    for msg in fit_warnings(res):
        show_warning(msg, icon=":material/warning:")


# ---------------------------------------------------------------------------------------------- widgets
def upload_column_pickers(box, cols: list, digest: str) -> tuple[tuple, str]:
    """The x / y column pickers of an uploaded table; keyed on its content hash, so a new file starts from
    sensible defaults (x: the first numeric column, y: the last) instead of the old file's vanished names."""
    for k in [k for k in st.session_state if str(k).startswith((f"{PAGE}.xcols.", f"{PAGE}.ycol."))]:
        if not str(k).endswith("." + digest):
            del st.session_state[k]   # pickers of an earlier upload
    x_cols = tuple(box.multiselect("x columns", cols, default=cols[:1], key=f"{PAGE}.xcols.{digest}"))
    y_col = box.selectbox("y column", cols, index=len(cols) - 1, key=f"{PAGE}.ycol.{digest}")
    return x_cols, str(y_col)


def config_widgets(box, *, algorithms=None, show_data=True, own: dict | None = None,
                   own_prefix: str = "s", fold_more: str | None = None) -> tuple[FitConfig, bytes | None]:
    """Draw the fit settings in `box` (normally the sidebar); values live in the URL. Returns (config, upload).

    Every setting is a widget bound to the URL parameter of its name (distviz.ui.state.bound).  `own` maps setting
    names ("p", "algo", "rounds") to a page's own default: that setting then lives in the URL parameter
    `own_prefix + name` instead of the Lab's, so the page can start elsewhere without changing the Lab's state
    (the Split gains page: p = 3 with two noise features, NGD, 50 rounds).  With `fold_more` (a session key) the
    knobs after family, data and algorithm (rows, features, seed, rounds, rate, depth, particles, domain) sit in a
    "More settings" popover (drawn while closed too), summarised in one line while it is closed.
    """
    own = dict(own or {})

    def _par(name, default):
        return (own_prefix + name, own[name]) if name in own else (name, default)

    from .explorer import families_help

    fam, K = family_widgets(box, help=families_help("The output distribution p(y | x) that is boosted."))
    upload, x_cols, y_col, n, seed, p = None, (), "", 500, 0, 1
    dataset = "synthetic"
    if show_data:
        dkeys = available_datasets()
        dataset = box.selectbox("Data set", dkeys, format_func=option_text("data"), persist_state="session",
                                **bound("data"), help=datasets_help(dkeys))
        box.caption(DATASETS[dataset][1])
        if dataset == "upload":
            up = box.file_uploader(f"CSV file (up to {MAX_UPLOAD_MB} MB, {MAX_UPLOAD_ROWS} rows)", type=["csv", "txt", "tsv"],
                                   key=f"{PAGE}.upload", help="Parsed as a plain table of numbers; nothing in it is executed.")
            if up is not None:
                upload = up.getvalue()
                try:
                    cols = list(parse_csv(upload).columns)
                except DataError:
                    cols = []   # load_data raises the same sentence on the page
                if cols:
                    x_cols, y_col = upload_column_pickers(box, cols, content_hash(upload))
    offered = list(algorithms or registry.keys())
    algos = [a for a in offered if registry.compatible(a, fam) is None]   # a pair that cannot be fitted is never offered
    algo_name, algo_default = _par("algo", registry.DEFAULT if registry.DEFAULT in algos else algos[0])
    algo = box.selectbox("Algorithm", algos, index=algos.index(algo_default if algo_default in algos else algos[0]),
                         format_func=option_text("algo"), persist_state="session", **bound(algo_name),
                         help="The boosting law (and the chart it adds trees in) or a baseline. "
                              + registry.not_offered(offered, fam))
    spec = registry.get(algo)
    box.caption(spec.help)
    gp = not spec.boosted
    more, folded, summary = box, False, box
    if fold_more and not (gp and not (show_data and dataset == "synthetic")):   # (a GP on a real set: nothing to fold)
        summary = box.empty()
        # the knobs are drawn inside the popover even while it is closed: they keep their values and addresses, so
        # the settings are the widgets' own state, and the browser mounts them only when it opens (a first paint
        # loads none of their components: benchmarks/app.py)
        more = box.popover(spec.more_label(), key=fold_more, on_change="rerun", width="stretch")
        folded = not more.open
    if show_data and dataset == "synthetic":
        n = more.select_slider("Rows n", N_OPTIONS, value=500, persist_state="session", **bound("n"),
                               help="Number of simulated (x, y) pairs" + (" (20% are held out for validation)."
                                                                          if spec.holds_out_validation
                                                                          else ", all used for the fit."))
        p_name, p_default = _par("p", 1)
        p = more.slider("Input features p", 1, 5, p_default, persist_state="session", **bound(p_name),
                        help="x1 drives the truth; x2..xp are pure noise (watch the trees ignore them).")
        # a whole number typed as a float: Streamlit's binding of an integer input raises on ?seed=inf; a float
        # input shows its default for any address value it cannot take (and ?seed=3.7 is seed 4, as it is shown)
        seed = more.number_input("Random seed", 0.0, 10_000.0, 0.0, step=1.0, format="%.0f", persist_state="session",
                                 **bound("seed"), help="Seed of the simulation and of the fit.")
    # the sparse GP is not boosted: it has no rounds, learning rate or trees, so those knobs are not drawn (their
    # values stay in the session for the next boosting algorithm: persist_state)
    rounds_name, rounds_default = _par("rounds", 100)
    rounds = st.session_state.get(rounds_name, rounds_default) if gp else more.select_slider(
        "Boosting rounds", ROUNDS_OPTIONS, value=rounds_default, persist_state="session", **bound(rounds_name),
        help="Number of trees added; more rounds fit closer (and may overfit).")
    lr_default = default_learning_rate(algo, fam)
    prev_default = st.session_state.get(f"{PAGE}._lr_default")
    if prev_default is not None and prev_default != lr_default and st.session_state.get("lr") == prev_default:
        st.session_state["lr"] = lr_default   # the rate follows the per-law default unless the user moved it
    st.session_state[f"{PAGE}._lr_default"] = lr_default
    lr = st.session_state.get("lr", lr_default) if gp else more.select_slider(
        "Learning rate ν", LR_OPTIONS, value=lr_default, persist_state="session", **bound("lr"),
        help="Shrinkage of every tree: small steps are stabler, large steps faster. Plain GD adds "
             "the raw gradient to η without a metric and diverges on the Normal families unless "
             "ν is small (default 0.01 there; 0.1 elsewhere).")
    depth = st.session_state.get("depth", 3) if gp else more.slider(
        "Tree depth", 1, 6, 3, persist_state="session", **bound("depth"),
        help="Depth of every regression tree (2^depth leaves at most).")
    n_particles = 10
    if spec.has_particles:
        n_particles = more.slider("Particles per input N", 2, 30, 10, persist_state="session", **bound("particles"),
                                  help="WGBoost approximates each input's posterior by N particles.")
    domain = "backtrack"
    if "domain" in spec.url_params:
        domain = more.selectbox("When a step leaves the domain", list(DOMAIN_OPTIONS), format_func=option_text("domain"),
                                persist_state="session", **bound("domain"),
                                help="A tree leaf adds one step to rows with different current iterates, so some rows "
                                     "can leave the domain (e.g. a negative variance). 'Shorten' halves their step until "
                                     "they go at most half way to the boundary; 'project' maps them onto the boundary "
                                     "(within 1e-6), which can make the NLL explode: try MGD, Normal, p = 3.")
    cfg = FitConfig(family=fam, K=int(K), dataset=dataset, n=int(n), p=int(p), seed=int(round(seed)), algorithm=algo,
                    n_estimators=int(rounds), learning_rate=float(lr), max_depth=int(depth), n_particles=int(n_particles),
                    domain=str(domain), upload_hash=data_hash(upload), x_cols=tuple(x_cols), y_col=str(y_col))
    if folded:
        summary.caption(describe_config(cfg) + " — open **More settings** to change them.")
    elif gp:
        more.caption("The sparse GP is not boosted: rounds, learning rate and tree depth do not apply "
                     "(20 inducing points, at most 200 L-BFGS iterations).")
    return cfg, upload


def family_widgets(box, *, help: str, k_label: str = "Classes K") -> tuple[str, int]:
    """The family selector (and the number of classes K of the categorical family), bound to ?family= and ?K=:
    one pair of widgets that the Lab's settings and the Family explorer share (drawn by app.py: `draw_settings`)."""
    from distviz import families

    names = families.available()
    fam = box.selectbox("Family", names, index=names.index("normal"), format_func=option_text("family"),
                        persist_state="session", **bound("family"), help=help)
    K = 3
    if fam == "categorical":
        K = box.slider(k_label, 2, 6, 3, persist_state="session", **bound("K"),
                       help="Number of classes of the categorical family (K - 1 natural parameters: logits against "
                            "the last class).")
    return fam, int(K)


def folded_config_widgets(box, page: str, **kw) -> tuple[FitConfig, bytes | None]:
    """`config_widgets` inside a popover of `box`, with a one-line summary of the settings while it is closed.

    The widgets are drawn while it is closed too (they hold the settings, which are in the URL and shared with the
    Lab); the browser mounts them only when the popover opens, so a page's first paint loads none of their
    components (an expander mounts its widgets folded).  An uploaded file stays the page's data while the popover
    is closed (its widget keeps the file), and the closed popover's summary line says so.
    """
    key = f"{page}.settings_open"
    exp = box.popover("Fit settings (shared with the Lab)", key=key, on_change="rerun", width="stretch")
    cfg, upload = config_widgets(exp, **kw)   # drawn while closed too: the widgets hold the settings
    if not exp.open:
        box.caption(describe_config(cfg) + " — open **Fit settings** to change them.")
    return cfg, upload


_SETTINGS = "_lab.settings"   # this run's (FitConfig, upload) of `draw_settings`, read by the page (`settings`)


def draw_settings(page: str) -> None:
    """Draw, from app.py, the sidebar settings that several pages share, for the page `page` (its URL path) shows:
    the Lab's fit settings on the Lab, Evolution and Split gains, the family on the Family explorer.

    Drawn by the main script, they are the same widgets on every page (Streamlit tells a page's widgets apart by the
    script that draws them), so a setting chosen on one page holds on the others and stays in their addresses.
    The page reads them with `settings`.
    """
    from . import algorithms as reg
    from .explorer import families_help
    from .fits import SPLIT_OWN

    st.session_state.pop(_SETTINGS, None)
    out: tuple
    if page == "":
        st.sidebar.header("Fit settings")
        out = config_widgets(st.sidebar, fold_more=f"{PAGE}.more_open")
    elif page == "evolution":
        out = folded_config_widgets(st.sidebar, "evo")
    elif page == "split_gains":
        out = folded_config_widgets(st.sidebar, "split", algorithms=reg.keys(lambda a: a.offers_split_gains),
                                    own=SPLIT_OWN)
    elif page == "explorer":
        st.sidebar.subheader("Family explorer")
        out = family_widgets(st.sidebar, help=families_help("The output distribution p(y | η) to explore."),
                             k_label="Number of classes K")
    else:
        return
    st.session_state[_SETTINGS] = out


def settings():
    """What `draw_settings` drew for this run's page: (FitConfig, upload) on the Lab, Evolution and Split gains,
    (family, K) on the Family explorer."""
    return st.session_state[_SETTINGS]


@st.cache_resource(max_entries=16, show_spinner=False)
def _standalone_trees(key: tuple, _cfg: FitConfig, _upload, depth: int):
    from distviz import families
    from distviz.trees import HistTree
    from distviz.viz.trees import leafwise_nll

    data = load_data(_cfg, _upload)
    fam = families.get(_cfg.family, **_cfg.family_kwargs())
    y = fam.check_y(data.y)
    T = np.asarray(fam.sufficient_stats(y), dtype=float)
    out = {}
    for crit in ("variance", "entropy"):
        t0 = time.perf_counter()
        tree = HistTree(max_depth=int(depth), criterion=crit, min_weight_leaf=5.0).fit(data.X, T, family=fam, T=T)
        secs = time.perf_counter() - t0
        pred = np.asarray(tree.predict(data.X), dtype=float)
        out[crit] = {"pred": pred, "nll": leafwise_nll(fam, y, T, pred), "leaves": int(len(tree.leaf_ids_)),
                     "seconds": secs, "tree": tree}
    return data, T, fam, out


def standalone_trees(cfg: FitConfig, upload=None, depth: int = 3):
    """Two standalone HistTrees on T(y) of the Lab's data: criterion="variance" vs criterion="entropy" (cached)."""
    return _standalone_trees((cfg.key(), int(depth)), cfg, upload, int(depth))
