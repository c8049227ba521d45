"""Figures: the explorable ones redraw when their controls move and compute what pe_lib computes,
keep their text inside their box and 3:1 contrast in both themes; the images keep their shape,
are sharp, load lazily and stay legible on a phone."""

from __future__ import annotations

import re

import pytest
import torch

import pe_lib
from pe_lib.rope.scaling import resolve_scaling, rope_frequencies
from pe_lib.viz.charts import CHARTS
from tests.book.html.book_pages import (
    CHAPTER_PAGES,
    CHART_THEME,
    HTML_DIR,
    NARROW_WIDTH,
    PAGES,
    PAGES_WITH_FIGURES,
    WIDE_WIDTH,
    _draw_figures,
    _not_available,
    _open,
    check_images,
)

pytestmark = pytest.mark.html

# Where a control moves to: a quarter of its range, else its end (a text box gets other columns).
NEW_TEXT_VALUE = "3, 8, 21"

DESCRIBE_FIGURES = """() => Array.from(document.querySelectorAll('div.pe-chart'), figure => ({
    name: figure.dataset.peChart,
    state: figure.dataset.peChartState,
    controls: Array.from(figure.querySelectorAll('.vega-bindings input, .vega-bindings select'),
        input => ({name: input.name, type: input.type, value: input.value, min: input.min,
                   max: input.max, step: input.step})),
}))"""

# The image of a figure (its SVG) and the rows behind every mark it drew, with the values of its
# parameters: what the reader sees, and what the browser computed to draw it.
READ_FIGURE = """(index) => {
    const figure = document.querySelectorAll('div.pe-chart')[index];
    const view = figure.peView;
    const rows = [];
    const seen = new Set();
    (function walk(node) {
        for (const item of node.items || []) {
            if (item.datum && item.mark && item.mark.marktype !== 'group') {
                const row = {};
                for (const [key, value] of Object.entries(item.datum)) {
                    if (typeof value === 'number' || typeof value === 'string') row[key] = value;
                }
                const key = JSON.stringify(row);
                if (!seen.has(key)) { seen.add(key); rows.push(row); }
            }
            walk(item);
        }
    })(view.scenegraph().root);
    const settings = {};
    for (const input of figure.querySelectorAll('.vega-bindings input')) {
        settings[input.name] = view.signal(input.name);
    }
    const fixed = JSON.parse(figure.nextElementSibling.textContent).usermeta.fixed;
    return {svg: figure.querySelector('svg').outerHTML, rows, settings: {...fixed, ...settings}};
}"""

MOVE_CONTROL = """async ([index, name, value]) => {
    const figure = document.querySelectorAll('div.pe-chart')[index];
    const input = figure.querySelector(`.vega-bindings [name="${name}"]`);
    input.value = value;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
    await figure.peView.runAsync();
}"""


def _moved_value(control: dict) -> str:
    if control["type"] != "range":
        return NEW_TEXT_VALUE
    low, high, step = float(control["min"]), float(control["max"]), float(control["step"])
    quarter = low + round((high - low) / 4 / step) * step
    target = quarter if abs(quarter - float(control["value"])) > step / 2 else high
    return f"{target:g}"


def _close(actual: float, expected: float, what: str, problems: list[str]) -> None:
    if not abs(actual - expected) <= 1e-6:
        problems.append(f"{what}: browser {actual!r}, pe_lib {expected!r}")


def _base(settings: dict) -> tuple[int, float]:
    return int(settings["d_model"]), 10.0 ** settings["log10_base"]


