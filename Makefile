# Two commands are all a newcomer needs: `make run` and `make test`.
# Both create .venv from the pinned requirements on first use; `make help` lists every target.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8080

.PHONY: help run check test lint venv lock image clean

# A bare `make` creates .venv (and nothing else), as it always has.
.DEFAULT_GOAL := venv

# The project itself goes in last, editable and without dependencies (the locks pin them), for
# the `mxjob` command; the venv's own setuptools builds it, so nothing unpinned is fetched.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation --editable .
	touch $@

## venv: create .venv from the pinned requirements and install `mxjob` (what a bare `make` does)
venv: $(STAMP)

## help: list the targets (from the `## target: text` comments of the Makefile and its includes)
help:
	@awk '/^## / { line = substr($$0, 4); gsub(/[$$][$$]/, "$$", line); \
		if (match(line, /^[-a-z]+: /)) { more = 1; name = substr(line, 1, RLENGTH - 2); \
			printf "  %-15s %s\n", name, substr(line, RLENGTH + 1) } \
		else if (more) printf "  %-15s %s\n", "", line; next } { more = 0 }' $(MAKEFILE_LIST)

## run: serve the hook with gunicorn on $$PORT (default 8080)
run: $(STAMP)
	PORT=$(PORT) $(BIN)/gunicorn --config hooks/gunicorn_config.py 'hooks.app:create_app()'

## lint: ruff, mypy and the import-layer contract (pure core imports no I/O)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

## check: the quick loop: lint and every test that needs no cluster, properties on fewer examples
check: lint
	HYPOTHESIS_PROFILE=quick $(BIN)/pytest -q --ignore=tests/e2e --ignore=tests/realnode \
		--deselect=tests/test_rejoin.py

## test: every test tier (lint, unit/fixture/property/HTTP, manifests, both end-to-end tiers) in
## two lanes beside the build of what they need, ending with a timing table; PYTEST_ARGS= adds
## pytest flags to both lanes (e.g. -x)
test: $(STAMP)
	$(BIN)/python -m tools.testrun $(PYTEST_ARGS)

# uv resolves for the image's Python on every platform, so one lock fits the image and laptops.
LOCK_FLAGS := --quiet --universal --python-version 3.11 --generate-hashes
LOCK_ARGS ?=

## lock: pin every dependency with hashes from requirements*.in into requirements*.txt
## (kept pins stay; LOCK_ARGS=--upgrade-package=NAME moves one, LOCK_ARGS=--upgrade all)
## requirements-sdk.txt stands alone: Kubeflow's SDK test needs the kubernetes client of its time.
lock: $(STAMP)
	$(BIN)/uv pip compile $(LOCK_FLAGS) $(LOCK_ARGS) requirements.in -o requirements.txt
	$(BIN)/uv pip compile $(LOCK_FLAGS) $(LOCK_ARGS) requirements-dev.in -c requirements.txt \
		-o requirements-dev.txt
	$(BIN)/uv pip compile $(LOCK_FLAGS) $(LOCK_ARGS) requirements-sdk.in -o requirements-sdk.txt

# The version lives in pyproject.toml; manifests/base (`images:`) and charts/mxjob/Chart.yaml
# name the same one, which tests check.
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMAGE ?= mxjob:$(VERSION)
IMAGE_ARGS ?=

## image: build the hook image $$(IMAGE) (default mxjob:<version>) from the Dockerfile with
## docker (if its daemon answers), podman or buildah; ENGINE= picks one, IMAGE_ARGS= adds flags
image:
	@engine="$(ENGINE)"; \
	for e in docker podman buildah; do \
		[ -z "$$engine" ] || break; \
		command -v $$e >/dev/null 2>&1 || continue; \
		[ $$e != docker ] || docker info >/dev/null 2>&1 || continue; \
		engine=$$e; \
	done; \
	[ -n "$$engine" ] || { echo "make image: no docker daemon, podman or buildah; install one or set ENGINE" >&2; exit 1; }; \
	echo "building $(IMAGE) with $$engine from the Dockerfile (the hook, the TTL component, the certificate keeper)"; \
	set -x; $$engine build $(IMAGE_ARGS) -t $(IMAGE) .

## clean: remove .venv and the tool caches
clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

# bench / load: performance figures (docs/performance.md)
include bench/bench.mk

# up / down: the local playground (control plane + CRD + CompositeController + hook on 8080)
CLUSTER_UP_FLAGS ?= --install-project --hook-cmd 'make -C $(CURDIR) run'
include tools/cluster/cluster.mk
