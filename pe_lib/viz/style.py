"""One colour, one dash and one name per method, shared by every figure of the book.

Matplotlib figures (:mod:`pe_lib.viz.plotting`, the chapters' own plots) and the browser's Vega-Lite
figures (:mod:`pe_lib.viz.charts`) both read :data:`METHOD_STYLES`, so a method looks and is called
the same wherever it appears. Keys are the names the registries use: the encodings of
:data:`pe_lib.encodings.ENCODINGS` (plus ``"none"``) and the RoPE scalings of
:data:`pe_lib.rope.scaling.ROPE_SCALINGS` (``"default"`` is plain RoPE, drawn as ``"rope"``), and ``"bigram"`` and ``"ngram"``, the
language model's baselines that need no learning.

The colours are Okabe and Ito's colour-blind-safe set, extended with Paul Tol's muted scheme
for the methods beyond its eight; dashes keep lines apart in grey print.

Every colour that draws data keeps a contrast of at least 3:1 (:data:`MIN_CONTRAST`, WCAG 2.1's
success criterion 1.4.11, non-text contrast) with what it is drawn on, in both of the page's
themes. A matplotlib figure is a PNG on a white background, which the dark theme shows dimmed
(:func:`on_dark_plate`); a Vega chart is drawn on the page itself, light or dark, and follows the
theme live: a colour too dark for the dark page has a lighter variant (:func:`theme_colour`,
:func:`dark_variants`), which ``book/_static/pe-charts.js`` puts in its place. Okabe and Ito's
orange and sky blue and Tol's teal are darkened a step on the light page, and take their own
shades on the dark one. Values drawn as lines take :func:`line_colours`, viridis without the end
that vanishes on the page: its yellow on the light page, its near-black purple on the dark one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = [
    "LINE_CYCLE",
    "METHOD_STYLES",
    "MIN_CONTRAST",
    "PAGE_BACKGROUNDS",
    "RAMP_STOPS",
    "VIRIDIS_FOR_LINES",
    "MethodStyle",
    "Theme",
    "contrast_ratio",
    "dark_variants",
    "line_colours",
    "method_style",
    "on_dark_plate",
    "theme_colour",
]

#: The page's two themes.
Theme = Literal["light", "dark"]

#: The smallest contrast ratio a colour that carries data keeps with what it is drawn on, 3 to 1
#: (WCAG 2.1, success criterion 1.4.11, Non-text Contrast, for the parts of graphics required to
#: understand the content).
MIN_CONTRAST = 3.0

#: The page's background in each theme, ``--pst-color-background`` as sphinx-book-theme sets it.
#:
#: :meta hide-value:
PAGE_BACKGROUNDS: Mapping[str, str] = MappingProxyType({"light": "#ffffff", "dark": "#121212"})


@dataclass(frozen=True)
class MethodStyle:
    """How one method is drawn and named.

    Attributes:
        label: the name a legend shows.
        color: a ``#rrggbb`` colour with at least 3:1 contrast on the light page and on the
            dark theme's plate under a figure (:func:`on_dark_plate`).
        dash: a matplotlib dash pattern (on, off, ...) in points; ``()`` is a solid line. Vega-Lite
            takes the same list as ``strokeDash``.
        dark_color: the colour on the dark page (Vega charts), when ``color`` is too dark for it;
            ``None``: ``color`` itself.
    """

    label: str
    color: str
    dash: tuple[float, ...] = ()
    dark_color: str | None = None

    def colour(self, theme: Theme = "light") -> str:
        """The colour on the page of ``theme``."""
        return self.dark_color if theme == "dark" and self.dark_color else self.color


#: Every method's style, by the name its registry uses.
#:
#: :meta hide-value:
METHOD_STYLES: Mapping[str, MethodStyle] = MappingProxyType(
    {
        # Encodings.
        "none": MethodStyle("no encoding", "#7f7f7f", (1.5, 2.0)),
        "sinusoidal": MethodStyle("sinusoidal", "#0072b2", dark_color="#3a9ad9"),
        "learned": MethodStyle("learned", "#b07800", (6.0, 2.5), dark_color="#e69f00"),
        "rope": MethodStyle("RoPE", "#009e73"),
        "alibi": MethodStyle("ALiBi", "#d55e00", (6.0, 2.5)),
        # RoPE frequency scalings ("default" is plain RoPE).
        "linear": MethodStyle("linear (PI)", "#2b8cc4", (6.0, 2.5), dark_color="#56b4e9"),
        "ntk": MethodStyle("NTK-aware", "#c2659a", (3.0, 1.5), dark_color="#cc79a7"),
        "dynamic": MethodStyle(
            "dynamic NTK", "#882255", (6.0, 2.0, 1.5, 2.0), dark_color="#e0649a"
        ),
        "yarn": MethodStyle("YaRN", "#8a8a2a", dark_color="#999933"),
        "llama3": MethodStyle("Llama 3.1", "#332288", (1.5, 1.5), dark_color="#8f80e0"),
        "longrope": MethodStyle(
            "LongRoPE", "#2f8f80", (6.0, 2.0, 1.5, 2.0, 1.5, 2.0), dark_color="#44aa99"
        ),
        "proportional": MethodStyle("proportional", "#aa4499", (4.0, 4.0), dark_color="#c061b0"),
        # The baselines that need no learning (pe_lib.experiments.lm.bigram_perplexity, ngram_perplexity).
        "bigram": MethodStyle("bigram counts", "#000000", (1.0, 2.0), dark_color="#d0d0d0"),
        "ngram": MethodStyle(
            "n-gram counts", "#6b4226", (5.0, 1.5, 1.0, 1.5), dark_color="#c8a27a"
        ),
    }
)

#: The colours lines take in turn when they stand for no method (matplotlib's colour cycle, the
#: columns of a chart), methods' colours whose neighbours differ in hue.
LINE_CYCLE: tuple[str, ...] = tuple(
    METHOD_STYLES[key].color
    for key in ("sinusoidal", "learned", "rope", "alibi", "linear", "ntk", "dynamic", "none")
)

#: The part of viridis that values drawn as lines (or points) take, per theme. The light page
#: leaves out its light end (yellow, 1.3 to 1 on white), the dark page its dark end (1.2 to 1).
#: A chart that follows the theme maps the one range onto the other.
#:
#: :meta hide-value:
VIRIDIS_FOR_LINES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {"light": (0.0, 0.55), "dark": (0.4, 1.0)}
)

_ALIASES = {"default": "rope"}


def method_style(name: str) -> MethodStyle:
    """The style of method ``name`` (an encoding or a RoPE scaling; ``"default"`` is ``"rope"``).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: no method of that name has a style; the message lists the names that do.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {name!r} of type {type(name).__name__}")
    key = _ALIASES.get(name, name)
    if key not in METHOD_STYLES:
        known = ", ".join(sorted([*METHOD_STYLES, *_ALIASES]))
        raise ValueError(f"name must be a method with a style, one of {known}; got {name!r}")
    return METHOD_STYLES[key]


