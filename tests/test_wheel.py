"""The wheel on its own (issue 31, items 2 and 5): built from the package's files, installed into a fresh virtual
environment outside the checkout at the LOWEST versions ``pyproject.toml`` declares, then used from another folder, as a
new user would.

The wheel is built from a copy of ``pyproject.toml``, ``README.md`` and ``distviz/`` (so nothing else of the checkout
can leak into it and the build leaves no ``build/`` folder behind).  The environment is made with uv (a test
dependency; its cache keeps the install fast): ``uv pip compile --resolution lowest-direct`` turns the declared floors of
``distviz[app,data]`` into pins, and the wheel is installed under those pins, so every floor is a version the package
is run with (the main suite runs the newest versions).  Every command then runs in an empty folder with no PYTHONPATH,
so the checkout is out of reach: `distviz study drifters` reads the shipped sample, and `distviz app` serves the
packaged pages with the packaged settings on 127.0.0.1: its Drifters page draws the shipped sample's precomputed
comparison over the shipped Natural Earth coastlines.

`make test` runs this file on its own, beside the numba warm-up (the main suite ignores it).  The study runs with
numba's JIT off (the same Python code, interpreted: the kernels' compiled results are the main suite's business and a
fresh environment would spend minutes of CPU compiling them; 3,000 training rows keep the interpreted fit short); one
kernel with a parallel loop is compiled at the floor numba and checked against numpy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
from test_browser import CHROMIUM, SHOTS, open_page, server_log, serving

ROOT = Path(__file__).resolve().parents[1]
#: what the wheel is built from (the package and the two files pyproject.toml names)
SOURCES = ["pyproject.toml", "README.md", "distviz"]
#: the extras installed from the wheel
EXTRAS = ["app", "data"]
#: packages whose lowest versions must come as wheels (never built from source here)
ONLY_BINARY = ("numpy,scipy,scikit-learn,numba,llvmlite,pandas,netcdf4,tables,cartopy,shapely,matplotlib,statsmodels,"
               "river,pyarrow,pyproj,cftime,contourpy,kiwisolver,pillow,blosc2,numexpr")


def _floors(extras: list[str]) -> dict[str, str]:
    """{normalised name: declared minimum} of the core dependencies and the named extras in pyproject.toml."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"] + [r for e in extras
                                                                for r in project["optional-dependencies"][e]]]
    out = {}
    for r in reqs:
        (low,) = [s.version for s in r.specifier if s.operator == ">="]
        out[r.name.lower().replace("_", "-")] = low
    return out


def _env() -> dict:
    """The environment of the installed commands: no PYTHONPATH (the checkout stays out of reach), no numba cache
    folder of the checkout's (the installed package compiles its kernels into its own), no Python download by uv.

    NUMBA_OPT=0: LLVM compiles the installed package's kernels without its optimisation passes, about a third less
    CPU for the one kernel compiled here.

    PYTHONDONTWRITEBYTECODE is unset: the wheel is installed without compiling every module of every package
    (`--compile-bytecode` took about half of this file's CPU), and the first command to import a module writes its
    .pyc file for the next ones.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    return env | {"UV_PYTHON_DOWNLOADS": "never", "NUMBA_OPT": "0", "OPENBLAS_NUM_THREADS": "1",
                  "OMP_WAIT_POLICY": "PASSIVE"}


def _run(cmd: list, cwd: Path, timeout: float, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env() | (extra_env or {}), capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """distviz[app,data] from a freshly built wheel in a new virtual environment outside the checkout:
    {"bin": its scripts folder, "elsewhere": an empty folder to run commands from}."""
    find_uv = pytest.importorskip("uv", reason="uv is not installed (pip install -e '.[test]')").find_uv_bin
    uv = [find_uv(), "--no-config"]
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT), "the environment must lie outside the checkout"
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    _run([*uv, "build", "--wheel", "--quiet", "--out-dir", base / "dist", src], base, 300)
    (wheel,) = (base / "dist").glob("distviz-*.whl")
    venv = base / "venv"
    _run([*uv, "venv", "--quiet", "--python", sys.executable, venv], base, 120)
    extras = ",".join(EXTRAS)
    _run([*uv, "pip", "compile", "--quiet", "--resolution", "lowest-direct", "--only-binary", ONLY_BINARY,
          "--python", venv / "bin" / "python", *[a for e in EXTRAS for a in ("--extra", e)], src / "pyproject.toml",
          "-o", base / "lowest.txt"], base, 300)
    _run([*uv, "pip", "install", "--quiet", "--only-binary", ONLY_BINARY,
          "--python", venv / "bin" / "python", "-c", base / "lowest.txt", f"{wheel}[{extras}]"], base, 600)
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return {"bin": venv / "bin", "elsewhere": elsewhere, "venv": venv}


def test_the_installed_package_is_imported_not_the_checkout(installed):
    r = _run([installed["bin"] / "python", "-c", "import distviz; print(distviz.__file__)"], installed["elsewhere"], 60)
    where = Path(r.stdout.strip()).resolve()
    assert where.is_relative_to(installed["venv"].resolve()) and not where.is_relative_to(ROOT), where


def test_the_environment_holds_the_declared_floors(installed):
    """Each direct dependency of distviz[app,data] is installed at exactly its declared minimum: the floors are
    versions that exist as wheels for this Python and that the commands below run with."""
    floors = _floors(EXTRAS)
    code = ("import json, sys; from importlib.metadata import version; "
            "print(json.dumps({n: version(n) for n in sys.argv[1:]}))")
    r = _run([installed["bin"] / "python", "-c", code, *floors], installed["elsewhere"], 60)
    from packaging.version import Version

    got = json.loads(r.stdout)
    off = {n: (floors[n], v) for n, v in got.items() if Version(v).release[:len(Version(floors[n]).release)]
           != Version(floors[n]).release}
    assert not off, f"declared floor vs installed lowest version (raise the floor to the lowest that installs): {off}"


def test_a_parallel_kernel_compiles_at_the_floor_numba(installed):
    code = """
