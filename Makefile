# The commands of README.md:  make lab   |   make explorer   |   make test
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.gluon-overlap-installed

export TRITON_DEFAULT_FP_FUSION := 1
export TRITON_CACHE_DIR ?= $(CURDIR)/.cache/triton
export MPLBACKEND ?= Agg

# JupyterLab refuses to start as root unless told to (containers and CI machines often run as root)
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# PYTHONDONTWRITEBYTECODE is cleared for the tests: pytest keeps its assertion-rewritten test modules as bytecode
# (__pycache__, ignored by git); with it set, every worker rewrites ~180 modules on every run (8 s of CPU each)
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

NBVAL := --nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg
# parallel tests (pytest-xdist): one worker per core; a file's tests (a notebook's cells) stay on one worker, in order;
# the longest files first, in the order tests/conftest.py gives (not xdist's "most tests first", which leaves a
# long file of few tests, like the browser tests, to run alone at the end)
TEST_JOBS ?= auto
XDIST := -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

# Voila runs the explorer ahead in a pre-started kernel (one kept ready): a visit gets the executed page at once
# instead of waiting for a kernel and the notebook (tests/support/_jupyter_servers.py starts it the same way)
VOILA_FLAGS := --preheat_kernel=True --pool_size=1

# extra arguments, e.g. for a remote machine: make lab LAB_ARGS="--no-browser --ip 0.0.0.0 --port 8888"
LAB_ARGS ?=
# the same for the explorer app: make explorer EXPLORER_ARGS="--no-browser --Voila.ip=0.0.0.0 --port=8866"
EXPLORER_ARGS ?=

.PHONY: setup lab explorer test test-slow test-fast lint format typecheck bench browser pictures notebooks clean

$(STAMP): pyproject.toml scripts/setup_env.sh
	./scripts/setup_env.sh $(VENV)
	touch $@

setup: $(STAMP)

# jupyter_server's "ServerApp.token config is deprecated" warning comes from JupyterLab's notebook_shim extension,
# which reads every attribute of the server (the token included) while it starts; nothing here sets ServerApp.token
export PYTHONWARNINGS ?= ignore:ServerApp.token config is deprecated

## make lab: set up from nothing and open the series in JupyterLab, at the repository root
## (notebooks/ and the docs/ they cite are both in the file browser)
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(LAB_ROOT_FLAG) $(LAB_ARGS)

## make explorer: serve notebooks/explorer.ipynb as a web app with Voila (controls and plots, no code)
explorer: setup
	$(VENV)/bin/voila "$(CURDIR)/notebooks/explorer.ipynb" $(VOILA_FLAGS) $(EXPLORER_ARGS)

## make test: set up from nothing and run every test (unit, property, CLI, browser, all notebooks under nbval)
## except the long sweeps marked `slow` (make test-slow), on every core
test: setup browser
	$(PYTEST) $(XDIST) -m "not slow" --durations=25 tests notebooks $(NBVAL)

## the long sweeps (marked `slow`): more seeds, more mutants, more examples of the same properties
test-slow: setup
	$(PYTEST) $(XDIST) -m slow tests

browser:
	./scripts/ensure_chromium.sh

## the unit layer only (no end-to-end runs, notebooks or browser): about a minute
test-fast: setup
	$(PYTEST) $(XDIST) tests -m "not e2e and not browser and not slow"

## ruff's lint rules and its formatter (pyproject.toml's [tool.ruff]); `make test` runs both as tests
## (tests/project/test_lint.py); `make format` rewrites the files the formatter would change
lint: setup
	$(VENV)/bin/ruff check gluon_overlap tests benchmarks scripts
	$(VENV)/bin/ruff format --check gluon_overlap tests benchmarks scripts

format: setup
	$(VENV)/bin/ruff format gluon_overlap tests benchmarks scripts

## mypy over the package with pyproject.toml's [tool.mypy] settings (cache in .cache/mypy); `make test` runs the same
## check as a test (tests/project/test_typing.py), beside the others on the parallel workers
typecheck: setup
	$(PY) -m mypy

## execute every notebook top to bottom in place (what is committed), without the per-cell execution times
notebooks: setup
	$(PY) scripts/execute_notebooks.py

## every picture README.md shows, remade from the app and the notebooks' drawing code (a test fails when one is stale)
pictures: setup
	$(PY) scripts/readme_pictures.py

bench: setup
	for f in benchmarks/[!_]*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf .cache .pytest_cache
