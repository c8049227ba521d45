"""Two repairs to the HTML docutils writes, so that assistive technology reads it as meant.

- The bibliography: docutils' HTML5 writer wraps citations in ``<div role="list">`` and gives
  each ``role="doc-biblioentry"``. WAI-ARIA 1.2 requires a ``list``'s children to be
  ``listitem``s, and DPUB-ARIA 1.1 deprecates ``doc-biblioentry`` (use ``listitem`` in a
  ``list``): axe-core reported the list as a critical fault. Each entry becomes
  ``role="listitem"``.
- A table whose header row starts with an empty cell (chapter 6's comparison, as the article
  has it): an empty ``<th>`` names no column for a screen reader. It is written as an empty
  ``<td>``, which heads nothing.

Both act on the page's body as it is written (the ``html-page-context`` event).
"""

from __future__ import annotations

import re
from typing import Any

CITATION = re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"')
EMPTY_HEADER = re.compile(r'<th class="head">(?:<p></p>)?</th>')


def repaired(body: str) -> str:
    body = CITATION.sub(r'\1 role="listitem"', body)
    return EMPTY_HEADER.sub('<td class="head"></td>', body)


def _page_context(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    body = context.get("body")
    if isinstance(body, str):
        context["body"] = repaired(body)


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
