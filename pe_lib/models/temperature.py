r"""Attention temperatures tied to length: how much a model sharpens its softmax, and where.

A softmax over more keys is flatter: with :math:`n` keys of equal score each gets :math:`1/n`.
Models that run far beyond their training length therefore multiply their attention logits by
a factor :math:`\tau \ge 1` that grows with the length they were extended to, or with the
query's position. Five such rules are in use; they differ in what they multiply:

* ``"yarn"`` (Peng et al., 2023, arXiv:2309.00071, section 3.4; transformers'
  ``_compute_yarn_parameters``): cos and sin are multiplied by the attention factor
  :math:`a` (:func:`pe_lib.rope.scaling.rope_frequencies` returns it), so the *rotated
  channels'* share of every logit is multiplied by :math:`a^2`: with factor 32,
  :math:`a = 0.1\ln 32 + 1`.
* ``"longrope"`` (Ding et al., 2024, arXiv:2402.13753; transformers'
  ``_compute_longrope_parameters``): the same place, with LongRoPE's attention factor
  :math:`a = \sqrt{1 + \ln s / \ln L}` (``L`` the entry's ``original_max_position_embeddings``,
  ``s`` its ``factor`` or ``max_position_embeddings / L``), so the rotated share is multiplied by
  :math:`a^2 = 1 + \ln s / \ln L`: Phi-3 mini 128k and Phi-4 mini.
* ``"mla_mscale"`` (DeepSeek-V2's YaRN, transformers' ``yarn_apply_mscale`` in
  ``modeling_deepseek_v3.py``): the softmax scale :math:`1/\sqrt{d}` of *all* channels is
  multiplied by :math:`m^2`, :math:`m = 0.1\,\mathrm{mscale\_all\_dim}\ln s + 1`, while cos and sin
  are multiplied by :math:`(0.1\,\mathrm{mscale}\ln s + 1)/m` (1 when the two are equal, as in
  DeepSeek-V3's config).
* ``"nope_log"`` (Llama 4, from Nakanishi 2025, arXiv:2501.19399; ``Llama4TextAttention``): on
  the layers *without* positions only, the query at position :math:`p` is multiplied by
  :math:`1 + \mathrm{attn\_scale}\,\ln(1 + \lfloor (p + 1)/\mathrm{floor\_scale}\rfloor)`, so its
  logits are too; :math:`p` counts from the start of the cache.
* ``"logn"`` (Qwen, arXiv:2309.16609, section 2.3, after Chiang and Cholak 2022): the query at
  position :math:`p` is multiplied by :math:`\log_L(p + 1)` where :math:`p + 1 > L`, the training
  length ``seq_length``, and by 1 before. transformers 5.23 does not implement it (its Qwen2
  and Qwen3 models have no such option); the rule follows the expression of Qwen's own
  modeling code, which is not part of transformers and is not checked here.

The rules read a config through :func:`pe_lib.models.config_reader.read_config`: keys it leaves out take
the model type's defaults from transformers' configuration class (Llama 4's
``attn_temperature_tuning``, ``attn_scale`` and ``floor_scale``; gpt-oss's YaRN entry), where
transformers is installed, and are refused, by name, where it is not.

Contract. A rule is one :class:`Temperature` entry of :data:`TEMPERATURES`: ``compute(config,
positions, layer_type)`` returns a float64 tensor of the shape of ``positions``, the factor by
which the rule multiplies the logits of the query at each position, on the channels
``acts_on`` names (``"rotated"`` or ``"all"``) of the layers ``layers`` names (``"rotary"``,
``"nope"`` or ``"all"``). ``config`` is the model's configuration as a mapping (transformers 5's
``config.to_dict()`` or a ``config.json``; one without ``model_type`` is read as it is, by the
rules that need no rotary entry); ``layer_type`` picks a per-layer rotary entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .._validation import (
    check_bool,
    check_choice,
    check_instance,
    check_positions,
    check_positive_int,
    check_real,
)
from .config_reader import ModelConfig, as_given, read_config

__all__ = ["TEMPERATURES", "Temperature", "attention_temperature"]

#: ``compute(config, positions, layer_type) -> factors``, float64 of the shape of positions.
TemperatureFunction = Callable[[Mapping[str, Any], torch.Tensor, "str | None"], torch.Tensor]


@dataclass(frozen=True)
class Temperature:
    """One entry of :data:`TEMPERATURES`.

    Attributes:
        compute: ``(config, positions, layer_type) -> factors`` (see the module docstring).
        acts_on: ``"rotated"`` (only the rotated channels' share of a logit) or ``"all"``.
        layers: ``"rotary"``, ``"nope"`` (layers without positions) or ``"all"``.
        reference: the code or paper the numbers are those of.
        applies_to: the model types whose attention code applies the rule (``"deepseek_v3"``
            for ``"mla_mscale"``); empty: every model whose rotary entry has the method the
            rule is named after (``"yarn"``, ``"longrope"``).
    """

    compute: TemperatureFunction
    acts_on: str
    layers: str
    reference: str
    applies_to: tuple[str, ...] = ()


def _read(config: Mapping[str, Any]) -> ModelConfig:
    """The config as :func:`~pe_lib.models.config_reader.read_config` reads it, or, without a
    ``model_type``, as it is (its keys checked)."""
    return read_config(config) if "model_type" in config else as_given(config)


def _rope_entry(config: Mapping[str, Any], layer_type: str | None) -> tuple[ModelConfig, Any]:
    """The config read, and the rotary entry of ``layer_type`` checked (a ``ScalingConfig``)."""
    from ..rope.scaling import resolve_scaling

    read = read_config(config)
    rope = read.rope_parameters()
    length = read.values.get("max_position_embeddings")
    return read, resolve_scaling(rope, max_position_embeddings=length, layer_type=layer_type)


def _constant(positions: torch.Tensor, value: float) -> torch.Tensor:
    return torch.full(positions.shape, value, dtype=torch.float64)


def _factor_on_cos_sin(kind: str) -> TemperatureFunction:
    """The square of the attention factor of ``kind``'s entries (1 for other methods): the
    factor by which cos and sin are multiplied, computed at the model's head size as
    transformers computes it (``head_dim``, else ``hidden_size // num_attention_heads``)."""

    def compute(
        config: Mapping[str, Any], positions: torch.Tensor, layer_type: str | None
    ) -> torch.Tensor:
        read, entry = _rope_entry(config, layer_type)
        if entry.rope_type != kind:
            return _constant(positions, 1.0)
        factor = entry.entry.compute(read.head_size(), entry.base, entry.params, None)[1]
        return _constant(positions, factor**2)

    return compute


def _mscale(factor: float, mscale: float) -> float:
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


def _mla_mscale(
    config: Mapping[str, Any], positions: torch.Tensor, layer_type: str | None
) -> torch.Tensor:
    rope = read_config(config).rope_parameters()
    entry = rope if layer_type is None else rope.get(layer_type) or {}
    # DeepseekV3Attention reads rope_parameters.get("rope_type", "default"): an entry per layer
    # type, read without one, is "default" there
    kind = entry.get("rope_type", entry.get("type", "default"))
    mscale_all_dim = entry.get("mscale_all_dim") or 0
    if kind == "default" or not mscale_all_dim:
        return _constant(positions, 1.0)
    factor = check_real("config rope 'factor'", entry.get("factor"), above=0.0)
    mscale_all_dim = check_real("config rope 'mscale_all_dim'", mscale_all_dim, at_least=0.0)
    return _constant(positions, _mscale(factor, mscale_all_dim) ** 2)


def _nope_log(
    config: Mapping[str, Any], positions: torch.Tensor, layer_type: str | None
) -> torch.Tensor:
    read = _read(config)
    why = "for the temperature of the layers without RoPE"
    tuning = check_bool(
        "config['attn_temperature_tuning']", read.get("attn_temperature_tuning", why)
    )
    if not tuning:
        return _constant(positions, 1.0)
    scale = check_real("config['attn_scale']", read.get("attn_scale", why), at_least=0.0)
    floor_scale = check_positive_int("config['floor_scale']", read.get("floor_scale", why))
    steps = torch.div(positions.to(torch.int64) + 1, floor_scale, rounding_mode="floor")
    return 1.0 + scale * torch.log1p(steps.to(torch.float64))


def _logn(
    config: Mapping[str, Any], positions: torch.Tensor, layer_type: str | None
) -> torch.Tensor:
    if config.get("seq_length") is None:
        raise ValueError(
            "config['seq_length'] is required by the 'logn' rule: the training length L beyond "
            "which log-n scaling multiplies the queries (Qwen's config.json holds it)"
        )
    length = check_positive_int("config['seq_length']", config["seq_length"])
    count = positions.to(torch.float64) + 1.0
    return torch.where(count > length, count.log() / math.log(length), torch.ones_like(count))


#: Every temperature rule by name; a new rule is one entry here.
TEMPERATURES: dict[str, Temperature] = {
    "yarn": Temperature(
        _factor_on_cos_sin("yarn"),
        "rotated",
        "rotary",
        "transformers 5.23's _compute_yarn_parameters (cos, sin)",
    ),
    "longrope": Temperature(
        _factor_on_cos_sin("longrope"),
        "rotated",
        "rotary",
        "transformers 5.23's _compute_longrope_parameters (cos, sin)",
    ),
    "mla_mscale": Temperature(
        _mla_mscale,
        "all",
        "rotary",
        "transformers 5.23's yarn_apply_mscale (DeepSeek-V3)",
        ("deepseek_v3",),
    ),
    "nope_log": Temperature(
        _nope_log,
        "all",
        "nope",
        "transformers 5.23's Llama4TextAttention (queries)",
        ("llama4_text",),
    ),
    "logn": Temperature(
        _logn, "all", "all", "Qwen's log-n scaling (arXiv:2309.16609, section 2.3)", ("qwen",)
    ),
}


def attention_temperature(
    rule: str,
    config: Mapping[str, Any],
    positions: torch.Tensor,
    *,
    layer_type: str | None = None,
) -> torch.Tensor:
    """The factor by which ``rule`` multiplies the attention logits of each query position.

    Args:
        rule: a name in :data:`TEMPERATURES`.
        config: the model's configuration as a mapping (``config.to_dict()`` of transformers 5,
            or its ``config.json``).
        positions: int64 query positions (counted from the start of the cache), any shape.
        layer_type: the layer type whose rotary entry to read, where the config holds one per
            layer type.

    Returns:
        a float64 tensor of the shape of ``positions``; :data:`TEMPERATURES` says which
        channels and layers it acts on.

    Raises:
        TypeError, ValueError: an unknown rule, a config that is not a mapping or lacks a key
            the rule needs (named in the message; transformers, where installed, fills in the
            model type's defaults), a key of the wrong type (``attn_temperature_tuning`` must be
            a bool), or invalid positions.
    """
    name = check_choice("rule", rule, tuple(TEMPERATURES))
    config = check_instance("config", config, Mapping)  # type: ignore[type-abstract]
    positions = check_positions("positions", positions)
    if positions.is_floating_point():
        raise TypeError("positions must be an int64 tensor of query positions, got float64")
    return TEMPERATURES[name].compute(config, positions, layer_type)
