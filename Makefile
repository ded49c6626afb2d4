# The two commands of the README: `make quickstart` and `make test`. Both install first.
PYTHON ?= python3
export PYTHON
# More arguments for the command a target runs: `make quickstart ARGS='--set workload.requests=40'`.
ARGS ?=

.PHONY: install quickstart test lint

# Installs unless .kvsim-installed names this interpreter ($(PYTHON) resolved: a new venv is
# a new one) and the current pyproject.toml and scripts/install.sh (scripts/install_stamp.py).
install:
	@$(PYTHON) scripts/install_stamp.py check || { bash scripts/install.sh && $(PYTHON) scripts/install_stamp.py write; }

quickstart: install
	$(PYTHON) -m sim run configs/quickstart.yaml --force $(ARGS)

test: install
	$(PYTHON) -m pytest -q $(ARGS)

lint: install
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .
