"""book/_ext/code_tokens.py: code blocks keep a span for each coloured token and none for a
plain name, bracket or space, and the book's code styles draw those three in the text's colour
(so dropping their spans changes nothing a reader sees)."""

from __future__ import annotations

import configparser
from pathlib import Path

import pydata_sphinx_theme
import pytest
from bs4 import BeautifulSoup
from code_tokens import LEXERS, PLAIN
from pygments.styles import get_style_by_name
from pygments.token import Text

ROOT = Path(__file__).resolve().parents[2]
CONF = 'extensions = ["code_tokens"]\n'
SOURCE = "import math\nangle = max(len(x), 2) * math.pi  # a turn\nprint(f'{angle:.3f}')\n"
PAGE = (
    "Title\n=====\n\n"
    + "".join(
        f".. code-block:: {language}\n\n"
        + "".join(f"   {line}\n" for line in SOURCE.splitlines())
        + "\n"
        for language in ("ipython3", "python")
    )
    + ".. code-block:: pycon\n\n   >>> max(1, 2)\n   2\n"
)


def _blocks(sphinx_build) -> list[BeautifulSoup]:
    out = sphinx_build(CONF, {"index.rst": PAGE})
    page = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    return page.select("div.highlight pre")


def test_plain_tokens_are_text_and_coloured_ones_keep_their_span(sphinx_build) -> None:
    blocks = _blocks(sphinx_build)
    assert len(blocks) == 3
    for block in blocks[:2]:
        assert block.get_text() == SOURCE  # nothing lost or added
        kinds = {" ".join(span.get("class", [])) for span in block.find_all("span")} - {""}
        assert not kinds & {"n", "p", "w"}, kinds
        # keywords, builtins, numbers, operators, comments and strings keep their colours
        assert {"kn", "nn", "nb", "mi", "o", "c1", "sa", "s1", "si"} <= kinds, kinds
    kinds = {" ".join(span.get("class", [])) for span in blocks[2].find_all("span")} - {""}
    assert {"gp", "nb", "mi", "go"} <= kinds and not kinds & {"n", "p", "w"}, kinds


def test_every_language_named_is_one_pygments_knows() -> None:
    from pygments.lexers import find_lexer_class_by_name

    for name in LEXERS:
        assert find_lexer_class_by_name(name) is not None


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_book_styles_draw_the_plain_tokens_in_the_text_colour(theme: str) -> None:
    # the styles the book uses: those pydata-sphinx-theme's theme.conf names (the book does not
    # choose others)
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "pygments_light_style" not in config and "pygments_dark_style" not in config
    conf = configparser.ConfigParser()
    conf.read(Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/theme.conf")
    style = get_style_by_name(conf["options"][f"pygments_{theme}_style"])
    text = style.style_for_token(Text)["color"]
    assert text, f"the {theme} style gives its text a colour"
    for kind in PLAIN:
        assert style.style_for_token(kind)["color"] == text, (theme, kind)


def test_a_code_block_takes_its_style_text_colour() -> None:
    css = (ROOT / "book" / "_static" / "page.css").read_text(encoding="utf-8")
    rule = css.split("div.highlight pre {", 1)[1].split("}", 1)[0]
    assert "color: inherit" in rule
