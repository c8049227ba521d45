"""book/_ext/site_assets.py: the theme's icons cut down to those a page names, the icon fonts cut
down to the glyphs book/_static/icon-font.css names, and the figures' PNGs re-encoded with the
same pixels.

The icons and the fonts are Font Awesome's SVG and TrueType files, of the release the theme
bundles (``tools/fetch_icons.py``, which ``make unit`` runs first): a theme upgrade to another
release fails here, before any browser test runs. The subsets replace the theme's fonts because
icon-font.css's ``@font-face`` rules come after the theme's: a theme that links its stylesheet
after ``html_css_files`` fails here too."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import fetch_icons
import pydata_sphinx_theme
import pytest
import site_assets
from bs4 import BeautifulSoup
from PIL import Image

THEME_STATIC = (
    Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
)


def _site(tmp_path: Path, page: str) -> Path:
    """A built site with one page and the theme's icon script."""
    static = tmp_path / "_static"
    shutil.copytree(THEME_STATIC / "scripts", static / "scripts")
    (tmp_path / "index.html").write_text(page, encoding="utf-8")
    return tmp_path


PAGE = '<i class="fa-solid fa-bars"></i><a><span class="fa-brands fa-github fa-lg"></span></a>'


def test_icons_fetched_are_the_release_the_theme_bundles() -> None:
    licence = (THEME_STATIC / "scripts" / "fontawesome.js.LICENSE.txt").read_text("utf-8")
    bundled = re.search(r"Font Awesome Free (\S+)", licence)
    assert bundled and bundled[1] == fetch_icons.VERSION, (
        f"the theme bundles Font Awesome {bundled and bundled[1]}, tools/fetch_icons.py fetches "
        f"{fetch_icons.VERSION}: set its VERSION and INTEGRITY to the theme's release"
    )
    fetched = site_assets.ICONS / "VERSION"
    if not fetched.is_file():
        pytest.skip("icons not fetched: run `python tools/fetch_icons.py`")
    assert fetched.read_text().strip() == fetch_icons.VERSION, "run `python tools/fetch_icons.py`"


@pytest.fixture
def icons_fetched() -> None:
    if not (site_assets.ICONS / "VERSION").is_file():
        pytest.skip("icons not fetched: run `python tools/fetch_icons.py`")


def test_icon_script_draws_the_named_icons_only(tmp_path: Path, icons_fetched: None) -> None:
    site = _site(tmp_path, PAGE)
    script = site / "_static" / "scripts" / "fontawesome.js"
    before = script.stat().st_size
    site_assets.subset_icons(site)
    text = script.read_text(encoding="utf-8")
    icons = json.loads(re.search(r"const icons = (\{.*?\});\n", text)[1])
    assert set(icons["fa-solid"]) == {"bars"} and set(icons["fa-brands"]) == {"github"}
    assert icons["fab"] == icons["fa-brands"]  # the older class names draw the same
    width, height, paths = icons["fa-solid"]["bars"]
    assert (width, height) == (448, 512) and paths and paths[0].startswith("M")
    assert script.stat().st_size < before / 50


def test_an_icon_the_release_lacks_stops_the_build(tmp_path: Path, icons_fetched: None) -> None:
    site = _site(tmp_path, '<i class="fa-solid fa-not-an-icon"></i>')
    with pytest.raises(RuntimeError, match="fa-solid fa-not-an-icon.*fetch_icons"):
        site_assets.subset_icons(site)


def test_an_icon_wider_than_high_stops_the_build(tmp_path: Path, icons_fetched: None) -> None:
    """Each icon is drawn in a 1em square (the place icon-font.css keeps for it until it is
    drawn): the credit card (576 by 512) would be drawn smaller."""
    site = _site(tmp_path, '<i class="fa-solid fa-credit-card"></i>')
    with pytest.raises(RuntimeError, match="fa-solid fa-credit-card, wider than high"):
        site_assets.subset_icons(site)


