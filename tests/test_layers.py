"""The package's layers: every import between distviz units points downwards, and no unit imports itself round a cycle.

Every ``import`` / ``from ... import`` statement of every module under ``distviz/`` is read with ``ast`` (at
module level and inside functions and classes alike; relative imports resolved), and each module is mapped to its
unit: the sub-package (``distviz.boosting``) or top-level module (``distviz.persistence``) it belongs to.  LAYERS
below is the order of ``../shared/DESIGN.md`` ("Layers"), top first, with the units that sketch leaves out put in
place; an import may point to a unit in a lower layer or within its own unit, never upwards nor sideways within a
layer, and so the units' import graph has no cycle.

Two more promises checked in fresh interpreters: importing the estimators imports no Dask module (the
estimators import ``distviz.distributed`` inside the methods that are handed a dask collection), and importing
``distviz.trees`` creates, changes or deletes no file (numba cache upkeep is the explicit call
``distviz.trees.prepare_numba_cache()``).
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "distviz"

#: distviz's units from the top layer down; a unit may import units of lower layers only.  Departures from
#: DESIGN.md's sketch and the units it does not name:
#: - cli / __main__ (the command line) on top; persistence (``load`` picks any estimator class) above the
#:   estimators, below experiments;
#: - baselines (the MVN network baseline reuses NGBoost's validation and prediction object) above the estimators;
#: - estimators (DistributionalBoosting, NGBoost and its presets, WGBoost) and gp (SparseGP): the models in
#:   scikit-learn's contract, above the engine (boosting, distributed, trees), which imports none of them;
#: - distributed (the engine's Dask row store: the boosting laws and NGBoost's charts on Dask workers) above
#:   boosting; the estimators import it only when handed a dask collection;
#: - contract (the estimators' shared base: scikit-learn's parameter constraints, feature names, validation rows)
#:   below the engine, whose Dask path reads the same validation rules (``validation_count``, ``parse_eval_set``);
#: - modelfile (the one file format the estimators write and read) below the estimators, above trees;
#: - families at the bottom of the numerics, below metrics and data: the NLL and entropy metrics are functions
#:   of a family and the synthetic generators draw from one, while families need neither;
#: - validation, _optional, the package root and errors: leaves every layer uses.
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"ui"},
    {"viz"},
    {"experiments"},
    {"dask"},
    {"persistence"},
    {"baselines"},
    {"estimators", "gp"},
    {"distributed"},
    {"boosting"},
    {"contract"},
    {"modelfile"},
    {"trees"},
    {"metrics"},
    {"data"},
    {"families"},
    {"validation", "_optional", "distviz"},
    {"errors"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "distviz"


@functools.cache
def imports() -> list[tuple[str, str, str]]:
    """(importing module, imported distviz module, "file:line") for every import statement in distviz/."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        mod = _module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        where = f"{path.relative_to(ROOT)}"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                # `from pkg import name`: the submodule pkg.name where there is one, else pkg itself
                targets = [f"{src}.{a.name}" if _is_module(f"{src}.{a.name}") else src for a in node.names]
            for t in targets:
                if t == "distviz" or t.startswith("distviz."):
                    while not _is_module(t):
                        t = t.rpartition(".")[0]
                    out.append((mod, t, f"{where}:{node.lineno}"))
    return out


def test_every_unit_has_a_layer():
    units = {_unit(_module_name(p)) for p in PKG.rglob("*.py")}
    assert units - set(RANK) == set(), "add the new distviz units to LAYERS in tests/test_layers.py"


def test_imports_point_downwards():
    bad = []
    for src, dst, where in imports():
        a, b = _unit(src), _unit(dst)
        if a != b and RANK[b] <= RANK[a]:
            bad.append(f"{where}: {src} imports {dst} ({a} is layer {RANK[a]}, {b} layer {RANK[b]})")
    assert not bad, "imports against the layer order of tests/test_layers.py:\n" + "\n".join(bad)


def test_no_cycle_between_units():
    graph: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for src, dst, loc in imports():
        a, b = _unit(src), _unit(dst)
        if a != b:
            graph.setdefault(a, set()).add(b)
            where.setdefault((a, b), f"{loc} ({src} -> {dst})")
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cyc = stack[stack.index(v):] + [v]
                raise AssertionError("import cycle " + " -> ".join(cyc) + ":\n" +
                                     "\n".join(where[(x, y)] for x, y in zip(cyc, cyc[1:])))
            if v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u)


_NO_DASK = r"""
import sys
import distviz.boosting, distviz.estimators, distviz.gp  # noqa: E401
from distviz.estimators import DistributionalBoosting, NGB, WGBoost  # noqa: F401
from distviz.estimators.ngboost import IndepNGB, NGBoost  # noqa: F401
import distviz.persistence, distviz.trees  # noqa: E401
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed") or m.startswith("distviz.distributed"))
print(loaded)
"""


def test_estimators_import_no_dask():
    r = subprocess.run([sys.executable, "-c", _NO_DASK], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"


_WORKER_IMPORTS = r"""
import sys
import distviz.distributed.shard, distviz.distributed.ngb_shard, distviz.boosting.laws, distviz.trees.grower  # noqa: E401
print(sorted(m for m in ("sklearn", "pandas", "scipy.stats", "xarray") if m in sys.modules))
"""


def test_dask_workers_import_no_estimator_stack():
    """What a Dask worker imports for the rounds (the shard kernels, the laws) leaves out scikit-learn, pandas,
    scipy.stats and xarray: a fresh cluster's first round waits for these imports on every worker."""
    r = subprocess.run([sys.executable, "-c", _WORKER_IMPORTS], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root (folders aside: numba makes empty cache folders when a module decorates a kernel)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_importing_trees_touches_no_file(tmp_path):
    """Importing distviz.trees (and the estimators) leaves numba's cache folders as they were, stale stamp included."""
    cache = tmp_path / "numba-cache"
    probe = ("import json, distviz.trees, distviz.boosting\n"
             "from distviz.trees._cache import cache_dirs\n"
             "from pathlib import Path\n"
             "print(json.dumps([str(d) for d in cache_dirs(Path(distviz.trees.__file__).resolve().parent)]))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    cache.mkdir()
    (cache / "marker").write_text("x")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _tree(cache) == {"marker": (1, (cache / "marker").stat().st_mtime_ns)}, "importing distviz.trees wrote files"

    # a stale stamp and stale cache files in the folder numba uses: still untouched by an import
    import json

    folder = Path(json.loads(r.stdout.strip().splitlines()[-1])[0])
    folder.mkdir(parents=True, exist_ok=True)  # numba itself makes its (empty) cache folders when it decorates
    (folder / "distviz_trees_sources.sha1").write_text("0" * 40)
    (folder / "histogram.hist-1.py311.nbi").write_text("stale index")
    before = _tree(cache)
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _tree(cache) == before, "importing distviz.trees deleted or wrote numba cache files"
