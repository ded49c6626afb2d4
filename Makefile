# The two commands of the README: `make quickstart` and `make test`. Both install first.
PYTHON ?= python3
export PYTHON

.PHONY: install quickstart test lint

install: .kvsim-installed

.kvsim-installed: pyproject.toml scripts/install.sh
	bash scripts/install.sh
	@touch $@

quickstart: install
	$(PYTHON) -m sim run configs/quickstart.yaml --force

test: install
	$(PYTHON) -m pytest -q

lint: install
	$(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check .
