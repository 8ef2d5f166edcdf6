# Quick start: `make run` (main job) and `make test` (whole suite). Both create .venv.
# `make test-fast`: the suite less the tests marked slow (pyproject.toml's markers).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test test-fast install install-dev install-site site bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-site: pyproject.toml package-lock.json | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[site]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml package-lock.json | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,site,browser,dask]'
	touch $@

install: $(VENV)/.installed
install-site: $(VENV)/.installed-site
install-dev: $(VENV)/.installed-dev

# check the knowledge, a short tour, then build the docs site and serve it on 127.0.0.1:8000
run: install-site
	@echo "== 1/3 aiinfra check: every formula, record, tree and calculator validated"
	$(BIN)/aiinfra check
	@echo "== 2/3 a short tour: a few commands and their results"
	$(BIN)/python -m engine.tour
	@echo "== 3/3 the docs site: built, then served on http://127.0.0.1:8000 (Ctrl-C stops it)"
	$(BIN)/aiinfra site serve

test: install-dev
	$(BIN)/python -m pytest || test $$? -eq 5

test-fast: install-dev
	$(BIN)/python -m pytest -m "not slow" || test $$? -eq 5

site: install-site
	$(BIN)/aiinfra site build

bench: install-site
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/calculators.py
	$(BIN)/python benchmarks/trees.py
	$(BIN)/python benchmarks/site.py

lint: install-dev
	$(BIN)/ruff check engine tests benchmarks

clean:
	rm -rf $(VENV) build node_modules *.egg-info
