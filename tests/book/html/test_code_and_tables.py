"""Code, printed output and tables: lines kept whole, columns kept under their labels, a box
wider than the column scrolls, is reachable with the keyboard and shows that it scrolls; wide
tables keep their first column in view on a phone and their row lines on a desktop."""

from __future__ import annotations

import pytest

from tests.book.html.book_pages import (
    CHAPTER_PAGES,
    HTML_DIR,
    NARROW_WIDTH,
    OVERFLOWING,
    PAGES,
    WIDE_WIDTH,
    _not_available,
    _open,
    _open_wide,
)

pytestmark = pytest.mark.html

CODE_BOXES = "article div.cell pre, article div.highlight pre"


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_no_code_or_output_scrolls_at_1280(visit, relpath: str) -> None:
    """Chapters keep lines within 76 characters; the column holds 80 at 1280 px."""
    if not CHAPTER_PAGES:
        _not_available(f"no chapter pages under {HTML_DIR}: run `make book` first")
    page = _open_wide(visit, relpath)
    columns = page.evaluate(
        """() => { const pre = document.querySelector('article pre');
        const style = getComputedStyle(pre);
        const canvas = document.createElement('canvas').getContext('2d');
        canvas.font = style.fontSize + ' ' + style.fontFamily;
        const inner = pre.clientWidth - parseFloat(style.paddingLeft)
            - parseFloat(style.paddingRight);
        return inner / canvas.measureText('0').width; }"""
    )
    assert columns >= 80, f"{relpath}: the code column holds {columns:.1f} characters at 1280 px"
    wide = page.evaluate(OVERFLOWING, CODE_BOXES)
    assert not wide, f"{relpath}: code or output scrolls sideways at 1280 px: {wide[:5]}"


# Each code block or printed output of the page, shown (not in a folded cell), with every line of
# its text that the screen breaks onto two rows or more (its first and last characters on
# different rows), and whether it scrolls and can be reached with the keyboard and says what it is.
LINES_ON_SCREEN = """(selector) => Array.from(document.querySelectorAll(selector))
    .filter(pre => pre.getClientRects().length > 0 && !pre.closest('details:not([open])'))
    .map(pre => {
        const chars = [];
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode;
            for (let i = 0; i < node.data.length; i++) chars.push([node, i, node.data[i]]);
        }
        const box = ([node, i]) => {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            return range.getBoundingClientRect();
        };
        const lines = [[]];
        for (const char of chars) {
            if (char[2] === '\\n') lines.push([]);
            else lines[lines.length - 1].push(char);
        }
        const broken = lines.map(line => line.filter(c => c[2].trim()))
            .filter(line => line.length > 1
                && Math.abs(box(line[0]).top - box(line[line.length - 1]).top) > 2)
            .map(line => line.map(c => c[2]).join('').slice(0, 50));
        return {text: pre.textContent.trim().slice(0, 50), broken,
                scrolls: pre.scrollWidth > pre.clientWidth + 1,
                reachable: pre.tabIndex === 0 && pre.getAttribute('role') === 'region'
                    && (pre.getAttribute('aria-label') || '').length > 0};
    })"""
PHONE_BOXES = "article div.highlight > pre"
# Every folded cell of the page opened, then two frames: how many there were.
OPEN_FOLDED_CELLS = """() => new Promise(resolve => {
    const folded = Array.from(document.querySelectorAll('article details:not([open])'));
    folded.forEach(details => { details.open = true; });
    requestAnimationFrame(() => requestAnimationFrame(() => resolve(folded.length)));
})"""
# Chapters with a folded cell whose code scrolls on a phone.
FOLDED_PAGES = {"book/00_the_path.html"}


