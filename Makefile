# Two commands set everything up on a machine with Python 3.11+ and make:
#   make demo   # a scripted multi-session conversation through the memory (no LLM, no network)
#   make test   # make lint, then every test (unit, integration, notebooks): what CI runs
# While working: make test-fast (unit, contract and adapter tests, no server, no real model),
# make lint (ruff, mypy, the import layers, no import cycle), make format (ruff's fixes).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: help demo test test-fast lint format typecheck unit integration notebooks bench install install-dev clean falkordb falkordb-stop browser

help:
	@echo "make demo | make test | make test-fast | make lint | make format | make notebooks | make bench | make falkordb | make clean"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# PYTHONWARNINGS=ignore: setuptools' build backend prints a banner on every editable install.
$(VENV)/.core: pyproject.toml | $(BIN)/python
	PYTHONWARNINGS=ignore $(PIP) install --quiet -e .
	@touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	PYTHONWARNINGS=ignore $(PIP) install --quiet -e ".[dev]"
	@touch $@ $(VENV)/.core

install: $(VENV)/.core
install-dev: $(VENV)/.dev

demo: $(VENV)/.core
	$(BIN)/python -m shared_core.demo

# The layers of docs/architecture.md (import-linter contracts in pyproject.toml) and no import
# cycle in shared_core, imports inside functions and under TYPE_CHECKING counted.
lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_cycles.py shared_core

format: $(VENV)/.dev
	$(BIN)/ruff check --fix .

# The contributor loop: everything but the real model, the FalkorDB server, the notebooks and the
# wheel build (a few minutes on two cores); `make test` stays the full run.
test-fast: $(VENV)/.dev
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not integration and not falkordb" \
	  --ignore=tests/test_notebooks.py --ignore=tests/test_packaging.py

typecheck: lint

unit: $(VENV)/.dev
	$(BIN)/python -m pytest tests/unit -q

# Debian's Chromium, for the test that opens the graph page in a real browser (needs root and apt-get).
# `make test` installs it only under CI=true; elsewhere the browser test is skipped, saying how to
# enable it (`make browser`), so a contributor's `make test` needs no root.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The integration tests' FalkorDB server and cluster (3 masters with a replica each): started
# fresh on free 127.0.0.1 ports, stopped by their pids whatever the tests do.
FALKORDB_TEST := .falkordb/test
FALKORDB_CLUSTER := .falkordb/test-cluster

test: lint $(if $(filter true 1 yes,$(CI)),browser)
	@$(BIN)/python scripts/falkordb.py stop --dir $(FALKORDB_TEST) >/dev/null 2>&1; rm -rf $(FALKORDB_TEST)
	@$(BIN)/python scripts/falkordb.py stop --dir $(FALKORDB_CLUSTER) >/dev/null 2>&1; rm -rf $(FALKORDB_CLUSTER)
	trap '$(BIN)/python scripts/falkordb.py stop --dir $(FALKORDB_TEST); \
	      $(BIN)/python scripts/falkordb.py stop --dir $(FALKORDB_CLUSTER)' EXIT; \
	  $(BIN)/python scripts/falkordb.py start --dir $(FALKORDB_TEST) --appendfsync always && \
	  $(BIN)/python scripts/falkordb.py start --dir $(FALKORDB_CLUSTER) --cluster 3 --replicas 1 \
	    --appendfsync always && \
	  ATLAS_FALKORDB_URL=$$($(BIN)/python scripts/falkordb.py url --dir $(FALKORDB_TEST)) \
	  ATLAS_FALKORDB_CLUSTER_URL=$$($(BIN)/python scripts/falkordb.py url --dir $(FALKORDB_CLUSTER)) \
	  $(BIN)/python -m pytest -q -p no:cacheprovider

# A FalkorDB server for development: 127.0.0.1, a free port, append-only file in .falkordb/dev;
# `make falkordb-stop` stops it by its pid. The URL is printed and kept in .falkordb/dev/url.
falkordb: $(VENV)/.dev
	$(BIN)/python scripts/falkordb.py start --dir .falkordb/dev

falkordb-stop:
	$(BIN)/python scripts/falkordb.py stop --dir .falkordb/dev

# The five notebooks, run top to bottom offline as `make test` runs them (tests/test_notebooks.py);
# the executed copies, outputs included, are kept in build/notebooks (git keeps them stripped).
notebooks: $(VENV)/.dev
	ATLAS_NOTEBOOK_OUTPUT=build/notebooks $(BIN)/python -m pytest tests/test_notebooks.py -q -s -p no:cacheprovider

# The product benchmarks (benchmarks/README.md): LoCoMo evidence recall, then latency at 1k-100k.
bench: $(VENV)/.dev
	$(BIN)/python benchmarks/locomo_recall.py --data ../shared/data/locomo/locomo_dev.json
	$(BIN)/python benchmarks/latency.py
	$(BIN)/python benchmarks/lifecycle_quality.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build *.egg-info
