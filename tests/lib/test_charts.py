"""pe_lib.viz.charts: specifications that are valid Vega-Lite, deterministic, and bound to controls.

What the browser computes from them is compared with pe_lib in tests/book/html/test_figures.py.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import json
import math
import sys
from pathlib import Path

import altair as alt
import jsonschema
import pytest

from pe_lib.rope.scaling import DEFAULT_BASE, ROPE_SCALINGS, rope_frequencies
from pe_lib.viz import charts
from pe_lib.viz.charts import CHARTS, ExplorableFigure
from pe_lib.viz.style import method_style

SCHEMA = alt.vegalite.v6.schema.core.load_schema()


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_is_valid_vega_lite_named_for_its_entry(name: str) -> None:
    figure = CHARTS[name]()
    assert isinstance(figure, ExplorableFigure) and figure.name == name
    jsonschema.validate(figure.spec, SCHEMA)
    assert figure.spec["usermeta"]["pe_chart"] == name
    assert figure.spec["config"]["background"] == "white"  # readable in dark mode


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_is_deterministic_and_computes_in_the_browser(name: str) -> None:
    first, second = CHARTS[name](), CHARTS[name]()
    assert first.to_json() == second.to_json()
    assert first._repr_mimebundle_() == second._repr_mimebundle_()
    # Only labels and generators in the data: every number drawn is computed by an expression.
    assert '"calculate"' in first.to_json()
    assert not [value for value in _data_values(first.spec) if isinstance(value, float)]


def _data_values(node: object) -> list[object]:
    """Every scalar inside a ``values`` list of the specification (inline data)."""
    found: list[object] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "values" and isinstance(value, list):
                for row in value:
                    found.extend(row.values() if isinstance(row, dict) else [row])
            else:
                found.extend(_data_values(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_data_values(item))
    return found


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_has_controls_starting_at_its_arguments(name: str) -> None:
    spec = CHARTS[name]().spec
    params = {param["name"]: param for param in spec["params"]}
    bound = [param for param in params.values() if "bind" in param]
    assert len(bound) >= 2
    for param in bound:
        bind = param["bind"]
        if bind["input"] == "range":
            assert bind["min"] <= param["value"] <= bind["max"], param


def test_starting_values_follow_the_arguments() -> None:
    spec = charts.frequency_chart(d_model=128, base=100.0, columns="2, 5", num_positions=40).spec
    values = {param["name"]: param["value"] for param in spec["params"]}
    assert values == {"d_model": 128, "log10_base": 2.0, "columns": "2, 5", "num_positions": 40}
    spec = charts.alibi_bias_chart(num_heads=6, max_distance=10).spec
    assert {p["name"]: p["value"] for p in spec["params"]} == {"num_heads": 6, "max_distance": 10}


def test_fixed_settings_are_recorded() -> None:
    fixed = charts.rotation_chart(d_model=32).spec["usermeta"]["fixed"]
    assert fixed == {"d_model": 32, "base": DEFAULT_BASE}
    fixed = charts.scaling_chart(head_dim=64, original_length=512).spec["usermeta"]["fixed"]
    assert fixed == {
        "head_dim": 64,
        "base": DEFAULT_BASE,
        "original_length": 512,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "dynamic_factor": 1.0,
    }


def test_defaults_come_from_the_definitions_they_mirror() -> None:
    """The base is pe_lib's DEFAULT_BASE, YaRN's betas the registry's defaults."""
    for name in ("frequency", "wavelength", "dot_product", "scaling"):
        assert inspect.signature(CHARTS[name]).parameters["base"].default == DEFAULT_BASE
    text = charts.rotation_chart().to_json()
    assert repr(DEFAULT_BASE) in text and "10000," not in text.replace(repr(DEFAULT_BASE), "")
    # Change YaRN's default betas: the ramp of the chart follows.
    yarn = ROPE_SCALINGS["yarn"]
    moved = {**yarn.keys, "beta_fast": dataclasses.replace(yarn.keys["beta_fast"], default=16.0)}
    before = charts.scaling_chart().to_json()
    try:
        ROPE_SCALINGS["yarn"] = dataclasses.replace(yarn, keys=moved)
        after = charts.scaling_chart().to_json()
    finally:
        ROPE_SCALINGS["yarn"] = yarn
    assert before != after


