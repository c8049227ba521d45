r"""``check_rope_tables`` and ``check_rope_rotate``: an engine's rotary tables, held against the config.

An inference engine computes its own cos and sin tables from a model's ``config.json``. The bugs
reported in engines are rarely in the formula; they are in reading the config: a scaling put on
layers it does not belong to (Gemma 3's linear x8 on its sliding-window layers), a per-layer base
ignored, gpt-oss's ``truncate: false`` dropped, the factor applied twice, the training length
taken from ``max_position_embeddings``, a layout swapped in a conversion, a partial rotation
done over the wrong channels, the attention factor left out or applied twice, ``inv_freq`` cast
to half precision by ``model.to(torch.bfloat16)``.

Reference. The tables of one layer as transformers 5.23 computes them: the config read as its
configuration class fills it in (:func:`pe_lib.models.config_reader.read_config`), the layer's rotary
entry and layout (:func:`pe_lib.models.layer_pattern.layer_pattern`, what :func:`pe_lib.models.description.describe`
prints) and its frequencies and attention factor (:meth:`pe_lib.rope.scaling.ScalingConfig.frequencies`,
tested against transformers' ``ROPE_INIT_FUNCTIONS``), at the positions the engine was asked
for: :math:`\cos(m\theta_i)` and :math:`\sin(m\theta_i)` of pair ``i`` at position ``m``,
multiplied by the attention factor ``a`` where the engine folds it into its tables.

Shapes. ``cos`` and ``sin``: ``(..., positions, columns)``. The columns are one per rotated pair
(vLLM's cache, gpt-oss's and Llama 4's tables) or two per pair, laid out as the model pairs its
channels: ``"half"``, pair ``i`` in columns ``i`` and ``i + P`` (transformers' ``torch.cat((freqs,
freqs))``), or ``"interleaved"``, pair ``i`` in columns ``2i`` and ``2i + 1``
(``repeat_interleave``). ``P`` is the number of pairs the layer's method computes:
``int(head_dim * partial_rotary_factor) // 2``, or ``head_dim // 2`` for Gemma 4's proportional
rotation, whose unrotated pairs have :math:`\theta_i = 0` (cos 1, sin 0).

Tolerance. An entry may differ from the reference by
:math:`a\,(4\,\varepsilon_v + u\,\varepsilon_a\,|m\theta_i|)`: :math:`\varepsilon_v` the
machine epsilon of the tables' dtype, :math:`\varepsilon_a` that of the precision the angles are
formed in (float32, as transformers and vLLM form them, unless ``angle_dtype`` says otherwise),
:math:`u = \ln \mathrm{base} + 8` rounding steps (the power, a scaling's division or blend, the
product). No cap: at far positions the fastest pairs of a float32 engine are no better known than
that, and the slow pairs, where configs go wrong, stay tightly checked.

Diagnosis. Tables that are not within the tolerance are compared with what each mistake would
give, rebuilt from the same config (``check_rope_tables.mistakes``, in order); a mistake is named
only when the tables fit its rebuild within the same tolerance. Otherwise the message gives the
position and column furthest from the reference.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._validation import (
    check_bool,
    check_callable,
    check_floating_dtype,
    check_layout,
    check_nonnegative_int,
    check_positions,
)
from ..models.config_reader import ModelConfig, read_config
from ..models.layer_pattern import layer_pattern
from ..rope.scaling import ScalingConfig, resolve_scaling
from ._core import (
    EPS32,
    EPS64,
    EXCEPTION,
    IN_PLACE,
    WRONG_TYPE,
    Catalogue,
    CheckFailed,
    Diagnosis,
    NotAnArray,
    angle_ulps,
    as_float64,
    call_student,
    diagnose,
    dtype_name,
    fmt_base,
    kind_of,
    text,
)

__all__ = ["check_rope_rotate", "check_rope_tables"]

#: The mistakes :func:`check_rope_tables` recognises, in the order it looks for them.
MISTAKES = Catalogue("check_rope_tables")

_SHAPES_DIFFER = MISTAKES.declare(
    "shape",
    "cos has shape {cos_shape} and sin has shape {sin_shape}: the two tables must have the same "
    "shape.",
    "compute both from the same angles: cos = angles.cos(), sin = angles.sin().",
)
_RANK = MISTAKES.declare(
    "shape",
    "the tables have shape {shape}: they need an axis of positions and an axis of columns, "
    "(..., positions, columns).",
    "pass the tables the engine computed for one layer, shaped (positions, columns) or (batch, "
    "positions, columns).",
)
_WIDTH = MISTAKES.declare(
    "shape",
    "the tables have {width} columns; layer {layer} rotates {rotated} of its {head} channels, so "
    "a table holds {pairs} columns (one per pair) or {twice} (each pair's angle twice).",
    "form one angle per rotated pair ({pairs} frequencies) and lay them out once or twice, as "
    "the model pairs its channels ({layout}).",
)
_NOT_FINITE = MISTAKES.declare(
    "not_finite",
    "the tables hold NaN or infinite values, the first at position {position}, column {column}.",
    "look for an overflow (positions or base ** (2i / d) in float16, whose largest value is "
    "65504) or a division by zero; form the angles in float32.",
)
_LAYOUT = MISTAKES.declare(
    "layout",
    "the tables are laid out for the {found!r} layout ({found_how}), but layer {layer} pairs its "
    "channels in the {layout!r} layout ({layout_how}): most channels are turned by another "
    "pair's angle.",
    "lay cos and sin out as the model pairs its channels; pass layout= to the checker if the "
    "engine reorders the channels of its weights first.",
)
_SIGN = MISTAKES.declare(
    "sign",
    "sin has the wrong sign: the tables turn every pair by -m * theta_i.",
    "sin = sin(m * theta_i), with rotate_half(x) = torch.cat((-x2, x1), dim=-1): y = x cos + "
    "rotate_half(x) sin.",
)
_PARTIAL_ALL = MISTAKES.declare(
    "partial",
    "the tables turn all {all} pairs of the {head} channels; layer {layer} turns only its first "
    "{pairs} pairs (partial_rotary_factor {share}) and leaves the other channels as they are.",
    "rotate int(head_dim * partial_rotary_factor) = {rotated} channels, with theta_i = base ** "
    "(-2i / {rotated}), and pass the others through.",
)
_PARTIAL_EXPONENT = MISTAKES.declare(
    "partial",
    "the tables turn the right {pairs} pairs, but at the whole head's frequencies, base ** (-2i "
    "/ {head}), not at those of a head of {rotated} channels, base ** (-2i / {rotated}).",
    "form the exponent over the rotated size: theta_i = base ** (-2i / {rotated}).",
)
_PROPORTIONAL_AS_PARTIAL = MISTAKES.declare(
    "partial",
    "the tables turn {pairs} pairs as a head of {rotated} channels would, at base ** (-2i / "
    "{rotated}); the {rope_type!r} rotation of layer {layer} turns its first {pairs} pairs at the "
    "whole head's frequencies, base ** (-2i / {head}), and leaves the other {still} pairs still.",
    "compute theta_i = base ** (-2i / head_dim) / factor for the first {pairs} pairs and 0 for "
    "the others, as transformers' _compute_proportional_rope_parameters does.",
)
_PROPORTIONAL_ALL = MISTAKES.declare(
    "partial",
    "the tables turn all {all} pairs; the {rope_type!r} rotation of layer {layer} turns only its "
    "first {pairs} (partial_rotary_factor {share}) and leaves the other {still} still.",
    "compute theta_i = base ** (-2i / head_dim) / factor for the first {pairs} pairs and 0 for "
    "the others, as transformers' _compute_proportional_rope_parameters does.",
)
_LAYER_TYPE = MISTAKES.declare(
    "layer_type",
    "the tables are those of the {other} layers' entry ({other_entry}), not those of layer "
    "{layer}'s own ({entry}): each layer type has its own rotary entry.",
    "compute layer {layer}'s tables from its own entry alone: {key}.",
)
_SCALING_LAYERS = MISTAKES.declare(
    "scaling_layers",
    "the tables put the {method!r} scaling of the {other} layers ({other_entry}) on layer "
    "{layer}, whose own entry is {entry}: that scaling belongs to the {other} layers only.",
    "give each layer type its own entry: layer {layer} takes {key}.",
)
_BASE = MISTAKES.declare(
    "base",
    "the tables use base {found}{whose}, not layer {layer}'s base {base}.",
    "take the base from layer {layer}'s own entry: {key}.",
)
_SCALING_DROPPED = MISTAKES.declare(
    "scaling_dropped",
    "the tables are plain RoPE at base {base}: the {rope_type!r} scaling of layer {layer}'s entry "
    "({entry}) is not applied.",
    "read rope_scaling (transformers 5: rope_parameters) and form the frequencies with it, e.g. "
    "pe_lib.rope.scaling.rope_frequencies(head_dim, scaling=entry).",
)
_FIX_FACTOR = (
    "apply the factor once: take theta'_i and the attention factor from the entry as it is, "
    "e.g. pe_lib.rope.scaling.rope_frequencies(head_dim, scaling=entry)."
)
_FACTOR_SQUARED = MISTAKES.declare(
    "factor_twice",
    "the tables are the {rope_type!r} scaling with factor {squared} = {factor}**2: the factor is "
    "applied twice.",
    _FIX_FACTOR,
)
_FACTOR_AGAIN = MISTAKES.declare(
    "factor_twice",
    "the tables are the {rope_type!r} frequencies divided by the factor {factor} once more: the "
    "factor is applied twice (positions divided by it, and the frequencies scaled too).",
    _FIX_FACTOR,
)
_TRUNCATE_IGNORED = MISTAKES.declare(
    "truncate",
    "the tables are YaRN with the ends of the ramp rounded to whole pairs ({low} and {high}), as "
    "truncate true gives; layer {layer}'s entry says truncate false, which keeps them at {low_kept} "
    "and {high_kept}.",
    "read truncate from the entry: with truncate false, do not floor and ceil the correction "
    "range (gpt-oss's entry).",
)
_TRUNCATE_DROPPED = MISTAKES.declare(
    "truncate",
    "the tables are YaRN with the ends of the ramp kept at {low_kept} and {high_kept}, as truncate "
    "false gives; layer {layer}'s entry truncates (the default), which rounds them to {low} and "
    "{high}.",
    "floor the low end and ceil the high end of the correction range unless the entry says "
    "truncate false.",
)
_ORIGINAL_LENGTH = MISTAKES.declare(
    "original_length",
    "the tables are the {rope_type!r} scaling over a training length of {found}, "
    "max_position_embeddings, not {original}, the entry's original_max_position_embeddings.",
    "read the training length from original_max_position_embeddings ({original}); "
    "max_position_embeddings ({found}) is the length the model is meant to run at.",
)
_FACTOR_MISSING = MISTAKES.declare(
    "attention_factor",
    "the angles are right, but cos and sin are not multiplied by the attention factor {factor} "
    "of the {rope_type!r} scaling.",
    "multiply cos and sin by {factor}, the second value rope_frequencies returns; or pass "
    "attention_factor=False if the engine applies it to the logits instead.",
)
_FACTOR_SQUARED_ON_TABLES = MISTAKES.declare(
    "attention_factor",
    "cos and sin are multiplied by {squared} = {factor}**2: the attention factor of the "
    "{rope_type!r} scaling is applied twice.",
    "multiply cos and sin by the attention factor {factor} once.",
)
_FACTOR_FOLDED = MISTAKES.declare(
    "attention_factor",
    "cos and sin carry the attention factor {factor} of the {rope_type!r} scaling, but "
    "attention_factor=False says the engine applies it elsewhere: it would act twice.",
    "apply the factor in one place, the tables or the logits; pass attention_factor=True if the "
    "tables are meant to carry it.",
)
_PRECISION = MISTAKES.declare(
    "precision",
    "the tables are those of inverse frequencies rounded to {dtype} before the angles were formed: "
    "at position {position}, pair {pair} is off by {error} where {angle_dtype} frequencies are off "
    "by at most {allowed}.",
    "keep inv_freq in float32 (model.to(torch.bfloat16) casts a buffer: compute it again, or keep "
    "it out of the cast) and cast only cos and sin to the model's dtype.",
)
_WRONG_VALUES = MISTAKES.declare(
    "wrong_values",
    "at position {position}, column {column} (pair {pair}), {which} is {found} where layer "
    "{layer}'s reference gives {wanted} (allowed error {allowed}); no mistake the checker knows "
    "gives these tables.",
    "compare the engine's frequencies with pe_lib.describe(config) and "
    "pe_lib.rope.scaling.rope_frequencies(head_dim, scaling=entry) for this layer, pair by pair.",
)

#: The mistakes :func:`check_rope_rotate` recognises: its call's own, then those of the tables.
ROTATE_MISTAKES = Catalogue("check_rope_rotate")
ROTATE_MISTAKES.uses(EXCEPTION, IN_PLACE, WRONG_TYPE)
_ROTATE_SHAPE = ROTATE_MISTAKES.declare(
    "shape",
    "{call} returned shape {shape} for an input of shape {x_shape}.",
    "return a tensor of the input's shape: the rotation acts on the last dimension (head_dim).",
)
_PAIRING = ROTATE_MISTAKES.declare(
    "pairing",
    "{call} moves channel {source} into channel {target} (by {weight}) at position {position}: "
    "neither layout pairs those two channels, so this is not a rotation of pairs.",
    "rotate pair i of channels (i, i + d/2) in the half layout or (2i, 2i + 1) in the "
    "interleaved one, and leave every other channel as it is.",
)
ROTATE_MISTAKES.uses(*(m for m in MISTAKES if m.code != "shape"))

_CONTRACT = text(
    "The checker calls rotate(x, positions) with x of shape (batch, heads, seq_len, head_dim) and "
    "positions an int64 tensor of shape (seq_len,), and wants the rotated x back, of the same "
    "shape and dtype."
)
_CONTEXT = text("For layer {layer} of {model} ({kind}), tables at positions {span}: ")
_CALL_CONTEXT = text("For layer {layer} of {model} ({kind}), at positions {span}: ")
_WHOSE = text(" (the base of the {other} layers)")
_DEFAULT_WHOSE = text(" (RoFormer's default)")
_TENSOR = text("a torch tensor")
_FIX_TYPE = text("return the rotated tensor, of the shape and dtype of x.")
_LAID_OUT = {
    "half": text("pair i in columns i and i + P"),
    "interleaved": text("pair i in columns 2i and 2i + 1"),
}

#: Bases tried after the config's own: RoFormer's default, then common models' rope_theta.
_COMMON_BASES = (10_000.0, 500_000.0, 1_000_000.0, 100_000.0, 50_000.0, 5_000_000.0)
#: Rounding steps in a scaled frequency beyond those of the power (a division, a blend).
_SCALING_ULPS = 4.0
#: Rounding steps in a table entry (the angle's cosine, the attention factor, the cast).
_VALUE_ULPS = 4.0
#: Positions :func:`check_rope_rotate` probes by default (those below max_position_embeddings).
_PROBES = (0, 1, 2, 3, 4, 5, 6, 7, 100, 1000, 4096, 10_000, 30_000, 100_000)


# --- the layer's reference --------------------------------------------------------------------


@dataclass(frozen=True)
class _Reference:
    """What the config says of one layer's tables."""

    read: ModelConfig
    layer: int
    label: str  # the layer's type ("sliding_attention") or kind ("full")
    entry: Mapping[str, Any]
    scaling: ScalingConfig
    head: int
    layout: str
    maximum: int | None
    seq_len: int
    theta: torch.Tensor  # (P,) float64
    method_factor: float  # the attention factor of the method
    folded: bool  # whether the tables carry it
    others: tuple[tuple[str, Mapping[str, Any]], ...]  # other layer types' entries

    @property
    def factor(self) -> float:
        return self.method_factor if self.folded else 1.0

    @property
    def rotated(self) -> int:
        return (
            2 * int((self.theta > 0).sum())
            if self.scaling.entry.full_width
            else 2 * len(self.theta)
        )

    @property
    def key(self) -> str:
        return f"rope_parameters{_where(self.read, self.label)} = {_entry_text(self.scaling)}"

    def frequencies(
        self, scaling: ScalingConfig, head: int | None = None
    ) -> tuple[torch.Tensor, float]:
        return scaling.frequencies(self.head if head is None else head, self.seq_len)

    def resolve(self, entry: Mapping[str, Any]) -> ScalingConfig:
        return resolve_scaling(entry, max_position_embeddings=self.maximum)


