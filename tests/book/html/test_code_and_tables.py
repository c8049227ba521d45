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