def test_the_vega_releases_are_named_once() -> None:
    """tools/fetch_vega.py fetches the releases charts.py loads from a CDN elsewhere."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    try:
        fetch_vega = importlib.import_module("fetch_vega")
    finally:
        sys.path.pop(0)
    assert fetch_vega.releases() == charts.VEGA_RELEASES
    html = charts.wavelength_chart().to_html()
    for package, (version, _) in charts.VEGA_RELEASES.items():
        assert f"{package}@{version}" in html
    assert "RELEASES = {" not in (Path(fetch_vega.__file__)).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_every_chart_describes_itself_from_its_specification(name: str) -> None:
    spec = CHARTS[name]().spec
    description = spec["description"]
    assert description == spec["usermeta"]["description"]
    title = spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"]
    assert title in description
    for param in spec["params"]:
        if "bind" in param:
            assert param["bind"]["name"].strip() in description
    assert "Vega visualization" not in description


def test_scaling_chart_uses_the_shared_palette_and_names() -> None:
    spec = charts.scaling_chart().spec
    color = spec["encoding"]["color"]["scale"]
    names = ["linear", "ntk", "dynamic", "yarn", "llama3"]
    assert color["domain"] == [method_style(n).label for n in names]
    assert color["range"] == [method_style(n).color for n in names]
    assert "θ′ᵢ / θᵢ" in spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"]


def test_text_controls_carry_their_rules() -> None:
    inputs = charts.frequency_chart().spec["usermeta"]["inputs"]
    assert inputs["columns"]["below_signal"] == "d_model" and inputs["columns"]["min"] == 0


def test_html_carries_the_specification_safely() -> None:
    figure = charts.rotation_chart()
    html = figure.to_html()
    assert html.startswith('<div class="pe-chart" data-pe-chart="rotation"></div>')
    start = html.index('class="pe-chart-spec">') + len('class="pe-chart-spec">')
    embedded = html[start : html.index("</script>", start)]
    assert json.loads(embedded) == json.loads(figure.to_json())
    assert "</" not in embedded  # cannot close its <script> early
    bundle = figure._repr_mimebundle_()
    assert charts.vegalite_mime_type() == "application/vnd.vegalite.v6+json"
    assert bundle[charts.vegalite_mime_type()] == figure.spec
    assert bundle["text/plain"] == repr(figure)


@pytest.mark.parametrize(
    ("builder", "kwargs", "error", "names"),
    [
        (charts.frequency_chart, {"d_model": 63}, ValueError, "d_model"),
        (charts.frequency_chart, {"d_model": 1024}, ValueError, "d_model"),
        (charts.frequency_chart, {"d_model": True}, TypeError, "d_model"),
        (charts.frequency_chart, {"base": 3.0}, ValueError, "base"),
        (charts.frequency_chart, {"base": 1.0}, ValueError, "base"),
        (charts.frequency_chart, {"columns": (0, 1)}, TypeError, "columns"),
        (charts.frequency_chart, {"num_positions": 5}, ValueError, "num_positions"),
        (charts.wavelength_chart, {"base": 10.0**7}, ValueError, "base"),
        (charts.dot_product_chart, {"max_distance": 500}, ValueError, "max_distance"),
        (charts.rotation_chart, {"pair": 8}, ValueError, "pair"),
        (charts.rotation_chart, {"shift": 2.0}, TypeError, "shift"),
        (charts.alibi_bias_chart, {"num_heads": 0}, ValueError, "num_heads"),
        (charts.alibi_bias_chart, {"num_heads": 17}, ValueError, "num_heads"),
        (charts.scaling_chart, {"factor": 0.5}, ValueError, "factor"),
        (charts.scaling_chart, {"factor": 2.25}, ValueError, "factor"),
        (charts.scaling_chart, {"length_ratio": "2"}, TypeError, "length_ratio"),
        (charts.scaling_chart, {"head_dim": 63}, ValueError, "head_dim"),
        (charts.scaling_chart, {"dynamic_factor": 0.5}, ValueError, "dynamic_factor"),
    ],
)
def test_bad_arguments_name_the_argument(builder, kwargs, error, names) -> None:
    with pytest.raises(error, match=names):
        builder(**kwargs)


def _drawn_ratios(figure: ExplorableFigure, **controls: float) -> dict[str, list[float]]:
    """theta'_i / theta_i of each method as Vega itself computes the chart's expressions (in the
    pinned vl-convert, Vega's own dataflow) with its controls set to ``controls``."""
    import vl_convert

    spec = copy.deepcopy(figure.spec)
    for param in spec["params"]:
        param["value"] = controls.get(param["name"], param["value"])
    # the same data and transforms, each point drawn as a text mark that names its value
    spec["transform"].append(
        {
            "calculate": "datum.method + ' ' + datum.pair + ' ' + format(datum.ratio, '.15e')",
            "as": "probe",
        }
    )
    spec["mark"] = "text"
    spec["encoding"] = {"text": {"field": "probe", "type": "nominal"}}
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                texts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(vl_convert.vegalite_to_scenegraph(spec)["scenegraph"])
    drawn: dict[str, dict[int, float]] = {}
    for text in texts:
        parts = text.split(" ")
        if len(parts) == 3 and parts[0] in charts._SCALING_RATIOS:
            drawn.setdefault(parts[0], {})[int(parts[1])] = float(parts[2])
    return {name: [values[i] for i in sorted(values)] for name, values in drawn.items()}


@pytest.mark.parametrize(
    ("head_dim", "original_length", "factor", "ell_ratio"),
    [(128, 2048, 4.0, 2.0), (128, 2048, 8.0, 4.0), (8, 32, 4.0, 4.0), (64, 4096, 2.5, 1.0)],
)
def test_scaling_chart_draws_pe_libs_frequencies(
    head_dim: int, original_length: int, factor: float, ell_ratio: float
) -> None:
    """Every curve of the chart, dynamic NTK's included, is rope_frequencies' ratio for the same
    settings: dynamic NTK at the current length with its own factor 1, whatever the factor
    control says (at twice L it divides the slowest pair by 2, as chapter 8 does)."""
    figure = charts.scaling_chart(head_dim=head_dim, original_length=original_length)
    drawn = _drawn_ratios(figure, factor=factor, ell_ratio=ell_ratio)
    theta, _ = rope_frequencies(head_dim)
    length = {"original_max_position_embeddings": original_length}
    entries = {
        "linear": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        "yarn": {"rope_type": "yarn", "factor": factor, **length},
        "llama3": {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            **length,
        },
    }
    expected = {
        name: rope_frequencies(head_dim, base=DEFAULT_BASE, scaling=entry)[0] / theta
        for name, entry in entries.items()
    }
    dynamic = {"rope_type": "dynamic", "factor": 1.0}
    expected["dynamic"] = (
        rope_frequencies(
            head_dim,
            base=DEFAULT_BASE,
            scaling=dynamic,
            seq_len=round(ell_ratio * original_length),
            max_position_embeddings=original_length,
        )[0]
        / theta
    )
    assert sorted(drawn) == sorted(expected)
    for name, ratio in expected.items():
        assert drawn[name] == pytest.approx(ratio.tolist(), rel=1e-9), name
    if ell_ratio == 2.0:
        assert drawn["dynamic"][-1] == pytest.approx(0.5, rel=1e-12)


def _drawn_layer_rows(
    figure: ExplorableFigure, layer: int, fields: tuple[str, ...], **controls: float
) -> list[dict[str, str]]:
    """The rows of one layer of a layered figure as Vega computes them (in the pinned vl-convert,
    Vega's own dataflow) with the controls set to ``controls``: each row's ``fields`` as text."""
    import vl_convert

    part = copy.deepcopy(figure.spec["layer"][layer])
    params = copy.deepcopy(figure.spec["params"])
    for param in params:
        param["value"] = controls.get(param["name"], param["value"])
    joined = " + '|' + ".join(
        f"(isNumber(datum.{field}) ? format(datum.{field}, '.15e') : datum.{field})"
        for field in fields
    )
    part.setdefault("transform", []).append({"calculate": joined, "as": "probe"})
    spec = {
        "params": params,
        "data": part["data"],
        "transform": part["transform"],
        "mark": "text",
        "encoding": {"text": {"field": "probe", "type": "nominal"}},
    }
    texts: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str) and "|" in node["text"]:
                texts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(vl_convert.vegalite_to_scenegraph(spec)["scenegraph"])
    # d3-format writes a minus sign (U+2212), not a hyphen
    texts = [text.replace("\u2212", "-") for text in texts]
    return [dict(zip(fields, text.split("|"), strict=True)) for text in texts]


