"""book/_ext/site_assets.py: the theme's icons cut down to those a page names, the icon fonts cut
down to the glyphs a stylesheet draws, and the figures' PNGs re-encoded with the same pixels.

The icon tests read the pinned pydata-sphinx-theme's own files: a theme upgrade that changes their
layout fails here, with the extension's message, before any browser test runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pydata_sphinx_theme
import pytest
import site_assets
from PIL import Image

THEME_STATIC = (
    Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"
)


def _site(tmp_path: Path, page: str) -> Path:
    """A built site with one page and the theme's icon script, stylesheet and web fonts."""
    static = tmp_path / "_static"
    shutil.copytree(THEME_STATIC / "scripts", static / "scripts")
    shutil.copytree(THEME_STATIC / "styles", static / "styles")
    shutil.copytree(THEME_STATIC / "vendor", static / "vendor")
    (tmp_path / "index.html").write_text(page, encoding="utf-8")
    return tmp_path


PAGE = '<i class="fa-solid fa-bars"></i><a><span class="fa-brands fa-github fa-lg"></span></a>'


def test_icon_script_draws_the_named_icons_only(tmp_path: Path) -> None:
    site = _site(tmp_path, PAGE)
    script = site / "_static" / "scripts" / "fontawesome.js"
    before = script.stat().st_size
    site_assets.subset_icons(site)
    text = script.read_text(encoding="utf-8")
    assert '"bars": [' in text and '"github": [' in text
    assert '"trash"' not in text and "var p={" not in text
    assert script.stat().st_size < before / 50
    # Each icon: width, height and at least one SVG path.
    assert '"bars": [448, 512, ["M' in text


def test_an_unknown_icon_bundle_layout_stops_the_build(tmp_path: Path) -> None:
    site = _site(tmp_path, PAGE)
    script = site / "_static" / "scripts" / "fontawesome.js"
    script.write_text("var p={};window.icons(p);", encoding="utf-8")
    with pytest.raises(RuntimeError, match="fontawesome.js changed layout"):
        site_assets.subset_icons(site)


def test_icon_fonts_keep_the_glyphs_stylesheets_draw(tmp_path: Path) -> None:
    from fontTools.ttLib import TTFont

    site = _site(tmp_path, PAGE)
    styles = sorted((site / "_static").rglob("*.css"))
    drawn = site_assets._glyphs_styles_draw(styles)
    assert drawn and all(0xE000 <= point < 0xF900 for point in drawn)
    site_assets.subset_icon_fonts(site)
    css = (site / "_static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert ".subset.woff" in css and ".woff2)" not in css
    assert ".fa-bars:before" not in css  # the SVG script draws the icons
    subsets = sorted(
        (site / "_static" / "vendor" / "fontawesome" / "webfonts").glob("*.subset.woff")
    )
    assert subsets
    for subset in subsets:
        font = TTFont(subset)
        assert set(font.getBestCmap()) <= drawn
        assert subset.stat().st_size < 20_000


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
