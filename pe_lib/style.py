"""One colour, one dash and one name per method, shared by every figure of the book.

Matplotlib figures (:mod:`pe_lib.plotting`, the chapters' own plots) and the browser's Vega-Lite
figures (:mod:`pe_lib.charts`) both read :data:`METHOD_STYLES`, so a method looks and is called
the same wherever it appears. Keys are the names the registries use: the encodings of
:data:`pe_lib.encodings.ENCODINGS` (plus ``"none"``) and the RoPE scalings of
:data:`pe_lib.rope_scaling.ROPE_SCALINGS` (``"default"`` is plain RoPE, drawn as ``"rope"``), and ``"bigram"``, the language model's
baseline that needs no learning.

The colours are Okabe and Ito's colour-blind-safe set, extended with Paul Tol's muted scheme
for the methods beyond its eight; dashes keep lines apart in grey print.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["METHOD_STYLES", "MethodStyle", "method_style"]


@dataclass(frozen=True)
class MethodStyle:
    """How one method is drawn and named.

    Attributes:
        label: the name a legend shows.
        color: a ``#rrggbb`` colour that reads on white and on the dark theme's background.
        dash: a matplotlib dash pattern (on, off, ...) in points; ``()`` is a solid line. Vega-Lite
            takes the same list as ``strokeDash``.
    """

    label: str
    color: str
    dash: tuple[float, ...] = ()


#: Every method's style, by the name its registry uses.
#:
#: :meta hide-value:
METHOD_STYLES: Mapping[str, MethodStyle] = MappingProxyType(
    {
        # Encodings.
        "none": MethodStyle("no encoding", "#7f7f7f", (1.5, 2.0)),
        "sinusoidal": MethodStyle("sinusoidal", "#0072b2"),
        "learned": MethodStyle("learned", "#e69f00", (6.0, 2.5)),
        "rope": MethodStyle("RoPE", "#009e73"),
        "alibi": MethodStyle("ALiBi", "#d55e00", (6.0, 2.5)),
        # RoPE frequency scalings ("default" is plain RoPE).
        "linear": MethodStyle("linear (PI)", "#56b4e9", (6.0, 2.5)),
        "ntk": MethodStyle("NTK-aware", "#cc79a7", (3.0, 1.5)),
        "dynamic": MethodStyle("dynamic NTK", "#882255", (6.0, 2.0, 1.5, 2.0)),
        "yarn": MethodStyle("YaRN", "#999933"),
        "llama3": MethodStyle("Llama 3.1", "#332288", (1.5, 1.5)),
        "longrope": MethodStyle("LongRoPE", "#44aa99", (6.0, 2.0, 1.5, 2.0, 1.5, 2.0)),
        "proportional": MethodStyle("proportional", "#aa4499", (4.0, 4.0)),
        # The baseline that needs no learning (pe_lib.lm.bigram_perplexity).
        "bigram": MethodStyle("bigram counts", "#000000", (1.0, 2.0)),
    }
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
