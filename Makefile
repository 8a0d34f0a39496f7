# Two commands are all a newcomer needs: `make run` and `make test`.
# Both create .venv from the pinned requirements on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8080

.PHONY: run test lint venv clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(STAMP)

## run: serve the hook with gunicorn on $$PORT (default 8080)
run: $(STAMP)
	PORT=$(PORT) $(BIN)/gunicorn --config hooks/gunicorn_config.py 'hooks.app:create_app()'

## lint: ruff, mypy and the import-layer contract (pure core imports no I/O)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## test: every test tier (lint, unit/fixture/property/HTTP, manifests, both end-to-end tiers)
test: lint
	$(BIN)/python -m tools.cluster prepare
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

## bench / load: performance figures (see README, Performance)
include bench/bench.mk

## up / down: the local playground (control plane + CRD + CompositeController + hook on 8080)
CLUSTER_UP_FLAGS ?= --install-project --hook-cmd 'make -C $(CURDIR) run'
include tools/cluster/cluster.mk
