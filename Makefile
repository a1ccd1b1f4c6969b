# Stackflow — every target creates or refreshes .venv from pyproject.toml when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test lint bench fmt clean venv

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> installing Stackflow and its dev dependencies into $(VENV)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet --progress-bar off -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# The benchmarks also compare with kopf (the bench extra), which the operator never needs.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	@echo "==> installing the benchmark extra (kopf) into $(VENV)"
	@$(BIN)/python -m pip install --quiet --progress-bar off -e '.[dev,bench]'
	@touch $(BENCH_STAMP)

dev: $(STAMP)
	$(BIN)/stackflow dev

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(BENCH_STAMP)
	@for b in bench/[!_]*_bench.py; do echo "==> $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
