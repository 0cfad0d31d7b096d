# Two commands do everything on a fresh machine with Python 3.11:
#   make eval   — set up .venv from pyproject.toml and run a complete offline evaluation
#   make test   — set up .venv and run the whole test suite
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two installs: what running vera needs (make eval, make bench), and the development tools
# on top of it (make test, make lint, make venv). A first `make eval` installs no test,
# lint or type-checking tools.
STAMP     := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

CONFIG    ?= configs/offline.toml
PROVIDERS ?=
SEEDS     ?=
OUT       ?=
# A locale pack for `make eval` (LOCALE=zh-CN: the whole offline evaluation in Chinese).
LOCALE    ?=
# Test worker processes (pytest-xdist): most tests wait on sockets and subprocesses, so
# four workers keep two cores busy. TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 4

.PHONY: eval test lint bench venv clean

# Re-install whenever pyproject.toml changes; the stamps make the second run instant.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (set PYTHON=/path/to/python3.11)"; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(DEV_STAMP)

venv: $(DEV_STAMP)

eval: $(STAMP)
	$(BIN)/vera run --config $(CONFIG) $(if $(PROVIDERS),--providers $(PROVIDERS)) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(OUT),--out $(OUT)) $(if $(LOCALE),--locale $(LOCALE))

test: $(DEV_STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check vera tests benchmarks
	$(BIN)/ruff format --check vera tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo --no-cache

bench: $(STAMP)
	$(BIN)/vera bench

# Build artefacts only. Never runs/: paid evaluations live there (delete a run yourself).
clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist *.egg-info
	find . -path ./runs -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
