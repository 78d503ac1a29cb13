"""Keep numba's on-disk cache of this package consistent with its sources.

numba invalidates a cached function only when its own file changes; a cached caller (the grower)
keeps the machine code of callees from other files (the histogram kernels) it was linked with.
:func:`prepare_numba_cache` stamps the package's cache with a hash of all its sources and drops the cache
files when any source changed, so that an edit or an update can never run stale kernels.  It is an explicit
call, never an import-time effect: ``scripts/warm_numba.py`` (``make test``) and the test session, the app's
server (``distviz.ui.serve``, ``app.py``), the command line, and the Dask workers of a fit or a study make it
before the first kernel runs.  A second call in the same process does nothing.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_STAMP = "distviz_trees_sources.sha1"


def cache_dirs(pkg: Path) -> list[Path]:
    """The folders where numba keeps the cache files of the modules in `pkg`.

    Without ``NUMBA_CACHE_DIR`` that is the package's ``__pycache__``; with it, numba's
    UserProvidedCacheLocator writes to ``NUMBA_CACHE_DIR/<subpath of the source folder>`` (a
    ``<folder name>_<sha1 of its path>`` in today's numba, the mirrored source path in older ones). The
    folder is computed for the path as imported and as resolved, in case they differ (a symlinked install).
    """
    from numba.core import config

    root = getattr(config, "CACHE_DIR", "")  # read from the environment when numba was imported
    if not root:
        return [pkg / "__pycache__"]
    try:
        from numba.core.caching import _CacheLocator

        subpath = _CacheLocator.get_suitable_cache_subpath
    except (ImportError, AttributeError):  # pragma: no cover - numba without the locator helper
        def subpath(py_file: str) -> str:
            return os.path.splitdrive(os.path.dirname(os.path.abspath(py_file)))[1].lstrip(os.sep)
    folders = {os.path.abspath(os.path.dirname(__file__)), str(pkg)}
    return [Path(root) / subpath(os.path.join(f, "tree.py")) for f in sorted(folders)]


_prepared: list[bool] = []  # once this process has checked the cache: [whether it found the cache current]


def prepare_numba_cache(force: bool = False) -> bool:
    """Delete this package's numba cache files if any of its sources changed since they were written.

    Call it before the first tree kernel runs (numba reads a kernel's cache file when the kernel is first
    called); later calls in the same process return at once unless `force`.  Honours ``NUMBA_CACHE_DIR``: the
    stamp and the cache files checked are those in the folder numba uses.  Writes nothing on a read-only install.

    Parameters
    ----------
    force : bool
        Check the stamp again even if this process already did.

    Returns
    -------
    bool
        Whether the cache was current: stamped for today's sources, so that its kernels load instead of compiling
        (False after dropping stale files, on a first run or where the sources cannot be read).
    """
    if _prepared and not force:
        return _prepared[0]
    _prepared[:] = [False]
    pkg = Path(__file__).resolve().parent
    try:
        digest = hashlib.sha1()
        for src in sorted(pkg.glob("*.py")):
            digest.update(src.name.encode())
            digest.update(src.read_bytes())
        stamp = digest.hexdigest()
    except OSError:  # unreadable sources: numba falls back to its own cache handling
        return False
    _prepared[:] = [all([_refresh(cache_dir, stamp) for cache_dir in cache_dirs(pkg)])]
    return _prepared[0]


def _refresh(cache_dir: Path, stamp: str) -> bool:
    """Drop the .nbi / .nbc files in `cache_dir` unless its stamp equals `stamp`, then write the stamp; returns
    whether the stamp was already `stamp` (nothing dropped)."""
    try:
        stamp_file = cache_dir / _STAMP
        if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
            return True
        cache_dir.mkdir(parents=True, exist_ok=True)
        for f in cache_dir.iterdir():
            if f.suffix in (".nbi", ".nbc"):
                try:
                    f.unlink()
                except OSError:
                    pass
        tmp = cache_dir / f"{_STAMP}.{os.getpid()}"
        tmp.write_text(stamp)
        os.replace(tmp, stamp_file)
    except OSError:  # read-only install: numba falls back to its own cache handling
        pass
    return False


def ensure_parallel_runtime() -> None:
    """Load numba's threading layer (and its scheduler symbols) before any cached function embedding a parfor runs.

    A function loaded from numba's cache that calls a ``parallel=True`` kernel crashes when no parallel
    function has run in the process yet, because the scheduler symbols are only registered when the
    threading layer is launched.
    """
    try:
        from numba.np.ufunc import parallel
    except ImportError:  # pragma: no cover - numba without the parallel backend
        return
    launch = getattr(parallel, "_launch_threads", None)
    if launch is not None:
        launch()
