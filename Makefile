# Every command of the project. `make help` lists them.
# The interpreter .venv is made from: python3 on PATH, or the distribution's CPython
# (/usr/bin/python3) when that is the same version (3.11 with 3.11) and can make a venv;
# PYTHON=... chooses another. A distribution's build (Debian, Ubuntu, Fedora) is compiled with
# profile-guided and link-time optimisation into one static executable; pyenv's default build
# is neither (a shared libpython, no PGO) and runs this project's Python code 7-13% slower on
# this machine (bench/bench_python.py). Same version, same draws: the releases are byte-identical.
# Worked out the first time a recipe needs it (not for `make help`), then remembered.
VERSION_OF = $(shell $(1) -c 'import sys, ensurepip, venv; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifeq ($(origin PYTHON),undefined)
PYTHON = $(eval PYTHON := $(if $(and $(call VERSION_OF,python3),$(filter $(call VERSION_OF,python3),$(call VERSION_OF,/usr/bin/python3))),/usr/bin/python3,python3))$(PYTHON)
endif
# the interpreter a python runs on (a venv's: the one it was made from), as one real path
BASE_OF = $(shell $(1) -c 'import os, sys; print(os.path.realpath(sys._base_executable))' 2>/dev/null)
# a shell test: the venv $(1) exists and another interpreter than PYTHON made it
MADE_BY_OTHER = [ -e $(1)/pyvenv.cfg ] && [ "$(call BASE_OF,$(1)/bin/python)" != "$(call BASE_OF,$(PYTHON))" ]
VENV := .venv
PY := $(VENV)/bin/python
GB := $(VENV)/bin/gridbench
STAMP := $(VENV)/.installed
ARGS ?=
BEFORE ?=
REFERENCE ?=
OTHER ?=

.DEFAULT_GOAL := help
.PHONY: help install test test-slow browser verifiers-env train-deps lint mutate bench release train verify import audit eval show report view hub clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@# a .venv another interpreter made is made anew: venv over it would keep that one's python
	@# beside this one's standard library (a .venv that no longer starts)
	@if $(call MADE_BY_OTHER,$(VENV)); then \
		echo "$(VENV) was made by another interpreter than $(PYTHON): made anew"; rm -rf $(VENV); fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	@# the build leaves gridbench.egg-info here; from this folder it would shadow the installed
	@# metadata (its entry points and editable marker, which Inspect AI reads): remove it
	rm -rf gridbench.egg-info
	@# the project's own bytecode, written once: with PYTHONDONTWRITEBYTECODE set (as on this
	@# machine) every process would otherwise compile every module it imports from source
	$(PY) -m compileall -q gridbench_core domains solvers pipeline gridbench tests bench > /dev/null
	touch $(STAMP)

install: ## Create .venv and install the pinned dependencies (anew when PYTHON=... names another interpreter)
	@if $(call MADE_BY_OTHER,$(VENV)); then rm -f $(STAMP); fi
	@$(MAKE) --no-print-directory $(STAMP) PYTHON='$(PYTHON)'

# pytest may cache the test modules it rewrites (their asserts): with PYTHONDONTWRITEBYTECODE
# set, every run rewrote all of them in each worker, about 5 s a worker on this machine
test: $(STAMP) ## Run the quick test suite (what CI runs)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

test-slow: $(STAMP) browser verifiers-env train-deps ## Run the slow tests too (first installs Chromium and Playwright: make browser; the verifiers venv: make verifiers-env; torch: make train-deps)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -m "slow or not slow"

PLAYWRIGHT := playwright==1.65.2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser: $(STAMP) ## Debian's Chromium and Playwright, for the explorer's browser test (make test-slow; not make test)
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }
	@$(PY) -c "import playwright" 2>/dev/null || $(PY) -m pip install --quiet '$(PLAYWRIGHT)'

# The training example's slow test (docs/examples/train_with_validation.py): a Trainer needs torch
# (the CPU build on this machine's disk) and accelerate; gridbench itself does not
TRAIN_DEPS := torch==2.13.0 accelerate==1.15.0
train-deps: $(STAMP) ## torch (CPU) and accelerate in .venv, for the training example (make test-slow; not make test)
	@$(PY) -c "import torch, accelerate" 2>/dev/null || $(PY) -m pip install --quiet $(TRAIN_DEPS)

