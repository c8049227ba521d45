"""pe_lib: positional encodings for Transformers, small and checked.

The tree is the architecture: each subpackage imports only from those listed above it (and
from the top-level helpers), never from one below::

    _validation, _precision  argument checks, and the dtype angles are formed in (every layer)
    digits                   printed digits that another CPU cannot change
    rope/                    rotary position embedding (RoPE)
        scaling              the frequencies theta_i, plain and scaled for context extension
        fast                 the rotation block by block on the CPU, and the kept frequencies
        formula              theta, angles, the rotation in both layouts: apply_rope
        module               RotaryEmbedding: queries and keys at a decoding offset, cached tables
        axial                several coordinates per token (images, video)
    encodings/               the other encodings; the package is the registry of them all
        sinusoidal           the fixed sinusoidal table (Vaswani et al., 2017)
        modules              nn.Module wrappers that add a table to token embeddings
        relative             the sinusoidal shift matrix: PE(pos + k) from PE(pos)
        relative_bias        Shaw's clipped distances and T5's buckets
        alibi                attention with linear biases (ALiBi)
    models/                  what a model does with positions
        attention            single-head scaled dot-product self-attention
        llama                a Llama-architecture decoder with pe_lib's rotation
        inference            a key-value cache, left-padded batches, packed rows
        sinks                attention sinks and a streaming cache
        grid                 positions on an image's grid, text mixed with images
        config_reader        a config.json read as transformers fills it in
        layer_pattern        which layers see positions, and how
        temperature          attention temperatures tied to length
        description          all of that for one configuration: pe_lib.describe
    experiments/             the book's training toys
        toy                  a toy task where order matters, and a one-layer Transformer
        lm                   a character-level language model on real text
        content_positions    positions that depend on the content (CoPE, FoX, PaTH)
        retrieval            a passkey at a controlled distance: retrieval beyond the training length
        far_context          what a longer context gains, and where attention goes at distance
    checks/                  homework checkers: one framework, one module per checker
    pretrained/              trained weights, fetched, cached, loaded (extra: pretrained)
        _cache               a cache folder replaced whole, never touching what it did not write
        layout               which channel pairing a checkpoint was trained with
    viz/                     figures (extra: viz)
        style                one colour, dash and name per method
        plotting             matplotlib figures of the chapters
        charts               figures that recompute in the browser
        widgets              an interactive explorer of the sinusoidal encoding

Two kinds of encoding appear: *absolute* ones, added to the token embeddings
(:mod:`pe_lib.encodings.sinusoidal`, :mod:`pe_lib.encodings.modules`), and ones that act
*inside attention* on relative distances (:mod:`pe_lib.rope` rotates queries and keys,
:mod:`pe_lib.encodings.alibi` biases the scores). :data:`pe_lib.encodings.ENCODINGS` lists
them all with one contract. ``import pe_lib`` loads the core (rope, encodings, models, checks:
torch and numpy only); ``pe_lib.experiments``, ``pe_lib.pretrained`` and ``pe_lib.viz`` are
imported when first used.
"""

import importlib as _importlib
from types import ModuleType as _ModuleType

from . import checks, encodings
from ._version import __version__
from .encodings.alibi import alibi_bias, alibi_slopes
from .encodings.modules import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    SinusoidalPositionalEncoding,
)
from .encodings.relative import relative_shift_matrix
from .encodings.relative_bias import clipped_relative_positions, t5_relative_buckets
from .encodings.sinusoidal import angular_frequencies, sinusoidal_table, wavelengths
from .models.attention import SelfAttention, scaled_dot_product_attention
from .models.config_reader import read_config
from .models.description import describe
from .models.grid import grid_positions, mrope_positions, resize_position_table
from .models.inference import (
    KVCache,
    causal_mask,
    packed_causal_mask,
    packed_positions,
    position_ids_from_mask,
    run_cached,
)
from .models.layer_pattern import LayerPositions, layer_pattern
from .models.sinks import softmax_with_sinks, streaming_cache
from .models.temperature import attention_temperature
from .rope import RotaryEmbedding, apply_rope, rope_angles, rotate
from .rope.axial import axial_angles, axial_frequencies

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

#: The subpackages that need an extra or train a model, imported on first use
#: (``pe_lib.viz.plotting``, ``pe_lib.pretrained.load_smollm2``), never by ``import pe_lib``.
_ON_DEMAND = ("experiments", "pretrained", "viz")


def __getattr__(name: str) -> _ModuleType:
    if name in _ON_DEMAND:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_DEMAND})
