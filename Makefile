# The two commands of the README: `make run` starts the app, `make test` runs the suite (`make serve`: for a class).
# Each creates .venv on first use and installs what is declared in pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cksum pyproject.toml | cut -d' ' -f1)
# `run` needs the app's extras, `test` everything (.[all] includes what `run` needs, so its stamp serves both);
# a stamp names pyproject.toml's checksum, so an edited pyproject.toml reinstalls.
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
ALL_STAMP := $(VENV)/.installed-all-$(SUM)

.PHONY: run serve test lint bench docs install clean

# the packages are installed by uv (pip only installs uv itself into the new environment): the same resolution from
# PyPI, several times faster than pip on a fresh environment of this size.
# Bytecode: make's commands write the .pyc file of each module when a process first imports it, as Python does by
# default (PYTHONDONTWRITEBYTECODE is unset for them: where it is set, every process would compile all its imports).
# `run`'s install also compiles every module at install time (--compile-bytecode, as pip does), so that the app's first
# start is quick; `test`'s install does not (that compiles whole packages the suite never imports: 37 s of a fresh
# `make test`), and the suite's processes write the .pyc files of what they import.
unexport PYTHONDONTWRITEBYTECODE
UV_BOOT := test -x $(BIN)/uv || $(BIN)/python -m pip install -q "uv>=0.5"

$(ALL_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(UV_BOOT)
	$(BIN)/uv pip install --python $(BIN)/python -q -e ".[all]"
	rm -f $(VENV)/.installed-*
	touch $(ALL_STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(UV_BOOT)
	$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode -q -e ".[app,data,gp,dask,serve]"
	find $(VENV) -maxdepth 1 -name '.installed-*' ! -name '*-$(SUM)' -delete
	touch $(RUN_STAMP)

install: $(ALL_STAMP)

# `run` is `distviz app`: this machine only (127.0.0.1, the settings of distviz/ui/app/config.toml), no outbound
# request; `serve` opens the app to the network on purpose (a class): `make serve [ADDRESS=0.0.0.0] [PORT=8501]
# [WORKERS=N]` prints the URLs students open (N app servers behind Caddy, distviz.ui.workers; the default, auto, is one
# per core up to 4, so a class's reruns use every core). Both keep
# XSRF, origin checks, the 20 MB upload cap and hidden error details.
ADDRESS ?= 0.0.0.0
PORT ?= 8501
WORKERS ?= auto

run: $(RUN_STAMP)
	$(BIN)/distviz app

serve: $(RUN_STAMP)
	$(BIN)/distviz app --address $(ADDRESS) --port $(PORT) --workers $(WORKERS)

# lint (ruff) and types (mypy on distviz/); `make test` runs both before the suite
lint: $(ALL_STAMP)
	$(BIN)/ruff check distviz benchmarks tests app.py scripts
	$(BIN)/mypy distviz

# OMP_WAIT_POLICY=PASSIVE: idle OpenMP threads (numba's) sleep instead of spinning, so the two test workers do not
# take the cores from each other (distviz.ui.serve.quiet_compute_pools sets the same for the app)
# numba's kernels are compiled once (scripts/warm_numba.py, two groups as two processes, about a minute each on a
# fresh checkout) beside ruff and mypy, so that the two test workers load them from the cache instead of compiling them.
# Beside them too, tests/test_wheel.py builds the wheel, installs it into a fresh environment outside the checkout and
# runs a study and the app from it (its output is printed when it ends; the main suite leaves it out).
TEST_ENV := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
WHEEL_LOG := .pytest-wheel.log
DOCS_LOG := .docs-build.log
# Once the kernels are in the cache, the documentation site is built (`make docs`: warnings are errors, the gallery's
# examples run) beside the suite's two workers; its log is printed when the suite ends.
test: $(ALL_STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -q -p no:cacheprovider --durations=4 tests/test_wheel.py > $(WHEEL_LOG) 2>&1 & wh=$$!; \
	  $(BIN)/python scripts/warm_numba.py common & w1=$$!; $(BIN)/python scripts/warm_numba.py wide & w2=$$!; \
	  $(BIN)/ruff check distviz benchmarks tests app.py scripts && $(BIN)/mypy distviz; rc=$$?; \
	  wait $$w1 $$w2; wait $$wh || rc=1; echo "== tests/test_wheel.py"; cat $(WHEEL_LOG); exit $$rc
	$(MAKE) --no-print-directory docs > $(DOCS_LOG) 2>&1 & dp=$$!; \
	  $(TEST_ENV) $(BIN)/python -m pytest -n 2 --dist loadgroup -q --durations=12 --ignore=tests/test_wheel.py; rc=$$?; \
	  wait $$dp || rc=1; echo "== make docs"; grep -E "WARNING|ERROR|Traceback|problem" $(DOCS_LOG) | head -n 40; tail -n 3 $(DOCS_LOG); exit $$rc

bench: $(ALL_STAMP)
	for f in benchmarks/[!_]*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# the documentation site (docs/): Sphinx with numpydoc, the API reference, the results pages written from the shipped
# study output, and the sphinx-gallery examples of examples/ executed at build time; any warning fails the build.
# scripts/check_docs.py then checks what the built site holds.
docs: $(ALL_STAMP)
	$(TEST_ENV) $(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html
	$(BIN)/python scripts/check_docs.py docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache docs/_build docs/auto_examples docs/api/generated docs/results/generated