# verifiers 0.4.0 pins mcp==2.0.0 and openai<3, gridbench openai==3.51.0 and mcp==2.3.0: its own
# venv, with gridbench's other dependencies (read off pyproject.toml) and gridbench without pins
VERIFIERS := verifiers==0.4.0
VF_VENV := .venv-verifiers
$(VF_VENV)/.installed: pyproject.toml
	@if $(call MADE_BY_OTHER,$(VF_VENV)); then \
		echo "$(VF_VENV) was made by another interpreter than $(PYTHON): made anew"; rm -rf $(VF_VENV); fi
	$(PYTHON) -m venv $(VF_VENV)
	$(VF_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VF_VENV)/bin/python -m pip install --quiet '$(VERIFIERS)' $$($(PYTHON) -c "import tomllib; print(' '.join(d for d in tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'] if not d.startswith('openai')))")
	$(VF_VENV)/bin/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=compat
	rm -rf gridbench.egg-info
	touch $@
verifiers-env: $(VF_VENV)/.installed ## The venv of the verifiers adapter (.venv-verifiers; make test-slow builds it)

lint: $(STAMP) ## ruff and mypy on the packages (strict on gridbench_core and gridbench)
	$(PY) -m ruff check gridbench_core domains solvers pipeline gridbench tests bench
	$(PY) -m ruff format --check gridbench_core domains solvers pipeline gridbench tests bench
	$(PY) -m mypy gridbench_core domains solvers pipeline gridbench
	$(PY) -m mypy --strict gridbench_core gridbench

mutate: $(STAMP) ## Mutation testing (mutmut) of the proving, verifying and scoring code, two groups side by side: make mutate ARGS="verify env"
	$(PY) tests/mutation/mutate.py $(ARGS)

bench: $(STAMP) ## Performance benchmarks (prints numbers, never fails on speed); BEFORE=PATH: speed against that checkout; REFERENCE=PATH: against uservan/AgentCE_Bench; OTHER=PYTHON: this venv's interpreter against another venv's
	$(PY) bench/bench_generate.py $(ARGS)
	$(PY) bench/bench_env.py
	$(PY) bench/bench_runner.py
	$(PY) bench/bench_api.py
	$(PY) bench/bench_imports.py
	$(PY) bench/bench_adapters.py
	$(PY) bench/bench_executors.py
	$(PY) bench/bench_large.py $(ARGS)
	$(PY) bench/bench_depth.py $(ARGS)
	$(PY) bench/bench_bounds.py $(ARGS)
	$(PY) bench/bench_direction.py --build 6
	$(PY) bench/bench_seeds.py $(ARGS)
	$(PY) bench/bench_train.py $(ARGS)
	$(PY) bench/bench_train_stages.py $(ARGS)
	$(PY) bench/bench_floor.py $(ARGS)
	$(PY) bench/bench_python.py $(if $(OTHER),--other $(OTHER)) $(ARGS)
	$(PY) bench/bench_adaptive.py
	@if [ -n "$(REFERENCE)" ]; then $(PY) bench/bench_reference.py --reference $(REFERENCE) --runs 3; fi
	$(PY) bench/bench_speed.py $(if $(BEFORE),--before $(BEFORE)) $(ARGS)

release: $(STAMP) ## Build the default release (5x7, six domains, 324 tasks); ARGS="..." = Hydra overrides
	$(GB) release $(ARGS)

train: $(STAMP) ## A large training set in Parquet shards (conf/apps/train.yaml): make train ARGS="size=10000"
	$(GB) train $(ARGS)

verify: $(STAMP) ## Re-prove a release: make verify [ARGS="release=PATH"] (default: the default release)
	$(GB) verify $(ARGS)

import: $(STAMP) ## Import the reference (AgentCE) 5x5 files from ../shared/anchors into a release
	$(GB) import $(ARGS)

audit: $(STAMP) ## Integrity audit (policies, classifiers): make audit ARGS="release=PATH splits=20"
	$(GB) audit $(ARGS)

eval: $(STAMP) ## Run an agent over a release: make eval ARGS="agent=search failure_rates=[0.0,0.1,0.3]"
	$(GB) eval $(ARGS)

show: $(STAMP) ## Print one transcript: make show ARGS="run=outputs/runs/R/RUN task=TASK_ID [failure_rate=0.1]"
	$(GB) show $(ARGS)

report: $(STAMP) ## Heatmaps, tables and summary of the runs of a release
	$(GB) report $(ARGS)

view: $(STAMP) ## The results explorer, one HTML folder: make view ARGS="runs_root=outputs/runs/R" -> outputs/views/R/index.html
	$(GB) view $(ARGS)

hub: $(STAMP) ## Publish a release to the Hugging Face Hub: make hub ARGS="release=PATH repo_id=ORG/NAME [dry_run=true]"
	$(GB) hub $(ARGS)

clean: ## Remove caches (keeps .venv and outputs/)
	rm -rf .pytest_cache .mypy_cache .ruff_cache .hypothesis
