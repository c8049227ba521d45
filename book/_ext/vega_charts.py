"""The explorable figures compiled from Vega-Lite to Vega when each page is written.

A figure of ``pe_lib.charts`` is stored in a chapter as ``<div class="pe-chart">`` followed by
its Vega-Lite specification (``<script type="application/json" class="pe-chart-spec">``). A
browser needs Vega-Lite (249 KB) only to compile that specification to Vega; this extension
compiles it once, at build time, with the book's pinned Vega-Lite run by Node.js
(``compile_vega_lite.js``), and writes the Vega specification just before the figure, as
``<script type="application/json" class="pe-chart-vega">``. ``_static/pe-charts.js`` draws that
with Vega alone. The Vega-Lite specification stays where it was: it is the figure's source, which
the book's tests and the PDF edition read (its settings, ``usermeta``).

The page's light or dark theme is compiled in as CSS variables: every colour the theme gives a
chart is the string ``var(--name, fallback)``, which ``pe-charts.js`` replaces with the variable's
value when it draws (and again when the reader switches the theme).

Node.js is needed to build the book (``node`` on the PATH, or ``$NODE``); the Vega and Vega-Lite
bundles are fetched by ``tools/fetch_vega.py`` (``make book`` runs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COMPILER = HERE / "compile_vega_lite.js"
VEGA_LITE = HERE / "vega-lite" / "vega-lite.min.js"
VEGA = HERE.parent / "_static" / "vega" / "vega.min.js"

# The theme's colours for a chart, as Vega-Lite configuration: CSS variables of the
# pydata-sphinx-theme, each with the light theme's value as its fallback.
BACKGROUND = "var(--pst-color-background, #ffffff)"
TEXT = "var(--pst-color-text-base, #222832)"
MUTED = "var(--pst-color-text-muted, #5f6366)"
GRID = "var(--pst-color-border, #d1d5da)"
THEME_CONFIG: dict[str, Any] = {
    "background": BACKGROUND,
    "title": {"color": TEXT},
    "axis": {
        "labelColor": TEXT,
        "titleColor": TEXT,
        "gridColor": GRID,
        "domainColor": MUTED,
        "tickColor": MUTED,
    },
    "legend": {"labelColor": TEXT, "titleColor": TEXT},
    "text": {"color": TEXT},
    "view": {"stroke": GRID},
}

# A figure as pe_lib.charts.ExplorableFigure.to_html writes it.
FIGURE = re.compile(
    r'(<div class="pe-chart" data-pe-chart="[^"]*"></div>)'
    r'<script type="application/json" class="pe-chart-spec">(.*?)</script>',
    re.DOTALL,
)


def _merge(target: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    """``target`` with ``source`` written over it, nested dictionaries merged."""
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
    return target


def themed(spec: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite specification with the theme's colours over its own configuration."""
    result = json.loads(json.dumps(spec))
    result["config"] = _merge(result.get("config", {}), json.loads(json.dumps(THEME_CONFIG)))
    return result


def _node() -> str:
    node = os.environ.get("NODE") or shutil.which("node") or shutil.which("nodejs")
    if not node:
        raise RuntimeError(
            "Node.js is needed to compile the explorable figures to Vega: install it "
            "(Debian: apt-get install nodejs) or set $NODE to its path"
        )
    return node


def compile_specs(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Vega specifications of Vega-Lite ``specs`` (one Node.js run for all of them)."""
    for bundle in (VEGA_LITE, VEGA):
        if not bundle.is_file():
            raise RuntimeError(f"{bundle} is missing: run `python tools/fetch_vega.py`")
    run = subprocess.run(
        [_node(), str(COMPILER), str(VEGA_LITE), str(VEGA)],
        input=json.dumps(specs),
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise RuntimeError(f"compiling the figures to Vega failed:\n{run.stderr.strip()}")
    compiled: list[dict[str, Any]] = json.loads(run.stdout)
    return compiled


def _script(spec: dict[str, Any]) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return (
        '<script type="application/json" class="pe-chart-vega">'
        + text.replace("</", "<\\/")
        + "</script>"
    )


def compile_figures(body: str) -> str:
    """The page's HTML with each figure's Vega specification written before it."""
    figures = list(FIGURE.finditer(body))
    if not figures:
        return body
    compiled = iter(compile_specs([themed(json.loads(m.group(2))) for m in figures]))
    return FIGURE.sub(lambda m: _script(next(compiled)) + m.group(0), body)


def _page_context(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    body = context.get("body")
    if isinstance(body, str) and 'class="pe-chart-spec"' in body:
        context["body"] = compile_figures(body)


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
