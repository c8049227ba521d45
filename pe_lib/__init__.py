"""pe_lib: positional encodings for Transformers, small and checked.

The functional core computes tables and matrices from integer positions in float64
(:mod:`pe_lib.sinusoidal`, :mod:`pe_lib.relative`); thin ``torch.nn.Module`` wrappers add them
to token embeddings (:mod:`pe_lib.modules`).
"""

from ._version import __version__
from .attention import SelfAttention, scaled_dot_product_attention
from .modules import LearnedPositionalEncoding, PositionalEncoding, SinusoidalPositionalEncoding
from .relative import relative_shift_matrix
from .sinusoidal import angular_frequencies, sinusoidal_table, wavelengths

__all__ = [
    "LearnedPositionalEncoding",
    "PositionalEncoding",
    "SelfAttention",
    "SinusoidalPositionalEncoding",
    "__version__",
    "angular_frequencies",
    "relative_shift_matrix",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "wavelengths",
]
