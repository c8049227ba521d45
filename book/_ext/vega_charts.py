"""The explorable figures compiled from Vega-Lite to Vega when each page is written.

A figure of ``pe_lib.viz.charts`` is stored in a chapter as ``<div class="pe-chart">`` followed by
its Vega-Lite specification (``<script type="application/json" class="pe-chart-spec">``). A
browser needs Vega-Lite (249 KB) only to compile that specification to Vega; this extension
compiles it once, at build time, with the pinned ``vl-convert-python`` (Vega-Lite run in its own
embedded JavaScript engine, offline: ``vl_convert.vegalite_to_vega``), at the Vega-Lite version
that ``pe_lib.viz.charts.VEGA_RELEASES`` names, and writes the Vega specification just before the
figure, as
``<script type="application/json" class="pe-chart-vega">``. ``_static/pe-charts.js`` draws that
with Vega alone. It acts on the cell outputs that hold a figure, raw HTML nodes of the doctree,
when each page's doctree is resolved (Sphinx's ``doctree-resolved`` event), before it is written. The Vega-Lite specification stays where it was: it is the figure's source, which
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
import sys
import tempfile
from html.parser import HTMLParser
from typing import Any

from docutils import nodes

from pe_lib.viz.charts import VEGA_RELEASES

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

# What marks a figure as pe_lib.viz.charts.ExplorableFigure.to_html writes it: the placeholder, then
# the Vega-Lite specification.
FIGURE_CLASS = "pe-chart"
SPEC_CLASS = "pe-chart-spec"


class _Figures(HTMLParser):
    """Where each figure's placeholder starts in an HTML fragment, and its specification."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.starts: list[tuple[int, int]] = []  # (line, column) of each placeholder
        self.specs: list[str] = []
        self._in_spec = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div" and FIGURE_CLASS in classes:
            self.starts.append(self.getpos())
        self._in_spec = tag == "script" and SPEC_CLASS in classes
        if self._in_spec:
            self.specs.append("")

    def handle_data(self, data: str) -> None:
        if self._in_spec:
            self.specs[-1] += data

    def handle_endtag(self, tag: str) -> None:
        self._in_spec = False


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
            "(pe_lib.viz.charts.VEGA_RELEASES): pin a vl-convert-python that does"
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


def compile_figures(fragment: str) -> str:
    """The HTML ``fragment`` with each figure's Vega specification written before it."""
    parser = _Figures()
    parser.feed(fragment)
    parser.close()
    if not parser.starts:
        return fragment
    if len(parser.specs) != len(parser.starts):
        raise RuntimeError(
            f"{len(parser.starts)} figures but {len(parser.specs)} specifications in an output: "
            "pe_lib.viz.charts.ExplorableFigure.to_html writes one after each figure"
        )
    compiled = compile_specs([themed(json.loads(spec)) for spec in parser.specs])
    # HTMLParser counts lines at "\n" alone, and columns in characters.
    line_starts = [0] + [i + 1 for i, c in enumerate(fragment) if c == "\n"]
    offsets = [line_starts[number - 1] + column for number, column in parser.starts]
    parts, previous = [], 0
    for offset, vega in zip(offsets, compiled, strict=True):
        parts += [fragment[previous:offset], _script(vega)]
        previous = offset
    return "".join(parts) + fragment[previous:]


def _doctree_resolved(app: Any, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if "html" in raw.get("format", "").split() and f'class="{SPEC_CLASS}"' in text:
            compiled = compile_figures(text)
            raw.replace_self(nodes.raw(compiled, compiled, **raw.attributes))


def setup(app: Any) -> dict[str, Any]:
    app.connect("doctree-resolved", _doctree_resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