def _where(read: ModelConfig, label: str) -> str:
    rope = read.values.get("rope_parameters") or {}
    return f"[{label!r}]" if isinstance(rope, Mapping) and label in rope else ""


def _entry_text(scaling: ScalingConfig) -> str:
    """``rope_theta 1000000, linear x8`` (for messages)."""
    words = f"rope_theta {fmt_base(scaling.base)}, {scaling.rope_type}"
    factor = scaling.params.get("factor")
    if scaling.rope_type != "default" and isinstance(factor, (int, float)):
        words += f" x{factor:g}"
    share = scaling.params.get("partial_rotary_factor")
    if share is not None and share != 1.0:
        words += f", partial_rotary_factor {share:g}"
    return words


def _load(config: object) -> Mapping[str, Any]:
    from ..models.description import load_config

    return load_config(config)  # type: ignore[arg-type]


def _layer_label(read: ModelConfig, index: int, kind: str) -> str:
    types = read.values.get("layer_types")
    if isinstance(types, Sequence) and not isinstance(types, str) and index < len(types):
        return str(types[index])
    return kind


def _reference(
    config: object,
    layer: object,
    positions: torch.Tensor,
    layout: object,
    attention_factor: object,
    seq_len: object,
    use_transformers: object,
) -> _Reference:
    if use_transformers is not None:
        check_bool("use_transformers", use_transformers)
    folded = check_bool("attention_factor", attention_factor)
    read = (
        config
        if isinstance(config, ModelConfig)
        else read_config(
            _load(config),
            use_transformers=use_transformers,  # type: ignore[arg-type]
        )
    )
    pattern = layer_pattern(read)
    index = check_nonnegative_int("layer", layer)
    if index >= len(pattern):
        raise ValueError(
            f"layer must be the index of one of the config's {len(pattern)} layers "
            f"(0 .. {len(pattern) - 1}), got {index}"
        )
    own = pattern[index]
    if own.rope is None:
        raise ValueError(
            f"layer {index} of this {read.model_type} config applies no rotation (attention "
            f"{own.attention!r}, no rotary entry): it has no tables to check; choose a layer that "
            f"rotates ({', '.join(str(i) for i, p in enumerate(pattern) if p.rope is not None)[:60]})"
        )
    if layout is not None:
        layout = check_layout("layout", layout)
    maximum = read.values.get("max_position_embeddings")
    length = int(positions.max()) + 1
    if seq_len is not None:
        length = check_nonnegative_int("seq_len", seq_len)
        if length < 1:
            raise ValueError(f"seq_len must be a positive int (the current length), got {length}")
    scaling = resolve_scaling(own.rope, max_position_embeddings=maximum)
    head = read.head_size(index)
    theta, factor = scaling.frequencies(head, length)
    label = _layer_label(read, index, own.attention)
    others: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for i, other in enumerate(pattern):
        if other.rope is None or other.rope == own.rope:
            continue
        key = repr(sorted(other.rope.items(), key=str))
        others.setdefault(key, (_layer_label(read, i, other.attention), other.rope))
    return _Reference(
        read=read,
        layer=index,
        label=label,
        entry=own.rope,
        scaling=scaling,
        head=head,
        layout=str(layout or own.layout),
        maximum=None if maximum is None else int(maximum),
        seq_len=length,
        theta=theta,
        method_factor=float(factor),
        folded=folded,
        others=tuple(others.values()),
    )


