r"""Figures that recompute in the reader's browser, with no kernel.

Each builder returns an :class:`ExplorableFigure`: a Vega-Lite specification written with Altair
that holds no computed numbers, only the formula, as a Vega expression, and the controls, as
Vega-Lite parameters bound to sliders and text boxes. Whoever displays it evaluates the formula:
the published book through the Vega bundle in its ``_static`` folder (loaded by
``book/_static/pe-charts.js``), JupyterLab through its Vega-Lite renderer, and any other
frontend that runs HTML output (Colab, Jupyter Notebook) through the same bundle from a CDN.
The book's build compiles each specification to Vega (``book/_ext/vega_charts.py``), so that its
pages load Vega alone.

The expressions are a second implementation of pe_lib's formulas, in another language; the
book's browser test reads the values the browser computed and compares them with pe_lib's.

:data:`CHARTS` names every builder; a chart's name is also stored in its specification
(``usermeta["pe_chart"]``), with the settings that are not controls (``usermeta["fixed"]``), so
a test can tell which formula a figure on a page computes, and at which settings.

``altair`` is imported only when a chart is built, so ``import pe_lib`` stays quick.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._validation import check_base, check_int_in_range, check_real
from ..rope.scaling import DEFAULT_BASE, ROPE_SCALINGS
from .style import LINE_CYCLE, RAMP_STOPS, dark_variants, line_colours, method_style

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

__all__ = [
    "CHARTS",
    "ExplorableFigure",
    "alibi_bias_chart",
    "dot_product_chart",
    "frequency_chart",
    "query_key_chart",
    "rotation_chart",
    "scaling_chart",
    "wavelength_chart",
]

#: The releases of Vega, Vega-Lite and vega-embed that draw the charts, each with the
#: ``dist.integrity`` digest of its tarball in the npm registry. This is the one place they are
#: named. ``tools/fetch_vega.py`` reads this literal to fetch them into the book's ``_static`` folder,
#: and frontends without the book's bundle (Colab, Jupyter Notebook) load the same releases
#: from jsDelivr. Keep ``vega-lite`` at the schema version of the pinned ``altair``.
VEGA_RELEASES = {
    "vega": (
        "6.4.0",
        "sha512-rHXCq2LpEWCLMjXBEj7hocY9G0/i5TGYRayGGSj06VTF4+l2IG2Z7oeZKCjWbUh/7hTE/mVhbaOPB72wCElh6g==",
    ),
    "vega-lite": (
        "6.4.1",
        "sha512-KO3ybHNouRK4A0al/+2fN9UqgTEfxrd/ntGLY933Hg5UOYotDVQdshR3zn7OfXwQ7uj0W96Vfa5R+QxO8am3IQ==",
    ),
    "vega-embed": (
        "7.3.0",
        "sha512-wQ8s5GaSzqoKgmRfbRolgBrjE2CP7ZKHXqH7NijxMqPjpdWxSs4Dn8tvp9g0giQvh2cK+3p56sxjWWM0wNngGw==",
    ),
}
# A white background for frontends that know nothing of the page's theme; on the book's pages
# pe-charts.js replaces it (and the text colours) with the theme's.
_BACKGROUND = "white"
_HEIGHT = 220
# Gridlines behind the data, never as bright as it: the theme's border colour at half strength.
_GRID_OPACITY = 0.5
# Marks that stand for no method: the first colours of the book's cycle (pe_lib.viz.style).
_FIRST, _SECOND = LINE_CYCLE[0], method_style("alibi").color
# The unit circle the rotation chart's points stay on: a grey with 3:1 on both pages.
_CIRCLE = "#949494"


def _altair() -> Any:
    import altair

    return altair


def vegalite_mime_type() -> str:
    """The MIME type of the specifications altair writes (``application/vnd.vegalite.v6+json``)."""
    major = _altair().SCHEMA_VERSION.lstrip("v").split(".")[0]
    return f"application/vnd.vegalite.v{major}+json"


# Loads Vega from jsDelivr and draws the chart, in a frontend that runs the HTML of an output
# but has neither the book's bundle nor a Vega-Lite renderer. On a page of the book the loader
# pe-charts.js is present and draws every chart itself, so this does nothing there.
_LIVE_LOADER = """<script>
(function () {
  if (document.querySelector('script[src*="pe-charts.js"]')) { return; }
  var figure = document.currentScript.previousElementSibling.previousElementSibling;
  var releases = %(releases)s;
  function load(index) {
    if (index === releases.length) {
      var spec = JSON.parse(figure.nextElementSibling.textContent);
      window.vegaEmbed(figure, spec, {renderer: "svg", actions: false});
      return;
    }
    var script = document.createElement("script");
    script.src = "https://cdn.jsdelivr.net/npm/" + releases[index] + "/build/"
      + releases[index].split("@")[0] + ".min.js";
    script.onload = function () { load(index + 1); };
    document.head.appendChild(script);
  }
  load(window.vegaEmbed ? releases.length : 0);
})();
</script>"""


class ExplorableFigure:
    """A Vega-Lite chart that recomputes in the browser; displays itself in Jupyter.

    Its MIME bundle carries the specification twice: as Vega-Lite JSON, for JupyterLab's
    renderer, and as HTML (``<div class="pe-chart">`` followed by the specification in a
    ``<script type="application/json">``), for the book's pages and other frontends. Both are
    deterministic functions of the specification, so stored outputs compare equal when a
    notebook is re-executed.

    Attributes:
        name: the chart's key in :data:`CHARTS`.
        spec: the Vega-Lite specification, a JSON-compatible dict.
    """

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name
        self.spec = spec

    def __repr__(self) -> str:
        return f"<ExplorableFigure {self.name}: Vega-Lite, recomputed in the browser>"

    def to_json(self) -> str:
        """The specification as compact JSON with sorted keys (stable between runs)."""
        return json.dumps(self.spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    def to_html(self) -> str:
        """The figure as an HTML fragment: placeholder, specification, fallback loader."""
        # `</` must not end the <script> early; JSON allows `<\/`.
        spec_json = self.to_json().replace("</", "<\\/")
        releases = json.dumps([f"{name}@{version}" for name, (version, _) in VEGA_RELEASES.items()])
        return (
            f'<div class="pe-chart" data-pe-chart="{html.escape(self.name)}"></div>'
            f'<script type="application/json" class="pe-chart-spec">{spec_json}</script>'
            + _LIVE_LOADER
            % {"releases": releases}
        )

    def _repr_mimebundle_(
        self, include: object = None, exclude: object = None
    ) -> dict[str, object]:
        return {
            vegalite_mime_type(): self.spec,
            "text/html": self.to_html(),
            "text/plain": repr(self),
        }


def _encoding_titles(spec: Mapping[str, Any]) -> dict[str, str]:
    """The axis and legend titles of every channel, from the specification and its layers."""
    titles: dict[str, str] = {}
    for part in [spec, *spec.get("layer", [])]:
        for channel, encoding in part.get("encoding", {}).items():
            if isinstance(encoding, Mapping) and encoding.get("title"):
                titles.setdefault(channel, str(encoding["title"]))
    return titles


def _describe(spec: Mapping[str, Any], fixed: Mapping[str, object]) -> str:
    """A text alternative for the chart, generated from its specification.

    What it plots (title, the x and y axes and what tells the marks apart), the controls a
    reader can move (their labels) and the settings that are not controls. The browser adds the
    current value of every control (``book/_static/pe-charts.js``).
    """
    title = spec.get("title", "")
    title = title.get("text", "") if isinstance(title, Mapping) else str(title)
    titles = _encoding_titles(spec)
    marks = {
        "color": "colour",
        "shape": "shape",
        "strokeDash": "dash",
    }
    parts = [f"Chart: {title}."]
    if "x" in titles and "y" in titles:
        parts.append(f"It plots {titles['y']} (vertical axis) against {titles['x']} (horizontal).")
    for channel, word in marks.items():
        if channel in titles:
            parts.append(f"The {word} shows the {titles[channel]}.")
    controls = [
        str(param["bind"]["name"]).strip()
        for param in spec.get("params", [])
        if isinstance(param.get("bind"), Mapping) and "name" in param["bind"]
    ]
    if controls:
        parts.append(f"Controls: {', '.join(controls)}.")
    if fixed:
        parts.append(
            "Fixed: "
            + ", ".join(
                f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}"
                for key, value in fixed.items()
            )
            + "."
        )
    return " ".join(parts)


def _figure(
    name: str,
    chart: alt.TopLevelMixin,
    fixed: dict[str, float] | None = None,
    inputs: dict[str, dict[str, object]] | None = None,
) -> ExplorableFigure:
    """The figure ``name``; ``fixed`` records the settings that are not controls, ``inputs`` the
    rules of its text controls (which pe-charts.js checks, reporting in words what it could not
    use)."""
    spec = chart.to_dict()
    fixed = dict(fixed or {})
    spec["usermeta"] = {"pe_chart": name, "fixed": fixed, "inputs": dict(inputs or {})}
    spec["description"] = spec["usermeta"]["description"] = _describe(spec, fixed)
    if spec.get("width") == "container":
        # Fit the width of the box, and fit again whenever the chart's own size changes: tick
        # labels that grow with a control (0.01 to 0.003 on a log axis) were cut at the left.
        spec["autosize"] = {"type": "fit-x", "contains": "padding", "resize": True}
    config = spec.setdefault("config", {})
    config["background"] = _BACKGROUND
    config.setdefault("axis", {})["gridOpacity"] = _GRID_OPACITY
    # The palette's colours this chart draws with that the dark page shows in another shade
    # (pe_lib.viz.style.dark_variants): pe-charts.js puts them in place when the theme is dark.
    text = json.dumps(spec).lower()
    spec["usermeta"]["dark_colors"] = {
        light: dark for light, dark in dark_variants().items() if f'"{light}"' in text
    }
    return ExplorableFigure(name, spec)


def _y_axis(alt_: Any, title: str, **options: Any) -> Any:
    """A y axis whose title sits above the axis, left-aligned: it never meets the tick labels,
    however wide they grow (a log axis at a large factor)."""
    return alt_.Axis(
        title=title,
        titleAngle=0,
        titleAlign="left",
        titleAnchor="end",
        titleBaseline="bottom",
        titleX=0,
        titleY=-6,
        **options,
    )


def _range(
    name: str, value: float, low: float, high: float, step: float, label: str
) -> alt.Parameter:
    alt_ = _altair()
    bind = alt_.binding_range(min=low, max=high, step=step, name=label)
    parameter: alt.Parameter = alt_.param(name=name, value=value, bind=bind)
    return parameter


def _rows(alt_: Any, field: str, stop: int, keep: str, title: str) -> Any:
    """A chart of the rows ``field = 0 .. stop - 1`` (Vega's ``sequence``) for which the Vega
    expression ``keep`` holds, e.g. ``"datum.pos < num_positions"`` for a slider's count."""
    return alt_.Chart(alt_.sequence(0, stop, as_=field), title=title).transform_filter(keep)


def _check_even_size(name: str, value: object) -> int:
    size = check_int_in_range(name, value, 4, 512)
    if size % 2:
        raise ValueError(f"{name} must be even (channels come in pairs), got {size}")
    return size


def _log10_base(base: object) -> float:
    """The slider position of ``base``: its log10, which must be a multiple of 0.1 in [1, 6]."""
    base = check_base("base", base)
    exponent = round(math.log10(base), 1)
    if not 1 <= exponent <= 6 or abs(10**exponent - base) > 1e-9 * base:
        raise ValueError(f"base must be 10**e with e one of 1.0, 1.1, ..., 6.0, got {base}")
    return exponent


def _omega(pair: str, size: str, base: str = "pow(10, log10_base)") -> str:
    r"""The Vega expression of pair ``pair``'s angular frequency, base^(-2i/d).

    The one formula of :func:`pe_lib.encodings.sinusoidal.angular_frequencies` (Vaswani et al., 2017,
    section 3.5) and of RoPE's :math:`\theta_i` (Su et al., 2021), for every chart: ``pair``,
    ``size`` and ``base`` are Vega expressions (a field, a control or a number).
    """
    return f"pow({base}, -2 * ({pair}) / ({size}))"


# The pair of column `column`: columns 2i and 2i + 1 share pair i's frequency.
_OMEGA = _omega("(datum.column - datum.column % 2) / 2", "d_model")


def _base_params(d_model: int, log10_base: float) -> list[alt.Parameter]:
    return [
        _range("d_model", d_model, 4, 512, 2, "d_model "),
        _range("log10_base", log10_base, 1, 6, 0.1, "log10(base) "),
    ]


def frequency_chart(
    d_model: int = 64,
    base: float = DEFAULT_BASE,
    columns: str = "0, 1, 10, 30",
    num_positions: int = 100,
) -> ExplorableFigure:
    r"""Chosen columns of the sinusoidal table against position.

    The browser evaluates :math:`PE(pos, 2i) = \sin(pos\,\omega_i)` and
    :math:`PE(pos, 2i+1) = \cos(pos\,\omega_i)`, :math:`\omega_i = \mathrm{base}^{-2i/d}`
    (Vaswani et al., 2017, section 3.5). Controls: ``d_model`` (even, 4 .. 512),
    :math:`\log_{10}` of the base (1 .. 6), the columns (comma-separated; ones outside
    ``[0, d_model)`` are left out) and the number of positions (10 .. 500).

    Args:
        d_model: starting number of columns, even, in [4, 512].
        base: starting base, ``10**e`` for ``e`` a multiple of 0.1 in [1, 6].
        columns: starting columns, comma-separated indices.
        num_positions: starting number of positions, in [10, 500].

    Returns:
        the figure; its lines are drawn from rows ``pos, column, value``.
    """
    alt_ = _altair()
    d_model = _check_even_size("d_model", d_model)
    log10_base = _log10_base(base)
    num_positions = check_int_in_range("num_positions", num_positions, 10, 500)
    if not isinstance(columns, str):
        raise TypeError(f"columns must be a string such as '0, 1, 10', got {columns!r}")
    params = [
        *_base_params(d_model, log10_base),
        alt_.param(
            name="columns",
            value=columns,
            bind=alt_.binding(input="text", name="columns shown (e.g. 0, 1, 10) "),
        ),
        _range("num_positions", num_positions, 10, 500, 10, "positions "),
    ]
    chart = (
        _rows(alt_, "pos", 500, "datum.pos < num_positions", "PE(pos, column) against position pos")
        .transform_calculate(column="split(columns, ',')")
        .transform_flatten(["column"])
        .transform_calculate(column="toNumber(trim(datum.column))")
        .transform_filter(
            "isFinite(datum.column) && datum.column == floor(datum.column)"
            " && datum.column >= 0 && datum.column < d_model"
        )
        .transform_calculate(omega=_OMEGA)
        .transform_calculate(
            value="datum.column % 2 == 0 ? sin(datum.pos * datum.omega)"
            " : cos(datum.pos * datum.omega)"
        )
        .mark_line()
        .encode(
            x=alt_.X("pos:Q", title="position pos"),
            y=alt_.Y(
                "value:Q", axis=_y_axis(alt_, "PE(pos, column)"), scale=alt_.Scale(domain=[-1, 1])
            ),
            color=alt_.Color(
                "column:N",
                title="column",
                scale=alt_.Scale(range=list(LINE_CYCLE)),
                legend=alt_.Legend(orient="bottom"),
            ),
        )
        .properties(width="container", height=_HEIGHT)
        .add_params(*params)
    )
    rule = {
        "label": "columns",
        "min": 0,
        "below_signal": "d_model",
        "hint": "Type column numbers separated by commas, such as 0, 1, 10.",
    }
    return _figure("frequency", chart, inputs={"columns": rule})


def wavelength_chart(d_model: int = 64, base: float = DEFAULT_BASE) -> ExplorableFigure:
    r"""The wavelength :math:`\lambda_i = 2\pi\,\mathrm{base}^{2i/d}` of every sine/cosine pair.

    On a logarithmic axis the wavelengths lie on a straight line from :math:`2\pi` towards
    :math:`2\pi\,\mathrm{base}`: they grow geometrically (Vaswani et al., 2017, section 3.5).
    Controls: ``d_model`` (even, 4 .. 512) and :math:`\log_{10}` of the base (1 .. 6).

    Args:
        d_model: starting number of columns, even, in [4, 512].
        base: starting base, ``10**e`` for ``e`` a multiple of 0.1 in [1, 6].

    Returns:
        the figure; its points are drawn from rows ``pair, wavelength``.
    """
    alt_ = _altair()
    d_model = _check_even_size("d_model", d_model)
    log10_base = _log10_base(base)
    chart = (
        _rows(alt_, "pair", 256, "datum.pair < d_model / 2", "wavelength of each sine/cosine pair")
        .transform_calculate(wavelength=f"2 * PI / {_omega('datum.pair', 'd_model')}")
        .mark_point(filled=True, size=18, color=_FIRST)
        .encode(
            x=alt_.X("pair:Q", title="pair i (columns 2i, 2i+1)"),
            y=alt_.Y(
                "wavelength:Q",
                axis=_y_axis(alt_, "wavelength λᵢ (positions)"),
                scale=alt_.Scale(type="log"),
            ),
        )
        .properties(width="container", height=_HEIGHT)
        .add_params(*_base_params(d_model, log10_base))
    )
    return _figure("wavelength", chart)


def dot_product_chart(
    d_model: int = 64, base: float = DEFAULT_BASE, max_distance: int = 100
) -> ExplorableFigure:
    r"""The dot product of two position vectors against their distance ``k``.

    For even ``d_model`` the browser evaluates
    :math:`PE(pos)\cdot PE(pos+k) = \sum_{i<d/2} \cos(k\,\omega_i)`, which holds for every
    ``pos`` (the identity chapter 4 proves and checks), so the curve is a function of ``k``
    alone. Controls: ``d_model`` (even, 4 .. 512), :math:`\log_{10}` of the base (1 .. 6) and the
    largest distance shown (10 .. 200).

    Args:
        d_model: starting number of columns, even, in [4, 512].
        base: starting base, a power of ten between 10 and 10**6.
        max_distance: starting largest distance, in [10, 200].

    Returns:
        the figure; its dataset holds ``k, dot``.
    """
    alt_ = _altair()
    d_model = _check_even_size("d_model", d_model)
    log10_base = _log10_base(base)
    max_distance = check_int_in_range("max_distance", max_distance, 10, 200)
    params = [
        *_base_params(d_model, log10_base),
        _range("max_distance", max_distance, 10, 200, 10, "largest distance "),
    ]
    chart = (
        _rows(alt_, "k", 201, "datum.k <= max_distance", "PE(pos) · PE(pos + k), for every pos")
        .transform_calculate(pair="sequence(0, d_model / 2)")
        .transform_flatten(["pair"])
        .transform_calculate(term=f"cos(datum.k * {_omega('datum.pair', 'd_model')})")
        .transform_aggregate(dot="sum(term)", groupby=["k"])
        .mark_line(point=True, color=_FIRST)
        .encode(
            x=alt_.X("k:Q", title="distance k"),
            y=alt_.Y("dot:Q", axis=_y_axis(alt_, "dot product")),
        )
        .properties(width="container", height=_HEIGHT)
        .add_params(*params)
    )
    return _figure("dot_product", chart)


def rotation_chart(
    d_model: int = 16, pair: int = 2, position: int = 10, shift: int = 5
) -> ExplorableFigure:
    r"""One sine/cosine pair on the unit circle, at ``pos`` and at ``pos + k``.

    Pair ``i`` of :math:`PE(pos)` is the point :math:`(\sin(pos\,\omega_i), \cos(pos\,\omega_i))`;
    shifting the position by ``k`` turns it by the angle :math:`k\,\omega_i`, whatever ``pos``
    is: the block of :math:`M_k` for that pair is a rotation (chapter 4). The browser evaluates
    both points. Controls: the pair (0 .. d/2 - 1), the position (0 .. 100) and the shift
    (-50 .. 50); ``d_model`` and the base (:data:`~pe_lib.encodings.sinusoidal.DEFAULT_BASE`) are fixed.

    Args:
        d_model: number of columns, even, in [4, 512] (not a control).
        pair: starting pair index i.
        position: starting position, in [0, 100].
        shift: starting shift k, in [-50, 50].

    Returns:
        the figure; its point dataset holds ``which`` ("pos" or "pos + k"), ``x`` (the sine
        column 2i) and ``y`` (the cosine column 2i + 1).
    """
    alt_ = _altair()
    d_model = _check_even_size("d_model", d_model)
    pair = check_int_in_range("pair", pair, 0, d_model // 2 - 1)
    position = check_int_in_range("position", position, 0, 100)
    shift = check_int_in_range("shift", shift, -50, 50)
    params = [
        _range("pair", pair, 0, d_model // 2 - 1, 1, "pair i "),
        _range("position", position, 0, 100, 1, "position pos "),
        _range("shift", shift, -50, 50, 1, "shift k "),
    ]
    omega = _omega("pair", str(d_model), repr(DEFAULT_BASE))
    circle = (
        alt_.Chart(alt_.sequence(0, 361, as_="degree"))
        .transform_calculate(x="sin(datum.degree * PI / 180)", y="cos(datum.degree * PI / 180)")
        .mark_line(color=_CIRCLE)
        .encode(x="x:Q", y="y:Q", order="degree:Q")
    )
    points = (
        alt_.Chart(alt_.Data(values=[{"which": "pos", "step": 0}, {"which": "pos + k", "step": 1}]))
        .transform_calculate(angle=f"(position + datum.step * shift) * {omega}")
        .transform_calculate(x="sin(datum.angle)", y="cos(datum.angle)")
        .mark_point(filled=True, size=120)
        .encode(
            x=alt_.X(
                "x:Q",
                title="PE(·, 2i) = sin",
                scale=alt_.Scale(domain=[-1.1, 1.1]),
                axis=alt_.Axis(tickCount=5),
            ),
            y=alt_.Y(
                "y:Q",
                axis=_y_axis(alt_, "PE(·, 2i+1) = cos", tickCount=5),
                scale=alt_.Scale(domain=[-1.1, 1.1]),
            ),
            color=alt_.Color(
                "which:N",
                title=None,
                scale=alt_.Scale(range=[_FIRST, _SECOND]),
                legend=alt_.Legend(orient="bottom"),
            ),
            shape=alt_.Shape("which:N", title=None),
        )
    )
    chart = (
        alt_.layer(circle, points, title="pair i of PE(pos) and PE(pos + k)")
        .properties(width=240, height=240)
        .add_params(*params)
    )
    return _figure("rotation", chart, {"d_model": d_model, "base": DEFAULT_BASE})


# RoPE on one pair of a query and a key, (x, y) the channels (2i, 2i + 1) as apply_rope's
# interleaved layout pairs them: turned by the angle p * theta_i at position p.
_ROTATED_X = "datum.raw_x * cos(datum.angle) - datum.raw_y * sin(datum.angle)"
_ROTATED_Y = "datum.raw_y * cos(datum.angle) + datum.raw_x * sin(datum.angle)"


def query_key_chart(
    head_dim: int = 8,
    pair: int = 1,
    distance: int = 3,
    shift: int = 0,
    query: tuple[float, float] = (0.8, 0.3),
    key: tuple[float, float] = (0.25, 0.6),
) -> ExplorableFigure:
    r"""A query and a key turned by RoPE in one pair's plane, and the angle between them.

    The query sits at position :math:`m = t + \Delta` and the key at :math:`n = t`; RoPE turns
    pair ``i`` of each by its position times :math:`\theta_i = \mathrm{base}^{-2i/d}` (Su et al.,
    2021, eq. 34; :func:`pe_lib.rope.apply_rope`, interleaved layout, base
    :data:`~pe_lib.encodings.sinusoidal.DEFAULT_BASE`). Moving both by ``t`` turns both by the same
    angle, so the angle between them, :math:`(m - n)\,\theta_i` plus the angle they started
    with, and their dot product stay as they are; the distance :math:`\Delta = m - n` changes
    them. The browser evaluates both vectors, the angle and the product. Controls: the pair
    (0 .. d/2 - 1), the distance (0 .. 20) and the shift ``t`` (0 .. 100); ``head_dim``, the
    base and the unrotated pairs are fixed.

    Args:
        head_dim: size of the rotated vectors, even, in [4, 512] (not a control).
        pair: starting pair index i.
        distance: starting distance m - n, in [0, 20].
        shift: starting shift t, in [0, 100].
        query: the query's pair before any rotation, (channel 2i, channel 2i + 1), each
            component in [-1, 1] and not both 0 (not a control).
        key: the key's pair before any rotation, likewise.

    Returns:
        the figure; its vector dataset holds ``vector`` ("query" or "key"), ``position``,
        ``x`` (channel 2i) and ``y`` (channel 2i + 1), and its caption dataset ``angle_deg``
        (between the two, in [0, 180]) and ``dot``.
    """
    alt_ = _altair()
    head_dim = _check_even_size("head_dim", head_dim)
    pair = check_int_in_range("pair", pair, 0, head_dim // 2 - 1)
    distance = check_int_in_range("distance", distance, 0, 20)
    shift = check_int_in_range("shift", shift, 0, 100)
    raw: dict[str, tuple[float, float]] = {}
    for name, vector in (("query", query), ("key", key)):
        if not isinstance(vector, (tuple, list)) or len(vector) != 2:
            raise TypeError(f"{name} must be a pair (x, y) of real numbers, got {vector!r}")
        x, y = (check_real(f"{name}[{index}]", value) for index, value in enumerate(vector))
        if not (-1 <= x <= 1 and -1 <= y <= 1) or x == y == 0:
            raise ValueError(
                f"{name} must have both components in [-1, 1], not both 0, got {vector!r}"
            )
        raw[name] = (x, y)
    params = [
        _range("pair", pair, 0, head_dim // 2 - 1, 1, "pair i "),
        _range("distance", distance, 0, 20, 1, "distance m − n "),
        _range("shift", shift, 0, 100, 1, "both moved by t "),
    ]
    theta = _omega("pair", str(head_dim), repr(DEFAULT_BASE))
    (qx, qy), (kx, ky) = raw["query"], raw["key"]
    # The unrotated pairs and each vector's position, n = t for the key and m = t + distance.
    vectors_data = alt_.Data(values=[{"vector": "query"}, {"vector": "key"}])

    def unrotated(chart: Any) -> Any:
        return chart.transform_calculate(
            raw_x=f"datum.vector == 'query' ? {qx!r} : {kx!r}",
            raw_y=f"datum.vector == 'query' ? {qy!r} : {ky!r}",
            position="datum.vector == 'query' ? shift + distance : shift",
        ).transform_calculate(angle=f"datum.position * {theta}")

    scale = alt_.Scale(domain=[-1.1, 1.1], nice=False)
    x_axis = alt_.X("x:Q", title="channel 2i", scale=scale, axis=alt_.Axis(tickCount=5))
    y_axis = alt_.Y(
        "y:Q",
        axis=_y_axis(alt_, "channel 2i + 1", tickCount=5),
        scale=alt_.Scale(domain=[-1.1, 1.6], nice=False),
    )
    # One legend for colour and shape (Vega-Lite merges channels with the same field and domain).
    names = ["query", "key"]
    legend = alt_.Legend(orient="bottom")
    colour = alt_.Color(
        "vector:N",
        title=None,
        scale=alt_.Scale(domain=names, range=[_FIRST, _SECOND]),
        legend=legend,
    )
    shape = alt_.Shape(
        "vector:N",
        title=None,
        scale=alt_.Scale(domain=names, range=["circle", "square"]),
        legend=legend,
    )
    # The circles the two tips stay on: a rotation keeps lengths.
    circles = (
        unrotated(alt_.Chart(vectors_data))
        .transform_calculate(degree="sequence(0, 361, 4)")
        .transform_flatten(["degree"])
        .transform_calculate(
            radius="sqrt(datum.raw_x * datum.raw_x + datum.raw_y * datum.raw_y)",
        )
        .transform_calculate(
            circle_x="datum.radius * cos(datum.degree * PI / 180)",
            circle_y="datum.radius * sin(datum.degree * PI / 180)",
        )
        .mark_line(color=_CIRCLE, strokeWidth=1)
        .encode(x="circle_x:Q", y="circle_y:Q", detail="vector:N", order="degree:Q")
    )
    tips = unrotated(alt_.Chart(vectors_data)).transform_calculate(x=_ROTATED_X, y=_ROTATED_Y)
    arrows = tips.mark_rule(strokeWidth=3).encode(
        x=x_axis, y=y_axis, x2=alt_.datum(0), y2=alt_.datum(0), color=colour
    )
    heads = tips.mark_point(filled=True, size=110, opacity=1).encode(
        x="x:Q", y="y:Q", color=colour, shape=shape
    )
    # The angle between the key and the query, in [0, 180] degrees, and their dot product: both
    # depend on the distance m - n, not on t.
    raw_angle = f"atan2({qy!r}, {qx!r}) - atan2({ky!r}, {kx!r}) + distance * {theta}"
    caption = (
        alt_.Chart(alt_.Data(values=[{"line": "positions"}, {"line": "angle"}]))
        .transform_calculate(
            angle_deg=f"abs(180 - ((180 - ({raw_angle}) * 180 / PI) % 360 + 360) % 360)",
            dot=f"{qx * kx + qy * ky!r} * cos(distance * {theta})"
            f" + {qx * ky - qy * kx!r} * sin(distance * {theta})",
        )
        .transform_calculate(
            text="datum.line == 'positions'"
            " ? 'query at m = ' + (shift + distance) + ', key at n = ' + shift"
            " : 'angle between them ' + format(datum.angle_deg, '.0f') + '°, q · k = '"
            " + format(datum.dot, '.2f')",
            text_y="datum.line == 'positions' ? 1.5 : 1.3",
        )
        .mark_text(align="left", baseline="middle", fontSize=12)
        .encode(x=alt_.datum(-1.05), y=alt_.datum(0), text="text:N")
    )
    caption = caption.encode(y=alt_.Y("text_y:Q"))
    chart = (
        alt_.layer(circles, arrows, heads, caption, title="one pair of a query and a key, RoPE")
        .properties(width=240, height=295)
        .add_params(*params)
    )
    fixed: dict[str, float] = {
        "head_dim": head_dim,
        "base": DEFAULT_BASE,
        "query_x": qx,
        "query_y": qy,
        "key_x": kx,
        "key_y": ky,
    }
    return _figure("query_key", chart, fixed)


# ALiBi's slope of head h (0-based) of n, from the rule in the authors' code (see
# pe_lib.encodings.alibi.alibi_slopes): with c the largest power of two <= n, heads below c take
# 2^(-8(h+1)/c), the others every other slope of 2c heads, 2^(-8(2(h-c)+1)/(2c)).
_ALIBI_SLOPE = (
    "datum.head < datum.c ? pow(2, -8 * (datum.head + 1) / datum.c)"
    " : pow(2, -8 * (2 * (datum.head - datum.c) + 1) / (2 * datum.c))"
)


def alibi_bias_chart(num_heads: int = 8, max_distance: int = 32) -> ExplorableFigure:
    r"""ALiBi's bias :math:`-s_h\,(i - j)` against the distance :math:`i - j`, one line per head.

    Heads are numbered from 1, as in chapter 7's figures and in Press et al. (2022)'s slopes
    :math:`2^{-8h/n}`, :math:`h = 1 .. n`; the rows keep the 0-based index ``head`` too.

    The browser evaluates the slopes :math:`s_h` by the rule of :func:`pe_lib.encodings.alibi.alibi_slopes`
    (powers of two, and the interleaving rule for other head counts). Controls: the number of
    heads (1 .. 16) and the largest distance (4 .. 64).

    Args:
        num_heads: starting number of heads, in [1, 16].
        max_distance: starting largest distance, in [4, 64].

    Returns:
        the figure; its dataset holds ``head`` (0-based), ``number`` (``head + 1``, the legend's
        numbering), ``slope``, ``distance``, ``bias``.
    """
    alt_ = _altair()
    num_heads = check_int_in_range("num_heads", num_heads, 1, 16)
    max_distance = check_int_in_range("max_distance", max_distance, 4, 64)
    params = [
        _range("num_heads", num_heads, 1, 16, 1, "heads "),
        _range("max_distance", max_distance, 4, 64, 1, "largest distance "),
    ]
    chart = (
        _rows(alt_, "head", 16, "datum.head < num_heads", "ALiBi bias added to the scores")
        .transform_calculate(c="pow(2, floor(log(num_heads) / LN2 + 1e-9))")
        .transform_calculate(slope=_ALIBI_SLOPE)
        .transform_calculate(distance="sequence(0, max_distance + 1)")
        .transform_flatten(["distance"])
        .transform_calculate(bias="-datum.slope * datum.distance", number="datum.head + 1")
        .mark_line()
        .encode(
            x=alt_.X("distance:Q", title="distance i - j (query minus key)"),
            y=alt_.Y("bias:Q", axis=_y_axis(alt_, "bias −sₕ (i − j)")),
            # One gradient for any number of heads: a legend that never grows rows. Viridis
            # without its light end (pe_lib.viz.style.line_colours), which the dark page swaps for
            # the range without its dark end.
            color=alt_.Color(
                "number:Q",
                title="head h",
                scale=alt_.Scale(range=line_colours(RAMP_STOPS)),
                legend=alt_.Legend(orient="right", gradientLength=150, format="d", tickCount=4),
            ),
            detail="head:N",
        )
        .properties(width="container", height=_HEIGHT)
        .add_params(*params)
    )
    return _figure("alibi_bias", chart)


# theta'_i / theta_i of each context-extension method (pe_lib.rope.scaling), keyed by its
# rope_type, for pair `datum.pair` of head_dim `datum.d`, with the controls `factor` (s) and
# `ell_ratio` (the current length over the training length, for dynamic NTK). NTK and dynamic
# NTK raise the base to b * alpha^(d/(d-2)), so pair i's frequency falls by alpha^(-2i/(d-2));
# YaRN's and Llama 3.1's per-pair weights (1 keeps a pair, 0 interpolates it) come from the
# transforms before.
_SCALING_RATIOS = {
    "linear": "1 / factor",
    "ntk": _omega("datum.pair", "datum.d - 2", "factor"),
    # Hugging Face's scale f * max(ell/L, 1) - (f - 1) with dynamic NTK's own factor f (fixed,
    # `dynamic_factor`), not the factor control: with f = 1, chapter 8's rule, twice L divides
    # the slowest pair by 2.
    "dynamic": _omega(
        "datum.pair", "datum.d - 2", "datum.dyn_f * max(ell_ratio, 1) - (datum.dyn_f - 1)"
    ),
    "yarn": "(1 - datum.yarn_keep) / factor + datum.yarn_keep",
    "llama3": "(1 - datum.llama3_keep) / factor + datum.llama3_keep",
}


def scaling_chart(
    head_dim: int = 128,
    base: float = DEFAULT_BASE,
    original_length: int = 2048,
    factor: float = 4.0,
    length_ratio: float = 2.0,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
    dynamic_factor: float = 1.0,
) -> ExplorableFigure:
    r"""How each RoPE context-extension method changes every pair's frequency, :math:`\theta'_i/\theta_i`.

    The browser evaluates the formulas of :mod:`pe_lib.rope.scaling` for ``"linear"``,
    ``"ntk"``, ``"dynamic"`` (at the current length :math:`\ell`, with its own ``factor``
    :math:`f` = ``dynamic_factor``, not the factor control: the NTK scale
    :math:`f \max(1, \ell/L) - (f - 1)`), ``"yarn"`` (its defaults
    ``beta_fast`` and ``beta_slow`` from :data:`~pe_lib.rope.scaling.ROPE_SCALINGS`, ramp ends
    rounded outwards) and ``"llama3"`` (``low_freq_factor`` and ``high_freq_factor``, by default
    Llama 3.1's 1 and 4). Lines take the colours, dashes and names of :mod:`pe_lib.viz.style`. A
    ratio of 1 keeps a pair as trained; :math:`1/s` interpolates it by the factor. Controls: the
    factor :math:`s` (1 .. 16) and, for dynamic NTK, :math:`\ell/L` (1 .. 16); the head size,
    base, training length ``L`` and Llama 3.1's two factors are fixed.

    Args:
        head_dim: size of the rotated vectors, even, in [4, 512] (not a control).
        base: RoPE base, > 1 (not a control).
        original_length: the training length ``L``, >= 1 (not a control).
        factor: starting factor, a multiple of 0.5 in [1, 16].
        length_ratio: starting :math:`\ell/L` for dynamic NTK, a multiple of 0.5 in [1, 16].
        low_freq_factor: Llama 3.1's ``low_freq_factor``, > 0 (not a control).
        high_freq_factor: Llama 3.1's ``high_freq_factor``, above ``low_freq_factor``.
        dynamic_factor: dynamic NTK's ``factor`` :math:`f`, >= 1 (not a control); 1 makes the
            scale :math:`\max(1, \ell/L)`, the rule of chapter 8.

    Returns:
        the figure; its lines are drawn from rows ``pair, method, ratio`` (``method`` the
        ``rope_type``, ``label`` its name in :mod:`pe_lib.viz.style`).
    """
    alt_ = _altair()
    head_dim = _check_even_size("head_dim", head_dim)
    base = check_base("base", base)
    original_length = check_int_in_range("original_length", original_length, 1, 2**20)
    for name, value in (("factor", factor), ("length_ratio", length_ratio)):
        if not 1 <= check_real(name, value) <= 16 or value * 2 != round(value * 2):
            raise ValueError(f"{name} must be a multiple of 0.5 in [1, 16], got {value}")
    low = check_real("low_freq_factor", low_freq_factor)
    high = check_real("high_freq_factor", high_freq_factor)
    if not 0 < low < high:
        raise ValueError(
            "low_freq_factor must be > 0 and below high_freq_factor, got "
            f"low_freq_factor={low_freq_factor!r} and high_freq_factor={high_freq_factor!r}"
        )
    dynamic_f = check_real("dynamic_factor", dynamic_factor, at_least=1)
    yarn_defaults = ROPE_SCALINGS["yarn"].optional
    beta_fast = float(yarn_defaults["beta_fast"])  # type: ignore[arg-type]
    beta_slow = float(yarn_defaults["beta_slow"])  # type: ignore[arg-type]
    log_base, two_pi = math.log(base), 2 * math.pi
    # YaRN's ramp, on the pair index: pairs up to `first` turn more than beta_fast times within
    # L (kept), pairs from `last` on fewer than beta_slow times (interpolated); ends rounded
    # outwards (truncate) and clamped to [0, head_dim - 1], as transformers'
    # find_correction_range does (a ramp of zero width gets 0.001).
    first = math.floor(head_dim * math.log(original_length / (beta_fast * two_pi)) / (2 * log_base))
    last = math.ceil(head_dim * math.log(original_length / (beta_slow * two_pi)) / (2 * log_base))
    first = max(first, 0)
    last_end: float = min(last, head_dim - 1)
    if first == last_end:
        last_end += 0.001
    params = [
        _range("factor", factor, 1, 16, 0.5, "factor s "),
        _range("ell_ratio", length_ratio, 1, 16, 0.5, "dynamic NTK: length ℓ / L "),
    ]
    styles = {key: method_style(key) for key in _SCALING_RATIOS}
    methods = alt_.Data(
        values=[{"method": key, "label": style.label} for key, style in styles.items()]
    )
    ratio = " : ".join(
        f"datum.method == '{name}' ? {expression}" for name, expression in _SCALING_RATIOS.items()
    )
    labels = [style.label for style in styles.values()]
    # One legend for both channels (Vega-Lite merges them): each method's colour and dash, drawn
    # as a short stroke.
    legend = alt_.Legend(
        orient="bottom", columns=3, title=None, symbolType="stroke", symbolStrokeWidth=2
    )
    chart = (
        alt_.Chart(methods, title=f"θ′ᵢ / θᵢ per pair (head_dim {head_dim}, L = {original_length})")
        .transform_calculate(pair=f"sequence(0, {head_dim // 2})")
        .transform_flatten(["pair"])
        .transform_calculate(
            d=f"{head_dim}",
            dyn_f=repr(dynamic_f),
            turns=f"{original_length} * {_omega('datum.pair', str(head_dim), repr(base))}"
            " / (2 * PI)",
        )
        .transform_calculate(
            yarn_keep=f"1 - clamp((datum.pair - ({first})) / ({last_end - first}), 0, 1)",
            llama3_keep=f"clamp((datum.turns - {low!r}) / ({high!r} - {low!r}), 0, 1)",
        )
        .transform_calculate(ratio=ratio + " : 1")
        .mark_line(point=alt_.OverlayMarkDef(size=14))
        .encode(
            x=alt_.X("pair:Q", title="pair i (fast on the left, slow on the right)"),
            y=alt_.Y(
                "ratio:Q", axis=_y_axis(alt_, "θ′ᵢ / θᵢ", format="~g"), scale=alt_.Scale(type="log")
            ),
            color=alt_.Color(
                "label:N",
                title="method",
                scale=alt_.Scale(domain=labels, range=[s.color for s in styles.values()]),
                legend=legend,
            ),
            strokeDash=alt_.StrokeDash(
                "label:N",
                scale=alt_.Scale(
                    domain=labels, range=[list(s.dash) or [1, 0] for s in styles.values()]
                ),
                legend=legend,
            ),
        )
        .properties(width="container", height=_HEIGHT)
        .add_params(*params)
    )
    fixed = {
        "head_dim": head_dim,
        "base": base,
        "original_length": original_length,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "dynamic_factor": dynamic_f,
    }
    return _figure("scaling", chart, fixed)


CHARTS: Mapping[str, Callable[..., ExplorableFigure]] = {
    "frequency": frequency_chart,
    "wavelength": wavelength_chart,
    "dot_product": dot_product_chart,
    "rotation": rotation_chart,
    "query_key": query_key_chart,
    "alibi_bias": alibi_bias_chart,
    "scaling": scaling_chart,
}
"""Every explorable figure by name (the ``usermeta["pe_chart"]`` of its specification)."""
