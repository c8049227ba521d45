"""book/_ext/vega_charts.py: each explorable figure compiled to Vega at build time (by the pinned
vl-convert-python, no Node.js), with the theme's colours as CSS variables, and a Vega-Lite
warning failing the build.

What the browser draws from the compiled specifications is compared with pe_lib in
tests/book/html/test_figures.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from pe_lib.viz.charts import CHARTS

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location(
    "vega_charts", ROOT / "book" / "_ext" / "vega_charts.py"
)
vega_charts = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(vega_charts)

COMPILED = re.compile(
    r'<script type="application/json" class="pe-chart-vega">(.*?)</script>'
    r'<div class="pe-chart" data-pe-chart="([^"]*)"></div>'
    r'<script type="application/json" class="pe-chart-spec">(.*?)</script>',
    re.DOTALL,
)


def test_every_figure_gets_its_vega_specification_before_it() -> None:
    figures = [CHARTS[name]() for name in sorted(CHARTS)]
    html = "<p>text</p>".join(figure.to_html() for figure in figures)
    found = COMPILED.findall(vega_charts.compile_figures(html))
    assert [name for _, name, _ in found] == sorted(CHARTS)
    for (vega_json, name, vega_lite_json), figure in zip(found, figures, strict=True):
        vega, vega_lite = json.loads(vega_json), json.loads(vega_lite_json)
        assert vega_lite == figure.spec  # the source stays as pe_lib wrote it
        assert vega["$schema"].startswith("https://vega.github.io/schema/vega/")
        assert vega["usermeta"] == figure.spec["usermeta"]
        # Every control of the Vega-Lite specification is a bound signal of the Vega one.
        controls = {p["name"]: p["value"] for p in figure.spec["params"] if "bind" in p}
        signals = {s["name"]: s.get("value") for s in vega["signals"] if "bind" in s}
        assert signals == controls, name
        # The theme's colours, for the page to fill in; no colour of pe_lib's white page.
        assert vega["background"] == vega_charts.BACKGROUND
        assert {vega_charts.TEXT, vega_charts.GRID} <= set(
            re.findall(r'"(var\([^"]*\))"', vega_json)
        )
        assert "white" not in vega_json
        assert "</" not in vega_json


def test_a_page_without_figures_is_left_alone() -> None:
    html = '<div class="cell"><pre>class="pe-chart"</pre></div>'
    assert vega_charts.compile_figures(html) == html


def test_a_vega_lite_warning_fails_the_build() -> None:
    """A bar cannot take a shape: Vega-Lite drops the channel with a warning, which is an error."""
    spec = {
        "data": {"values": [{"a": 1, "b": "x"}]},
        "mark": "bar",
        "encoding": {
            "x": {"field": "a", "type": "quantitative"},
            "shape": {"field": "b", "type": "nominal"},
        },
    }
    with pytest.raises(RuntimeError, match="Vega-Lite: .*shape"):
        vega_charts.compile_specs([spec])


def test_compiled_with_the_vega_lite_the_pages_name() -> None:
    """vl-convert compiles with the Vega-Lite minor version pe_lib.viz.charts pins for the pages."""
    from pe_lib.viz.charts import VEGA_RELEASES

    assert VEGA_RELEASES["vega-lite"][0].startswith(vega_charts.VEGA_LITE_VERSION + ".")
    (vega,) = vega_charts.compile_specs([CHARTS[sorted(CHARTS)[0]]().spec])
    assert vega["$schema"].startswith("https://vega.github.io/schema/vega/v6")