@pytest.mark.parametrize("relpath", CHAPTER_PAGES or ["<no pages built>"])
def test_code_and_output_keep_their_lines_on_a_phone(browser, base_url, relpath: str) -> None:
    """At 400 px no line of code or printed output is broken onto two rows (a continuation at
    column 0, a name split mid-word, a hanging indent turned into an empty line): a line wider
    than the column scrolls inside its box, and each box that scrolls is keyboard-focusable and
    labelled (tabindex 0, role region, an aria-label)."""
    if not CHAPTER_PAGES:
        _not_available(f"no HTML pages under {HTML_DIR}: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": NARROW_WIDTH, "height": 800})
    try:
        page = page_visit.page
        boxes = page.evaluate(LINES_ON_SCREEN, PHONE_BOXES)
        # The reader opens every folded cell: its boxes are measured as they are shown.
        folded = page.evaluate(OPEN_FOLDED_CELLS)
        boxes += [box for box in page.evaluate(LINES_ON_SCREEN, PHONE_BOXES) if box not in boxes]
    finally:
        page_visit.close()
    assert any(box["scrolls"] for box in boxes), f"{relpath}: no box scrolls at 400 px (vacuous)"
    assert folded or relpath not in FOLDED_PAGES, f"{relpath}: no folded cell (a vacuous check)"
    broken = [f"{box['text']!r}: {box['broken'][:2]}" for box in boxes if box["broken"]]
    assert not broken, (
        f"{relpath} at {NARROW_WIDTH} px, lines broken in {len(broken)}: {broken[:3]}"
    )
    unreachable = [box["text"] for box in boxes if box["scrolls"] and not box["reachable"]]
    assert not unreachable, f"{relpath}: scroll boxes not focusable and labelled: {unreachable[:3]}"


# Each printed table (an output of 3 lines or more with 3 columns or more, set apart by two
# spaces or more): whether its box scrolls, and each character of a row that does not stand
# under the same character position of the table's first row (its labels).
TABLE_COLUMNS = """() => Array.from(document.querySelectorAll('article .cell_output div.highlight > pre'))
    .filter(pre => pre.getClientRects().length > 0)
    .map(pre => {
        const lines = [[]];
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode;
            for (let i = 0; i < node.data.length; i++) {
                if (node.data[i] === '\\n') lines.push([]);
                else lines[lines.length - 1].push([node, i, node.data[i]]);
            }
        }
        const rows = lines.filter(line => line.map(c => c[2]).join('').trim()
            .split(/\\s{2,}/).length >= 3);
        return {pre, rows};
    })
    .filter(({rows}) => rows.length >= 3)
    .map(({pre, rows}) => {
        const left = ([node, i]) => {
            const range = document.createRange();
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            return range.getBoundingClientRect().left;
        };
        const labels = rows[0];
        const misplaced = [];
        for (const row of rows.slice(1)) {
            for (let i = 0; i < Math.min(row.length, labels.length); i += 1) {
                if (row[i][2].trim() && Math.abs(left(row[i]) - left(labels[i])) > 1) {
                    misplaced.push(row.map(c => c[2]).join('').trim().slice(0, 40) + ' @' + i);
                    break;
                }
            }
        }
        return {text: labels.map(c => c[2]).join('').trim().slice(0, 50),
                scrolls: pre.scrollWidth > pre.clientWidth + 1,
                reachable: pre.tabIndex === 0 && pre.getAttribute('role') === 'region'
                    && (pre.getAttribute('aria-label') || '').length > 0,
                misplaced};
    })"""
