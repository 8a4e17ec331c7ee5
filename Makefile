# miaudit: every target builds what it needs first, so from a fresh clone
#   make run    creates .venv from requirements.lock (if missing or stale), then runs the default audit
#   make test   the same set-up, then the test suite
#   make test-fast  the same set-up, then the tests not marked slow (none trains a model): the edit-test loop
# Other targets: docs (mkdocs build --strict into site/), docs-serve, lint, bench-quick,
# lock (regenerate requirements.lock from pyproject.toml), clean.
#
# Variables: VENV (default .venv), PYTHON (interpreter that creates the venv), CONFIG and
# OUT for `make run` (e.g. make run CONFIG=examples/configs/location.yaml OUT=runs/loc).

VENV ?= .venv
PYTHON ?= python3
CONFIG ?=
OUT ?=
LOCKFLAGS ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.miaudit-installed

.DEFAULT_GOAL := help
.PHONY: help venv run test test-fast docs docs-pages docs-serve lint format bench-quick lock clean

help:
	@echo "make run          set up .venv (from requirements.lock) if needed, then run the default audit"
	@echo "make test         set up .venv if needed, then run the tests (pytest -q)"
	@echo "make test-fast    set up .venv if needed, then the tests that train no model (pytest -q -m \"not slow\")"
	@echo "make docs         regenerate the attack pages and build the documentation (mkdocs --strict) into site/"
	@echo "make docs-serve   the documentation on http://127.0.0.1:8000 while you edit it"
	@echo "make lint         ruff check, ruff format --check, mypy and lint-imports (the layers)"
	@echo "make bench-quick  miaudit bench quick (digits and location, 3 seeds; needs the data sets)"
	@echo "make lock         regenerate requirements.lock from pyproject.toml (pip-compile)"
	@echo "make clean        remove .venv, site/ and build outputs"

# The environment: rebuilt when the lock or pyproject.toml changes. pip installs exactly the
# locked versions, then miaudit itself (editable, no dependency resolution of its own).
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps -e .
	@# bytecode for miaudit's own modules, as pip writes it for installed packages: an editable install
	@# otherwise recompiles them on every command where PYTHONDONTWRITEBYTECODE is set (0.2 s a run)
	$(BIN)/python -m compileall -q src/miaudit src/miaudit_bench
	@touch $@

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/miaudit run $(CONFIG) $(if $(OUT),--out $(OUT)) --force  # a rerun replaces its own outputs

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
PYTEST_GUARD = if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose"; exit 1; fi; exit $$rc
test: $(STAMP)
	@rc=0; $(BIN)/python -m pytest -q || rc=$$?; $(PYTEST_GUARD)

# The tests not marked slow: no model trained (tests/conftest.py fails a test that steps an optimizer without the
# mark), no docs build, no Ray; about a minute on two cores.
test-fast: $(STAMP)
	@rc=0; $(BIN)/python -m pytest -q -m "not slow" || rc=$$?; $(PYTEST_GUARD)

docs-pages: $(STAMP)
	$(BIN)/python docs/gen_attack_pages.py
	$(BIN)/python docs/gen_reference.py

docs: docs-pages
	$(BIN)/python -m mkdocs build --strict

docs-serve: docs-pages
	$(BIN)/python -m mkdocs serve

# ruff everywhere; mypy on all of src/miaudit and src/miaudit_bench; lint-imports holds the layers of
# ARCHITECTURE.md (pyproject.toml's [tool.importlinter]).
lint: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .
	$(BIN)/python -m mypy src/miaudit src/miaudit_bench
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/python -m ruff check --fix .
	$(BIN)/python -m ruff format .

bench-quick: $(STAMP)
	$(BIN)/miaudit bench quick

# The lock: every dependency of miaudit and of all its extras (test, dev, docs, ray, dp, hf, timm, bench, tracking), pinned, resolved
# against the torch/torchvision pair in lock-constraints.txt. Commit requirements.lock after.
# Pins already in the lock are kept where still allowed; LOCKFLAGS=--upgrade moves all to the newest.
lock: $(STAMP)
	$(BIN)/pip-compile $(LOCKFLAGS) --quiet --strip-extras --no-emit-index-url --no-emit-find-links \
		--extra test --extra dev --extra docs --extra ray --extra dp --extra hf --extra timm --extra bench --extra tracking \
		-c lock-constraints.txt \
		-o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) site build dist src/*.egg-info .pytest_cache .ruff_cache