import numpy as np
from distviz.trees.histogram import hist_parallel
rng = np.random.default_rng(0)
codes = rng.integers(0, 8, (3, 500)).astype(np.uint8)
G = rng.normal(size=(500, 2))
out = np.empty((3, 8, 2))
hist_parallel(codes, np.arange(500, dtype=np.int32), 0, 500, G, 0, False, out)
ref = np.zeros_like(out)
for f in range(3):
    np.add.at(ref[f], codes[f], G)
assert np.allclose(out, ref), np.abs(out - ref).max()
print("ok")
"""
    r = _run([installed["bin"] / "python", "-c", code], installed["elsewhere"], 300)
    assert r.stdout.strip() == "ok"


def test_study_runs_on_the_shipped_sample_from_another_folder(installed):
    r = _run([installed["bin"] / "distviz", "study", "drifters", "--data", "sample", "--rounds", "5", "--methods", "NGB",
              "--max-train", "3000", "--json"], installed["elsewhere"], 900,
             {"NUMBA_DISABLE_JIT": "1"})
    res = json.loads(r.stdout)
    from distviz.data.drifters import SAMPLE_FILE, load_sample

    assert res["info"]["source"] == SAMPLE_FILE and res["info"]["synthetic"] is True, res["info"]   # the shipped file
    assert res["info"]["n_rows"] == len(load_sample()), "the installed sample differs from the checkout's"
    assert res["info"]["rounds"] == 5 and res["NGB"]["rounds_used"] == 5
    assert all(res["NGB"][k] is not None and res["NGB"][k] > 0 for k in ("NLL", "RMSE", "PR90_area")), res["NGB"]
    assert "Oracle" in res, "the sample's true law (stored in the shipped file) is missing"


def test_app_serves_a_chart_from_another_folder(installed, request):
    """`distviz app` of the installed package: health endpoint, loopback URL only, and the Drifters page draws its
    map from the shipped precomputed comparison in Chromium, with no exception and no request leaving
    127.0.0.1 (screenshot: .screenshots/wheel_drifters.png); the Family explorer draws its chart too."""
    with serving([installed["bin"] / "distviz"], installed["elsewhere"], env=_env(), start_s=120) as url:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as r:
            assert r.status == 200 and r.read().strip() == b"ok"
        console = server_log(url)
        assert f"URL: {url}" in console and "External URL" not in console, console[-2000:]
        if CHROMIUM is None:
            pytest.skip("Debian's chromium is not installed (apt-get install -y chromium): the health check passed, "
                        "the chart was not checked")
        seen = open_page(request.getfixturevalue("browser"), f"{url}/drifters", 1, SHOTS / "wheel_drifters.png")
        # a page whose chart is a shared figure with no fit behind it (distviz.ui.figures.shared_figures), at the
        # floor versions of the dependencies: plotly 5.20 once made every shared chart raise
        explorer = open_page(request.getfixturevalue("browser"), f"{url}/explorer", 1, SHOTS / "wheel_explorer.png")
    assert not explorer["exceptions"], f"the Family explorer shows an exception: {explorer['exceptions'][0][:500]}"
    assert not [e for e in explorer["text"].splitlines() if "could not be drawn" in e], explorer["text"][:1000]
    outside = [u for u in seen["requests"]
               if urlparse(u).scheme in ("http", "https", "ws", "wss") and urlparse(u).hostname != "127.0.0.1"]
    assert not outside, f"requests left 127.0.0.1: {outside[:5]}"
    assert not seen["exceptions"], f"the Drifters page shows an exception: {seen['exceptions'][0][:500]}"
    assert "Precomputed with these settings" in seen["text"], "the shipped comparison was not found: the page fitted"
