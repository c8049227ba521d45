"""pe_lib: positional encodings for Transformers, small and checked.

The package is layered; each module has one concern::

    _validation       one module of argument checks, shared by everything below
    sinusoidal        functional core: frequencies and the sinusoidal table (float64 angles)
    relative          the sinusoidal table's shift matrix M_k: PE(pos + k) = M_k PE(pos)
    rope              rotary embedding: rotate queries and keys (RoPE)
    rope_scaling      RoPE frequency scalings (PI, NTK, YaRN, ...): one registry
    alibi             attention with linear biases: a distance penalty on the scores
    modules           nn.Module wrappers that add a table to embeddings (fixed, learned)
    attention         scaled dot-product attention, with a mask and a score bias
    encodings         ENCODINGS: the registry, one contract per encoding
    toy               the shifted-copy experiment: a one-layer model built from the registry
    checks            homework checkers (a package: shared core, one module per checker)
    style             one colour, dash and name per method, for every figure
    plotting          matplotlib figures for the chapters
    charts            figures that recompute in the browser (Vega-Lite, through altair)
    widgets           the ipywidgets frequency explorer (optional ipywidgets)

Two kinds of encoding appear: *absolute* ones, added to the token embeddings
(:mod:`pe_lib.sinusoidal`, :mod:`pe_lib.modules`), and ones that act *inside attention* on
relative distances (:mod:`pe_lib.rope` rotates queries and keys, :mod:`pe_lib.alibi` biases the
scores). :data:`pe_lib.encodings.ENCODINGS` lists them all with one contract. Figures
(:mod:`pe_lib.plotting`, and :mod:`pe_lib.charts` for the browser), the explorer
(:mod:`pe_lib.widgets`) and the toy experiment (:mod:`pe_lib.toy`) are submodules, imported on
demand.
"""

from . import checks, encodings
from ._version import __version__
from .alibi import alibi_bias, alibi_slopes
from .attention import SelfAttention, scaled_dot_product_attention
from .modules import LearnedPositionalEncoding, PositionalEncoding, SinusoidalPositionalEncoding
from .relative import relative_shift_matrix
from .rope import RotaryEmbedding, apply_rope, rope_angles
from .sinusoidal import angular_frequencies, sinusoidal_table, wavelengths

__all__ = [
    "LearnedPositionalEncoding",
    "PositionalEncoding",
    "RotaryEmbedding",
    "SelfAttention",
    "SinusoidalPositionalEncoding",
    "__version__",
    "alibi_bias",
    "alibi_slopes",
    "angular_frequencies",
    "apply_rope",
    "checks",
    "encodings",
    "relative_shift_matrix",
    "rope_angles",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "wavelengths",
]
