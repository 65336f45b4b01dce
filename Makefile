# The two commands of the README's quick start: `make demo` and `make test`.
# Each creates .venv (Python >= 3.11) on first use and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "pausepoint needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,compat,postgres,docs,messages]'
	@touch $@

demo: $(BIN)/.installed
	$(BIN)/pausepoint demo $(DEMO_ARGS)

test: $(BIN)/.installed lint typecheck unit

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(BIN)/.installed
	$(BIN)/pyright

unit: $(BIN)/.installed
	$(BIN)/pytest -q $(PYTEST_ARGS)

bench: $(BIN)/.installed
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
