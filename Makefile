# The two commands of the README: `make run` starts the app, `make test` runs the suite (`make serve`: for a class).
# Each creates .venv on first use and installs what is declared in pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run serve test bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,bench]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

# `run` serves this machine only (127.0.0.1, .streamlit/config.toml) and makes no outbound request;
# `serve` opens the app to the network on purpose (a class): `make serve [ADDRESS=0.0.0.0] [PORT=8501]`
# prints the URLs students open. Both keep XSRF, origin checks, the 20 MB upload cap and hidden error details.
ADDRESS ?= 0.0.0.0
PORT ?= 8501

run: $(STAMP)
	$(BIN)/python -m distviz.ui.serve

serve: $(STAMP)
	$(BIN)/python -m distviz.ui.serve --address $(ADDRESS) --port $(PORT)

test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n 2 -q

bench: $(STAMP)
	for f in benchmarks/[!_]*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
