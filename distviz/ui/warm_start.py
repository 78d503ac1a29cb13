"""Warm start of the app's server: the fits a class opens first are in the result store before anyone clicks.

When ``distviz app`` starts, a background thread fits, one at a time, the default view of every page that draws a
fit (Lab and Evolution, Split gains, the Posterior page's conditional density) and the view of every lesson step's
"show me" link, with the Evolution geometry panel's MGD and NGD companions where a step opens that panel.  Each fit
goes through the same path as a page's (`distviz.ui.fits.fit_result`): the fit governor of distviz.ui.jobs, its CPU
deadline, and the process-wide result store.  So a session that opens one of these views while the warm start is
still fitting it joins the running fit instead of starting a second one, and a session that asks for another fit
waits for at most the one warm fit in progress (the governor runs ``DISTVIZ_MAX_CONCURRENT_FITS`` fits at a time;
the warm start takes one slot at a time).  The first fits load numba's compiled kernels from the on-disk cache
(compiling them where the cache is empty), so no student's click pays for that either.

The order is the order a class meets the views: the Lab's default, then the lessons step by step, then the other
pages' defaults.  Last, the figures of the Lab's, Evolution's (every round) and Split gains' (every round's tree)
default views are built into the figures every session shares (distviz.ui.shared_views), so a class scrubbing the
default fit never waits for a figure and each server's first page view costs what any other does.
``distviz app --no-warm-start`` or ``DISTVIZ_WARM_START=0`` switches it off (the test suite does,
for the servers it starts).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from distviz.errors import DistvizError

__all__ = ["ENV", "FIRST_SESSION_MODULES", "WarmReport", "enabled", "freeze_heap", "import_first_session_modules",
           "start_warm_start", "warm_configs", "warm_start", "warm_views"]

log = logging.getLogger("distviz.ui.warm_start")

#: the environment variable that switches the warm start off ("0", "false", "no" or "off")
ENV = "DISTVIZ_WARM_START"
#: the tab of the Evolution page whose panel fits the MGD and NGD companions of the page's fit
GEOMETRY_VIEW = "Geometry: η vs η* paths"


def enabled() -> bool:
    """False when :data:`ENV` says "0", "false", "no" or "off" (any case); True otherwise."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def warm_views(lessons=None) -> list[tuple[str, dict]]:
    """(page, URL parameters) of the views to warm, in the order a class meets them: the Lab's default view, every
    step of `lessons` (default: the shipped lessons that load), then the Split-gains and Posterior defaults."""
    if lessons is None:
        from .lessons import load_lessons

        lessons, _ = load_lessons()
    views: list[tuple[str, dict]] = [("lab", {})]
    views += [(step.page, dict(step.params)) for lesson in lessons for step in lesson.steps]
    views += [("split_gains", {}), ("posterior", {})]
    return views


def warm_configs(views: list[tuple[str, dict]]) -> list:
    """The distinct fit settings (FitConfig) of `views`, in order: each view's fit as its page reads the parameters
    (`distviz.ui.lesson_check.page_fit_config`), then, for an Evolution view with the geometry panel open, the same
    settings fitted by MGD and NGD.  Views that draw no such fit, or whose parameters no page accepts, are skipped."""
    from .algorithms import GEOMETRY_PAIR
    from .lesson_check import page_fit_config

    out: dict[Any, Any] = {}
    for page, params in views:
        try:
            cfg = page_fit_config(page, params)
        except DistvizError as exc:
            log.info("warm start skips the %s view %r: %s", page, params, exc)
            continue
        if cfg is None:
            continue
        cfgs = [cfg]
        if page == "evolution" and params.get("view") == GEOMETRY_VIEW:
            cfgs += [cfg.with_algorithm(a) for a in GEOMETRY_PAIR if a != cfg.algorithm]
        for c in cfgs:
            out.setdefault(c.key(), c)
    return list(out.values())


class _Quiet:
    """A page container that draws nothing: the warm start's fits have no page to show their progress on."""

    def empty(self) -> _Quiet:
        return self

    def info(self, *args, **kwargs) -> None:
        return None

    def progress(self, *args, **kwargs) -> None:
        return None


@dataclass
class WarmReport:
    """What a warm start did: fits made or found in the store, the sentences of those that failed, wall seconds."""

    fits: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    figures: int = 0   #: views whose shared figures were built (distviz.ui.shared_views.warm_figures)


