# ministream: every target first runs `setup`, which builds .venv and checks the machine.
#   make setup       .venv with ministream and its extras, Debian graphviz, redis-server and chromium, a Jupyter kernel, a Java check
#   make test        the test suite (pass options with PYTEST_ARGS="-k events -x")
#   make test-engine  the tests that need no Spark, Jupyter, Graphviz or cluster (they pass without PySpark installed)
#   make lint        ruff format --check, ruff check, the layer contracts (lint-imports) and mypy
#   make demo        every lesson run by ministream and by Spark, side by side
#   make run ARGS=".."   the ministream command without activating .venv (make run ARGS="compare tumbling-window")
#   make diagrams    regenerate diagrams/*.svg and the tutorials' plots, diagrams/plots/*.png
#   make notebooks   JupyterLab on notebooks/, opening 00-start-here (extra options with JUPYTER_ARGS)
#   make workshop-check  notebooks/ checked to be what its modules generate, then every notebook run headless with its exercises solved
#   make docs        refresh the source code included in tutorials/*.md and the README lessons table
#   make cluster-start   a Spark standalone master and worker on 127.0.0.1 (spark://127.0.0.1:7077)
#   make cluster-stop    stop them (see tutorials/cluster.md)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := spark,viz,notebooks,browser,dev

# The Python that creates .venv: the first of these that is 3.11 or newer and can make a venv with pip
# (override with BASE_PYTHON=...).
BASE_PYTHON ?= $(shell for p in python3.11 python3 "$$HOME/.pyenv/shims/python3.11" /usr/local/bin/python3.11 /usr/bin/python3.11; do \
	  command -v "$$p" >/dev/null 2>&1 && "$$p" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
	  && { command -v "$$p"; break; }; done)
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
JUPYTER_ARGS ?= $(shell [ "$$(id -u)" -eq 0 ] && echo --allow-root)

# Every recipe (and so every test, lesson and notebook) runs Spark on this venv's Python, on loopback, in UTC.
export PYSPARK_PYTHON := $(CURDIR)/$(PY)
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(PY)
export SPARK_LOCAL_IP := 127.0.0.1
export TZ := UTC

.PHONY: help setup java graphviz redis chromium demo run test test-engine lint diagrams notebooks workshop-check docs cluster-start cluster-stop

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

setup: java graphviz redis chromium $(STAMP)

# PySpark 4 runs on Java 17 or newer; JAVA_HOME, when set, is the Java PySpark starts.
java:
	@java_bin="$${JAVA_HOME:+$$JAVA_HOME/bin/}java"; \
	found=$$("$$java_bin" -version 2>&1 | grep -m 1 ' version ' || true); \
	version=$$(echo "$$found" | sed -n 's/.* version "\([0-9][0-9]*\)[."].*/\1/p'); \
	if [ -z "$$version" ] || [ "$$version" -lt 17 ]; then \
	  echo "ministream needs Java 17 for PySpark: install openjdk-17-jre-headless (sudo apt-get install -y openjdk-17-jre-headless)" >&2; \
	  echo "and make sure '$$java_bin -version' reports 17 or newer (found: $${found:-no java})." >&2; \
	  exit 1; \
	fi

# The graphviz Python package only writes DOT text; Debian's graphviz provides `dot`, which draws it.
graphviz:
	@command -v dot >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { echo "ministream needs graphviz's 'dot': install graphviz with your package manager" >&2; exit 1; }; \
	  echo "Installing Debian graphviz (its 'dot' program draws diagrams/*.svg)"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=300 graphviz; }

# The Redis state backend starts Debian's redis-server itself (on 127.0.0.1, data in a temporary directory,
# stopped at exit: ministream/state/redis_server.py); nothing runs as a service.
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { echo "ministream's Redis state backend needs redis-server: install Redis 6 or newer with your package manager" >&2; exit 1; }; \
	  echo "Installing Debian redis-server (the Redis state backend starts it on 127.0.0.1 when a run asks for it)"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=300 redis-server; }

# The browser test (tests/workshop/test_browser.py) opens JupyterLab in Debian's chromium, headless, driven by
# Playwright: Playwright's own browser download cannot be used offline, Debian's package can.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  command -v apt-get >/dev/null 2>&1 || { echo "ministream's browser test needs Chromium at /usr/bin/chromium: install chromium with your package manager" >&2; exit 1; }; \
	  echo "Installing Debian chromium (the browser test runs the notebooks in JupyterLab in it, headless)"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -o DPkg::Lock::Timeout=300 chromium; }

$(PY):
	@test -n "$(BASE_PYTHON)" || { echo "ministream needs Python 3.11 or newer to create $(VENV): install python3.11 and python3.11-venv, or run make BASE_PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(BASE_PYTHON) -m venv $(VENV)

# Reinstalled only when pyproject.toml is newer than the stamp.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[$(EXTRAS)]'
	$(PY) -m ministream.spark.precompile
	$(PY) -m ipykernel install --sys-prefix --name ministream --display-name "Python (ministream)"
	touch $@
	@echo "ministream is installed in $(VENV): 'source $(VENV)/bin/activate' puts the ministream command on your PATH"

demo: setup
	$(VENV)/bin/ministream compare --all

run: setup
	$(VENV)/bin/ministream $(ARGS)

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# The engine's tests: those marked spark, notebook, viz or cluster (pyproject.toml) are deselected, and the modules
# that import PySpark or nbformat as they load are not collected at all, so that this runs with the dev extra only.
ENGINE_TESTS := -m "not spark and not notebook and not viz and not cluster and not slow and not browser" \
	--ignore=tests/spark --ignore=tests/workshop/test_build.py --ignore=tests/workshop/test_course.py \
	--ignore=tests/workshop/test_notebooks.py --ignore=tests/workshop/test_browser.py --ignore=tests/tools/test_plots.py

test-engine: setup
	$(PY) -m pytest $(ENGINE_TESTS) $(PYTEST_ARGS)

# The rules and their reasons are in pyproject.toml ([tool.ruff], [tool.importlinter], [tool.mypy]).
lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

diagrams: setup
	$(VENV)/bin/ministream diagrams

notebooks: setup
	cd notebooks && ../$(VENV)/bin/jupyter lab $(JUPYTER_ARGS) 00-start-here.ipynb

workshop-check: setup
	$(PY) -m ministream.workshop check --folder notebooks

# Refresh the code included in tutorials/*.md and the README's lessons table from the source.
docs: setup
	$(PY) -m ministream.tools.docs

# A local Spark standalone cluster for `ministream compare --all --master spark://127.0.0.1:7077`.
cluster-start: setup
	$(VENV)/bin/ministream cluster start

cluster-stop: setup
	$(VENV)/bin/ministream cluster stop
