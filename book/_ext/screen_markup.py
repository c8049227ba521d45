"""Two repairs to the HTML the book's extensions write, for the reader's screen.

- A solution's title: sphinx-exercise writes "Solution to" and then a link to the exercise whose
  text starts with a space (``<a> Exercise 7.1 (...)</a>``), so the link's underline began under
  that space. After sphinx-exercise has made the title (its post-transform runs at priority 21),
  the space is moved out of the link, into the words before it.
- Inline code: on a phone a dotted name is allowed to break after a dot (a ``<wbr>`` written
  after each dot that joins two names, ``pe_lib.<wbr>checks.<wbr>check_kv_cache``), so that a
  name about as wide as the line moves to the next line in pieces rather than leaving the comma
  or full stop after it to start a line of its own (small-screens.css). ``<wbr>`` is not text:
  it is not copied, read out or searched.

``tests/tools/test_screen_markup.py`` builds a small page with both and checks what is written.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import solution_node

# Inline code as Sphinx's HTML writer writes it (code.literal, never nested).
INLINE_CODE = re.compile(r'(<code class="docutils literal[^"]*">)(.*?)(</code>)', re.DOTALL)
TAG = re.compile(r"(<[^>]*>)")
# A dot that joins two names (pe_lib.checks, x.T), not a decimal point or a leading dot.
JOINING_DOT = re.compile(r"(?<=[\w)\]])\.(?=[A-Za-z_])")


class SolutionTitleSpace(SphinxPostTransform):
    """The space before a solution title's link, out of the link."""

    default_priority = 22

    def run(self, **kwargs: Any) -> None:
        for solution in self.document.findall(solution_node):
            title = solution.children[0] if solution.children else None
            if not isinstance(title, nodes.title):
                continue
            for link in list(title.findall(nodes.reference)):
                first = link.children[0] if link.children else None
                if not isinstance(first, nodes.Text) or not first.startswith(" "):
                    continue
                link.replace(first, nodes.Text(first.lstrip()))
                before = link.previous_sibling()
                if isinstance(before, nodes.Text):
                    link.parent.replace(before, nodes.Text(before.rstrip() + " "))
                else:
                    link.parent.insert(link.parent.index(link), nodes.Text(" "))


def break_after_dots(body: str) -> str:
    """``body`` with a ``<wbr>`` after each joining dot of its inline code's text."""

    def code(match: re.Match[str]) -> str:
        parts = TAG.split(match.group(2))
        text = "".join(
            part if part.startswith("<") else JOINING_DOT.sub(".<wbr>", part) for part in parts
        )
        return match.group(1) + text + match.group(3)

    return INLINE_CODE.sub(code, body)


def _page(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    if isinstance(context.get("body"), str):
        context["body"] = break_after_dots(context["body"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_post_transform(SolutionTitleSpace)
    app.connect("html-page-context", _page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