_HEX = re.compile(r"#[0-9a-fA-F]{6}")


def _channels(colour: str) -> tuple[float, float, float]:
    if not isinstance(colour, str) or not _HEX.fullmatch(colour):
        raise ValueError(f"colour must be a '#rrggbb' string, got {colour!r}")
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return r, g, b


def _hex(channels: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(min(1.0, max(0.0, c)) * 255):02x}" for c in channels)


def _luminance(colour: str) -> float:
    """Relative luminance (WCAG 2.1)."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in _channels(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: str, second: str) -> float:
    """The WCAG 2.1 contrast ratio of two ``#rrggbb`` colours, from 1 (equal) to 21.

    Raises:
        ValueError: a colour is not a ``#rrggbb`` string.
    """
    high, low = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def on_dark_plate(colour: str) -> str:
    """``colour`` as the dark theme shows it inside a figure's image.

    pydata-sphinx-theme dims images in dark mode with the CSS filter
    ``brightness(0.8) contrast(1.2)``: each channel ``c`` becomes ``(0.8 c - 0.5) 1.2 + 0.5``
    (Filter Effects Module Level 1, the ``brightness()`` and ``contrast()`` functions). A figure's
    white background becomes ``on_dark_plate("#ffffff")``, the plate its lines must stand out on.
    """
    r, g, b = _channels(colour)
    return _hex(
        ((r * 0.8 - 0.5) * 1.2 + 0.5, (g * 0.8 - 0.5) * 1.2 + 0.5, (b * 0.8 - 0.5) * 1.2 + 0.5)
    )


def line_colours(count: int, theme: Theme = "light") -> list[str]:
    """``count`` colours of viridis for values drawn as lines or points, evenly spread over
    :data:`VIRIDIS_FOR_LINES` of ``theme`` (light: the figures' PNGs and the light page).

    Raises:
        ValueError: ``count`` is below 1, or ``theme`` is not ``"light"`` or ``"dark"``.
    """
    import matplotlib

    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an int >= 1, got {count!r}")
    if theme not in VIRIDIS_FOR_LINES:
        raise ValueError(f"theme must be 'light' or 'dark', got {theme!r}")
    low, high = VIRIDIS_FOR_LINES[theme]
    viridis = matplotlib.colormaps["viridis"]
    steps = [low + (high - low) * k / max(count - 1, 1) for k in range(count)]
    return [_hex(tuple(viridis(step))[:3]) for step in steps]  # type: ignore[arg-type]


#: The stops of the viridis ramp a Vega chart draws lines with (light theme), which
#: :func:`dark_variants` maps onto the dark theme's.
RAMP_STOPS = 5


def dark_variants() -> dict[str, str]:
    """Every colour of the palette that the dark page shows differently, mapped to its variant:
    the methods' colours with a ``dark_color``, and the stops of the viridis ramp
    (:func:`line_colours` of :data:`RAMP_STOPS`)."""
    variants = {
        style.color: style.dark_color
        for style in METHOD_STYLES.values()
        if style.dark_color and style.dark_color != style.color
    }
    light, dark = line_colours(RAMP_STOPS, "light"), line_colours(RAMP_STOPS, "dark")
    variants.update(zip(light, dark, strict=True))
    return variants


def theme_colour(colour: str, theme: Theme) -> str:
    """The colour that stands for ``colour`` (a colour of the palette, as the light page shows it)
    on the page of ``theme``."""
    _channels(colour)
    return dark_variants().get(colour.lower(), colour) if theme == "dark" else colour