def test_icon_fonts_hold_the_glyphs_the_stylesheet_names(tmp_path: Path) -> None:
    from fontTools.ttLib import TTFont

    if not (site_assets.ICONS / "webfonts").is_dir():
        pytest.skip("fonts not fetched: run `python tools/fetch_icons.py`")
    named = site_assets.icon_code_points()
    assert {0xF05A, 0xF071, 0xF105, 0xF35D} <= named  # note, warning, breadcrumb, external link
    site_assets.subset_icon_fonts(tmp_path)
    subsets = {
        path.name: set(TTFont(path).getBestCmap())
        for path in (tmp_path / "_static" / "fontawesome").glob("*.woff2")
    }
    assert set(subsets) == {f"{name}.woff2" for name in site_assets.ICON_FONTS}
    assert set().union(*subsets.values()) == named, "a glyph the stylesheet names is in no font"
    for name, points in subsets.items():
        assert (
            points <= named and (tmp_path / "_static" / "fontawesome" / name).stat().st_size < 8_000
        )


def test_the_books_font_faces_come_after_the_themes(sphinx_build) -> None:
    """The theme links its stylesheet (with Font Awesome's @font-face rules) before the files of
    ``html_css_files``: of two faces with the same descriptors, a browser uses the later one."""
    conf = (
        'html_theme = "sphinx_book_theme"\n'
        f'html_static_path = ["{site_assets.ICON_FONT_CSS.parent}"]\n'
        'html_css_files = ["icon-font.css"]\n'
    )
    out = sphinx_build(conf, {"index.rst": "Title\n=====\n\nText.\n"})
    page = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    links = [link["href"].split("?")[0] for link in page.select('link[rel="stylesheet"]')]
    theme = "_static/styles/pydata-sphinx-theme.css"
    assert theme in links and "_static/icon-font.css" in links, links
    assert links.index(theme) < links.index("_static/icon-font.css"), (
        f"the theme links its stylesheet after html_css_files ({links}): the whole Font Awesome "
        "fonts would win over icon-font.css's subsets"
    )


def _preloads(body: str) -> list[str]:
    context = {"body": body, "pathto": lambda path, resource: path}
    site_assets.preload_icon_fonts(None, "page", "page.html", context, None)
    return re.findall(r'href="([^"]+)"', context["metatags"])


def test_a_page_preloads_the_icon_fonts_its_marks_draw_from() -> None:
    note = '<div class="admonition note"><p class="admonition-title">Note</p></div>'
    github = '<a class="github reference external" href="https://github.com/x/y">x/y</a>'
    assert _preloads(note + github + note) == [
        "_static/fontawesome/fa-solid-900.woff2",
        "_static/fontawesome/fa-brands-400.woff2",
    ]
    assert _preloads('<a class="reference download internal" href="x.py">x.py</a>') == [
        "_static/fontawesome/fa-solid-900.woff2"
    ]
    # A link that is not a download, words that only name a class: no mark, no preload.
    assert _preloads('<a class="reference internal" href="#x">x</a><p>admonition-title</p>') == []


def _png(path: Path, image: Image.Image) -> bytes:
    image.save(path, format="PNG", compress_level=1, dpi=(144, 144))
    return image.convert("RGBA").tobytes()


def test_opaque_png_is_made_smaller_with_the_same_pixels(tmp_path: Path) -> None:
    images = tmp_path / "_images"
    images.mkdir()
    image = Image.new("RGBA", (200, 100), (255, 255, 255, 255))
    image.paste((31, 119, 180, 255), (20, 20, 120, 60))
    pixels = _png(images / "plot.png", image)
    size = (images / "plot.png").stat().st_size
    site_assets.optimize_pngs(tmp_path)
    with Image.open(images / "plot.png") as result:
        assert result.mode == "P"  # two colours: a palette
        assert result.convert("RGBA").tobytes() == pixels
        assert round(result.info["dpi"][0]) == 144
    assert (images / "plot.png").stat().st_size < size


def test_transparent_png_keeps_its_alpha(tmp_path: Path) -> None:
    images = tmp_path / "_images"
    images.mkdir()
    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    image.paste((200, 10, 10, 128), (8, 8, 40, 40))
    pixels = _png(images / "clear.png", image)
    site_assets.optimize_pngs(tmp_path)
    with Image.open(images / "clear.png") as result:
        assert result.convert("RGBA").tobytes() == pixels