QUERY_KEY_LAYERS = {"vectors": 2, "caption": 3}


@pytest.mark.parametrize(
    ("pair", "distance", "shift"), [(1, 3, 0), (1, 3, 57), (0, 7, 40), (3, 20, 100), (2, 0, 9)]
)
def test_query_key_chart_draws_apply_rope(pair: int, distance: int, shift: int) -> None:
    """The query and the key the browser draws are apply_rope's at m = t + distance and n = t;
    the angle and the dot product it prints are those of the rotated vectors."""
    import torch

    from pe_lib.rope import apply_rope

    figure = charts.query_key_chart()
    fixed = figure.spec["usermeta"]["fixed"]
    head_dim = int(fixed["head_dim"])
    settings = {"pair": pair, "distance": distance, "shift": shift}
    rows = _drawn_layer_rows(
        figure, QUERY_KEY_LAYERS["vectors"], ("vector", "position", "x", "y"), **settings
    )
    positions = {"query": shift + distance, "key": shift}
    rotated = {}
    for name, position in positions.items():
        vector = torch.zeros(1, head_dim, dtype=torch.float64)
        vector[0, 2 * pair : 2 * pair + 2] = torch.tensor(
            [fixed[f"{name}_x"], fixed[f"{name}_y"]], dtype=torch.float64
        )
        rotated[name] = apply_rope(vector, torch.tensor([position]))[0, 2 * pair : 2 * pair + 2]
    assert sorted(row["vector"] for row in rows) == ["key", "query"]
    for row in rows:
        name = row["vector"]
        assert float(row["position"]) == positions[name]
        assert [float(row["x"]), float(row["y"])] == pytest.approx(
            rotated[name].tolist(), abs=1e-12
        )
    (caption, *_) = _drawn_layer_rows(
        figure, QUERY_KEY_LAYERS["caption"], ("angle_deg", "dot"), **settings
    )
    q, k = rotated["query"], rotated["key"]
    cosine = float(q @ k / (q.norm() * k.norm()))
    assert float(caption["dot"]) == pytest.approx(float(q @ k), abs=1e-12)
    assert float(caption["angle_deg"]) == pytest.approx(
        math.degrees(math.acos(max(-1.0, min(1.0, cosine)))), abs=1e-6
    )


