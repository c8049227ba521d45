"""Three repairs to the HTML docutils and myst-nb write, so that assistive technology reads it
as meant.

- The bibliography: docutils' HTML5 writer wraps citations in ``<div role="list">`` and gives
  each ``role="doc-biblioentry"``. WAI-ARIA 1.2 requires a ``list``'s children to be
  ``listitem``s, and DPUB-ARIA 1.1 deprecates ``doc-biblioentry`` (use ``listitem`` in a
  ``list``): axe-core reported the list as a critical fault. Each entry is written with
  ``role="listitem"``.
- A table whose header row starts with an empty cell (chapter 6's comparison, as the article
  has it): an empty ``<th>`` names no column for a screen reader. It is written as an empty
  ``<td>``, which heads nothing.
- A folded code cell (tag ``hide-input``): myst-nb's ``HideCodeCellNode`` writes its toggle as
  ``<summary aria-label="Toggle hidden content">`` around the visible words "Show code cell
  source", so a speech-input user who says what they see names nothing (axe-core's
  ``label-content-name-mismatch``, serious). The summary is written without that label: its
  accessible name is then the words it shows.

Each is the HTML translator's handlers for the node (``app.add_node`` with ``override``): each
writes its element with the translator's own ``starttag`` and leaves every other node to the
translator. ``tests/tools/test_accessible_markup.py`` builds a small page with Sphinx and checks
the elements written.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from myst_nb.sphinx_ import HideCodeCellNode


def visit_citation(self: Any, node: nodes.citation) -> None:
    """docutils' ``visit_citation`` with the entry's role ``listitem``."""
    if not isinstance(node.previous_sibling(), nodes.citation):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def depart_citation(self: Any, node: nodes.citation) -> None:
    type(self).depart_citation(self, node)


def _empty_header(node: nodes.entry) -> bool:
    """An empty cell of a header row that spans one row and one column, outside the stubs."""
    row, group = node.parent, node.parent.parent
    return (
        isinstance(group, nodes.thead)
        and not node.astext().strip()
        and "morerows" not in node
        and "morecols" not in node
        and not group.parent.stubs[row.column]
    )


def visit_entry(self: Any, node: nodes.entry) -> None:
    if not _empty_header(node):
        type(self).visit_entry(self, node)
        return
    node.parent.column += 1
    self.body.append(self.starttag(node, "td", "", classes=["head"]))
    self.context.append("</td>\n")
    raise nodes.SkipChildren  # its one empty paragraph would read as an empty line


def depart_entry(self: Any, node: nodes.entry) -> None:
    type(self).depart_entry(self, node)


def visit_hidden_input(self: Any, node: HideCodeCellNode) -> None:
    """myst-nb's toggle of a folded cell, named by the words it shows."""
    classes = " ".join(["admonition", "hide", *node["classes"]])
    self.body.append(f'<details class="{classes}">\n<summary>\n')
    for state, prompt in (("collapsed", "prompt_show"), ("expanded", "prompt_hide")):
        self.body.append(f'<p class="{state} admonition-title">{self.encode(node[prompt])}</p>\n')
    self.body.append("</summary>\n")


def depart_hidden_input(self: Any, node: HideCodeCellNode) -> None:
    self.body.append("</details>\n")


def setup(app: Any) -> dict[str, Any]:
    # Its companion for the reader's screen: solution titles and dotted names in inline code.
    app.setup_extension("screen_markup")
    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    app.add_node(nodes.entry, override=True, html=(visit_entry, depart_entry))
    app.add_node(HideCodeCellNode, override=True, html=(visit_hidden_input, depart_hidden_input))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
