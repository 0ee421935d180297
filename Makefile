# inferops.llm developer commands. `make test` is what CI runs (.ci/run); `make plan` is the
# first thing a user runs. Everything installs what it needs into .venv (see tests/requirements-dev.txt).
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# ansible-core 2.20+ needs Python >= 3.12 on the controller; Debian 12 ships 3.11, so take the first
# 3.12/3.13 found that really runs (PATH, then pyenv's versions: a pyenv shim for an inactive
# version is on PATH but fails).
PYTHON ?= $(shell for c in python3.12 python3.13 $(wildcard $(HOME)/.pyenv/versions/3.1[23]*/bin/python3.1[23]); do \
            "$$c" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { command -v "$$c"; break; }; done)
VENV ?= $(CURDIR)/.venv
BIN := $(VENV)/bin
BUILD := $(CURDIR)/build
# The collection as Ansible and Python import it: build/collections/ansible_collections/inferops/llm.
COLLECTIONS := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/inferops/llm
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
ARTIFACT := $(BUILD)/inferops-llm-$(VERSION).tar.gz
# Older ansible-core releases the collection supports (requires_ansible >=2.19); the toolchain pins 2.21. `make test`
# runs the oldest supported one: with the toolchain's newest, both ends of the supported range (issue 24: each core
# costs about 100 s of the 2-core CI machine). `make compat COMPAT_CORES="2.19.14 2.20.10"` runs 2.20 as well.
COMPAT_CORES ?= 2.19.14
SCENARIOS ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard extensions/molecule/*/molecule.yml))))
IMAGES ?= debian12 debian13

export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_INJECT_FACT_VARS := false
export PATH := $(BIN):$(PATH)
export NO_COLOR := 1
# Python writes the bytecode of what it imports (into .venv, ansible-test's venvs, the checkout's __pycache__, all
# ignored by git): with PYTHONDONTWRITEBYTECODE set, as on this project's machines, every ansible-playbook, pytest,
# ansible-lint and Molecule process compiled ansible-core and the rest of what it imports again (issue 24).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The toolchain is installed by uv (pinned here, the roles' uv release): it downloads in parallel and does not
# compile every module at install, as pip does (`make venv` on the 2-core CI machine: 114 s with pip, about 40 s
# with uv; issue 24). Python compiles what is imported, once, into the writable venv.
UV_VERSION := 0.13.9
UV := $(BIN)/uv

# uv's summary lines (resolved, downloaded, installed): a first build downloads about 600 MB, which should
# not look like a hang.
$(BIN)/.installed: tests/requirements-dev.txt
	@test -n "$(PYTHON)" || { echo "Python 3.12 or 3.13 is required (set PYTHON=...)"; exit 1; }
	@echo "== .venv: the pinned toolchain of tests/requirements-dev.txt (about 600 MB on a first build)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip install --python $(BIN)/python -r tests/requirements-dev.txt 2>&1 | \
	  awk '/^(Resolved|Prepared|Installed|Uninstalled|Audited) /{print "  " $$0; fflush()} /^error/{print; fflush()}'
	touch $@

.PHONY: venv
venv: $(BIN)/.installed $(COLLECTION_LINK) ## create or update the pinned toolchain in .venv

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(CURDIR) $@

.PHONY: lint
lint: venv ## ruff, ansible-lint (production profile, yamllint included), argument specs vs defaults, changelog fragments
	ruff check .
	ruff format --check .
	# A copy of this collection in ~/.ansible/collections (left by Molecule's prerun before
	# extensions/molecule/config.yml turned it off) would shadow the checkout for ansible-lint and Molecule.
	rm -rf $(HOME)/.ansible/collections/ansible_collections/inferops/llm
	ansible-lint
	python tests/bin/check-argument-specs
	antsibull-changelog lint

.PHONY: sanity
sanity: venv ## ansible-test sanity, run locally on a copy at ansible_collections/inferops/llm
	tests/bin/apt-ensure shellcheck:shellcheck
	tests/bin/ansible-test-pip-bootstrap
	rm -rf $(BUILD)/sanity && mkdir -p $(BUILD)/sanity/ansible_collections/inferops/llm
	git ls-files -z --cached --others --exclude-standard | \
	  tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | \
	  tar -xf - -C $(BUILD)/sanity/ansible_collections/inferops/llm
	# The copy is its own git repository: ansible-test lists files through git, and build/ is
	# ignored by the checkout's.
	cd $(BUILD)/sanity/ansible_collections/inferops/llm && \
	  git init -q && git add -A && \
	  ansible-test sanity --venv --python 3.12 --color no $(SANITY_ARGS)

.PHONY: units
units: venv ## unit tests (pytest); PYTEST_ARGS="-k name" picks tests
	# promtool checks the textfile metrics and the monitoring role's rules (tests skip without it)
	tests/bin/apt-ensure promtool:prometheus
	# systemd-analyze scores every unit the collection installs (tests/unit/roles/test_unit_security.py)
	tests/bin/apt-ensure systemd-analyze:systemd
	PYTHONPATH=$(COLLECTIONS) pytest -q tests/unit $(PYTEST_ARGS)

# The planning code's tests (tests/unit/plugins/module_utils, three quarters of the suite) are left out: that code
# imports nothing of ansible-core (tests/unit/plugins/test_architecture.py), so another ansible-core cannot
# change what it does. So are the tests of what never runs through ansible-core: the developer scripts of tests/bin
# (tests/unit/bin), the scripts the roles copy to a host, run there by its own Python (tests/unit/roles/*/files), and
# the Molecule fixtures (tests/unit/scenarios) and the test images' zip-import cache (tests/unit/images); none of those
# test files or the scripts they test imports Ansible. The one exception, the Molecule strategy plugin's test
# (tests/unit/scenarios/strategy), imports Mitogen, which runs the same under both cores (`compat-env` installs it for
# the ollama and gateway scenarios, which run under the oldest core with Mitogen).
# They cost about 4 s of CPU and 27 s of a worker's wall time (the port probe's and watchdog's waits) per core.
# The real-run tests of the roles' shared lifecycle (tests/unit/roles/_common: install, uv pin, snapshot, rollback, drain)
# and of the Ollama layout (tests/unit/roles/ollama) are left out too (about 430 s of a worker's wall time when they
# were left out, before each file's cases shared one ansible-playbook run): under the oldest core the same task
# files run for real, on systemd, in the Molecule scenarios of COMPAT_SCENARIOS (tests/bin/run-stages runs those
# with this core's ansible-playbook). Everything else that runs through ansible-core (modules, filters, role
# templates and wiring, playbooks) runs.
COMPAT_TESTS ?= tests/unit --ignore=tests/unit/plugins/module_utils --ignore=tests/unit/bin --ignore=tests/unit/scenarios \
  --ignore=tests/unit/roles/_common --ignore=tests/unit/roles/ollama --ignore=tests/unit/images \
  $(addprefix --ignore=,$(wildcard tests/unit/roles/*/files))
# The Molecule scenarios that run with the oldest core of COMPAT_CORES (its ansible-playbook first on PATH; the other
# collections from the toolchain's venv): the ollama role's archive install, snapshot, drain and rollback through
# _common, the gateway's install from a lock with hashes (the uv pin) and its drain, on real systemd, both with
# Mitogen; and model_download (the same install from a lock) under ansible-core's own linear strategy (its molecule.yml).
COMPAT_SCENARIOS ?= ollama gateway model_download
COMPAT_VENV = $(VENV)-core-$(firstword $(COMPAT_CORES))
export COMPAT_SCENARIOS COMPAT_VENV
.PHONY: compat-env
# Mitogen too: the COMPAT_SCENARIOS that do not name the linear strategy run with it (extensions/molecule/config.yml).
compat-env: venv ## the venv of each core of COMPAT_CORES (one at a time: the compat stage and its scenarios share it)
	@for core in $(COMPAT_CORES); do \
	  env=$(VENV)-core-$$core; \
	  flock $(VENV)-core.lock sh -c "{ test -x $$env/bin/python || $(UV) venv --quiet --python $(PYTHON) $$env; } && \
	    $(UV) pip install --quiet --python $$env/bin/python ansible-core==$$core -r tests/requirements-compat.txt \
	    $$(grep -E '^(pytest|pyyaml|jmespath|docker|mitogen)==' tests/requirements-dev.txt | tr '\n' ' ')" || exit 1; \
	done

.PHONY: compat
compat: compat-env ## the unit tests that run through ansible-core, again under the oldest supported core (COMPAT_CORES)
	@for core in $(COMPAT_CORES); do \
	  env=$(VENV)-core-$$core; \
	  echo "== unit tests with ansible-core $$core"; \
	  PATH=$$env/bin:$$PATH PYTHONPATH=$(COLLECTIONS) $$env/bin/pytest -q $(COMPAT_TESTS) $(PYTEST_ARGS) || exit 1; \
	done

.PHONY: build
build: venv ## build the collection artifact and run the Galaxy import checks on it
	rm -f $(ARTIFACT)
	rm -rf $(HOME)/.ansible/collections/ansible_collections/inferops/llm
	ansible-galaxy collection build --force --output-path $(BUILD) .
	cd $(BUILD) && $(CURDIR)/tests/bin/galaxy-import $(ARTIFACT)

.PHONY: images
images: venv ## build the systemd Debian images Molecule boots (reused while their recipe is unchanged)
	tests/bin/docker-up
	tests/bin/apt-ensure mmdebstrap:mmdebstrap
	$(if $(filter undefined,$(origin IMAGE_EXTRA_CA_BUNDLE)),,IMAGE_EXTRA_CA_BUNDLE='$(IMAGE_EXTRA_CA_BUNDLE)') \
	  tests/images/build.sh $(IMAGES)

.PHONY: molecule
molecule: venv ## the images, then every Molecule scenario, two at a time (SCENARIOS="gpu_facts" for one)
	tests/bin/run-stages molecule

.PHONY: test
test: ## everything CI runs, two stages or scenarios at a time, timed and checked against tests/time-budget.yml
	tests/bin/run-stages venv lint sanity units compat build molecule

.PHONY: clean
clean: ## remove build outputs (keeps .venv and the Docker images)
	rm -rf $(BUILD) tests/output

# INVENTORY: a file or directory, relative to this checkout; PLAN_ARGS: more ansible-playbook arguments.
INVENTORY ?= inventories/example
.PHONY: plan
plan: venv ## plan INVENTORY (default the example; no root, GPU or network): reports in plans/, table and findings printed
	ansible-playbook -i $(INVENTORY) playbooks/plan.yml $(PLAN_ARGS)

.PHONY: accuracy
accuracy: venv ## regenerate docs/accuracy.md: predicted vs logged vLLM startup figures
	PYTHONPATH=$(COLLECTIONS) python tests/accuracy/generate.py

.PHONY: performance-accuracy
performance-accuracy: venv ## regenerate docs/performance-accuracy.md: predicted vs published speed
	PYTHONPATH=$(COLLECTIONS) python tests/accuracy/performance.py

.PHONY: golden
golden: venv ## rewrite tests/golden/plans and the plan tables of README.md and docs/plan.md from the example inventory
	python tests/golden/generate.py

.PHONY: benchmark
benchmark: venv ## plan 200 declared hosts and report the wall time and cost per host (not a test)
	python tests/benchmark/plan_hosts.py --hosts 200 | tee $(BUILD)/benchmark-report.md
