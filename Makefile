# The two commands README names are `make book` and `make test`; the rest are their parts.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-from-requirements
CHAPTERS := $(sort $(wildcard book/[0-9]*.ipynb))

# jupyter-book's strict mode: warnings are errors, missing references are warnings.
BOOK_FLAGS := -W -n --keep-going

.PHONY: book test lint unit nbval html-test execute bench clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

## book: build the HTML book into _build/html (strict: any warning fails).
book: $(STAMP)
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)

## test: lint, library tests, every chapter re-executed by nbval, strict build, browser test.
test: lint unit nbval book html-test

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check pe_lib tests benchmarks

unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not html"

nbval: $(STAMP)
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with book/sanitize.cfg --durations=0 $(CHAPTERS)

html-test: $(STAMP)
	$(BIN)/python -m pytest tests -m html

## execute: re-run every chapter and store its outputs (then commit them).
execute: $(STAMP)
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=300 $(CHAPTERS)

## bench: accuracy and speed figures (printed, never asserted in tests).
bench: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf _build .jupyter_cache
