r"""Which layers of a model see positions, through which keys, with which rotary entry.

Today's open models do not treat every layer alike. Gemma 2, Gemma 3 and Command R7B (Cohere 2)
alternate *sliding-window* layers, whose queries see only the last few thousand keys, with
*global* layers that see them all; Gemma 3 gives the two kinds different rotary bases, Command
R7B gives its global layers no positions at all; Llama 4 leaves every fourth layer without RoPE and
confines the others to chunks of the sequence; gpt-oss alternates windows of 128 keys with
global layers; Mistral and Phi-3 give every layer the same window. Hybrids mix attention with
recurrent layers that have no attention at all: Jamba has one attention layer (without positions)
in eight among Mamba layers, Qwen3-Next and Kimi Linear one in four among linear-attention
layers (Qwen3-Next's rotate a quarter of their channels, Kimi Linear's not at all), and Falcon-H1
runs rotated attention and Mamba-2 side by side in every layer. :func:`layer_pattern` reads
this from a model's configuration, one :class:`LayerPositions` per layer.

Reference. The rule of each model is the one transformers 5.23 runs: its configuration class
fills in and rewrites the config (:func:`pe_lib.models.config_reader.read_config`), and its modeling
code (``modeling_<model>.py``) decides whether a layer rotates, how its channels are paired,
and which mask it gets from ``masking_utils.py``: causal, ``sliding_window_overlay`` (key ``j``
visible from query ``i`` when ``i - w < j <= i``), ``chunked_overlay`` (``j <= i`` in the same
chunk), or, for Gemma 3's and Gemma 4's ``use_bidirectional_attention``, every key of a full
layer and the keys within a distance on either side in a sliding one (Gemma 3:
``|i - j| < w // 2 + 1``; Gemma 4, ``"all"``: ``|i - j| <= w // 2 + 1``).
``tests/lib/test_todays_models.py`` runs tiny models of transformers with pe_lib deciding each
layer's positions and compares the logits; ``tests/lib/test_layer_pattern_defaults.py``
compares each layer's mask, rotation and entry with a tiny model built from random configs.

Contract. A rule is one entry of :data:`LAYER_PATTERNS`, keyed by the configuration's
``model_type``: ``rule(config) -> list[LayerPositions]``, given the
:class:`~pe_lib.models.config_reader.ModelConfig` that :func:`~pe_lib.models.config_reader.read_config` makes
of a model's configuration (a published ``config.json``, or transformers 5's ``config.to_dict()``).
A model type without a rule is refused, never read as some other model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._validation import (
    check_base,
    check_bool,
    check_choice,
    check_nonnegative_int,
    check_positive_int,
    check_real,
)
from .config_reader import ModelConfig, read_config

__all__ = [
    "ATTENTION_KINDS",
    "LAYER_PATTERNS",
    "LAYOUTS",
    "NO_ATTENTION",
    "RECURRENT_KINDS",
    "LayerPositions",
    "layer_pattern",
]

#: The keys a layer's query sees, by kind (all keys, those within ``window`` of it, or those in
#: its own chunk of ``window`` positions); causal layers see none after the query.
ATTENTION_KINDS = ("full", "sliding", "chunked")

#: How a model pairs the channels it rotates; channel ``i`` with ``i + d/2`` (``"half"``,
#: transformers' ``rotate_half``) or with its neighbour (``"interleaved"``: Llama 4's complex
#: product, Cohere's ``rotate_half``, DeepSeek-V3's ``rope_interleave``), as
#: :func:`pe_lib.rope.apply_rope` takes them.
LAYOUTS = ("half", "interleaved")

#: The kind of a hybrid's layer that has no attention (a recurrent mixer alone); not one of
#: :data:`ATTENTION_KINDS`.
NO_ATTENTION = "none"

#: The recurrent mixers of hybrid models, named after transformers 5.23's modules, Mamba
#: (``JambaMambaMixer``), Mamba-2 (``FalconH1Mixer``), Gated DeltaNet
#: (``Qwen3NextGatedDeltaNet``) and Kimi Delta Attention (``KimiLinearDeltaAttention``). They
#: carry no position code; they see order through their state.
RECURRENT_KINDS = ("mamba", "mamba2", "gated_deltanet", "kimi_delta")


@dataclass(frozen=True)
class LayerPositions:
    """The positional part of one layer.

    Attributes:
        attention: ``"full"`` (every key), ``"sliding"`` (key ``j`` visible from query ``i``
            when ``|i - j| < window``) or ``"chunked"`` (``j`` in the same chunk,
            ``j // window == i // window``, as transformers' ``chunked_overlay``); or
            :data:`NO_ATTENTION`, ``"none"``: a hybrid's layer without attention (then
            ``window`` and ``rope`` are ``None`` and ``recurrent`` names its mixer).
        window: the window or chunk size, a positive int; ``None`` for ``"full"``. For a causal
            sliding layer it is transformers' ``sliding_window`` (``i - window < j <= i``, as
            its ``sliding_window_overlay``); for a bidirectional one, the distance bound.
        rope: the layer's rotary entry, as :func:`pe_lib.rope.scaling.resolve_scaling` takes it
            (``rope_theta`` inside), or ``None`` for a layer without positions (NoPE).
        causal: whether a query sees no key after it (``False``: Gemma 3's and Gemma 4's
            bidirectional attention).
        layout: how the rotated channels are paired, one of :data:`LAYOUTS`.
        recurrent: the layer's recurrent mixer, one of :data:`RECURRENT_KINDS`, in place of
            attention (``attention="none"``) or beside it (Falcon-H1); ``None`` for none.

    Raises:
        TypeError, ValueError: an unknown kind, layout or recurrent mixer, a window that is not
            a positive int (or not ``None`` for ``"full"``), a rotary entry that is not a
            mapping, a bidirectional chunked layer (no model has one), or a layer without
            attention that has a window or a rotary entry, or no recurrent mixer.
    """

    attention: str
    window: int | None
    rope: Mapping[str, Any] | None
    causal: bool = True
    layout: str = "half"
    recurrent: str | None = None

    def __post_init__(self) -> None:
        if self.recurrent is not None:
            check_choice("recurrent", self.recurrent, RECURRENT_KINDS)
        if self.attention == NO_ATTENTION:
            if self.recurrent is None or self.window is not None or self.rope is not None:
                raise ValueError(
                    f"a layer without attention (attention='none') needs a recurrent mixer and "
                    f"no window or rotary entry, got recurrent={self.recurrent!r}, "
                    f"window={self.window!r}, rope={self.rope!r}"
                )
            check_bool("causal", self.causal)
            check_choice("layout", self.layout, LAYOUTS)
            return
        check_choice("attention", self.attention, ATTENTION_KINDS)
        if self.attention == "full":
            if self.window is not None:
                raise ValueError(
                    f"window must be None for attention 'full' (every key is seen), got "
                    f"{self.window!r}"
                )
        elif self.window is None:
            raise ValueError(
                f"window must be a positive int for attention {self.attention!r} (the keys "
                f"seen), got None"
            )
        else:
            check_positive_int("window", self.window)
        if self.rope is not None and not isinstance(self.rope, Mapping):
            raise TypeError(
                f"rope must be a rotary entry (a mapping) or None (no positions), got "
                f"{type(self.rope).__name__}"
            )
        check_bool("causal", self.causal)
        if self.attention == "chunked" and not self.causal:
            raise ValueError(
                "attention 'chunked' must be causal (no model has bidirectional chunks)"
            )
        check_choice("layout", self.layout, LAYOUTS)

    @property
    def rotates(self) -> bool:
        """Whether the layer rotates its queries and keys."""
        return self.rope is not None

    def visible(self, query: int, key: int) -> bool:
        """Whether the key at index ``key`` is visible from the query at index ``query``.

        Raises:
            TypeError, ValueError: an index that is not a non-negative int, or a layer without
                attention (it sees no key).
        """
        query = check_nonnegative_int("query", query)
        key = check_nonnegative_int("key", key)
        if self.attention == NO_ATTENTION:
            raise ValueError(
                f"this layer has no attention (its mixer is {self.recurrent!r}): no key is "
                f"visible to it"
            )
        if self.causal and key > query:
            return False
        if self.window is None:  # "full"
            return True
        if self.attention == "sliding":
            return abs(query - key) < self.window
        return key // self.window == query // self.window  # "chunked"


#: ``rule(config) -> list[LayerPositions]``, one per layer.
LayerPatternRule = Callable[[ModelConfig], list[LayerPositions]]

_KIND_OF_TYPE = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
}


def _count(config: ModelConfig) -> int:
    return check_positive_int("config['num_hidden_layers']", config.get("num_hidden_layers"))


def _layer_types(config: ModelConfig, allowed: tuple[str, ...], also: str = "") -> list[str]:
    """``layer_types``, each one of ``allowed``; ``also``: the keys transformers derives it from."""
    why = f"(or {also}, from which transformers derives it)" if also else ""
    types = config.get("layer_types", why)
    count = _count(config)
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence) or len(types) != count:
        raise ValueError(
            f"config['layer_types'] must name one type per layer (num_hidden_layers={count}), "
            f"got {types!r}"
        )
    for i, kind in enumerate(types):
        check_choice(f"config['layer_types'][{i}]", kind, allowed)
    return list(types)


def _window(config: ModelConfig, key: str, kind: str) -> int:
    value = config.get(key, f"for its {kind} layers")
    if value is None:
        raise ValueError(
            f"config[{key!r}] is None but layer_types names {kind} layers, whose mask needs it "
            f"(transformers 5.23 raises when it builds that mask)"
        )
    return check_positive_int(f"config[{key!r}]", value)


def _checked(config: ModelConfig, entry: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """``entry`` with a known ``rope_type``, a ``rope_theta`` > 1 and a share of rotated channels
    in (0, 1]; the method's own keys are checked where its frequencies are computed
    (:func:`pe_lib.rope.scaling.resolve_scaling`)."""
    from ..rope.scaling import ROPE_SCALINGS

    name = f"config's rotary entry{where}"
    kind = entry.get("rope_type", entry.get("type"))
    check_choice(f"{name}['rope_type']", kind, (*ROPE_SCALINGS, "su"))
    check_base(f"{name}['rope_theta']", entry.get("rope_theta"))
    share = entry.get("partial_rotary_factor")
    if share is not None and not 0.0 < check_real(f"{name}['partial_rotary_factor']", share) <= 1:
        raise ValueError(
            f"{name}['partial_rotary_factor'] must be in (0, 1] (the share of channels rotated), "
            f"got {share!r}"
        )
    return entry


def _one_entry(config: ModelConfig) -> Mapping[str, Any]:
    """The one rotary entry of a model type whose rotary module reads one."""
    rope = config.rope_parameters()
    if "rope_type" not in rope:
        raise ValueError(
            f"config['rope_parameters'] holds one entry per layer type ({', '.join(map(repr, rope))}), "
            f"but model_type {config.model_type!r} reads one rotary entry for every layer"
        )
    return _checked(config, rope, "")


def _entry_of(config: ModelConfig, layer_type: str) -> Mapping[str, Any]:
    """The entry of ``layer_type`` for a model type with one entry per layer type (Gemma 3, 4)."""
    rope = config.rope_parameters()
    entry = rope.get(layer_type) if "rope_type" not in rope else None
    if not isinstance(entry, Mapping):
        raise ValueError(
            f"config['rope_parameters'] must hold an entry for {layer_type!r} (model_type "
            f"{config.model_type!r} has one per layer type), got {dict(rope)!r}"
        )
    return _checked(config, entry, f" for {layer_type!r}")


def _full(layout: str = "half") -> LayerPatternRule:
    """Every layer full, causal and rotated with the one entry (Llama, OLMo 2, Phi-2)."""

    def rule(config: ModelConfig) -> list[LayerPositions]:
        rope = _one_entry(config)
        return [LayerPositions("full", None, rope, layout=layout) for _ in range(_count(config))]

    return rule


def _deepseek_v3(config: ModelConfig) -> list[LayerPositions]:
    """DeepSeek-V3: full layers; ``rope_interleave`` pairs neighbours (its weights' layout)."""
    interleave = check_bool(
        "config['rope_interleave']", config.get("rope_interleave", "for its rotary layout")
    )
    return _full("interleaved" if interleave else "half")(config)


def _one_window(config: ModelConfig) -> list[LayerPositions]:
    """Mistral and Phi-3: every layer slides over ``sliding_window`` keys, or none does."""
    window = config.get("sliding_window", "(null: no window)")
    rope = _one_entry(config)
    count = _count(config)
    if window is None:
        return [LayerPositions("full", None, rope) for _ in range(count)]
    window = check_positive_int("config['sliding_window']", window)
    return [LayerPositions("sliding", window, rope) for _ in range(count)]


def _by_layer_types(
    also: str = "",
    *,
    rotate_full: bool = True,
    layout: str = "half",
    per_layer_type: bool = False,
    bidirectional: Callable[[ModelConfig], int | None] | None = None,
) -> LayerPatternRule:
    """Sliding and full layers as ``layer_types`` names them. ``rotate_full=False``: the full
    layers have no positions (Cohere 2); ``per_layer_type``: one rotary entry per layer type
    (Gemma 3, 4); ``bidirectional(config)``: ``None`` for causal attention, else the sliding
    layers' distance bound."""

    def rule(config: ModelConfig) -> list[LayerPositions]:
        types = _layer_types(config, ("full_attention", "sliding_attention"), also)
        bound = None if bidirectional is None else bidirectional(config)
        layers = []
        for kind in types:
            attention = _KIND_OF_TYPE[kind]
            window = (
                _window(config, "sliding_window", "sliding") if attention == "sliding" else None
            )
            if window is not None and bound is not None:
                window = bound
            rope: Mapping[str, Any] | None = None
            if rotate_full or attention != "full":
                rope = _entry_of(config, kind) if per_layer_type else _one_entry(config)
            layers.append(LayerPositions(attention, window, rope, bound is None, layout))
        return layers

    return rule


def _gemma2_causal(config: ModelConfig) -> int | None:
    if config.get("use_bidirectional_attention"):
        raise ValueError(
            "config['use_bidirectional_attention'] is true, which transformers 5.23's Gemma 2 "
            "reads in part: its eager attention gets causal masks, while other attention "
            "implementations are told not to be causal; pe_lib cannot say which keys a layer "
            "sees, and refuses"
        )
    return None


def _gemma3_bound(config: ModelConfig) -> int | None:
    """Gemma 3: ``|i - j| < sliding_window // 2 + 1`` on the sliding layers."""
    if not config.get("use_bidirectional_attention"):
        return None
    return int(_window(config, "sliding_window", "sliding")) // 2 + 1


def _gemma4_bound(config: ModelConfig) -> int | None:
    """Gemma 4, ``"all"``: ``|i - j| <= sliding_window // 2 + 1`` on the sliding layers
    (``"vision"`` changes only images' tokens)."""
    if config.get("use_bidirectional_attention") != "all":
        return None
    return int(_window(config, "sliding_window", "sliding")) // 2 + 2


def _rope_flags(config: ModelConfig, also: str) -> list[int]:
    flags = config.get("no_rope_layers", f"(or {also}, from which transformers derives it)")
    count = _count(config)
    if isinstance(flags, (str, bytes)) or not isinstance(flags, Sequence) or len(flags) != count:
        raise ValueError(
            f"config['no_rope_layers'] must hold one 0 or 1 per layer (num_hidden_layers="
            f"{count}; 1 means the layer uses RoPE), got {flags!r}"
        )
    return list(flags)


def _with_rope_flags(allowed: tuple[str, ...], window_key: str, layout: str) -> LayerPatternRule:
    """Llama 4 and SmolLM3: ``no_rope_layers[i]`` is 1 where layer ``i`` *uses* RoPE; the layers'
    masks as ``layer_types`` names them (Llama 4: the RoPE layers attend within chunks of
    ``attention_chunk_size``; SmolLM3: sliding NoPE layers where ``use_sliding_window``)."""

    def rule(config: ModelConfig) -> list[LayerPositions]:
        flags = _rope_flags(config, "no_rope_layer_interval")
        types = _layer_types(config, allowed, "no_rope_layers")
        layers = []
        rope = _one_entry(config) if any(flags) else None
        for flag, kind in zip(flags, types, strict=True):
            attention = _KIND_OF_TYPE[kind]
            window = None if attention == "full" else _window(config, window_key, attention)
            layers.append(LayerPositions(attention, window, rope if flag else None, layout=layout))
        return layers

    return rule


def _hybrid(
    layer_kinds: Callable[[ModelConfig], list[bool]],
    recurrent: str,
    *,
    rotates: bool,
    parallel: bool = False,
) -> LayerPatternRule:
    """Hybrids: ``layer_kinds(config)[i]`` is whether layer ``i`` has attention (full, causal);
    the others hold the ``recurrent`` mixer alone, or, ``parallel``, every layer holds both
    (Falcon-H1). ``rotates``: the attention layers rotate with the one entry (else NoPE)."""

    def rule(config: ModelConfig) -> list[LayerPositions]:
        kinds = layer_kinds(config)
        rope = _one_entry(config) if rotates and any(kinds) else None
        beside = recurrent if parallel else None
        return [
            LayerPositions("full", None, rope, recurrent=beside)
            if attends
            else LayerPositions(NO_ATTENTION, None, None, recurrent=recurrent)
            for attends in kinds
        ]

    return rule


def _jamba_kinds(config: ModelConfig) -> list[bool]:
    """Jamba: layer ``i`` attends where ``i % attn_layer_period == attn_layer_offset``
    (``JambaConfig.layers_block_type``), a Mamba layer elsewhere."""
    period = check_positive_int(
        "config['attn_layer_period']", config.get("attn_layer_period", "for its attention layers")
    )
    offset = check_nonnegative_int(
        "config['attn_layer_offset']", config.get("attn_layer_offset", "for its attention layers")
    )
    return [i % period == offset for i in range(_count(config))]


def _every_layer(config: ModelConfig) -> list[bool]:
    return [True] * _count(config)


def _linear_kinds(config: ModelConfig) -> list[bool]:
    """``layer_types``: ``"full_attention"`` or ``"linear_attention"`` (Qwen3-Next, Kimi Linear)."""
    types = _layer_types(config, ("full_attention", "linear_attention"), "its checkpoint's keys")
    return [kind == "full_attention" for kind in types]


_PATTERN = "sliding_window_pattern"

#: Every model type pe_lib reads, with its rule; a new model type is one entry here and one in
#: :data:`pe_lib.models.config_reader.CLASS_READINGS`.
LAYER_PATTERNS: dict[str, LayerPatternRule] = {
    "llama": _full(),
    "olmo2": _full(),
    "gemma": _full(),
    "phi": _full(),
    "deepseek_v3": _deepseek_v3,
    "mistral": _one_window,
    "phi3": _one_window,
    "qwen2": _by_layer_types("use_sliding_window and max_window_layers"),
    "qwen3": _by_layer_types("use_sliding_window and max_window_layers"),
    "gemma2": _by_layer_types(bidirectional=_gemma2_causal),
    "gemma3_text": _by_layer_types(_PATTERN, per_layer_type=True, bidirectional=_gemma3_bound),
    "gemma4_text": _by_layer_types(per_layer_type=True, bidirectional=_gemma4_bound),
    "cohere2": _by_layer_types(_PATTERN, rotate_full=False, layout="interleaved"),
    "gpt_oss": _by_layer_types(),
    "llama4_text": _with_rope_flags(
        ("full_attention", "chunked_attention"), "attention_chunk_size", "interleaved"
    ),
    "smollm3": _with_rope_flags(("full_attention", "sliding_attention"), "sliding_window", "half"),
    # hybrids: JambaAttention and KimiLinearAttention (MLA) apply no rotation (their models build
    # no rotary embedding); FalconH1Attention and Qwen3NextAttention rotate with the model's one
    "jamba": _hybrid(_jamba_kinds, "mamba", rotates=False),
    "falcon_h1": _hybrid(_every_layer, "mamba2", rotates=True, parallel=True),
    "qwen3_next": _hybrid(_linear_kinds, "gated_deltanet", rotates=True),
    "kimi_linear": _hybrid(_linear_kinds, "kimi_delta", rotates=False),
}


def layer_pattern(config: Mapping[str, Any] | ModelConfig) -> list[LayerPositions]:
    """The positional part of each layer of a model, read from its configuration.

    Args:
        config: the model's configuration as a mapping: a published ``config.json`` (keys it
            leaves out take the model type's defaults from transformers' configuration class,
            where transformers is installed), or transformers 5's ``config.to_dict()``; for
            a multimodal model type (``"gemma3"``, ``"llama4"``), the whole file or its
            ``text_config``. Or a :class:`~pe_lib.models.config_reader.ModelConfig` already read. Its
            ``model_type`` chooses the rule in :data:`LAYER_PATTERNS`.

    Returns:
        one :class:`LayerPositions` per layer, in order.

    Raises:
        TypeError: ``config`` is not a mapping, or a value has the wrong type.
        ValueError: the model type has no rule; a key the rule needs is missing (and
            transformers is not there to fill it in), named in the message; or ``layer_types``,
            ``no_rope_layers`` or a rotary entry is invalid.
    """
    read = config if isinstance(config, ModelConfig) else read_config(config)
    rule = LAYER_PATTERNS.get(read.model_type)
    if rule is None:
        raise ValueError(
            f"config['model_type'] must be one of {', '.join(map(repr, LAYER_PATTERNS))}; "
            f"a new model type is one rule in pe_lib.models.layer_pattern.LAYER_PATTERNS; got "
            f"{read.model_type!r}"
        )
    return rule(read)
