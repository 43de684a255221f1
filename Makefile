# Transformer Lab: `make lab` opens the book in JupyterLab, `make test` runs every test.
# Both create a local virtual environment in .venv on first use.

PYTHON ?= python3
VENV ?= .venv
# torch goes in first so the package's torch range is already satisfied; override with
# e.g. `make lab TORCH=torch` to take the ordinary PyPI build (CUDA where available).
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ARGS ?=

.PHONY: setup lab test unit lint chapters book browser bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install "$(TORCH)"
	$(BIN)/python -m pip install -e ".[test]"
	$(BIN)/python scripts/configure_lab.py $(VENV)
	touch $(STAMP)

setup: $(STAMP)

lab: setup
	$(BIN)/python scripts/sync_notebooks.py
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) $(LAB_ARGS) book/index.md

lint: setup
	$(BIN)/ruff check transformer_lab tests scripts
	$(BIN)/ruff format --check transformer_lab tests scripts

unit: setup
	$(BIN)/python -m pytest tests -q

chapters: setup
	$(BIN)/python scripts/sync_notebooks.py
	$(BIN)/python -m pytest --nbval-lax -p no:randomly -q $$($(BIN)/python scripts/sync_notebooks.py --list-ipynb)

book: setup
	$(BIN)/python scripts/fetch_web_assets.py
	$(BIN)/python scripts/build_book.py

browser: setup
	$(BIN)/python -m pytest tests_browser -q

test: lint unit chapters book browser

bench: setup
	$(BIN)/python scripts/bench_attention.py

clean:
	rm -rf _build
