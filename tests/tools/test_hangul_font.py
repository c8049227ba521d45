"""book/_ext/hangul_font.py: the fetched Hangul font files, cut down to the syllables the built
pages use and merged into one file, which the pages that show Hangul preload (an English page
too, for its switch's label).

The font files here are small ones made for the test (fontTools' FontBuilder), each syllable
drawn as its own rectangle, so that a glyph that went to the wrong syllable in the merge shows."""

from __future__ import annotations

import re
from io import BytesIO

import hangul_font
import pytest
from bs4 import BeautifulSoup
from conftest import build_site
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont

# The fetched files, as tools/fetch_hangul_font.py writes them: each with its own syllables.
SHARDS = {
    "noto-sans-kr-1-400-normal.woff2": [0xAC00, 0xAC01, 0xAC02],  # 가 각 갂
    "noto-sans-kr-2-400-normal.woff2": [0xD55C, 0xAD6D],  # 한 국
    "noto-sans-kr-3-400-normal.woff2": [0xD7A3],  # 힣, which no page uses
}
FACE = """@font-face {{
  font-family: 'Noto Sans KR';
  font-style: normal;
  font-weight: 400;
  font-display: swap;
  src: url(./{name}) format('woff2');
  unicode-range: {range};
}}

"""
HEADER = "/* Noto Sans KR 400, Hangul blocks only. */\n"


def _outline(point: int) -> tuple[int, int, int, int]:
    """A rectangle that differs from syllable to syllable."""
    return (point % 97, 0, 100 + point % 89, 700)


def _font(points: list[int]) -> bytes:
    names = [f"uni{point:04X}" for point in points]
    builder = FontBuilder(1000, isTTF=True)
    builder.setupGlyphOrder([".notdef", *names])
    builder.setupCharacterMap(dict(zip(points, names, strict=True)))
    glyphs = {".notdef": TTGlyphPen(None).glyph()}
    for point, name in zip(points, names, strict=True):
        pen = TTGlyphPen(None)
        x0, y0, x1, y1 = _outline(point)
        pen.moveTo((x0, y0))
        pen.lineTo((x0, y1))
        pen.lineTo((x1, y1))
        pen.lineTo((x1, y0))
        pen.closePath()
        glyphs[name] = pen.glyph()
    builder.setupGlyf(glyphs)
    builder.setupHorizontalMetrics({name: (1000, 0) for name in [".notdef", *names]})
    builder.setupHorizontalHeader(ascent=880, descent=-120)
    builder.setupNameTable({"familyName": "Noto Sans KR", "styleName": "Regular"})
    builder.setupOS2()
    builder.setupPost()
    builder.font.flavor = "woff2"
    data = BytesIO()
    builder.font.save(data)
    return data.getvalue()


def _fonts() -> dict[str, bytes]:
    css = HEADER + "".join(
        FACE.format(name=name, range=hangul_font.unicode_range(set(points)))
        for name, points in SHARDS.items()
    )
    files = {f"_static/fonts/{name}": _font(points) for name, points in SHARDS.items()}
    return {"_static/fonts/noto-sans-kr.css": css.encode(), **files}


CONF = """
extensions = ["hangul_font"]
html_static_path = ["_static"]
"""
PAGES = {
    "index.rst": "Korean\n======\n\n.. toctree::\n\n   english\n\n가각, 한국.\n",
    "english.rst": "English\n=======\n\nWords alone.\n",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("hangul"), CONF, PAGES, _fonts())


def test_one_file_holds_exactly_the_syllables_the_pages_use(site) -> None:
    fonts = site / "_static" / "fonts"
    assert sorted(path.name for path in fonts.glob("*.woff2")) == ["noto-sans-kr.woff2"]
    font = TTFont(fonts / "noto-sans-kr.woff2")
    used = {0xAC00, 0xAC01, 0xD55C, 0xAD6D}  # 가 각 한 국: 갂 and 힣 appear on no page
    assert set(font.getBestCmap()) == used
    glyphs = font.getGlyphSet()
    for point, name in font.getBestCmap().items():
        coordinates = font["glyf"][name].getCoordinates(font["glyf"])[0]
        xs, ys = [x for x, _ in coordinates], [y for _, y in coordinates]
        assert (min(xs), min(ys), max(xs), max(ys)) == _outline(point), hex(point)
        assert glyphs[name].width == 1000


def test_the_stylesheet_declares_the_one_file_for_exactly_its_syllables(site) -> None:
    css = (site / "_static" / "fonts" / "noto-sans-kr.css").read_text(encoding="utf-8")
    assert css.startswith(HEADER)
    assert css.count("@font-face") == 1
    assert "src: url(./noto-sans-kr.woff2) format('woff2');" in css
    assert "unicode-range: U+AC00-AC01,U+AD6D,U+D55C;" in css
    assert "font-display: swap;" in css


def test_a_page_whose_words_hold_hangul_preloads_the_font(site) -> None:
    def preloads(page: str) -> list[str]:
        html = BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser")
        return [link["href"] for link in html.select('link[rel="preload"][as="font"]')]

    assert preloads("index.html") == ["_static/fonts/noto-sans-kr.woff2"]
    assert preloads("english.html") == []


def _switch_preloads(label: str) -> list[str]:
    context = {
        "body": "<p>Words alone.</p>",
        "title": "English",
        "docstitle": "Book",
        "edition_switch": {"label": label, "lang": "ko"},
        "pathto": lambda path, resource: path,
    }
    hangul_font.preload_font(None, "english", "page.html", context, None)
    return re.findall(r'href="([^"]+)"', str(context.get("metatags") or ""))


def test_an_english_page_preloads_the_font_for_its_switchs_label() -> None:
    """The switch to the Korean edition draws its label with the font: without a preload the
    font arrived after the page was laid out, and the browser styled the page again."""
    assert _switch_preloads("한국어") == ["_static/fonts/noto-sans-kr.woff2"]
    assert _switch_preloads("English") == []


def test_a_build_that_writes_no_page_leaves_the_merged_font_as_it_was(site) -> None:
    """Sphinx copies the static files only when it writes a page; the build-finished step still
    runs, on the stylesheet it rewrote last time."""
    fonts = site / "_static" / "fonts"
    before = {path.name: path.read_bytes() for path in fonts.iterdir()}
    hangul_font.subset_hangul_font(site)
    assert {path.name: path.read_bytes() for path in fonts.iterdir()} == before


def test_pages_without_hangul_leave_no_font_and_an_empty_stylesheet(tmp_path) -> None:
    site = build_site(tmp_path, CONF, {"index.rst": "English\n=======\n\nWords.\n"}, _fonts())
    fonts = site / "_static" / "fonts"
    assert not list(fonts.glob("*.woff2"))
    assert (fonts / "noto-sans-kr.css").read_text(encoding="utf-8") == HEADER


def test_a_stylesheet_with_no_font_files_is_refused(tmp_path) -> None:
    (tmp_path / "_static" / "fonts").mkdir(parents=True)
    (tmp_path / "_static" / "fonts" / "noto-sans-kr.css").write_text(HEADER, encoding="utf-8")
    with pytest.raises(RuntimeError, match="declares no font files"):
        hangul_font.subset_hangul_font(tmp_path)
