# Quick start: `make run` (main job) and `make test` (whole suite). Both create .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test install install-dev bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

run: install
	$(BIN)/aiinfra check
	$(BIN)/python -m engine.tour

test: install-dev
	$(BIN)/python -m pytest || test $$? -eq 5

bench: install
	$(BIN)/python benchmarks/run.py

lint: install-dev
	$(BIN)/ruff check engine tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
