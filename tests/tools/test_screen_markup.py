"""book/_ext/screen_markup.py in a small Sphinx build: a solution's title keeps the space before
its link out of the link, and inline code may break after the dots of a dotted name only."""

from __future__ import annotations

from bs4 import BeautifulSoup
from screen_markup import break_after_dots

CONF = 'extensions = ["sphinx_exercise", "screen_markup"]\n'
PAGE = """Title
=====

.. exercise:: Rotate by hand
   :label: ex-rotate

   Rotate a pair.

.. solution:: ex-rotate

   Call ``pe_lib.checks.check_kv_cache(step)``, with ``0.5`` and ``x.T``.
"""


def _page(sphinx_build) -> BeautifulSoup:
    out = sphinx_build(CONF, {"index.rst": PAGE})
    return BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")


def test_a_solution_title_links_the_exercise_without_a_leading_space(sphinx_build) -> None:
    page = _page(sphinx_build)
    (title,) = page.select("div.solution > .admonition-title")
    link = title.find("a")
    assert link is not None, title
    assert link.get_text().startswith("Exercise"), repr(link.get_text())
    assert " ".join(title.get_text().split()) == "Solution to Exercise 1 (Rotate by hand)"


def test_inline_code_breaks_after_the_dots_of_a_dotted_name(sphinx_build) -> None:
    page = _page(sphinx_build)
    codes = {code.get_text(): str(code) for code in page.select("code.literal")}
    assert codes["pe_lib.checks.check_kv_cache(step)"].count("<wbr/>") == 2, codes
    assert "<wbr" not in codes["0.5"], codes
    assert codes["x.T"].count("<wbr/>") == 1, codes


def test_only_inline_code_is_changed() -> None:
    body = (
        '<p>a.b <code class="docutils literal notranslate"><span class="pre">a.b</span></code></p>'
    )
    assert break_after_dots(body) == (
        '<p>a.b <code class="docutils literal notranslate"><span class="pre">a.<wbr>b</span></code></p>'
    )
    assert break_after_dots("<pre>pe_lib.rope</pre>") == "<pre>pe_lib.rope</pre>"
