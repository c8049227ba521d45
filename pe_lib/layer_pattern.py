r"""Which layers of a model see positions, through which keys, with which rotary entry.

Today's open models do not treat every layer alike. Gemma 2, Gemma 3 and Command R7B (Cohere 2)
alternate *sliding-window* layers, whose queries see only the last few thousand keys, with
*global* layers that see them all; Gemma 3 gives the two kinds different rotary bases, Command
R7B gives its global layers no positions at all; Llama 4 leaves every fourth layer without RoPE and
confines the others to chunks of the sequence; gpt-oss alternates windows of 128 keys with
global layers. :func:`layer_pattern` reads this from a model's configuration, one
:class:`LayerPositions` per layer.

Reference. The rule of each model is the one transformers 5.23 runs, in its configuration class
(``configuration_<model>.py``, where a missing ``layer_types`` is filled in) and its attention
module (``modeling_<model>.py``, which decides whether a layer rotates and which mask it gets).
``tests/lib/test_todays_models.py`` runs tiny models of transformers with pe_lib deciding each
layer's positions, and compares the logits.

Contract. A rule is one entry of :data:`LAYER_PATTERNS`, keyed by the configuration's
``model_type``: ``rule(config) -> list[LayerPositions]``, given a model's configuration as a
mapping: transformers 5's ``config.to_dict()``, or a published ``config.json`` (whose
``rope_theta`` and ``rope_scaling`` at the top level are read as transformers reads them into
``rope_parameters``). Model types without an entry rotate every layer with one entry and full
causal attention (Llama, Qwen, Mistral, Phi-3, OLMo 2, SmolLM2, DeepSeek-V3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._validation import check_choice, check_instance, check_positive_int

__all__ = ["ATTENTION_KINDS", "LAYER_PATTERNS", "LayerPositions", "layer_pattern"]

#: The keys a layer's query sees, by kind (all earlier keys, the last ``window`` ones, or those
#: in the query's own chunk of ``window`` positions).
ATTENTION_KINDS = ("full", "sliding", "chunked")


@dataclass(frozen=True)
class LayerPositions:
    """The positional part of one attention layer.

    Attributes:
        attention: ``"full"`` (every earlier key), ``"sliding"`` (key ``j`` visible from query
            ``i`` when ``i - window < j <= i``, as transformers' ``sliding_window_overlay``) or
            ``"chunked"`` (``j <= i`` in the same chunk, ``j // window == i // window``, as its
            ``chunked_overlay``).
        window: the window or chunk size; ``None`` for ``"full"``.
        rope: the layer's rotary entry, as :func:`pe_lib.rope_scaling.resolve_scaling` takes it
            (``rope_theta`` inside), or ``None`` for a layer without positions (NoPE).
    """

    attention: str
    window: int | None
    rope: Mapping[str, Any] | None

    @property
    def rotates(self) -> bool:
        """Whether the layer rotates its queries and keys."""
        return self.rope is not None

    def visible(self, query: int, key: int) -> bool:
        """Whether the key at index ``key`` is visible from the query at index ``query``."""
        if key > query or self.window is None:  # causal; "full" has no window
            return key <= query
        if self.attention == "sliding":
            return key > query - self.window
        return key // self.window == query // self.window  # "chunked"


#: ``rule(config) -> list[LayerPositions]``, one per layer.
LayerPatternRule = Callable[[Mapping[str, Any]], list[LayerPositions]]

_KIND_OF_TYPE = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
}


def _get(config: Mapping[str, Any], key: str, model: str) -> Any:
    if config.get(key) is None:
        raise ValueError(
            f"config must hold {key!r} for model_type {model!r} (read from its config.json or "
            f"transformers' config.to_dict()); got keys {sorted(map(str, config))[:12]}..."
        )
    return config[key]


def _layers(config: Mapping[str, Any], model: str) -> int:
    return check_positive_int(
        "config['num_hidden_layers']", _get(config, "num_hidden_layers", model)
    )


def _rope_parameters(config: Mapping[str, Any], model: str) -> Mapping[str, Any]:
    """transformers 5's ``rope_parameters``, or a ``config.json``'s ``rope_theta`` and
    ``rope_scaling`` joined as transformers joins them."""
    if config.get("rope_parameters") is not None:
        return check_instance("config['rope_parameters']", config["rope_parameters"], Mapping)  # type: ignore[type-abstract]
    entry: dict[str, Any] = dict(config.get("rope_scaling") or {"rope_type": "default"})
    entry["rope_theta"] = _get(config, "rope_theta", model)
    if config.get("partial_rotary_factor") is not None:
        entry["partial_rotary_factor"] = config["partial_rotary_factor"]
    return entry


def _layer_types(config: Mapping[str, Any], model: str, every: int) -> list[str]:
    """``config["layer_types"]``, or transformers' default for the model: sliding layers, with
    every ``every``-th one (``sliding_window_pattern`` where the config gives it) global."""
    count = _layers(config, model)
    types = config.get("layer_types")
    if types is None:
        every = check_positive_int(
            "config['sliding_window_pattern']", config.get("sliding_window_pattern", every)
        )
        return [
            "full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(count)
        ]
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence):
        raise TypeError(
            f"config['layer_types'] must be a list of layer types, got {type(types).__name__}"
        )
    if len(types) != count:
        raise ValueError(
            f"config['layer_types'] must name one type per layer (num_hidden_layers={count}), "
            f"got {len(types)} entries"
        )
    for i, kind in enumerate(types):
        check_choice(f"config['layer_types'][{i}]", kind, tuple(_KIND_OF_TYPE))
    return list(types)


def _window(config: Mapping[str, Any], key: str, model: str) -> int:
    return check_positive_int(f"config[{key!r}]", _get(config, key, model))


def _entry_for(rope: Mapping[str, Any], layer_type: str) -> Mapping[str, Any] | None:
    """The layer type's entry when ``rope`` holds one per layer type, else ``rope`` itself."""
    per_layer = "rope_type" not in rope and "type" not in rope
    if not per_layer:
        return rope
    if layer_type not in rope:
        raise ValueError(
            f"config['rope_parameters'] holds one entry per layer type "
            f"({', '.join(map(repr, rope))}) but none for {layer_type!r}"
        )
    entry: Mapping[str, Any] | None = rope[layer_type]
    return entry


def _by_layer_types(model: str, every: int, rotate_full: bool = True) -> LayerPatternRule:
    """Sliding and full layers as ``layer_types`` names them, each with its own rotary entry;
    ``rotate_full=False``: the full layers have no positions (Cohere 2)."""

    def rule(config: Mapping[str, Any]) -> list[LayerPositions]:
        rope = _rope_parameters(config, model)
        layers = []
        for kind in _layer_types(config, model, every):
            attention = _KIND_OF_TYPE[kind]
            window = _window(config, "sliding_window", model) if attention == "sliding" else None
            rotates = rotate_full or attention != "full"
            layers.append(
                LayerPositions(attention, window, _entry_for(rope, kind) if rotates else None)
            )
        return layers

    return rule


def _gemma3(config: Mapping[str, Any]) -> list[LayerPositions]:
    """Gemma 3: per-layer ``rope_parameters``; a ``config.json`` keeps the sliding layers' base
    as ``rope_local_base_freq`` and its ``rope_scaling`` for the global layers only."""
    if config.get("rope_parameters") is None and config.get("rope_local_base_freq") is not None:
        local = {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
        full = _rope_parameters(config, "gemma3_text")
        config = {
            **config,
            "rope_parameters": {"full_attention": full, "sliding_attention": local},
        }
    return _by_layer_types("gemma3_text", 6)(config)


def _llama4(config: Mapping[str, Any]) -> list[LayerPositions]:
    """Llama 4: ``no_rope_layers[i]`` is 1 where layer ``i`` *uses* RoPE (an empty or missing
    list: every ``no_rope_layer_interval``-th layer, by default the fourth, has none), and the
    RoPE layers attend within chunks of ``attention_chunk_size`` (``layer_types``
    ``"chunked_attention"``); the NoPE layers attend to everything."""
    model = "llama4_text"
    count = _layers(config, model)
    flags = config.get("no_rope_layers") or None
    if flags is None:
        interval = check_positive_int(
            "config['no_rope_layer_interval']", config.get("no_rope_layer_interval", 4)
        )
        flags = [int((i + 1) % interval != 0) for i in range(count)]
    if isinstance(flags, (str, bytes)) or not isinstance(flags, Sequence) or len(flags) != count:
        raise ValueError(
            f"config['no_rope_layers'] must hold one 0 or 1 per layer (num_hidden_layers="
            f"{count}; 1 means the layer uses RoPE), got {flags!r}"
        )
    if any(flag not in (0, 1) or isinstance(flag, float) for flag in flags):
        raise ValueError(
            f"config['no_rope_layers'] must hold only 0 and 1 (1: the layer uses RoPE), "
            f"got {flags!r}"
        )
    types = config.get("layer_types") or [
        "chunked_attention" if flag else "full_attention" for flag in flags
    ]
    rope = _rope_parameters(config, model)
    layers = []
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence) or len(types) != count:
        raise ValueError(
            f"config['layer_types'] must name one type per layer (num_hidden_layers={count}), "
            f"got {types!r}"
        )
    for i, (flag, kind) in enumerate(zip(flags, types, strict=True)):
        name = f"config['layer_types'][{i}]"
        attention = _KIND_OF_TYPE[check_choice(name, kind, tuple(_KIND_OF_TYPE))]
        chunk = _window(config, "attention_chunk_size", model) if attention == "chunked" else None
        layers.append(LayerPositions(attention, chunk, rope if flag else None))
    return layers


#: Every model type whose layers differ, with its rule; a new pattern is one entry here.
LAYER_PATTERNS: dict[str, LayerPatternRule] = {
    "gemma2": _by_layer_types("gemma2", 2),
    "gemma3_text": _gemma3,
    "gemma3": _gemma3,
    "gemma4_text": _by_layer_types("gemma4_text", 6),
    "cohere2": _by_layer_types("cohere2", 4, rotate_full=False),
    "gpt_oss": _by_layer_types("gpt_oss", 2),
    "llama4_text": _llama4,
    "llama4": _llama4,
}


def _uniform(config: Mapping[str, Any]) -> list[LayerPositions]:
    model = str(config.get("model_type"))
    rope = _rope_parameters(config, model)
    return [LayerPositions("full", None, rope) for _ in range(_layers(config, model))]


def layer_pattern(config: Mapping[str, Any]) -> list[LayerPositions]:
    """The positional part of each layer of a model, read from its configuration.

    Args:
        config: the model's configuration as a mapping: ``config.to_dict()`` of transformers 5,
            or a published ``config.json`` (for Llama 4 and Gemma 3, the text part:
            ``text_config``). Its ``model_type`` chooses the rule in :data:`LAYER_PATTERNS`;
            other model types rotate every layer alike.

    Returns:
        one :class:`LayerPositions` per layer, in order.

    Raises:
        TypeError: ``config`` is not a mapping, or a value has the wrong type.
        ValueError: a key the rule needs is missing, or ``layer_types`` or ``no_rope_layers``
            do not give one valid entry per layer.
    """
    config = check_instance("config", config, Mapping)  # type: ignore[type-abstract]
    model = config.get("model_type")
    if not isinstance(model, str):
        raise ValueError(
            f"config must name its model under 'model_type' (one of "
            f"{', '.join(map(repr, LAYER_PATTERNS))}, or another for a uniform model), "
            f"got {model!r}"
        )
    return LAYER_PATTERNS.get(model, _uniform)(config)
