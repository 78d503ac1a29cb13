"""Keep numba's on-disk cache of this package consistent with its sources.

numba invalidates a cached function only when its own file changes; a cached caller (the grower)
keeps the machine code of callees from other files (the histogram kernels) it was linked with.
This module stamps the package's cache with a hash of all its sources and drops the cache files
when any source changed, so that an edit or an update can never run stale kernels.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_STAMP = "distviz_trees_sources.sha1"


def refresh_numba_cache() -> None:
    """Delete this package's numba cache files if any of its sources changed since they were written."""
    pkg = Path(__file__).resolve().parent
    cache_dir = pkg / "__pycache__"
    try:
        digest = hashlib.sha1()
        for src in sorted(pkg.glob("*.py")):
            digest.update(src.name.encode())
            digest.update(src.read_bytes())
        stamp = digest.hexdigest()
        stamp_file = cache_dir / _STAMP
        if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
            return
        cache_dir.mkdir(exist_ok=True)
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
