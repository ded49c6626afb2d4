# The two commands of the README: `make quickstart` and `make test`. Both install first.
PYTHON ?= python3
export PYTHON
# More arguments for the command a target runs: `make quickstart ARGS='--set workload.requests=40'`.
ARGS ?=

.PHONY: install quickstart test lint freethreaded

# Installs unless .kvsim-installed names this interpreter ($(PYTHON) resolved: a new venv is
# a new one) and the current pyproject.toml and scripts/install.sh (scripts/install_stamp.py).
install:
	@$(PYTHON) scripts/install_stamp.py check || { bash scripts/install.sh && $(PYTHON) scripts/install_stamp.py write; }

quickstart: install
	$(PYTHON) -m sim run configs/quickstart.yaml --force $(ARGS)

# The suite in one worker per core (pytest-xdist), each test file on one worker: the files'
# module fixtures (a Ray cluster, a calibration) are made once, as in a serial run. On two
# cores: 583 s against 948 s serially, load ~3 from other work (most tests wait on a child).
test: install
	$(PYTHON) -m pytest -q -n auto --dist loadfile $(ARGS)

lint: install
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .

# A free-threaded CPython with kvsim's dependencies, in a venv outside the repository
# (~/.cache/kvsim/freethreaded), for configs/gil_on_off.yaml (`interpreter: {python:
# freethreaded}`): FT_PYTHON=/path/python3.13t uses one you have, else python3.14t or
# python3.13t on PATH, else CPython 3.13 is built from Debian's source package (6-10 min,
# once). Prints the python's path last; a second run costs nothing.
freethreaded:
	FT_PYTHON="$(FT_PYTHON)" bash scripts/freethreaded.sh
