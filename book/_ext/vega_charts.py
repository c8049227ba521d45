"""The explorable figures compiled from Vega-Lite to Vega when each page is written.

A figure of ``pe_lib.charts`` is stored in a chapter as ``<div class="pe-chart">`` followed by
its Vega-Lite specification (``<script type="application/json" class="pe-chart-spec">``). A
browser needs Vega-Lite (249 KB) only to compile that specification to Vega; this extension
compiles it once, at build time, with the pinned ``vl-convert-python`` (Vega-Lite run in its own
embedded JavaScript engine, offline: ``vl_convert.vegalite_to_vega``), at the Vega-Lite version
that ``pe_lib.charts.VEGA_RELEASES`` names, and writes the Vega specification just before the
figure, as
``<script type="application/json" class="pe-chart-vega">``. ``_static/pe-charts.js`` draws that
with Vega alone. The Vega-Lite specification stays where it was: it is the figure's source, which
the book's tests and the PDF edition read (its settings, ``usermeta``).

The page's light or dark theme is compiled in as CSS variables: every colour the theme gives a
chart is the string ``var(--name, fallback)``, which ``pe-charts.js`` replaces with the variable's
value when it draws (and again when the reader switches the theme).

The Vega and vega-embed bundles the pages load are fetched by ``tools/fetch_vega.py`` (``make
book`` runs it).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from typing import Any

from pe_lib.charts import VEGA_RELEASES

# vl-convert names its bundled Vega-Lite versions by major and minor ("6.4").
VEGA_LITE_VERSION = ".".join(VEGA_RELEASES["vega-lite"][0].split(".")[:2])

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


def _compile_one(spec: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The Vega specification of one Vega-Lite ``spec``, and the warnings Vega-Lite wrote.

    ``show_warnings=True`` makes vl-convert print Vega-Lite's warnings on the process's standard
    error (file descriptor 2, from its engine, not through Python's ``sys.stderr``), its one way
    of reporting them; they are read back from a temporary file standing in for it.
    """
    import vl_convert

    available = vl_convert.get_vegalite_versions()
    if VEGA_LITE_VERSION not in available:
        raise RuntimeError(
            f"vl-convert-python bundles Vega-Lite {available}, not {VEGA_LITE_VERSION} "
            "(pe_lib.charts.VEGA_RELEASES): pin a vl-convert-python that does"
        )
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            vega: dict[str, Any] = vl_convert.vegalite_to_vega(
                spec, vl_version=VEGA_LITE_VERSION, show_warnings=True
            )
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        warnings = captured.read().decode("utf-8", "replace").strip()
    return vega, warnings


def compile_specs(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Vega specifications of Vega-Lite ``specs``; a warning of Vega-Lite is an error, as the
    book's build is strict."""
    compiled, problems = [], []
    for spec in specs:
        vega, warnings = _compile_one(spec)
        compiled.append(vega)
        problems += [f"Vega-Lite: {line}" for line in warnings.splitlines() if line.strip()]
    if problems:
        raise RuntimeError("compiling the figures to Vega failed:\n" + "\n".join(problems))
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
