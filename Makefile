# The two commands of the README's quick start: `make demo` and `make test`.
# Each creates .venv (Python >= 3.11) on first use and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "pausepoint needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)

# The demo needs pausepoint and its two runtime dependencies, nothing more.
$(BIN)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

# The tests, linters, LangGraph (side by side), the PostgreSQL driver and the docs.
$(BIN)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,compat,postgres,docs,messages,crypto]'
	@touch $@ $(BIN)/.runtime

demo: $(BIN)/.runtime
	$(BIN)/pausepoint demo $(DEMO_ARGS)

test: $(BIN)/.installed lint typecheck unit

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(BIN)/.installed
	$(BIN)/pyright

# The serializer and saver tests again on the standard library path (PAUSEPOINT_FAST=0:
# the `fast` extra's orjson off), so both paths stay green; the rest runs once, with it.
PLAIN_TESTS := $(addprefix tests/savers/,test_fast.py test_serde.py test_serde_shortcuts.py \
	test_frames.py test_large_values.py test_bad_values.py test_corrupt_rows.py \
	test_security.py test_messages.py test_sqlite.py test_postgres.py)

unit: $(BIN)/.installed
	$(BIN)/pytest -q $(PYTEST_ARGS)
	PAUSEPOINT_FAST=0 $(BIN)/pytest -q $(PLAIN_TESTS)

bench: $(BIN)/.installed
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