# The chapters whose printed tables fell apart on a phone: chapter 9's zero-shot perplexity by
# length, chapter 7's accuracies.
TABLE_PAGES = ["book/07_rope_alibi.html", "book/09_train_short_test_long.html"]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", TABLE_PAGES)
def test_printed_tables_keep_their_columns_on_a_phone(browser, base_url, relpath, theme) -> None:
    """At 400 px, in both themes, every value of a printed table stands under its label (the
    characters of every row at the same positions as the first row's), a table wider than the
    column scrolls in its box, and that box is keyboard-focusable and labelled."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, relpath, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        tables = page_visit.page.evaluate(TABLE_COLUMNS)
    finally:
        page_visit.close()
    assert any(t["scrolls"] for t in tables), f"{relpath}: no table wider than 400 px: {tables}"
    misplaced = [f"{t['text']!r}: {t['misplaced'][:2]}" for t in tables if t["misplaced"]]
    assert not misplaced, f"{relpath} ({theme}): values off their labels: {misplaced[:3]}"
    unreachable = [t["text"] for t in tables if t["scrolls"] and not t["reachable"]]
    assert not unreachable, f"{relpath}: tables that scroll, unlabelled: {unreachable}"


# --------------------------------------------------------------------------- wide tables, scroll cues
# Issue 55: chapter 11's model table on a phone showed 5 of its 7 columns, a column cut mid-word
# with no sign that it scrolls, neighbouring cells run together ("1,000,000128"), the names
# scrolled away, 1,827 px tall, a light-grey slab in dark mode; on a desktop, no row lines and
# "DeepSeek-V3" broken at its hyphen. Chapter 13's tables likewise.
WIDE_TABLE_PAGES = ["book/11_todays_models.html", "book/13_beyond_a_line.html"]
TABLE_BOXES = "article .pe-table-box, article .pst-scrollable-table-container"
# The tallest a table may be on a phone (px): chapter 11's, one row per model, was 1,827.
MAX_TABLE_HEIGHT = 1_200
# The least space between the text of two neighbouring cells (px).
MIN_CELL_GAP = 8

# The page's colour behind an element: the first ancestor's background that is not transparent.
BEHIND = """(element) => {
    for (let e = element; e; e = e.parentElement) {
        const colour = getComputedStyle(e).backgroundColor;
        if (colour !== 'rgba(0, 0, 0, 0)' && colour !== 'transparent') return colour;
    }
    return getComputedStyle(document.body).backgroundColor;
}"""
# Each table box: whether it scrolls, its height, the faded edge (mask) before and after it is
# scrolled to its end, where its first column stands then, the narrowest gap between the text of
# two neighbouring cells, and the colour behind the table against the page's.
WIDE_TABLES = f"""async () => {{
    const behind = {BEHIND};
    const textBox = (cell) => {{
        const range = document.createRange();
        range.selectNodeContents(cell);
        return range.getBoundingClientRect();
    }};
    const frame = () => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const found = [];
    for (const box of document.querySelectorAll('{TABLE_BOXES}')) {{
        const table = box.querySelector('table');
        if (!table || box.getClientRects().length === 0) continue;
        const scrolls = box.scrollWidth > box.clientWidth + 1;
        let gap = Infinity;
        for (const row of Array.from(table.rows).slice(0, 6)) {{
            const cells = Array.from(row.cells).filter(c => c.textContent.trim());
            for (let i = 0; i + 1 < cells.length; i += 1) {{
                gap = Math.min(gap, textBox(cells[i + 1]).left - textBox(cells[i]).right);
            }}
        }}
        const fadedAtStart = getComputedStyle(box).maskImage;
        box.scrollLeft = box.scrollWidth;
        box.dispatchEvent(new Event('scroll'));
        await frame();
        const first = table.rows[table.rows.length - 1].cells[0].getBoundingClientRect();
        found.push({{
            text: table.textContent.trim().slice(0, 40), scrolls,
            height: box.getBoundingClientRect().height,
            fadedAtStart, fadedAtEnd: getComputedStyle(box).maskImage,
            firstShift: Math.abs(first.left - box.getBoundingClientRect().left),
            gap, behind: behind(table), page: behind(document.querySelector('article')),
        }});
        box.scrollLeft = 0;
    }}
    return found;
}}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", WIDE_TABLE_PAGES)
def test_wide_tables_are_readable_on_a_phone(browser, base_url, relpath: str, theme: str) -> None:
    """At 400 px, in both themes, a table wider than the column keeps its first column (the
    names) in view while the rest scrolls, fades its right edge while more lies there and not
    once scrolled to the end, keeps its cells apart, is no taller than 1,200 px, and stands on
    the page's own background."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, relpath, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        tables = page_visit.page.evaluate(WIDE_TABLES)
    finally:
        page_visit.close()
    wide = [table for table in tables if table["scrolls"]]
    assert wide, f"{relpath}: no table wider than {NARROW_WIDTH} px (a vacuous check): {tables}"
    problems = []
    for table in wide:
        name = table["text"]
        if table["firstShift"] > 1:
            problems.append(f"{name!r}: its first column scrolled away ({table['firstShift']} px)")
        if not _right_edge_faded(table["fadedAtStart"]) or _right_edge_faded(table["fadedAtEnd"]):
            problems.append(f"{name!r}: edge {table['fadedAtStart']} -> {table['fadedAtEnd']}")
        if table["height"] > MAX_TABLE_HEIGHT:
            problems.append(f"{name!r}: {table['height']:.0f} px tall")
    for table in tables:
        if table["gap"] < MIN_CELL_GAP:
            problems.append(f"{table['text']!r}: cells {table['gap']:.1f} px apart")
        if table["behind"] != table["page"]:
            problems.append(f"{table['text']!r}: on {table['behind']}, the page {table['page']}")
    assert not problems, f"{relpath} ({theme}) at {NARROW_WIDTH} px: {problems}"


# Each table at a desktop's width: its rows without a line under them, and each hyphenated
# word of its first column that the screen broke onto two lines.
TABLE_LINES = rf"""() => Array.from(document.querySelectorAll('{TABLE_BOXES}'), box => {{
    const rows = Array.from(box.querySelectorAll('tr'));
    const unlined = rows.filter(row => Array.from(row.cells).some(cell => {{
        const style = getComputedStyle(cell);
        return parseFloat(style.borderBottomWidth) < 1 || style.borderBottomStyle === 'none';
    }})).length;
    const broken = [];
    for (const row of rows) {{
        const cell = row.cells[0];
        if (!cell) continue;
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {{
            const node = walker.currentNode;
            for (const match of node.data.matchAll(/\S*\S-\S\S*/g)) {{
                const range = document.createRange();
                range.setStart(node, match.index);
                range.setEnd(node, match.index + match[0].length);
                const tops = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
                if (tops.size > 1) broken.push(match[0]);
            }}
        }}
    }}
    return {{text: box.textContent.trim().slice(0, 40), rows: rows.length, unlined, broken}};
}})"""


@pytest.mark.parametrize("relpath", WIDE_TABLE_PAGES)
def test_tables_have_row_lines_and_whole_names_at_1280(browser, base_url, relpath: str) -> None:
    """At 1280 px every row of a table has a line under it, and no name of its first column
    breaks at its hyphen (DeepSeek-V3)."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(browser, base_url, relpath, viewport={"width": WIDE_WIDTH, "height": 900})
    try:
        tables = page_visit.page.evaluate(TABLE_LINES)
    finally:
        page_visit.close()
    assert tables, f"{relpath}: no table (a vacuous check)"
    problems = [t for t in tables if t["unlined"] or t["broken"]]
    assert not problems, (
        f"{relpath} at {WIDE_WIDTH} px: rows without a line or names broken: {problems}"
    )