# --- the evidence -----------------------------------------------------------------------------


@dataclass
class _Tables:
    """The engine's tables in float64, ``(B, n, k)``, with their positions and tolerance."""

    ref: _Reference
    cos: torch.Tensor
    sin: torch.Tensor
    positions: torch.Tensor  # (B, n) float64
    value_eps: float
    angle_eps: float
    layout: str | None  # None: per pair (the layout is not seen)

    @property
    def width(self) -> int:
        return int(self.cos.shape[-1])

    def ulps(self, base: float) -> float:
        return angle_ulps(base) + _SCALING_ULPS

    def model(
        self, theta: torch.Tensor, factor: float, layout: str | None, sign: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """``(cos, sin, angles)`` expanded to the tables' columns, or ``None`` where ``theta``'s
        pairs cannot fill them."""
        pairs = len(theta)
        angles = self.positions[..., None] * theta  # (B, n, P)
        if self.width == pairs:
            expanded = angles
        elif self.width == 2 * pairs and layout is not None:
            expanded = (
                torch.cat((angles, angles), dim=-1)
                if layout == "half"
                else angles.repeat_interleave(2, dim=-1)
            )
        else:
            return None
        return factor * torch.cos(expanded), sign * factor * torch.sin(expanded), expanded

    def excess(
        self,
        theta: torch.Tensor,
        factor: float,
        *,
        layout: str | None = None,
        sign: float = 1.0,
        base: float | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """Per entry: ``(|cos error|, |sin error|, bound, angles)``, or ``None`` (no fit)."""
        built = self.model(theta, factor, self.layout if layout is None else layout, sign)
        if built is None:
            return None
        cos, sin, angles = built
        ulps = self.ulps(self.ref.scaling.base if base is None else base)
        scale = max(abs(factor), 1.0)
        bound = scale * (_VALUE_ULPS * self.value_eps + ulps * self.angle_eps * angles.abs())
        bound = bound + _VALUE_ULPS * EPS64
        return (self.cos - cos).abs(), (self.sin - sin).abs(), bound, angles

    def fits(
        self,
        theta: torch.Tensor,
        factor: float,
        *,
        layout: str | None = None,
        sign: float = 1.0,
        base: float | None = None,
    ) -> bool:
        found = self.excess(theta, factor, layout=layout, sign=sign, base=base)
        if found is None:
            return False
        cos_error, sin_error, bound, _ = found
        return bool((cos_error <= bound).all() and (sin_error <= bound).all())


def _when(condition: bool, fields: dict[str, object] | None = None) -> dict[str, object] | None:
    return (fields or {}) if condition else None


def _other(layout: str) -> str:
    return "interleaved" if layout == "half" else "half"


# --- the diagnoses ----------------------------------------------------------------------------


def _layout_swapped(t: _Tables) -> dict[str, object] | None:
    if t.layout is None or len(t.ref.theta) < 2:
        return None
    found = _other(t.layout)
    if not t.fits(t.ref.theta, t.ref.factor, layout=found):
        return None
    return {
        "found": found,
        "found_how": _LAID_OUT[found],
        "layer": t.ref.layer,
        "layout": t.layout,
        "layout_how": _LAID_OUT[t.layout],
    }


def _sign(t: _Tables) -> dict[str, object] | None:
    return _when(t.fits(t.ref.theta, t.ref.factor, sign=-1.0))


def _share(ref: _Reference) -> float:
    return float(ref.scaling.params.get("partial_rotary_factor", 1.0))


def _partial_all(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if _share(ref) == 1.0 or ref.scaling.entry.full_width:
        return None
    whole = dataclasses.replace(
        ref.scaling, params={**ref.scaling.params, "partial_rotary_factor": 1.0}
    )
    theta, factor = ref.frequencies(whole)
    if not t.fits(theta, factor if ref.folded else 1.0):
        return None
    return {
        "all": len(theta),
        "head": ref.head,
        "layer": ref.layer,
        "pairs": len(ref.theta),
        "share": f"{_share(ref):g}",
        "rotated": ref.rotated,
    }


def _partial_exponent(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if _share(ref) == 1.0 or ref.scaling.entry.full_width:
        return None
    whole = dataclasses.replace(
        ref.scaling, params={**ref.scaling.params, "partial_rotary_factor": 1.0}
    )
    theta, factor = ref.frequencies(whole)
    if not t.fits(theta[: len(ref.theta)], factor if ref.folded else 1.0):
        return None
    return {"pairs": len(ref.theta), "head": ref.head, "rotated": ref.rotated}


def _proportional_fields(ref: _Reference) -> dict[str, object]:
    pairs = int((ref.theta > 0).sum())
    return {
        "pairs": pairs,
        "rotated": 2 * pairs,
        "rope_type": ref.scaling.rope_type,
        "layer": ref.layer,
        "head": ref.head,
        "still": len(ref.theta) - pairs,
        "share": f"{_share(ref):g}",
        "all": len(ref.theta),
    }


def _proportional_as_partial(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if not ref.scaling.entry.full_width or _share(ref) == 1.0:
        return None
    fields = _proportional_fields(ref)
    pairs = int(fields["pairs"])  # type: ignore[call-overload]
    own = torch.arange(pairs, dtype=torch.float64)
    theta = ref.scaling.base ** (-2.0 * own / (2 * pairs)) / float(
        ref.scaling.params.get("factor") or 1.0
    )
    padded = torch.cat((theta, torch.zeros(len(ref.theta) - pairs, dtype=torch.float64)))
    for candidate in (theta, padded):
        if t.fits(candidate, ref.factor):
            return fields
    return None


def _proportional_all(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if not ref.scaling.entry.full_width or _share(ref) == 1.0:
        return None
    whole = dataclasses.replace(
        ref.scaling, params={**ref.scaling.params, "partial_rotary_factor": 1.0}
    )
    theta, _ = ref.frequencies(whole)
    return _when(t.fits(theta, ref.factor), _proportional_fields(ref))


def _with(
    ref: _Reference, entry: Mapping[str, Any]
) -> tuple[ScalingConfig, torch.Tensor, float] | None:
    """An entry's scaling and frequencies for this layer's head, or ``None`` where it cannot
    be read."""
    try:
        scaling = ref.resolve(entry)
        theta, factor = ref.frequencies(scaling)
    except (TypeError, ValueError):
        return None
    return scaling, theta, factor if ref.folded else 1.0


def _layer_type(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    for label, entry in ref.others:
        built = _with(ref, entry)
        if built is None:
            continue
        scaling, theta, factor = built
        if t.fits(theta, factor, base=scaling.base):
            return {
                "other": label,
                "other_entry": _entry_text(scaling),
                "layer": ref.layer,
                "entry": _entry_text(ref.scaling),
                "key": ref.key,
            }
    return None


def _method_keys(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("rope_theta", "partial_rotary_factor")}


def _scaling_layers(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    for label, entry in ref.others:
        method = entry.get("rope_type", entry.get("type", "default"))
        if method in ("default", ref.scaling.rope_type):
            continue
        moved = {**_method_keys(entry), "rope_theta": ref.scaling.base}
        share = ref.entry.get("partial_rotary_factor")
        if share is not None:
            moved["partial_rotary_factor"] = share
        built = _with(ref, moved)
        if built is None:
            continue
        _, theta, factor = built
        if t.fits(theta, factor):
            return {
                "method": method,
                "other": label,
                "other_entry": _entry_text(ref.resolve(entry)),
                "layer": ref.layer,
                "entry": _entry_text(ref.scaling),
                "key": ref.key,
            }
    return None


def _base(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    tried: list[tuple[float, str]] = []
    for label, entry in ref.others:
        base = entry.get("rope_theta")
        if isinstance(base, (int, float)):
            tried.append((float(base), _WHOSE.render(other=label)))
    tried += [(b, str(_DEFAULT_WHOSE) if b == 10_000.0 else "") for b in _COMMON_BASES]
    seen = {ref.scaling.base}
    for base, whose in tried:
        if base in seen:
            continue
        seen.add(base)
        built = _with(ref, {**ref.entry, "rope_theta": base})
        if built is None:
            continue
        _, theta, factor = built
        if t.fits(theta, factor, base=base):
            return {
                "found": fmt_base(base),
                "whose": whose,
                "layer": ref.layer,
                "base": fmt_base(ref.scaling.base),
                "key": ref.key,
            }
    return None


def _scaling_dropped(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if ref.scaling.rope_type == "default":
        return None
    plain: dict[str, Any] = {"rope_type": "default", "rope_theta": ref.scaling.base}
    share = ref.entry.get("partial_rotary_factor")
    if share is not None and not ref.scaling.entry.full_width:
        plain["partial_rotary_factor"] = share
    built = _with(ref, plain)
    if built is None or not t.fits(built[1], 1.0):
        return None
    return {
        "base": fmt_base(ref.scaling.base),
        "rope_type": ref.scaling.rope_type,
        "layer": ref.layer,
        "entry": _entry_text(ref.scaling),
    }


def _factor(ref: _Reference) -> float | None:
    factor = ref.scaling.params.get("factor")
    if ref.scaling.rope_type == "default" or not isinstance(factor, (int, float)) or factor <= 1:
        return None
    return float(factor)


def _factor_squared(t: _Tables) -> dict[str, object] | None:
    ref, factor = t.ref, _factor(t.ref)
    if factor is None:
        return None
    squared = dataclasses.replace(ref.scaling, params={**ref.scaling.params, "factor": factor**2})
    try:
        theta, attention = ref.frequencies(squared)
    except (TypeError, ValueError):
        return None
    if not (t.fits(theta, attention if ref.folded else 1.0) or t.fits(theta, ref.factor)):
        return None
    return {
        "rope_type": ref.scaling.rope_type,
        "squared": f"{factor**2:g}",
        "factor": f"{factor:g}",
    }


def _factor_again(t: _Tables) -> dict[str, object] | None:
    ref, factor = t.ref, _factor(t.ref)
    if factor is None:
        return None
    return _when(
        t.fits(ref.theta / factor, ref.factor),
        {"rope_type": ref.scaling.rope_type, "factor": f"{factor:g}"},
    )


def _ramp(ref: _Reference, truncate: bool) -> tuple[str, str]:
    """The ends of YaRN's correction range, rounded as ``truncate`` says (for messages)."""
    from ..rope.scaling import yarn_pair_index

    params = ref.scaling.params
    dim = ref.scaling.rotary_dim(ref.head)
    original = params["original_max_position_embeddings"]
    low = yarn_pair_index(params["beta_fast"], dim, ref.scaling.base, original)
    high = yarn_pair_index(params["beta_slow"], dim, ref.scaling.base, original)
    if truncate:
        return f"{math.floor(low)}", f"{math.ceil(high)}"
    return f"{low:.2f}", f"{high:.2f}"


def _truncate(flipped_to: bool) -> Callable[[_Tables], dict[str, object] | None]:
    def explains(t: _Tables) -> dict[str, object] | None:
        ref = t.ref
        if ref.scaling.rope_type != "yarn" or bool(ref.scaling.params["truncate"]) == flipped_to:
            return None
        other = dataclasses.replace(
            ref.scaling, params={**ref.scaling.params, "truncate": flipped_to}
        )
        theta, attention = ref.frequencies(other)
        if not t.fits(theta, attention if ref.folded else 1.0):
            return None
        low, high = _ramp(ref, True)
        low_kept, high_kept = _ramp(ref, False)
        return {
            "low": low,
            "high": high,
            "low_kept": low_kept,
            "high_kept": high_kept,
            "layer": ref.layer,
        }

    return explains


def _original_length(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    original = ref.scaling.original_length
    if (
        ref.scaling.rope_type not in ("llama3", "yarn", "longrope")
        or ref.maximum is None
        or original is None
        or original == ref.maximum
    ):
        return None
    swapped = {**ref.entry, "original_max_position_embeddings": ref.maximum}
    built = _with(ref, swapped)
    if built is None or not t.fits(built[1], built[2]):
        return None
    return {
        "rope_type": ref.scaling.rope_type,
        "found": f"{ref.maximum:,}",
        "original": f"{original:,}",
    }


def _attention_fields(ref: _Reference) -> dict[str, object]:
    return {"factor": f"{ref.method_factor:.6g}", "rope_type": ref.scaling.rope_type}


def _factor_missing(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if not ref.folded or ref.method_factor == 1.0:
        return None
    return _when(t.fits(ref.theta, 1.0), _attention_fields(ref))


def _factor_squared_on_tables(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if not ref.folded or ref.method_factor == 1.0:
        return None
    squared = ref.method_factor**2
    return _when(
        t.fits(ref.theta, squared), {**_attention_fields(ref), "squared": f"{squared:.6g}"}
    )


def _factor_folded(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    if ref.folded or ref.method_factor == 1.0:
        return None
    return _when(t.fits(ref.theta, ref.method_factor), _attention_fields(ref))


def _precision(t: _Tables) -> dict[str, object] | None:
    ref = t.ref
    for dtype in (torch.bfloat16, torch.float16):
        rounded = ref.theta.float().to(dtype).double()
        if not t.fits(rounded, ref.factor):
            continue
        found = t.excess(ref.theta, ref.factor)
        assert found is not None  # the widths of the reference fit (checked before)
        cos_error, sin_error, bound, _ = found
        error = torch.maximum(cos_error, sin_error)
        worst = int((error - bound).flatten().argmax())
        index = torch.unravel_index(torch.tensor(worst), error.shape)
        column = int(index[-1])
        return {
            "dtype": dtype_name(dtype),
            "position": int(t.positions[tuple(int(i) for i in index[:-1])]),
            "pair": column % len(ref.theta) if t.layout != "interleaved" else column // 2,
            "error": f"{float(error.flatten()[worst]):.2g}",
            "allowed": f"{float(bound.flatten()[worst]):.2g}",
            "angle_dtype": "float32" if t.angle_eps == EPS32 else "float64",
        }
    return None


def _quiet(
    explains: Callable[[_Tables], dict[str, object] | None],
) -> Callable[[_Tables], dict[str, object] | None]:
    """``explains``, with a variant the config cannot form (a LongRoPE list one divisor short of
    a whole head, a factor squared past a method's range) read as not fitting."""

    def quiet(tables: _Tables) -> dict[str, object] | None:
        try:
            return explains(tables)
        except (TypeError, ValueError):
            return None

    return quiet


#: The mistakes the tables are compared with, in order; ``"wrong_values"`` if none fits.
_DIAGNOSES: tuple[Diagnosis[_Tables], ...] = tuple(
    Diagnosis(mistake, _quiet(explains))
    for mistake, explains in (
        (_LAYOUT, _layout_swapped),
        (_SIGN, _sign),
        (_PARTIAL_ALL, _partial_all),
        (_PARTIAL_EXPONENT, _partial_exponent),
        (_PROPORTIONAL_AS_PARTIAL, _proportional_as_partial),
        (_PROPORTIONAL_ALL, _proportional_all),
        (_LAYER_TYPE, _layer_type),
        (_SCALING_LAYERS, _scaling_layers),
        (_BASE, _base),
        (_SCALING_DROPPED, _scaling_dropped),
        (_FACTOR_SQUARED, _factor_squared),
        (_FACTOR_AGAIN, _factor_again),
        (_TRUNCATE_IGNORED, _truncate(True)),
        (_TRUNCATE_DROPPED, _truncate(False)),
        (_ORIGINAL_LENGTH, _original_length),
        (_FACTOR_MISSING, _factor_missing),
        (_FACTOR_SQUARED_ON_TABLES, _factor_squared_on_tables),
        (_FACTOR_FOLDED, _factor_folded),
        (_PRECISION, _precision),
    )
)


def _wrong_values(t: _Tables, context: str) -> CheckFailed:
    ref = t.ref
    found = t.excess(ref.theta, ref.factor)
    assert found is not None
    cos_error, sin_error, bound, _ = found
    built = t.model(ref.theta, ref.factor, t.layout)
    assert built is not None
    cos, sin, _ = built
    use_sin = bool((sin_error - bound).max() > (cos_error - bound).max())
    error = sin_error if use_sin else cos_error
    worst = int((error - bound).flatten().argmax())
    index = torch.unravel_index(torch.tensor(worst), error.shape)
    where = tuple(int(i) for i in index)
    column = where[-1]
    pairs = len(ref.theta)
    pair = column // 2 if (t.layout == "interleaved" and t.width == 2 * pairs) else column % pairs
    table, wanted = (t.sin, sin) if use_sin else (t.cos, cos)
    return _WRONG_VALUES.fail(
        context,
        position=int(t.positions[where[:-1]]),
        column=column,
        pair=pair,
        which="sin" if use_sin else "cos",
        found=f"{float(table[where]):.4g}",
        layer=ref.layer,
        wanted=f"{float(wanted[where]):.4g}",
        allowed=f"{float(bound[where]):.2g}",
    )


def _span(positions: torch.Tensor) -> str:
    """The positions of the first row as runs, ``0..15, 4096..4111``; more than four runs, or
    rows of their own, as the smallest and largest."""
    rows = positions.reshape(-1, positions.shape[-1]).long()
    row = rows[0].tolist()
    runs: list[list[int]] = []
    for p in row:
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    if len(rows) > 1 or len(runs) > 4:
        return f"{int(positions.min())}..{int(positions.max())}"
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def _context(template: Any, ref: _Reference, positions: torch.Tensor) -> str:
    return str(
        template.render(
            layer=ref.layer, model=ref.read.model_type, kind=ref.label, span=_span(positions)
        )
    )


def _judge(tables: _Tables, context: str) -> None:
    """Pass the tables, or raise the first mistake that explains them."""
    ref = tables.ref
    if tables.width in (len(ref.theta), 2 * len(ref.theta)) and tables.fits(ref.theta, ref.factor):
        return
    failure = diagnose(_DIAGNOSES, tables, context)
    if failure is not None:
        raise failure
    if tables.width not in (len(ref.theta), 2 * len(ref.theta)):
        raise _WIDTH.fail(
            context,
            width=tables.width,
            layer=ref.layer,
            rotated=ref.rotated,
            head=ref.head,
            pairs=len(ref.theta),
            twice=2 * len(ref.theta),
            layout=tables.layout or ref.layout,
        )
    raise _wrong_values(tables, context)


# --- arguments --------------------------------------------------------------------------------


def _as_table(name: str, value: object) -> tuple[torch.Tensor, str, float]:
    try:
        return as_float64(value)
    except NotAnArray as error:
        raise TypeError(
            f"{name} must be a numpy array or a torch tensor of a floating dtype (float16, "
            f"bfloat16, float32, float64) holding the engine's table, got {error.english}; for "
            f"Llama 4's complex freqs_cis pass freqs_cis.real and freqs_cis.imag"
        ) from None


def _positions(name: str, positions: object, default: torch.Tensor) -> torch.Tensor:
    if positions is None:
        return default
    if isinstance(positions, np.ndarray) and positions.dtype.kind in "iu":
        positions = torch.from_numpy(positions.astype(np.int64))
    elif isinstance(positions, (list, tuple, range)):
        if not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in positions):
            raise TypeError(f"{name} must hold integer positions, got {list(positions)[:8]!r}")
        positions = torch.tensor(list(positions), dtype=torch.int64)
    return check_positions(name, positions)


def _angle_eps(angle_dtype: object) -> float:
    dtype = check_floating_dtype("angle_dtype", angle_dtype)
    return max(float(torch.finfo(dtype).eps), EPS64)


# --- the checkers -----------------------------------------------------------------------------


@MISTAKES.attach
def check_rope_tables(
    cos: object,
    sin: object,
    config: Mapping[str, Any] | str | Path | ModelConfig,
    *,
    layer: int = 0,
    positions: object = None,
    layout: str | None = None,
    attention_factor: bool = True,
    seq_len: int | None = None,
    angle_dtype: torch.dtype = torch.float32,
    use_transformers: bool | None = None,
) -> None:
    r"""Check the cos and sin tables an engine computed for one layer against the config.

    The reference is the layer's tables as transformers computes them from ``config`` (see the
    module docstring): its rotary entry (the per-layer-type entry for Gemma 3 and 4), head size,
    rotated channels and layout, at ``positions``. Tables within the tolerance pass silently.
    Otherwise the checker rebuilds what each mistake in reading the config would give and raises
    the first that the tables fit (and the reference does not), ``.mistake`` one of
    ``check_rope_tables.mistakes``:

    * ``"shape"``: cos and sin differ in shape, lack a position or column axis, or have neither
      one column per rotated pair nor two (and no mistake below explains the width);
    * ``"not_finite"``: NaN or infinite entries;
    * ``"layout"``: the columns laid out for the other pairing (``torch.cat`` for
      ``repeat_interleave``, or the reverse);
    * ``"sign"``: sin of the opposite sign;
    * ``"partial"``: a partial rotation done over every channel, or with the whole head's
      exponent; Gemma 4's proportional rotation done as a partial one, or over every pair;
    * ``"layer_type"``: another layer type's whole entry (Gemma 3's full layers' base and
      scaling on a sliding layer);
    * ``"scaling_layers"``: another layer type's scaling on this layer's base;
    * ``"base"``: another base (another layer type's, RoFormer's 10,000, a common one);
    * ``"scaling_dropped"``: plain RoPE where the entry has a scaling;
    * ``"factor_twice"``: the scaling with its factor squared, or its frequencies divided by the
      factor once more;
    * ``"truncate"``: YaRN's ``truncate`` ignored (gpt-oss's ``false`` read as true) or dropped;
    * ``"original_length"``: the training length taken from ``max_position_embeddings``;
    * ``"attention_factor"``: the attention factor missing, squared, or in the tables though
      ``attention_factor=False``;
    * ``"precision"``: inverse frequencies rounded to bfloat16 or float16 before the angles;
    * ``"wrong_values"``: none of these; the position and column furthest from the reference.

    Args:
        cos, sin: numpy arrays or torch tensors, ``(..., positions, columns)``, of any floating
            dtype (see the module docstring for the columns); not modified.
        config: the model's ``config.json`` as a mapping, the path of one or of a folder holding
            one (keys left out take transformers' defaults, as :func:`pe_lib.models.description.describe`), or a
            :class:`~pe_lib.models.config_reader.ModelConfig`.
        layer: the index of the layer the tables are for.
        positions: the positions the tables were computed at, int64, of shape ``(positions,)``
            or the tables' leading shape (one row per sequence of a batch); by default ``0, 1,
            ...``.
        layout: how the model's channels are paired, if not as the config says (an engine that
            reorders its weights' channels first: transformers' DeepSeek-V3 with
            ``rope_interleave``); ``"half"`` or ``"interleaved"``.
        attention_factor: whether the tables carry the method's attention factor (YaRN's,
            LongRoPE's), as transformers and vLLM fold it in; ``False`` for an engine that
            applies it to the logits instead.
        seq_len: the current length, for methods whose frequencies follow it (dynamic NTK,
            LongRoPE); by default the largest position + 1, as transformers takes it.
        angle_dtype: the precision the engine may form its angles in (float32 by default).
        use_transformers: as :func:`pe_lib.models.config_reader.read_config`.

    Raises:
        TypeError, ValueError: an argument is not allowed (named in the message): cos or sin not
            an array of a floating dtype, a config that cannot be read, a layer that does not
            exist or does not rotate, positions that do not match the tables' rows.
        CheckFailed: the tables are not the reference's; ``.mistake`` says which mistake (above).
    """
    cos64, _, cos_eps = _as_table("cos", cos)
    sin64, _, sin_eps = _as_table("sin", sin)
    rows = int(cos64.shape[-2]) if cos64.dim() >= 2 else 0
    given = _positions("positions", positions, torch.arange(max(rows, 1)))
    ref = _reference(config, layer, given, layout, attention_factor, seq_len, use_transformers)
    context = _context(_CONTEXT, ref, given)
    if cos64.shape != sin64.shape:
        raise _SHAPES_DIFFER.fail(
            context, cos_shape=tuple(cos64.shape), sin_shape=tuple(sin64.shape)
        )
    if cos64.dim() < 2 or cos64.numel() == 0:
        raise _RANK.fail(context, shape=tuple(cos64.shape))
    leading = tuple(cos64.shape[:-1])
    if given.shape != leading[-given.dim() :] and given.shape != leading:
        raise ValueError(
            f"positions must have one entry per row of the tables, shape {leading[-1:]} or "
            f"{leading}, got shape {tuple(given.shape)}"
        )
    for values in (cos64, sin64):
        finite = torch.isfinite(values)
        if not bool(finite.all()):
            where = tuple(int(i) for i in (~finite).nonzero()[0])
            raise _NOT_FINITE.fail(
                context,
                position=int(given.expand(leading)[where[:-1]]),
                column=where[-1],
            )
    batch = cos64.reshape(-1, *cos64.shape[-2:])
    tables = _Tables(
        ref=ref,
        cos=batch,
        sin=sin64.reshape(batch.shape),
        positions=given.expand(leading).reshape(batch.shape[:-1]).double(),
        value_eps=max(cos_eps, sin_eps, EPS64),
        angle_eps=_angle_eps(angle_dtype),
        layout=ref.layout,
    )
    _judge(tables, context)


def _pairs(layout: str, width: int) -> list[tuple[int, int]]:
    """The channel pairs of ``width`` rotated channels in ``layout``."""
    half = width // 2
    if layout == "half":
        return [(i, i + half) for i in range(half)]
    return [(2 * i, 2 * i + 1) for i in range(half)]


@dataclass(frozen=True)
class _Break:
    """Where a linear map is not a rotation of the pairs tried: channel ``source`` sent into
    ``target`` with ``weight``, at row ``row`` of the positions."""

    source: int
    target: int
    weight: float
    row: int


def _read_pairs(
    maps: torch.Tensor, pairs: list[tuple[int, int]], head: int, bound: float
) -> tuple[torch.Tensor, torch.Tensor] | _Break:
    """Per pair, ``(cos, sin)`` of shape ``(n, P)`` where ``maps`` (``(n, out, in)``) is a
    rotation of ``pairs`` leaving the other channels as they are; else the largest entry outside
    that structure."""
    allowed = torch.zeros(head, head, dtype=torch.bool)
    for i, j in pairs:
        allowed[i, i] = allowed[j, j] = allowed[i, j] = allowed[j, i] = True
    used = {c for pair in pairs for c in pair}
    for c in range(head):
        if c not in used:
            allowed[c, c] = True
    outside = maps.abs() * (~allowed)
    if float(outside.max()) > bound:
        flat = int(outside.flatten().argmax())
        row, target, source = (int(i) for i in torch.unravel_index(torch.tensor(flat), maps.shape))
        return _Break(source, target, float(maps[row, target, source]), row)
    a = torch.tensor([p[0] for p in pairs])
    b = torch.tensor([p[1] for p in pairs])
    cos, sin = maps[:, a, a], maps[:, b, a]
    # the second column of each block must be the same rotation: (-sin, cos)
    if (
        float((maps[:, b, b] - cos).abs().max()) > bound
        or float((maps[:, a, b] + sin).abs().max()) > bound
    ):
        worst = (maps[:, b, b] - cos).abs() + (maps[:, a, b] + sin).abs()
        flat = int(worst.flatten().argmax())
        row, pair = (int(i) for i in torch.unravel_index(torch.tensor(flat), worst.shape))
        return _Break(int(b[pair]), int(a[pair]), float(maps[row, a[pair], b[pair]]), row)
    still = torch.tensor([c for c in range(head) if c not in used], dtype=torch.long)
    if len(still):
        kept = maps[:, still, still]  # (n, still): each unrotated channel's own weight
        if float((kept - 1).abs().max()) > bound:
            flat = int((kept - 1).abs().flatten().argmax())
            row, index = (int(i) for i in torch.unravel_index(torch.tensor(flat), kept.shape))
            channel = int(still[index])
            return _Break(channel, channel, float(kept[row, index]), row)
    return cos, sin


@ROTATE_MISTAKES.attach
def check_rope_rotate(
    rotate: Callable[..., object],
    config: Mapping[str, Any] | str | Path | ModelConfig,
    *,
    layer: int = 0,
    positions: object = None,
    layout: str | None = None,
    attention_factor: bool = True,
    dtype: torch.dtype = torch.float32,
    angle_dtype: torch.dtype = torch.float32,
    use_transformers: bool | None = None,
) -> None:
    r"""Check an engine's rotation of one layer's queries or keys against the config.

    ``rotate(x, positions) -> y`` is called once, with ``x`` of shape ``(head_dim, 1,
    seq_len, head_dim)`` in ``dtype`` holding the unit vectors (``x[c, 0, s]`` is channel ``c``'s)
    and ``positions`` an int64 tensor of shape ``(seq_len,)``: ``y[c, 0, s]`` is then column
    ``c`` of the linear map the engine applies at position ``positions[s]``. The map must turn
    each pair of the layer's layout by its angle and leave the other channels as they are
    (``"pairing"`` otherwise, or ``"layout"`` where the other layout's pairs fit); each pair's
    cos and sin are then read from it and held to the reference as :func:`check_rope_tables`
    holds one column per pair, with the same diagnoses.

    Args:
        rotate: the engine's rotation: a function or an ``nn.Module`` (called as it is).
        config, layer, layout, attention_factor, angle_dtype, use_transformers: as
            :func:`check_rope_tables`.
        positions: the positions to probe, int64 ``(seq_len,)``; by default 0 to 7 and 100,
            1,000, 4,096, 10,000, 30,000 and 100,000, those below ``max_position_embeddings``.
        dtype: the floating dtype of ``x``.

    Raises:
        TypeError, ValueError: an argument is not allowed (named in the message).
        CheckFailed: the rotation is not the reference's; ``.mistake`` is one of
            ``check_rope_rotate.mistakes``.
    """
    check_callable("rotate", rotate, "a function rotate(x, positions) -> x rotated")
    dtype = check_floating_dtype("dtype", dtype)
    read = (
        config
        if isinstance(config, ModelConfig)
        else read_config(_load(config), use_transformers=use_transformers)
    )
    maximum = read.values.get("max_position_embeddings")
    default = [p for p in _PROBES if maximum is None or p < int(maximum)]
    given = _positions("positions", positions, torch.tensor(default, dtype=torch.int64))
    if given.dim() != 1:
        raise ValueError(f"positions must have shape (seq_len,), got {tuple(given.shape)}")
    ref = _reference(read, layer, given, layout, attention_factor, None, use_transformers)
    context = _context(_CALL_CONTEXT, ref, given)
    head, count = ref.head, len(given)
    x = torch.eye(head, dtype=dtype)[:, None, None, :].expand(head, 1, count, head).contiguous()
    kept = x.clone()
    call = "rotate(x, positions)"
    y = call_student(EXCEPTION, call, rotate, x, given.clone(), contract=_CONTRACT)
    if not torch.equal(x, kept):
        raise IN_PLACE.fail(
            call=call, name="x", example="x.mul_(cos)", instead="x * cos + rotate_half(x) * sin"
        )
    if not isinstance(y, torch.Tensor):
        raise WRONG_TYPE.fail(call=call, found=kind_of(y), wanted=_TENSOR, how=_FIX_TYPE)
    if y.shape != x.shape:
        raise _ROTATE_SHAPE.fail(context, call=call, shape=tuple(y.shape), x_shape=tuple(x.shape))
    out = y.detach().to("cpu", torch.float64)
    if not bool(torch.isfinite(out).all()):
        where = tuple(int(i) for i in (~torch.isfinite(out)).nonzero()[0])
        raise _NOT_FINITE.fail(context, position=int(given[where[2]]), column=where[3])
    maps = out[:, 0].permute(1, 2, 0)  # (n, out, in): maps[s, :, c] = y[c, 0, s]
    value_eps = max(float(torch.finfo(dtype).eps), EPS64)
    angle_eps = _angle_eps(angle_dtype)
    scale = max(abs(ref.method_factor), 1.0)
    # an entry outside a pair's block must be a rounding of zero
    # a correct rotation leaves exact zeros outside each pair's block, and the same cos and sin
    # in both columns of a block: only the rounding of a value is allowed there
    bound = 2 * _VALUE_ULPS * value_eps * scale
    rotated = len(ref.theta) * 2
    hypotheses: list[tuple[str, int]] = [(ref.layout, rotated), (_other(ref.layout), rotated)]
    # a partial rotation done over every channel, or a proportional one done as a partial one
    turning = 2 * int((ref.theta > 0).sum())
    for width in (head, turning):
        if width != rotated and (ref.layout, width) not in hypotheses:
            hypotheses.append((ref.layout, width))
    positions = given.double()[None, :]
    first_break: _Break | None = None
    for number, (pairing, width) in enumerate(hypotheses):
        if width > head or width < 2:
            continue
        found = _read_pairs(maps, _pairs(pairing, width), head, bound)
        if isinstance(found, _Break):
            first_break = first_break or found
            continue
        cos, sin = found
        tables = _Tables(
            ref=ref,
            cos=cos[None],
            sin=sin[None],
            positions=positions,
            value_eps=value_eps,
            angle_eps=angle_eps,
            layout=None,
        )
        if number == 1:
            if tables.fits(ref.theta, ref.factor):
                raise _LAYOUT.fail(
                    context,
                    found=pairing,
                    found_how=_LAID_OUT[pairing],
                    layer=ref.layer,
                    layout=ref.layout,
                    layout_how=_LAID_OUT[ref.layout],
                )
            continue
        _judge(tables, context)
        return
    assert first_break is not None
    raise _PAIRING.fail(
        context,
        call=call,
        source=first_break.source,
        target=first_break.target,
        weight=f"{first_break.weight:.3g}",
        position=int(given[first_break.row]),
    )