def warm_start(configs=None, *, stop: threading.Event | None = None) -> WarmReport:
    """Fit every FitConfig of `configs` (default: ``warm_configs(warm_views())``) one after another into the result
    store, through the fit governor; stop early when `stop` is set.  A fit that fails is reported, never raised."""
    from .fits import fit_result

    t0 = time.perf_counter()
    report = WarmReport()
    for cfg in warm_configs(warm_views()) if configs is None else configs:
        if stop is not None and stop.is_set():
            break
        try:
            fit_result(cfg, progress_container=_Quiet())
            report.fits += 1
        except DistvizError as exc:
            report.failed.append(f"{cfg.algorithm} on {cfg.dataset} ({cfg.family}): {exc}")
        except Exception:  # noqa: BLE001 - a warm-up must never take the server down; the log keeps the traceback
            log.exception("warm start: the fit of %r failed unexpectedly", cfg)
            report.failed.append(f"{cfg.algorithm} on {cfg.dataset} ({cfg.family}): unexpected error (see the log)")
    if configs is None and not (stop is not None and stop.is_set()):
        report.figures = _default_figures(stop)
    report.seconds = time.perf_counter() - t0
    return report


def _default_figures(stop: threading.Event | None) -> int:
    """Build the shared figures of the Lab's, Evolution's and Split gains' default views from their fits (already in
    the store); never raises (a failure is logged)."""
    from .fits import fit_result
    from .lesson_check import page_fit_config
    from .shared_views import warm_figures

    try:
        lab, split = (fit_result(page_fit_config(page, {}), progress_container=_Quiet()) for page in ("lab", "split_gains"))
        return warm_figures(lab, split, stop=stop)
    except Exception:  # noqa: BLE001 - a warm-up must never take the server down; the log keeps the traceback
        log.exception("warm start: the default views' figures failed")
        return 0


#: modules that Streamlit imports lazily while it serves a server's first session (its new-session message's nudge
#: check, the emoji and icon lists that st.set_page_config and the pages' icons are checked against, plotly's
#: figure validators); the warm start imports them, so no student's first page view pays for it (benchmarks/load.py)
FIRST_SESSION_MODULES = ("streamlit.web.skills", "streamlit.runtime.backend_operation_handler", "streamlit.emojis",
                         "streamlit.material_icon_names", "plotly.io._json", "plotly.validators")


def import_first_session_modules() -> list[str]:
    """Import :data:`FIRST_SESSION_MODULES` (up to the first that is missing), then fill :mod:`inspect`'s table of
    module files (the first element a process sends makes Streamlit look at the call stack, ``env_util.is_repl``,
    which builds that table for every module loaded); returns the missing module (another Streamlit version)."""
    import inspect

    missing: list[str] = []
    try:   # the names of FIRST_SESSION_MODULES, written out (no module is imported by a computed name)
        import plotly.io._json  # noqa: F401
        import plotly.validators  # noqa: F401
        import streamlit.emojis  # noqa: F401
        import streamlit.material_icon_names  # noqa: F401
        import streamlit.runtime.backend_operation_handler  # noqa: F401
        import streamlit.web.skills  # noqa: F401
    except ImportError as exc:   # another Streamlit version: its first session imports what it needs itself
        missing.append(str(exc.name))
    inspect.stack()
    return missing


def freeze_heap() -> None:
    """Collect the cyclic garbage once, then move every object alive (modules, the warm fits and figures) into the
    garbage collector's permanent generation (:func:`gc.freeze`).

    A server's heap after the warm start is large and lives as long as the server. Python's full (generation 2)
    collections walk all of it, holding the GIL, each time enough new objects have survived: under a class's
    reruns that is a pause of a tenth of a second or more every few seconds on each server. Frozen objects are not
    walked. The cost: an object alive now that later becomes cyclic garbage (a warm figure evicted from the shared
    store) is freed only by reference counting, i.e. that one-time set may stay; later objects are collected as
    usual. Measured with benchmarks/load.py.
    """
    gc.collect()
    gc.freeze()


def start_warm_start(on: bool | None = None) -> threading.Thread | None:
    """Start :func:`warm_start` in a daemon thread (None when `on`, default :func:`enabled`, is false); when it ends it
    freezes the heap (:func:`freeze_heap`) and prints one line on the server's console: how many fits, which
    failed, how long it took."""
    if not (enabled() if on is None else on):
        return None

    def run() -> None:
        try:
            report = warm_start()
        except Exception:  # noqa: BLE001 - the lessons or the page defaults could not be read: the app still serves
            log.exception("warm start failed")
            return
        import_first_session_modules()
        freeze_heap()
        print(f"  warm start: {report.fits} fits and the figures of {report.figures} views in the store after "
              f"{report.seconds:.1f} s"
              + (f" ({len(report.failed)} failed: {'; '.join(report.failed)})" if report.failed else ""), flush=True)

    thread = threading.Thread(target=run, name="distviz-warm-start", daemon=True)
    thread.start()
    return thread