def test_query_key_chart_keeps_the_angle_when_both_move() -> None:
    """Moving both positions by t leaves the angle and the product; the distance changes them."""
    figure = charts.query_key_chart()
    caption = QUERY_KEY_LAYERS["caption"]
    seen = {
        (distance, shift): _drawn_layer_rows(
            figure, caption, ("angle_deg", "dot"), distance=distance, shift=shift
        )[0]
        for distance in (3, 4)
        for shift in (0, 25, 100)
    }
    for distance in (3, 4):
        values = {tuple(float(v) for v in seen[distance, t].values()) for t in (0, 25, 100)}
        first = next(iter(values))
        assert all(v == pytest.approx(first, abs=1e-9) for v in values)
    assert float(seen[3, 0]["dot"]) != pytest.approx(float(seen[4, 0]["dot"]), abs=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"pair": 4}, ValueError, "pair"),
        ({"distance": 21}, ValueError, "distance"),
        ({"shift": -1}, ValueError, "shift"),
        ({"shift": 2.0}, TypeError, "shift"),
        ({"head_dim": 7}, ValueError, "head_dim"),
        ({"query": (0.0, 0.0)}, ValueError, "query"),
        ({"key": (2.0, 0.0)}, ValueError, "key"),
        ({"key": 0.5}, TypeError, "key"),
        ({"query": (0.5, "1")}, TypeError, r"query\[1\]"),
    ],
)
def test_query_key_chart_refuses_bad_arguments(kwargs, error, names) -> None:
    with pytest.raises(error, match=names):
        charts.query_key_chart(**kwargs)
