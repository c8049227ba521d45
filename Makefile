# The two commands README names are `make book` and `make test`; the rest are their parts.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-from-requirements
CHAPTERS := $(sort $(wildcard book/[0-9]*.ipynb))

# jupyter-book's strict mode: warnings are errors, missing references are warnings.
BOOK_FLAGS := -W -n --keep-going

# jupyter-cache re-executes a chapter when its code cells change, not when pe_lib does: a change
# to the library (or the pins) starts the execution cache afresh, and drops Sphinx's saved
# doctrees so that every chapter is read, and so executed, again.
CACHE_STAMP := .jupyter_cache/.built-with-current-pe_lib
# The ipywidgets HTML manager, fetched (pinned, digest-checked) from the npm registry.
WIDGET_MANAGER := book/_static/jupyter-widgets/embed.js
# The Korean web font (Noto Sans KR, Hangul blocks only), fetched the same way.
HANGUL_FONT := book/_static/fonts/noto-sans-kr.css
# Vega, Vega-Lite and vega-embed, which draw the explorable figures, fetched the same way.
VEGA := book/_static/vega/vega-embed.min.js

.PHONY: book test lint unit nbval nbval-generic binder-test html-test execute bench clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

$(CACHE_STAMP): $(wildcard pe_lib/*.py) requirements.txt
	rm -rf .jupyter_cache _build/.doctrees
	mkdir -p .jupyter_cache
	touch $@

## book: build the HTML book into _build/html (strict: any warning fails).
book: $(STAMP) $(CACHE_STAMP) $(WIDGET_MANAGER) $(HANGUL_FONT) $(VEGA)
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)

## test: lint, library tests, every chapter re-executed by nbval and in the Binder environment,
## strict build, browser test of every page.
test: lint unit nbval nbval-generic binder-test book html-test

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check pe_lib tests benchmarks tools

unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not html and not binder and not generic_kernels"

nbval: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with book/sanitize.cfg --durations=0 $(CHAPTERS)

## nbval-generic: the same comparison under torch's and numpy's generic CPU kernels, so that no
## stored output depends on the SIMD kernels of the machine that executed it.
nbval-generic: $(STAMP)
	env $$($(BIN)/python tools/generic_kernels.py) PE_BOOK_GENERIC_KERNELS=1 \
		$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with book/sanitize.cfg $(CHAPTERS) tests/test_cpu_kernels.py

## binder-test: a fresh venv from binder/requirements.txt runs every chapter from book/.
binder-test: $(STAMP)
	$(BIN)/python -m pytest tests -m binder

## html-test: every page of _build/html in headless Chromium, offline (run `make book` first).
html-test: $(STAMP)
	$(BIN)/python -m pytest tests -m html

## execute: re-run every chapter (in its own folder) and store its outputs (then commit them).
execute: $(STAMP)
	$(BIN)/jupyter execute --inplace --timeout=300 $(CHAPTERS)

## bench: accuracy and speed figures (printed, never asserted in tests).
bench: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

$(WIDGET_MANAGER): tools/fetch_widget_manager.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_widget_manager.py

$(HANGUL_FONT): tools/fetch_hangul_font.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_hangul_font.py

$(VEGA): tools/fetch_vega.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_vega.py

clean:
	rm -rf _build .jupyter_cache book/_static/jupyter-widgets book/_static/fonts book/_static/vega
