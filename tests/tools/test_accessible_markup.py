"""book/_ext/accessible_markup.py in a small Sphinx build: the bibliography's entries are list
items of their list, and an empty cell of a header row heads nothing. Each is the HTML
translator's handler for its node; a docutils or Sphinx upgrade that changes how citations or
table cells are written fails here, naming what changed."""

from __future__ import annotations

from bs4 import BeautifulSoup

CONF = 'extensions = ["accessible_markup"]\n'
PAGE = """Title
=====

See [Vaswani2017]_ and [Su2021]_.

.. [Vaswani2017] Attention is all you need.
.. [Su2021] RoFormer.

.. list-table::
   :header-rows: 1

   * -
     - first
     - second
   * - row
     - 1
     - 2
"""


def _page(sphinx_build) -> BeautifulSoup:
    out = sphinx_build(CONF, {"index.rst": PAGE})
    return BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")


def test_citations_are_list_items_of_one_list(sphinx_build) -> None:
    page = _page(sphinx_build)
    lists = page.select('[role="list"]')
    assert len(lists) == 1, f"expected one bibliography list, found {lists}"
    entries = lists[0].find_all("div", class_="citation", recursive=False)
    assert [entry["id"] for entry in entries] == ["vaswani2017", "su2021"], entries
    assert all(entry.get("role") == "listitem" for entry in entries), entries
    assert not page.select('[role="doc-biblioentry"]')


def test_an_empty_header_cell_heads_nothing(sphinx_build) -> None:
    page = _page(sphinx_build)
    (header,) = page.select("thead tr")
    cells = [(cell.name, cell.get_text(strip=True)) for cell in header.find_all(["th", "td"])]
    assert cells == [("td", ""), ("th", "first"), ("th", "second")], cells
    assert header.find("td")["class"] == ["head"]
    (row,) = page.select("tbody tr")
    assert [cell.get_text(strip=True) for cell in row.find_all("td")] == ["row", "1", "2"]
