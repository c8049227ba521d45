"""pe_lib: positional encodings for Transformers, small and checked.

The functional core computes tables and matrices from integer positions in float64
(:mod:`pe_lib.sinusoidal`, :mod:`pe_lib.relative`); thin ``torch.nn.Module`` wrappers add them
to token embeddings (:mod:`pe_lib.modules`). :mod:`pe_lib.rope` and :mod:`pe_lib.alibi` hold the
relative schemes of later models; :mod:`pe_lib.checks` diagnoses common mistakes in homework.
Figures (:mod:`pe_lib.plotting`), the ipywidgets explorer (:mod:`pe_lib.widgets`) and the toy
experiment (:mod:`pe_lib.toy`) are submodules, imported on demand.
"""

from . import checks
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
    "relative_shift_matrix",
    "rope_angles",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "wavelengths",
]
