"""pe_lib: positional encodings for Transformers, small and checked.

The package is layered; each module has one concern (this map is read from the modules'
own docstrings, each after the modules it imports)::

{package_map}

Two kinds of encoding appear: *absolute* ones, added to the token embeddings
(:mod:`pe_lib.sinusoidal`, :mod:`pe_lib.modules`), and ones that act *inside attention* on
relative distances (:mod:`pe_lib.rope` rotates queries and keys, :mod:`pe_lib.alibi` biases the
scores). :data:`pe_lib.encodings.ENCODINGS` lists them all with one contract. Figures
(:mod:`pe_lib.plotting`, and :mod:`pe_lib.charts` for the browser), the explorer
(:mod:`pe_lib.widgets`) and the toy experiment (:mod:`pe_lib.toy`) are submodules, imported on
demand.
"""

import sys as _sys
import types as _types

from . import checks, encodings
from ._version import __version__
from .alibi import alibi_bias, alibi_slopes
from .attention import SelfAttention, scaled_dot_product_attention
from .axial import axial_angles, axial_frequencies
from .config_reader import read_config
from .description import describe
from .grid import grid_positions, mrope_positions, resize_position_table
from .inference import (
    KVCache,
    causal_mask,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)
from .layer_pattern import LayerPositions, layer_pattern
from .modules import LearnedPositionalEncoding, PositionalEncoding, SinusoidalPositionalEncoding
from .relative import relative_shift_matrix
from .relative_bias import clipped_relative_positions, t5_relative_buckets
from .rope import RotaryEmbedding, apply_rope, rope_angles, rotate
from .sinks import softmax_with_sinks, streaming_cache
from .sinusoidal import angular_frequencies, sinusoidal_table, wavelengths
from .temperature import attention_temperature

__all__ = [
    "KVCache",
    "LayerPositions",
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
    "attention_temperature",
    "axial_angles",
    "axial_frequencies",
    "causal_mask",
    "checks",
    "clipped_relative_positions",
    "describe",
    "encodings",
    "grid_positions",
    "layer_pattern",
    "mrope_positions",
    "packed_causal_mask",
    "packed_positions",
    "position_ids_from_mask",
    "read_config",
    "relative_shift_matrix",
    "resize_position_table",
    "rope_angles",
    "rotate",
    "run_cached",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "softmax_with_sinks",
    "streaming_cache",
    "t5_relative_buckets",
    "wavelengths",
]

_TEMPLATE = __doc__ or ""


class _Package(_types.ModuleType):
    """The type of the ``pe_lib`` module: its docstring's package map is read from the modules'
    sources when the docstring is first asked for (``help(pe_lib)``, ``pe_lib.__doc__``), so
    that ``import pe_lib`` opens no source file."""

    @property
    def __doc__(self) -> str:  # type: ignore[override]  # read-only: built from the sources
        from ._package_map import package_map  # reads the sources once, then keeps the map

        return _TEMPLATE.replace("{package_map}", package_map())


_sys.modules[__name__].__class__ = _Package
