"""The numba cache guard (distviz/trees/_cache.py) works in the folder numba really uses, also with NUMBA_CACHE_DIR."""

import json
import os
import subprocess
import sys
from pathlib import Path

STAMP = "distviz_trees_sources.sha1"

# Runs distviz.trees.prepare_numba_cache() (an explicit call: the import does nothing to the cache) and asks numba
# itself where it caches a trees kernel.
_PROBE = r"""
import inspect, json
import distviz.trees
distviz.trees.prepare_numba_cache()
from distviz.trees import histogram
from numba.core.caching import UserProvidedCacheLocator
kernels = [v for v in vars(histogram).values() if hasattr(v, "py_func") and getattr(v, "_cache", None) is not None]
f = kernels[0].py_func
print(json.dumps(UserProvidedCacheLocator(f, inspect.getfile(f)).get_cache_path()))
"""


def _import_trees(cache_root: Path) -> Path:
    """prepare_numba_cache() in a fresh interpreter with NUMBA_CACHE_DIR=cache_root; numba's cache folder for it."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_root)}
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    return Path(json.loads(r.stdout.strip().splitlines()[-1]))


def test_cache_guard_follows_numba_cache_dir(tmp_path):
    root = tmp_path / "numba-cache"
    folder = _import_trees(root)
    assert root in folder.parents
    stamp = folder / STAMP
    assert stamp.is_file(), "the guard did not stamp the folder numba uses under NUMBA_CACHE_DIR"
    good = stamp.read_text()

    # another package's cache files beside it are never touched
    other = root / "elsewhere_0123"
    other.mkdir()
    (other / "k.py.nbi").write_text("x")

    # a stale stamp (a source changed): this package's cache files go, the stamp is rewritten
    (folder / "histogram.hist-1.py311.nbi").write_text("stale index")
    (folder / "histogram.hist-1.py311.1.nbc").write_text("stale code")
    stamp.write_text("0" * 40)
    assert _import_trees(root) == folder
    assert not list(folder.glob("*.nb[ic]"))
    assert stamp.read_text() == good
    assert (other / "k.py.nbi").is_file()

    # an up-to-date stamp: cache files written since are kept
    (folder / "histogram.hist-1.py311.nbi").write_text("fresh index")
    _import_trees(root)
    assert (folder / "histogram.hist-1.py311.nbi").read_text() == "fresh index"
