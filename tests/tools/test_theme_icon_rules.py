"""book/_ext/theme_icon_rules.py in a small Sphinx build with the book's theme: the theme's
stylesheet loses Font Awesome's icon rules and nothing else. It reads the theme's minified
stylesheet (no interface offers what it does): a theme upgrade that renames the stylesheet or
drops those rules fails here, with the message that says what to do."""

from __future__ import annotations

import theme_icon_rules

CONF = 'html_theme = "sphinx_book_theme"\nextensions = ["theme_icon_rules"]\n'


def test_the_icon_rules_and_nothing_else_are_dropped(sphinx_build) -> None:
    out = sphinx_build(CONF, {"index.rst": "Title\n=====\n\nText.\n"})
    css = (out / theme_icon_rules.STYLESHEET).read_text(encoding="utf-8")
    assert ".fa-bars:before" not in css and "sourceMappingURL" not in css
    assert len(css.encode()) < 330_000, "fewer icon rules than expected in the theme's CSS"
    # What draws the admonitions' and breadcrumbs' glyphs, and the fonts' faces, stay.
    for kept in ("--pst-icon-admonition-note", "@font-face", ".fa-solid", "admonition-title:after"):
        assert kept in css, f"{kept} was dropped"
    assert not (out / theme_icon_rules.STYLESHEET).with_suffix(".css.map").exists()


def test_rules_of_other_selectors_stay() -> None:
    css = '.fa-a:before,.fa-b:before{content:"x"}.fa-a:before,.other{color:red}@media(x){.fa-c:after{content:"y"}p{margin:0}}'
    kept, dropped = theme_icon_rules.without_icon_rules(css)
    assert dropped == 2
    assert kept == ".fa-a:before,.other{color:red}@media(x){p{margin:0}}"


def test_a_build_with_nothing_out_of_date_keeps_the_stripped_stylesheet(sphinx_build) -> None:
    """A build that finds no source out of date copies no static file, yet ends with
    build-finished: the handler meets the stylesheet it stripped before, and leaves it."""
    out = sphinx_build(CONF, {"index.rst": "Title\n=====\n\nText.\n"})
    first = (out / theme_icon_rules.STYLESHEET).read_text(encoding="utf-8")
    theme_icon_rules.drop_icon_rules(out)
    assert (out / theme_icon_rules.STYLESHEET).read_text(encoding="utf-8") == first