# Issue 55: printed result tables cut off on a phone with no hint that the box scrolls (chapter
# 7's accuracy and per-position tables, chapter 12's "top choice changed" column).
SCROLL_CUE_PAGES = [
    "book/07_rope_alibi.html",
    "book/09_train_short_test_long.html",
    "book/12_positions_at_inference.html",
]
# Each printed output that scrolls: its edge's mask as loaded, then scrolled to its end.
OUTPUT_CUES = """async () => {
    const frame = () => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const found = [];
    const boxes = Array.from(document.querySelectorAll('article .cell_output div.highlight > pre'))
        .filter(pre => pre.getClientRects().length > 0 && pre.scrollWidth > pre.clientWidth + 1);
    for (const pre of boxes) {
        const start = getComputedStyle(pre).maskImage;
        pre.scrollLeft = pre.scrollWidth;
        pre.dispatchEvent(new Event('scroll'));
        await frame();
        const end = getComputedStyle(pre).maskImage;
        pre.scrollLeft = 0;
        pre.dispatchEvent(new Event('scroll'));
        await frame();
        found.push({text: pre.textContent.trim().slice(0, 40), start, end,
                    back: getComputedStyle(pre).maskImage});
    }
    return found;
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("relpath", SCROLL_CUE_PAGES)
def test_printed_output_shows_that_it_scrolls(browser, base_url, relpath: str, theme: str) -> None:
    """At 400 px, in both themes, every printed output wider than its box fades out at its right
    edge (a gradient mask), the fade goes once the reader has scrolled to its end, and comes
    back when they scroll back."""
    if relpath not in PAGES:
        _not_available(f"{relpath} is not built: run `make book` first")
    page_visit = _open(
        browser, base_url, relpath, theme, viewport={"width": NARROW_WIDTH, "height": 800}
    )
    try:
        boxes = page_visit.page.evaluate(OUTPUT_CUES)
    finally:
        page_visit.close()
    assert boxes, f"{relpath}: no printed output wider than {NARROW_WIDTH} px (a vacuous check)"
    wrong = [
        box
        for box in boxes
        if not _right_edge_faded(box["start"])
        or _right_edge_faded(box["end"])
        or not _right_edge_faded(box["back"])
    ]
    assert not wrong, f"{relpath} ({theme}): outputs without a scroll cue that follows: {wrong[:3]}"


def _right_edge_faded(mask: str) -> bool:
    """Whether a mask (page.css) fades an element's right edge: a gradient to the left, or one
    to the right that ends transparent."""
    return "to left" in mask or (
        "to right" in mask and mask.rstrip(") ").endswith("rgba(0, 0, 0, 0")
    )
