"""book/_templates in a small Sphinx build with the book's theme: the book's title (the theme's
``navbar-logo.html``, the first item of sphinx-book-theme's sidebar) stands in a banner landmark,
the theme's component included unchanged. A theme that renames the component or stops drawing
the title in the sidebar fails here."""

from __future__ import annotations

from pathlib import Path

from bs4 import BeautifulSoup

TEMPLATES = Path(__file__).resolve().parents[2] / "book" / "_templates"


def test_the_title_is_in_a_banner(sphinx_build) -> None:
    conf = (
        f'project = "A Book"\nhtml_theme = "sphinx_book_theme"\ntemplates_path = ["{TEMPLATES}"]\n'
    )
    out = sphinx_build(conf, {"index.rst": "Title\n=====\n\nText.\n"})
    page = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    brands = page.select("a.navbar-brand")
    assert brands, "the theme no longer draws the book's title as a.navbar-brand"
    for brand in brands:
        banner = brand.find_parent("header")
        assert banner is not None and "pe-brand" in banner["class"], (
            f"the book's title stands outside book/_templates/navbar-logo.html's banner: {brand}"
        )
        assert banner.find_parent(["header", "nav", "main", "aside", "footer"]) is None
    assert "A Book" in brands[0].get_text()
