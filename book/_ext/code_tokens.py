"""Code blocks with one element per coloured token, not one per token.

Pygments wraps every token of a code block in a ``<span>``: a plain name (``n``), punctuation
(``p``) and whitespace (``w``) too, although the book's code styles (the theme's
``a11y-high-contrast-light`` and ``-dark``) give them exactly the colour of the block's own text.
Those spans were a third of the elements of chapter 7's page, and a phone's browser styles and
lays out every element of a page before it can answer the first script that reads the layout.

Here the Python and IPython lexers pass those three kinds of token on as plain text, which
Pygments writes without a span; the code block's text takes the block's colour
(``div.highlight pre`` inherits it, page.css), so what a reader sees is unchanged, and every
other token (keywords, numbers, strings, builtins, operators, comments) keeps its span and
colour. ``tests/tools/test_code_tokens.py`` checks both: the tokens each lexer writes, and that
each style colours the three kinds as its text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pygments.filter import Filter
from pygments.lexer import Lexer
from pygments.lexers import find_lexer_class_by_name
from pygments.token import Name, Punctuation, Text, Whitespace, _TokenType
from sphinx.application import Sphinx

# The token types (exactly these, not their subtypes such as Name.Builtin) written as text.
PLAIN = frozenset({Name, Punctuation, Whitespace})

# Sphinx's language names for code cells (ipython3), code blocks and docstrings (python, and
# pycon for an interactive session), each with the options Sphinx gave its lexer: its own
# Python lexers keep a block's blank first and last lines, a lexer it looks up by name does not.
LEXERS: dict[str, dict[str, Any]] = {
    "ipython3": {},
    "ipython": {},
    "python": {"stripnl": False},
    "pycon": {"stripnl": False},
}


class PlainTokens(Filter):
    """Names, punctuation and whitespace as ``Text``; every other token as it came."""

    def filter(
        self, lexer: Lexer, stream: Iterator[tuple[_TokenType, str]]
    ) -> Iterator[tuple[_TokenType, str]]:
        for kind, value in stream:
            yield (Text if kind in PLAIN else kind), value


def plain_tokens(name: str) -> type[Lexer]:
    """The lexer Pygments has for ``name``, with Sphinx's options for it and
    :class:`PlainTokens` on every instance (Sphinx wants a lexer class)."""
    base = find_lexer_class_by_name(name)
    defaults = LEXERS[name]

    def __init__(self: Lexer, **options: Any) -> None:
        base.__init__(self, **{**defaults, **options})
        self.add_filter(PlainTokens())

    return type(base.__name__, (base,), {"__init__": __init__})


def setup(app: Sphinx) -> dict[str, Any]:
    for name in LEXERS:
        app.add_lexer(name, plain_tokens(name))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