def _frequency(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model, base = _base(settings)
    table = pe_lib.sinusoidal_table(
        int(settings["num_positions"]), d_model, base=base, dtype=torch.float64
    )
    for row in drawn:
        expected = float(table[int(row["pos"]), int(row["column"])])
        _close(row["value"], expected, f"PE({row['pos']}, {row['column']})", problems)


def _wavelength(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    expected_all = pe_lib.wavelengths(*_base(settings))
    if len(drawn) != len(expected_all):
        problems.append(f"{len(drawn)} pairs drawn, pe_lib has {len(expected_all)}")
    for row in drawn:
        expected = float(expected_all[int(row["pair"])])
        _close(row["wavelength"] / expected, 1.0, f"wavelength {row['pair']}", problems)


def _dot_product(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model, base = _base(settings)
    last = max(int(row["k"]) for row in drawn)
    table = pe_lib.sinusoidal_table(37 + last + 1, d_model, base=base, dtype=torch.float64)
    for row in drawn:
        k = int(row["k"])
        for pos in (0, 37):  # any position: the dot product depends on k alone
            expected = float(table[pos] @ table[pos + k])
            _close(row["dot"], expected, f"PE({pos}) . PE({pos}+{k})", problems)


def _rotation(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    d_model = int(settings["d_model"])
    pair, pos, k = int(settings["pair"]), int(settings["position"]), int(settings["shift"])
    table = pe_lib.sinusoidal_table(max(pos, pos + k) + 1, d_model, dtype=torch.float64)
    shifted = pe_lib.relative_shift_matrix(k, d_model) @ table[pos]  # M_k PE(pos)
    expected = {"pos": table[pos], "pos + k": shifted}
    for row in drawn:
        vector = expected[row["which"]]
        _close(row["x"], float(vector[2 * pair]), f"{row['which']} sine", problems)
        _close(row["y"], float(vector[2 * pair + 1]), f"{row['which']} cosine", problems)
    if len(drawn) != 2:
        problems.append(f"{len(drawn)} points drawn, expected pos and pos + k")


def _query_key(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    head_dim, pair = int(settings["head_dim"]), int(settings["pair"])
    shift, distance = int(settings["shift"]), int(settings["distance"])
    positions = {"query": shift + distance, "key": shift}  # m = t + distance, n = t
    for row in drawn:
        name = row["vector"]
        vector = torch.zeros(1, head_dim, dtype=torch.float64)
        vector[0, 2 * pair] = settings[f"{name}_x"]
        vector[0, 2 * pair + 1] = settings[f"{name}_y"]
        rotated = pe_lib.apply_rope(vector, torch.tensor([positions[name]]))[0]
        _close(row["position"], positions[name], f"{name} position", problems)
        _close(row["x"], float(rotated[2 * pair]), f"{name} channel 2i", problems)
        _close(row["y"], float(rotated[2 * pair + 1]), f"{name} channel 2i + 1", problems)
    if sorted(row["vector"] for row in drawn) != ["key", "query"]:
        problems.append(f"{len(drawn)} vectors drawn, expected the query and the key")


def _alibi_bias(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    num_heads, last = int(settings["num_heads"]), int(settings["max_distance"])
    slopes = pe_lib.alibi_slopes(num_heads)
    bias = pe_lib.alibi_bias(num_heads, last + 1, last + 1, dtype=torch.float64)
    if {int(row["head"]) for row in drawn} != set(range(num_heads)):
        problems.append(
            f"heads drawn {sorted({row['head'] for row in drawn})}, expected {num_heads}"
        )
    for row in drawn:
        head, distance = int(row["head"]), int(row["distance"])
        _close(row["slope"], float(slopes[head]), f"slope of head {head}", problems)
        expected = float(bias[head, last, last - distance])  # query at `last`, key before it
        _close(row["bias"], expected, f"bias of head {head} at distance {distance}", problems)


def _scaling(settings: dict, drawn: list[dict], problems: list[str]) -> None:
    head_dim, base = int(settings["head_dim"]), float(settings["base"])
    length, factor = int(settings["original_length"]), float(settings["factor"])
    current = round(settings["ell_ratio"] * length)
    original = {"original_max_position_embeddings": length}
    entries = {
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        # dynamic NTK's own factor (fixed), not the factor control
        "dynamic": resolve_scaling(
            {"rope_type": "dynamic", "factor": float(settings["dynamic_factor"])},
            base,
            max_position_embeddings=length,
        ),
        "yarn": {"rope_type": "yarn", "factor": factor, **original},
        "llama3": {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": float(settings["low_freq_factor"]),
            "high_freq_factor": float(settings["high_freq_factor"]),
            **original,
        },
    }
    plain, _ = rope_frequencies(head_dim, base=base)
    expected_ratio = {
        method: rope_frequencies(head_dim, base=base, scaling=entry, seq_len=current)[0] / plain
        for method, entry in entries.items()
    }
    if {row["method"] for row in drawn} != set(entries):
        problems.append(f"methods drawn {sorted({row['method'] for row in drawn})}")
    for row in drawn:
        expected = float(expected_ratio[row["method"]][int(row["pair"])])
        _close(row["ratio"], expected, f"{row['method']} pair {row['pair']}", problems)


# pe_lib's side of every figure in pe_lib.viz.charts.CHARTS: the fields of the rows it draws, and the
# comparison of those rows with pe_lib at the figure's settings.
FIGURE_REFERENCES = {
    "frequency": ({"pos", "column", "value"}, _frequency),
    "wavelength": ({"pair", "wavelength"}, _wavelength),
    "dot_product": ({"k", "dot"}, _dot_product),
    "rotation": ({"which", "x", "y"}, _rotation),
    "query_key": ({"vector", "position", "x", "y"}, _query_key),
    "alibi_bias": ({"head", "slope", "distance", "bias"}, _alibi_bias),
    "scaling": ({"pair", "method", "ratio"}, _scaling),
}


def _agrees_with_pe_lib(name: str, settings: dict, rows: list[dict]) -> list[str]:
    """The browser's values against pe_lib's, for the figure ``name`` at ``settings``."""
    if name not in FIGURE_REFERENCES:
        return [f"no pe_lib reference for the figure {name!r}"]
    fields, compare = FIGURE_REFERENCES[name]
    drawn = [row for row in rows if fields <= row.keys()]
    if not drawn:
        return [f"figure {name!r} drew none of the values it should compute"]
    problems: list[str] = []
    compare(settings, drawn, problems)
    return problems


def test_every_figure_has_a_pe_lib_reference() -> None:
    assert set(FIGURE_REFERENCES) == set(CHARTS)


def test_book_has_explorable_figures() -> None:
    """At least five figures that recompute in the browser, on at least four chapter pages."""
    assert sum(PAGES_WITH_FIGURES.values()) >= 5 and len(PAGES_WITH_FIGURES) >= 4, (
        f"explorable figures per page: {PAGES_WITH_FIGURES}"
    )


@pytest.mark.korean_browser
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_figures_redraw_and_agree_with_pe_lib(visit, relpath: str) -> None:
    """Every control of every figure redraws it; the values drawn equal pe_lib's within 1e-6."""
    if not PAGES_WITH_FIGURES:
        pytest.fail("no chapter stores an explorable figure")
    page = visit(relpath).page
    _draw_figures(page)
    figures = page.evaluate(DESCRIBE_FIGURES)
    assert len(figures) == PAGES_WITH_FIGURES[relpath]
    problems = []
    for index, figure in enumerate(figures):
        name = figure["name"]
        if figure["state"] != "drawn" or not figure["controls"]:
            problems.append(f"figure {index} ({name}): {figure['state']}, {figure['controls']}")
            continue
        before = page.evaluate(READ_FIGURE, index)
        problems += [
            f"{name} at {before['settings']}: {p}"
            for p in _agrees_with_pe_lib(name, before["settings"], before["rows"])
        ]
        for control in figure["controls"]:
            value = _moved_value(control)
            page.evaluate(MOVE_CONTROL, [index, control["name"], value])
            after = page.evaluate(READ_FIGURE, index)
            if after["svg"] == before["svg"]:
                problems.append(f"{name}: moving {control['name']} to {value} redrew nothing")
            problems += [
                f"{name} at {after['settings']}: {p}"
                for p in _agrees_with_pe_lib(name, after["settings"], after["rows"])
            ]
            before = after
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems[:20])


# Every control a reader can move in the text of a page (the theme's own buttons, search box and
# menus aside): each must belong to a figure that the browser redraws.
ARTICLE_CONTROLS = """() => Array.from(
    document.querySelectorAll('article input, article select, article textarea'))
    .filter(control => control.type !== 'hidden' && control.getClientRects().length > 0)
    .map(control => ({html: control.outerHTML.slice(0, 160),
                      inFigure: control.closest('div.pe-chart') !== null}))"""


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_no_control_moves_without_effect(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath)
    page = page_visit.page
    page_visit.settle()
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    dead = [c["html"] for c in page.evaluate(ARTICLE_CONTROLS) if not c["inFigure"]]
    assert not dead, f"{relpath}: controls that no figure on the page answers: {dead}"


# Alpha of the corners of every figure image, drawn on a canvas: 255 where the figure brings its
# own opaque background, which keeps dark axes and labels readable on the dark theme.
FIGURE_BACKGROUNDS = """() => {
    const results = [];
    for (const img of document.querySelectorAll('article img')) {
        const canvas = document.createElement('canvas');
        canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
        const context = canvas.getContext('2d');
        context.drawImage(img, 0, 0);
        const corners = [[0, 0], [img.naturalWidth - 1, img.naturalHeight - 1]];
        const alpha = corners.map(([x, y]) => context.getImageData(x, y, 1, 1).data[3]);
        results.push({figure: img.currentSrc.split('/').pop(), opaque: Math.min(...alpha) === 255});
    }
    return results;
}"""


def _luminance(colour: str) -> float:
    """Relative luminance of a CSS ``rgb(...)`` colour (WCAG 2)."""
    channels = [int(float(v)) for v in re.findall(r"[\d.]+", colour)[:3]]

    def linear(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = map(linear, channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("relpath", PAGES or ["<no pages built>"])
def test_figures_readable_in_dark_mode(visit, relpath: str) -> None:
    if not PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(relpath, init_script="localStorage.setItem('mode', 'dark')")
    page = page_visit.page
    page_visit.settle()
    assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    if relpath in PAGES_WITH_FIGURES:
        _draw_figures(page)
    check_images(page)
    transparent = [f["figure"] for f in page.evaluate(FIGURE_BACKGROUNDS) if not f["opaque"]]
    assert not transparent, f"{relpath}: figures without an opaque background: {transparent}"
    problems = []
    for chart in page.evaluate(CHART_THEME):
        if chart["background"] != chart["page"]:
            problems.append(
                f"{chart['name']}: background {chart['background']}, page {chart['page']}"
            )
        if chart["controls"] is not None and chart["controls"] != chart["page"]:
            problems.append(
                f"{chart['name']}: controls on {chart['controls']}, page {chart['page']}"
            )
        if chart["text"] and _luminance(chart["text"]) < 0.4:
            problems.append(f"{chart['name']}: dark text {chart['text']} on the dark page")
        dark_words = [colour for colour in chart["words"] if _luminance(colour) < 0.4]
        if dark_words:
            problems.append(f"{chart['name']}: controls' text in {dark_words} on the dark page")
        label = chart["label"]
        if "Vega visualization" in label or not label.startswith("Chart:") or len(label) < 60:
            problems.append(f"{chart['name']}: no description of its own: {label!r}")
    assert not problems, f"{relpath} in dark mode:\n  " + "\n  ".join(problems)


TEXT_CONTROLS = "div.pe-chart .vega-bindings input[type=text]"


@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_enter_in_a_chart_control_neither_submits_nor_scrolls(visit, relpath: str) -> None:
    """Enter in every text control keeps URL and scroll; bad input is reported in words."""
    page = visit(relpath, viewport={"width": WIDE_WIDTH, "height": 900}).page
    _draw_figures(page)
    page.evaluate("() => { window.peNotReloaded = true; }")
    boxes = page.locator(TEXT_CONTROLS)
    problems = []
    for index in range(boxes.count()):
        box = boxes.nth(index)
        box.scroll_into_view_if_needed()
        url, scroll = page.url, page.evaluate("() => window.scrollY")
        box.fill("abc, 999, 1")
        box.press("Enter")
        page.wait_for_timeout(500)
        if page.url != url or not page.evaluate("() => window.peNotReloaded === true"):
            problems.append(f"text box {index}: Enter reloaded or left the page ({page.url})")
            break
        if abs(page.evaluate("() => window.scrollY") - scroll) > 2:
            problems.append(f"text box {index}: Enter scrolled the page")
        figure = box.locator("xpath=ancestor::div[contains(@class, 'pe-chart')]")
        message = figure.locator(".pe-chart-message").inner_text()
        if "abc" not in message or "999" not in message:
            problems.append(f"text box {index}: bad input not reported: {message!r}")
        box.fill("0, 1")
        box.press("Enter")
        page.wait_for_timeout(300)
        if figure.locator(".pe-chart-message").inner_text().strip():
            problems.append(f"text box {index}: a message stays after good input")
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


CHARTS_FIT = """() => Array.from(document.querySelectorAll('div.pe-chart'), figure => {
    const svg = figure.querySelector('svg');
    return {name: figure.dataset.peChart, box: figure.clientWidth,
            drawn: Math.round(svg.getBoundingClientRect().width),
            right: Math.round(svg.getBoundingClientRect().right),
            limit: Math.round(figure.getBoundingClientRect().right)};
})"""


@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_charts_fit_their_box_after_a_resize(visit, relpath: str) -> None:
    """1280 -> 700 -> 1280: every chart is drawn within its box, and fills a wide one."""
    page = visit(relpath, viewport={"width": WIDE_WIDTH, "height": 900}).page
    _draw_figures(page)
    problems = []
    for width in (700, WIDE_WIDTH):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(800)
        for chart in page.evaluate(CHARTS_FIT):
            if chart["right"] > chart["limit"] + 1:
                problems.append(
                    f"at {width} px, {chart['name']} is {chart['drawn']} px wide "
                    f"in a {chart['box']} px box"
                )
    assert not problems, f"{relpath}:\n  " + "\n  ".join(problems)


# The pixels of the file each image shows (an image with a srcset reports a naturalWidth scaled
# by the density of the copy it chose; the file loaded on its own gives its pixels).
SHARPNESS = """() => Promise.all(Array.from(document.querySelectorAll('article img'))
    .filter(img => img.getClientRects().length > 0 && img.clientWidth > 0)
    .map(async img => {
        const file = new Image();
        file.src = img.currentSrc;
        await file.decode();
        return {src: img.currentSrc.split('/').pop(), natural: file.naturalWidth,
                shown: img.clientWidth, vector: /\\.svg($|\\?)/.test(img.currentSrc)};
    }))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figures_are_sharp_on_high_dpi_screens(visit, relpath: str) -> None:
    """Every figure image is vector, or has at least 1.5 pixels per displayed CSS pixel, on a
    screen with two device pixels per CSS pixel (a figure's ``srcset`` gives a screen of lower
    density a smaller copy)."""
    if not CHAPTER_PAGES:
        _not_available(f"no chapter pages under {HTML_DIR}: run `make book` first")
    page_visit = visit(
        relpath, viewport={"width": WIDE_WIDTH, "height": 900}, device_scale_factor=2
    )
    page = page_visit.page
    page_visit.settle()
    check_images(page)
    soft = [
        f"{img['src']}: {img['natural']} px shown {img['shown']} px wide"
        for img in page.evaluate(SHARPNESS)
        if not img["vector"] and img["natural"] < 1.5 * img["shown"] and "logo" not in img["src"]
    ]
    assert not soft, f"{relpath}: soft figures:\n  " + "\n  ".join(soft)


# Each figure image: the aspect it is shown at against its own, once loaded.
FIGURE_SHAPES = """() => Promise.all(Array.from(
        document.querySelectorAll('article .cell_output img'), async img => {
    const file = new Image();  // the pixels of the file shown (naturalWidth is density-scaled)
    if (img.currentSrc) { file.src = img.currentSrc; await file.decode(); }
    return {
    src: img.getAttribute('src').split('/').pop(),
    shown: img.clientWidth / img.clientHeight,
    natural: img.naturalWidth / img.naturalHeight,
    lazy: img.loading === 'lazy',
    srcset: img.hasAttribute('srcset'),
    current: img.currentSrc.split('/').pop(),
    naturalWidth: file.naturalWidth,
    width: img.clientWidth,
};}))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figures_keep_their_shape_load_lazily_and_fit_a_phone(browser, base_url, relpath) -> None:
    """At 400 px every figure keeps its aspect ratio (a circle stays a circle); every figure
    loads lazily; each offers a copy for a phone's column, which the phone takes."""
    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        before = page.evaluate(FIGURE_SHAPES)
        assert not check_images(page)  # loads every figure (scrolling to each)
        figures = page.evaluate(FIGURE_SHAPES)
    finally:
        page_visit.close()
    squashed = [
        f"{f['src']}: shown {f['shown']:.2f}, natural {f['natural']:.2f}"
        for f in figures
        if abs(f["shown"] / f["natural"] - 1) > 0.02
    ]
    assert not squashed, f"{relpath} at {NARROW_WIDTH} px, figures out of shape: {squashed}"
    eager = [f["src"] for f in before if not f["lazy"]]
    assert not eager, f"{relpath}: figures that load before the reader comes near them: {eager}"
    big = [
        f"{f['src']} loaded {f['current']} ({f['naturalWidth']} px for {f['width']} px)"
        for f in figures
        if f["srcset"] is False or f["naturalWidth"] > 2 * f["width"]
    ]
    assert not big, f"{relpath} at {NARROW_WIDTH} px, figures with no phone-sized copy: {big}"


# The smallest text a reader sees in a figure, in CSS px: 9 px, about 6.75 pt, the smallest type
# print journals accept in a figure (and the tick labels that a 400 px screen showed at 5 to 7 px
# before the figures were narrowed).
SMALLEST_SHOWN_TEXT_PX = 9.0
# Each matplotlib figure: the width the page shows it at, and the width it was drawn for (its
# ``width`` attribute, IPython's retina size: 1 CSS px per pixel at matplotlib's 100 dpi).
FIGURE_SCALES = """() => Array.from(document.querySelectorAll('article .cell_output img'), img => ({
    src: img.getAttribute('src').split('/').pop(),
    shown: img.getBoundingClientRect().width,
    drawn: Number(img.getAttribute('width')),
    enlarge: !!img.closest('a[href]'),
}))"""


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_figure_text_is_legible_on_a_phone(browser, base_url, relpath) -> None:
    """At 400 px, the smallest text of every matplotlib figure shows at 9 CSS px or more.

    A figure is drawn at 100 dpi, so text of ``s`` points is ``s * 100 / 72`` CSS px where the
    figure is shown at the width it was drawn for; the page scales it to its column. The smallest
    text any figure draws is ``pe_lib.viz.plotting.SMALLEST_TEXT_PT``: the book's figures are shown
    by ``use_book_figures``, which refuses smaller text (and nbval re-executes every chapter).
    Each figure still opens at full size on a tap.
    """
    from pe_lib.viz.plotting import BOOK_RC, SMALLEST_TEXT_PT

    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        assert not check_images(page)
        figures = page.evaluate(FIGURE_SCALES)
    finally:
        page_visit.close()
    point = BOOK_RC["figure.dpi"] / 72  # CSS px per point where a figure is shown at 1 to 1
    small = [
        f"{f['src']}: drawn {f['drawn']} px wide, shown {f['shown']:.0f} px: "
        f"{SMALLEST_TEXT_PT:g} pt text at {SMALLEST_TEXT_PT * point * f['shown'] / f['drawn']:.1f} px"
        for f in figures
        if SMALLEST_TEXT_PT * point * f["shown"] / f["drawn"] < SMALLEST_SHOWN_TEXT_PX
    ]
    assert not small, (
        f"{relpath} at {NARROW_WIDTH} px, figure text under {SMALLEST_SHOWN_TEXT_PX:g} px:\n  "
        + "\n  ".join(small)
    )
    closed = [f["src"] for f in figures if not f["enlarge"]]
    assert not closed, f"{relpath}: figures that a tap does not open at full size: {closed}"


# Every mark of every chart that carries data (lines, points, symbols in the plot, not the
# axes, gridlines or legend), its stroke or fill, with the page's background.
CHART_MARKS = """() => {
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.documentElement)
        .getPropertyValue('--pst-color-background');
    document.body.appendChild(probe);
    const page = getComputedStyle(probe).color;
    probe.remove();
    const marks = [];
    for (const figure of document.querySelectorAll('div.pe-chart')) {
        for (const path of figure.querySelectorAll(
                'svg g.mark-line path, svg g.mark-symbol path, svg g.mark-area path')) {
            if (path.closest('.role-legend, .role-axis')) continue;
            const style = getComputedStyle(path);
            const colour = style.stroke !== 'none' ? style.stroke : style.fill;
            if (colour === 'none' || parseFloat(style.opacity) === 0) continue;
            marks.push({chart: figure.dataset.peChart, colour});
        }
    }
    return {page, marks};
}"""


def _contrast(first: str, second: str) -> float:
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_every_chart_mark_has_3_to_1_contrast_with_the_page(
    browser, base_url, relpath: str, theme: str
) -> None:
    """WCAG 2.1's 1.4.11 for the explorable figures: each line and point that carries data has at
    least 3:1 contrast with the page, light and dark (charts follow the theme live)."""
    if not PAGES_WITH_FIGURES:
        _not_available(f"no figures under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, theme)
    try:
        page = page_visit.page
        assert page.evaluate("() => document.documentElement.dataset.theme") == theme
        found = page.evaluate(CHART_MARKS)
        # And after the reader switches theme on the page: the charts redraw in its colours.
        other = "dark" if theme == "light" else "light"
        page.evaluate(f"() => document.documentElement.dataset.theme = '{other}'")
        page.wait_for_timeout(1500)
        _draw_figures(page)
        switched = page.evaluate(CHART_MARKS)
    finally:
        page_visit.close()
    problems = []
    for label, result in ((theme, found), (f"switched to {other}", switched)):
        assert result["marks"], f"{relpath}: no chart marks found ({label})"
        weak = {
            f"{m['chart']} {m['colour']}: {_contrast(m['colour'], result['page']):.2f}"
            for m in result["marks"]
            if _contrast(m["colour"], result["page"]) < 3
        }
        problems += [f"{label}, page {result['page']}: {sorted(weak)}"] if weak else []
    assert not problems, f"{relpath}: chart marks below 3:1 with the page: {problems}"


# Every text of a chart (tick labels, titles, legends) inside the chart's own box, at each
# control's smallest and largest setting.
CHART_TEXT_CUT = """async () => {
    const cut = [];
    for (const figure of document.querySelectorAll('div.pe-chart')) {
        const view = figure.peView;
        const sliders = Array.from(figure.querySelectorAll('.vega-bindings input[type=range]'));
        const start = sliders.map(input => input.value);
        // Every slider at its end, together, then each alone.
        const settings = [sliders.map(i => i.min), sliders.map(i => i.max)];
        sliders.forEach((input, k) => {
            for (const end of [input.min, input.max]) {
                settings.push(start.map((value, m) => (m === k ? end : value)));
            }
        });
        settings.push(start);
        for (const values of settings) {
            sliders.forEach((input, k) => {
                input.value = values[k];
                input.dispatchEvent(new Event('input', {bubbles: true}));
            });
            await view.runAsync();
            await new Promise(resolve => setTimeout(resolve, 100));
            const box = figure.querySelector('svg').getBoundingClientRect();
            for (const text of figure.querySelectorAll('svg text')) {
                const r = text.getBoundingClientRect();
                if (!text.textContent.trim() || r.width === 0) continue;
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5
                        || r.bottom > box.bottom + 0.5) {
                    const where = sliders.map((input, k) => `${input.name} ${values[k]}`);
                    cut.push(`${figure.dataset.peChart} (${where.join(', ')}): `
                             + `"${text.textContent}"`);
                }
            }
        }
    }
    return Array.from(new Set(cut));
}"""


@pytest.mark.parametrize("width", [NARROW_WIDTH, WIDE_WIDTH])
@pytest.mark.parametrize("relpath", sorted(PAGES_WITH_FIGURES) or ["<no figures>"])
def test_chart_text_is_never_cut(browser, base_url, relpath: str, width: int) -> None:
    """No tick label, title or legend of a chart reaches past its box (chapter 8's log axis cut
    "0.003" to ".003" at factor 16)."""
    if not PAGES_WITH_FIGURES:
        _not_available(f"no figures under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": width, "height": 900})
    try:
        cut = page_visit.page.evaluate(CHART_TEXT_CUT)
    finally:
        page_visit.close()
    assert not cut, f"{relpath} at {width} px, chart text cut at its box: {cut[:6]}"
