"""Fitted Lab models shared between the app servers of one ``distviz app --workers N`` run, as model files.

Each server keeps its results in its own memory (``jobs.ResultStore``); with several servers
(``distviz.ui.workers``) the same fit would otherwise run once per server.  ``workers.serve_workers`` gives every
server one private folder in :data:`ENV`; a server that finishes a Lab fit of the shipped data writes the model there
(the estimator's own NetCDF file, ``save``: no pickle) beside its fit time, and a server about to fit the same
settings reads it instead (``distviz.persistence.load``: every array checked).  One fit per settings runs at a time
across the servers: the fit holds an exclusive lock on the settings' lock file (``fcntl.flock``), so a second server
asking meanwhile waits for the file instead of fitting again.  Without :data:`ENV` (one server), or for a fit of
uploaded data, nothing is read or written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path

__all__ = ["ENV", "folder", "shared_fit"]

log = logging.getLogger("distviz.ui.shared_fits")

#: the environment variable naming the folder the servers of one run share
ENV = "DISTVIZ_SHARED_FITS"


def folder() -> Path | None:
    """The shared folder of this server's run, or None (one server)."""
    value = os.environ.get(ENV, "").strip()
    return Path(value) if value and Path(value).is_dir() else None


@contextlib.contextmanager
def _locked(path: Path):
    try:
        import fcntl
    except ImportError:   # no flock (Windows, where --workers is not offered): fits may run twice
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def shared_fit(key, fit):
    """``(model, seconds)`` for the settings `key`: the model another server of this run wrote (with the seconds its
    fit took), else ``fit()`` (which returns ``(model, seconds)``), then written for the others.  Without a shared
    folder: ``fit()``.

    Parameters
    ----------
    key : hashable
        The fit's settings, as the result store keys them (its ``repr`` names the file).
    fit : callable
        Fits the model: ``fit() -> (model, seconds)``; the model has ``save(path)``.
    """
    where = folder()
    if where is None:
        return fit()
    stem = where / hashlib.sha1(repr(key).encode()).hexdigest()
    model_file, meta_file = stem.with_suffix(".nc"), stem.with_suffix(".json")
    with _locked(stem.with_suffix(".lock")):
        if model_file.is_file() and meta_file.is_file():
            try:
                from distviz.persistence import load

                return load(model_file), float(json.loads(meta_file.read_text())["seconds"])
            except Exception:   # noqa: BLE001 - a damaged file: fit again and replace it
                log.warning("distviz: the shared model file %s could not be read; fitting again", model_file,
                            exc_info=True)
        model, seconds = fit()
        try:
            tmp = stem.with_suffix(f".{os.getpid()}.tmp.nc")
            model.save(tmp)
            os.replace(tmp, model_file)
            meta_file.write_text(json.dumps({"seconds": float(seconds)}))
        except Exception:   # noqa: BLE001 - a model that cannot be saved (e.g. a callable target) stays in this server
            log.info("distviz: the fit of %s is not shared (its model could not be written)", key, exc_info=True)
        return model, seconds
