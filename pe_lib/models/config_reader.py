r"""A model's ``config.json`` read as its transformers configuration class fills it in.

A published ``config.json`` leaves keys to its model type's defaults, and keeps others where an
older transformers put them: ``rope_theta`` and ``rope_scaling`` at the top level, Gemma 3's
``rope_local_base_freq``, Phi-3's ``original_max_position_embeddings``. :func:`read_config` gives
the configuration the model runs with, as a :class:`ModelConfig`: every key with the value the
model type's configuration class gives it, the rotary entries in transformers 5's
``rope_parameters`` (``rope_theta`` inside, one entry per layer type for Gemma 3 and 4), what was
assumed for keys the file leaves out, and notes on keys the class reads otherwise than written.
:func:`pe_lib.models.layer_pattern.layer_pattern`, :func:`pe_lib.models.temperature.attention_temperature` and
:func:`pe_lib.models.description.describe` read configs through it.

Reference. transformers 5.23's configuration classes (``configuration_<model>.py``: their
defaults and ``__post_init__``) and ``RotaryEmbeddingConfigMixin`` in ``modeling_rope_utils.py``
(``convert_rope_params_to_dict``, ``standardize_rope_params``). transformers is optional for
pe_lib and imported only here, when a config is read. pe_lib rewrites the keys a file gives as
the model type's class does (:data:`CLASS_READINGS`). Where transformers is installed, the class
is built from a copy of the config without its rotary keys (``AutoConfig.for_model``), and its
``to_dict()`` gives every other key; the rotary keys go in as the class puts them, with its own
bases and entries where the file has none (so an entry the class would refuse, a LongRoPE one
without its lists, is still read here, and refused where its frequencies are computed). Where
transformers is not installed (or ``use_transformers=False``), pe_lib's rewriting is the
result, and a key the class would fill in is refused when a rule asks for it
(:meth:`ModelConfig.get`), naming the key: pe_lib substitutes no default of its own. Keys whose
absence every transformers version reads as "off" (``use_bidirectional_attention``, Qwen's
``use_sliding_window``, Phi-3's ``sliding_window``) are read as off.
``tests/lib/test_layer_pattern_defaults.py`` holds the two readings equal on complete configs,
and both against tiny models of transformers.

Contract. A model type is read by one :class:`ClassReading` of :data:`CLASS_READINGS`: how its
class converts the rotary keys (``rope``), what its ``__post_init__`` derives from the keys given
(``derive``), which keys it reads as off when absent (``off``) and which file key each layer
type's ``rope_theta`` comes from (``theta_keys``).
"""

from __future__ import annotations

import copy
import importlib
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._validation import (
    check_base,
    check_bool,
    check_instance,
    check_nonnegative_int,
    check_positive_int,
    check_real,
)

__all__ = ["CLASS_READINGS", "ClassReading", "ModelConfig", "read_config"]

#: The rotary methods whose entry holds the training length ``original_max_position_embeddings``
#: (``standardize_rope_params`` puts it there).
SCALED_TYPES = ("llama3", "yarn", "longrope")

#: Multimodal model types and the model type of their ``text_config``.
TEXT_PARTS = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text"}

_ORIGINAL = "original_max_position_embeddings"
_MISSING: Any = object()


def _version() -> str | None:
    """The installed transformers' version, or ``None`` (it is not imported)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python >= 3.8 has it
        return None
    try:
        return version("transformers")
    except PackageNotFoundError:
        return None


# --- checks of the keys a file gives -----------------------------------------------------------


def _optional(check: Callable[[str, object], object]) -> Callable[[str, object], object]:
    """``check``, with ``None`` allowed (the key's "none": no window, size from other keys)."""
    return lambda name, value: None if value is None else check(name, value)


def _fraction(name: str, value: object) -> float:
    value = check_real(name, value, above=0.0)
    if value > 1.0:
        raise ValueError(f"{name} must be in (0, 1] (the share of channels rotated), got {value!r}")
    return value


def _mapping(name: str, value: object) -> object:
    if value is not None and not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be a mapping (a rotary entry, or one per layer type) or null, got "
            f"{type(value).__name__}"
        )
    return value


def _list_of(name: str, value: object, item: Callable[[str, object], object]) -> object:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list, got {type(value).__name__}")
    for i, entry in enumerate(value):
        item(f"{name}[{i}]", entry)
    return value


def _layer_type_name(name: str, value: object) -> object:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a layer type such as 'full_attention', got {value!r}")
    return value


def _rope_flag(name: str, value: object) -> object:
    if isinstance(value, bool) or value not in (0, 1) or isinstance(value, float):
        raise ValueError(
            f"{name} must be 0 or 1 (1: the layer uses RoPE; Llama 4's and SmolLM3's "
            f"no_rope_layers), got {value!r}"
        )
    return value


def _bidirectional(name: str, value: object) -> object:
    if value is None or isinstance(value, bool) or value in ("all", "vision"):
        return value
    raise ValueError(
        f"{name} must be true, false or null (Gemma 2 and 3), or 'all', 'vision' or null (Gemma "
        f"4), got {value!r}"
    )


#: The check of every key that sets positions, applied to the keys a config gives.
_CHECKS: dict[str, Callable[[str, object], object]] = {
    "num_hidden_layers": check_positive_int,
    "max_position_embeddings": check_positive_int,
    _ORIGINAL: check_positive_int,
    "rope_theta": check_base,
    "rope_local_base_freq": check_base,
    "partial_rotary_factor": _fraction,
    "sliding_window": _optional(check_positive_int),
    "attention_chunk_size": _optional(check_positive_int),
    "sliding_window_pattern": check_positive_int,
    "no_rope_layer_interval": check_positive_int,
    "max_window_layers": check_nonnegative_int,
    "use_sliding_window": check_bool,
    "use_bidirectional_attention": _bidirectional,
    "rope_interleave": check_bool,
    "attn_temperature_tuning": check_bool,
    "floor_scale": check_positive_int,
    "attn_scale": lambda name, value: check_real(name, value, at_least=0.0),
    "head_dim": _optional(check_positive_int),
    "global_head_dim": check_positive_int,
    "hidden_size": check_positive_int,
    "num_attention_heads": check_positive_int,
    "qk_rope_head_dim": check_positive_int,
    "rope_scaling": _mapping,
    "rope_parameters": _mapping,
    "layer_types": lambda name, value: _list_of(name, value, _layer_type_name),
    "no_rope_layers": lambda name, value: _list_of(name, value, _rope_flag),
}


def _check_keys(config: Mapping[str, Any]) -> None:
    """Check the keys ``config`` gives (a ``None`` counts as given: transformers keeps it)."""
    for key, check in _CHECKS.items():
        if key in config:
            check(f"config[{key!r}]", config[key])
    layers, types = config.get("num_hidden_layers"), config.get("layer_types")
    if layers is not None and types is not None and len(types) != layers:
        raise ValueError(
            f"config['layer_types'] must name one type per layer (num_hidden_layers={layers}), "
            f"got {len(types)} entries"
        )
    flags = config.get("no_rope_layers")
    if layers is not None and flags and len(flags) != layers:
        raise ValueError(
            f"config['no_rope_layers'] must hold one 0 or 1 per layer (num_hidden_layers="
            f"{layers}; 1 means the layer uses RoPE), got {len(flags)} entries"
        )


# --- what each configuration class does -------------------------------------------------------


@dataclass(frozen=True)
class ClassReading:
    """How transformers 5.23's configuration class of one model type reads a config.

    Attributes:
        class_name: the class (``"Gemma3TextConfig"``), for messages.
        rope: ``"standard"`` (``convert_rope_params_to_dict`` of the mixin), ``"gemma3"``
            (``rope_scaling`` for the full layers, ``rope_local_base_freq`` for the sliding
            ones), ``"gemma4"`` (``rope_parameters`` only) or ``"phi3"`` (the top-level
            ``original_max_position_embeddings`` and ``partial_rotary_factor``; ``"su"`` and
            ``"yarn"`` read as ``"longrope"``).
        derive: ``(values, notes) -> None``: what ``__post_init__`` derives from keys given
            (``layer_types`` from a pattern, ``head_dim`` from the sizes), mutating ``values``.
        off: keys read as off when absent, with their value.
        theta_keys: the file key each layer type's ``rope_theta`` comes from (``None``: a
            single entry).
        rope_default: the class has a rotary entry of its own for a file with none (gpt-oss:
            YaRN x32), so such a file's entry is refused where the class is not used.
    """

    class_name: str
    rope: str = "standard"
    derive: Callable[[dict[str, Any], list[str]], None] | None = None
    off: Mapping[str, object] = field(default_factory=dict)
    theta_keys: Mapping[str | None, str] = field(default_factory=lambda: {None: "rope_theta"})
    rope_default: bool = False


def _layers(values: Mapping[str, Any]) -> int | None:
    count: int | None = values.get("num_hidden_layers")
    return count


def _head_from_sizes(values: dict[str, Any], notes: list[str]) -> None:
    """``head_dim = hidden_size // num_attention_heads`` where the file gives no head size."""
    if values.get("head_dim") is None and _given(values, "hidden_size", "num_attention_heads"):
        values["head_dim"] = values["hidden_size"] // values["num_attention_heads"]


def _given(values: Mapping[str, Any], *keys: str) -> bool:
    return all(values.get(key) is not None for key in keys)


def _every(values: dict[str, Any], every: int) -> list[str] | None:
    """Sliding layers with every ``every``-th one full (Gemma 3, Cohere 2), or ``None``."""
    count = _layers(values)
    if count is None:
        return None
    return ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(count)]


def _from_pattern(values: dict[str, Any], notes: list[str]) -> None:
    """``layer_types`` from the int ``sliding_window_pattern`` older files hold."""
    pattern = values.pop("sliding_window_pattern", None)
    if pattern is None:
        return
    if values.get("layer_types") is None:
        types = _every(values, pattern)
        if types is not None:
            values["layer_types"] = types
    elif values["layer_types"] != _every(values, pattern):
        notes.append(
            f"sliding_window_pattern {pattern} is ignored: layer_types is given, and transformers "
            f"reads it instead"
        )


def _halve_window(values: dict[str, Any], notes: list[str]) -> None:
    """Bidirectional Gemma: the class keeps ``sliding_window // 2 + 1`` and writes it back as
    ``2 (w - 1)``, so an odd window loses one."""
    window = values.get("sliding_window")
    if window is None:
        return
    kept = (window // 2 + 1 - 1) * 2
    if kept != window:
        notes.append(
            f"sliding_window {window} is read as {kept}: with bidirectional attention transformers "
            f"keeps sliding_window // 2 + 1 = {window // 2 + 1} keys on each side"
        )
        values["sliding_window"] = kept


def _gemma3(values: dict[str, Any], notes: list[str]) -> None:
    if values.get("use_bidirectional_attention"):
        _halve_window(values, notes)
    _from_pattern(values, notes)


def _gemma4(values: dict[str, Any], notes: list[str]) -> None:
    if values.get("use_bidirectional_attention") == "all":
        _halve_window(values, notes)
    types = values.get("layer_types")
    if types and types[-1] != "full_attention":
        notes.append(
            f"layer_types[-1] {types[-1]!r} is read as 'full_attention': transformers' "
            f"Gemma4TextConfig forces the last layer to full attention"
        )
        values["layer_types"] = [*types[:-1], "full_attention"]
    global_head = values.pop("global_head_dim", None)
    if global_head is not None and values.get("layer_types") and "per_layer_config" not in values:
        values["per_layer_config"] = {
            str(i): {"head_dim": global_head}
            for i, kind in enumerate(values["layer_types"])
            if kind == "full_attention"
        }


def _cohere2(values: dict[str, Any], notes: list[str]) -> None:
    if _given(values, "hidden_size", "num_attention_heads"):
        head = values["hidden_size"] // values["num_attention_heads"]
        if values.get("head_dim") not in (None, head):
            notes.append(
                f"head_dim {values['head_dim']} is ignored: Cohere2Config sets hidden_size // "
                f"num_attention_heads = {head}"
            )
        values["head_dim"] = head
    _from_pattern(values, notes)


def _qwen(values: dict[str, Any], notes: list[str]) -> None:
    if not values.get("use_sliding_window"):
        if values.get("sliding_window") is not None:
            notes.append(
                f"sliding_window {values['sliding_window']} is ignored: use_sliding_window is "
                f"false, and transformers then sets it to None"
            )
        values["sliding_window"] = None
    if values.get("layer_types") is not None:
        return
    count = _layers(values)
    if count is not None and "sliding_window" in values and values["sliding_window"] is None:
        values["layer_types"] = ["full_attention"] * count
    elif count is not None and _given(values, "sliding_window", "max_window_layers"):
        first = values["max_window_layers"]
        values["layer_types"] = [
            "sliding_attention" if i >= first else "full_attention" for i in range(count)
        ]


def _no_rope_flags(values: dict[str, Any], keep_empty: bool) -> None:
    """``no_rope_layers`` from ``no_rope_layer_interval`` (1: the layer uses RoPE) where the
    file gives none (``None``; for Llama 4 an empty list too)."""
    flags = values.get("no_rope_layers")
    given = flags is not None if keep_empty else bool(flags)
    if given:
        return
    interval, count = values.get("no_rope_layer_interval"), _layers(values)
    if interval is not None and count is not None:
        values["no_rope_layers"] = [int((i + 1) % interval != 0) for i in range(count)]
    else:
        values.pop("no_rope_layers", None)  # asked for, it names what is missing


def _llama4(values: dict[str, Any], notes: list[str]) -> None:
    _head_from_sizes(values, notes)
    _no_rope_flags(values, keep_empty=False)  # an empty list, as Scout's file, is no list
    if values.get("layer_types") is None and values.get("no_rope_layers"):
        values["layer_types"] = [
            "chunked_attention" if flag else "full_attention" for flag in values["no_rope_layers"]
        ]


def _smollm3(values: dict[str, Any], notes: list[str]) -> None:
    _no_rope_flags(values, keep_empty=True)
    if values.get("layer_types") is None and values.get("no_rope_layers") is not None:
        windows = values.get("use_sliding_window") and values.get("sliding_window") is not None
        values["layer_types"] = [
            "sliding_attention" if windows and not flag else "full_attention"
            for flag in values["no_rope_layers"]
        ]


def _deepseek(values: dict[str, Any], notes: list[str]) -> None:
    if values.get("qk_rope_head_dim") is not None:
        values["head_dim"] = values["qk_rope_head_dim"]


def _mistral(values: dict[str, Any], notes: list[str]) -> None:
    _head_from_sizes(values, notes)
    if values.get("layer_types") is not None:
        notes.append(
            "layer_types is ignored: transformers' Mistral applies sliding_window to every layer "
            "(or to none)"
        )


_LOCAL = "rope_local_base_freq"
_GEMMA_THETAS: Mapping[str | None, str] = {
    "full_attention": "rope_theta",
    "sliding_attention": _LOCAL,
}

#: Every model type pe_lib reads, with what its configuration class does; a new model type is
#: one entry here and one rule in :data:`pe_lib.models.layer_pattern.LAYER_PATTERNS`.
CLASS_READINGS: dict[str, ClassReading] = {
    "llama": ClassReading("LlamaConfig", derive=_head_from_sizes),
    "olmo2": ClassReading("Olmo2Config"),
    "gemma": ClassReading("GemmaConfig"),
    "phi": ClassReading("PhiConfig"),
    "qwen2": ClassReading("Qwen2Config", derive=_qwen, off={"use_sliding_window": False}),
    "qwen3": ClassReading("Qwen3Config", derive=_qwen, off={"use_sliding_window": False}),
    "mistral": ClassReading("MistralConfig", derive=_mistral),
    "phi3": ClassReading("Phi3Config", rope="phi3", off={"sliding_window": None}),
    "deepseek_v3": ClassReading("DeepseekV3Config", derive=_deepseek),
    "gemma2": ClassReading("Gemma2Config", off={"use_bidirectional_attention": None}),
    "gemma3_text": ClassReading(
        "Gemma3TextConfig",
        rope="gemma3",
        derive=_gemma3,
        off={"use_bidirectional_attention": False},
        theta_keys=_GEMMA_THETAS,
    ),
    "gemma4_text": ClassReading(
        "Gemma4TextConfig",
        rope="gemma4",
        derive=_gemma4,
        off={"use_bidirectional_attention": None},
        theta_keys={
            "full_attention": "rope_parameters['full_attention']['rope_theta']",
            "sliding_attention": "rope_parameters['sliding_attention']['rope_theta']",
        },
    ),
    "cohere2": ClassReading("Cohere2Config", derive=_cohere2),
    "gpt_oss": ClassReading("GptOssConfig", derive=_head_from_sizes, rope_default=True),
    "llama4_text": ClassReading("Llama4TextConfig", derive=_llama4),
    "smollm3": ClassReading(
        "SmolLM3Config",
        derive=_smollm3,
        off={"use_sliding_window": False, "sliding_window": None},
    ),
    # hybrids: their classes read the rotary keys as the mixin does, and derive nothing pe_lib's
    # rules ask for from keys a file gives (their layer kinds are the class's to fill in)
    "jamba": ClassReading("JambaConfig"),
    "falcon_h1": ClassReading("FalconH1Config"),
    "qwen3_next": ClassReading("Qwen3NextConfig"),
    "kimi_linear": ClassReading("KimiLinearConfig"),
}


# --- the rotary keys ---------------------------------------------------------------------------


def _rope_type(entry: dict[str, Any]) -> None:
    entry.setdefault("rope_type", entry.get("type", "default"))


def _nested_keys(values: Mapping[str, Any], rope: Mapping[str, Any]) -> list[str]:
    """The keys of ``rope`` that are layer types the config names (transformers'
    ``nested_rope_parameter_keys``)."""
    labels = values.get("layer_types") or ()
    return [key for key in rope if key in labels]


def _standardize(values: dict[str, Any], rope: dict[str, Any], original_field: bool) -> None:
    """``standardize_rope_params``: the method's name under ``rope_type``, and the training
    length in the entries of llama3, yarn and longrope."""
    nested = _nested_keys(values, rope)
    if not nested:
        _rope_type(rope)
        if rope["rope_type"] in SCALED_TYPES:
            if original_field:  # Phi-3: the top-level key wins (the class has it as a field)
                rope.pop(_ORIGINAL, None)
                if values.get(_ORIGINAL) is not None:
                    rope[_ORIGINAL] = values[_ORIGINAL]
            elif values.get("max_position_embeddings") is not None:
                rope.setdefault(_ORIGINAL, values["max_position_embeddings"])
        return
    for key in nested:
        entry = rope[key]
        if entry is None:
            continue
        _rope_type(entry)
        if entry["rope_type"] in SCALED_TYPES and values.get("max_position_embeddings"):
            entry.setdefault(_ORIGINAL, values["max_position_embeddings"])


def _ignored_top_level(values: dict[str, Any], notes: list[str], keys: Sequence[str]) -> None:
    for key in keys:
        if key in values:
            notes.append(
                f"{key} is ignored: transformers' class for this model type reads it from no "
                f"place but rope_parameters"
            )
            values.pop(key)


def _theta_of(defaults: Mapping[str, Any] | None, layer_type: str | None = None) -> Any:
    """The class's own ``rope_theta`` (of ``layer_type``'s entry), or ``_MISSING``."""
    if defaults is None:
        return _MISSING
    entry = defaults if layer_type is None else defaults.get(layer_type) or {}
    return entry.get("rope_theta", _MISSING)


def _rope_standard(
    values: dict[str, Any], notes: list[str], defaults: Mapping[str, Any] | None
) -> None:
    scaling = values.pop("rope_scaling", None)
    given = values.get("rope_parameters")
    if scaling and given:
        notes.append(
            "rope_parameters is ignored: the file also holds rope_scaling (transformers 4's name), "
            "which transformers reads in its place"
        )
    given_theta = values.pop("rope_theta", _MISSING)
    theta = _theta_of(defaults) if given_theta is _MISSING else given_theta
    share = values.pop("partial_rotary_factor", _MISSING)
    if share is _MISSING and defaults is not None:  # Phi-2's class sets 0.5
        share = defaults.get("partial_rotary_factor", _MISSING)
    source = scaling or given
    if not source and CLASS_READINGS[values["model_type"]].rope_default:
        if defaults is None:
            values.pop("rope_parameters", None)  # the class's own entry: asked for, it is named
            return
        source = {k: v for k, v in defaults.items() if k != "rope_theta"}
    rope: dict[str, Any] = copy.deepcopy(dict(source or {}))
    nested = _nested_keys(values, rope)
    for entry in [rope[key] for key in nested] or [rope]:
        if entry is None:
            continue
        if theta is not _MISSING:
            entry.setdefault("rope_theta", theta)
        if share is not _MISSING:
            entry.setdefault("partial_rotary_factor", share)
    _standardize(values, rope, original_field=False)
    for entry in [rope[key] for key in nested] or [rope]:
        if entry is not None and given_theta is not _MISSING and entry["rope_theta"] != given_theta:
            notes.append(
                f"rope_theta {given_theta} at the top level is ignored: the rotary entry holds "
                f"its own, {entry['rope_theta']}"
            )
    if not nested and values.get(_ORIGINAL) is not None:
        where = (
            "the rotary entry holds its own"
            if rope.get("rope_type") in SCALED_TYPES
            else f"rope_type {rope.get('rope_type')!r} reads no training length"
        )
        notes.append(
            f"original_max_position_embeddings {values[_ORIGINAL]} at the top level is ignored "
            f"({where}: {rope.get(_ORIGINAL)}); only Phi-3's class reads the top-level key"
        )
    values["rope_parameters"] = rope


def _rope_phi3(
    values: dict[str, Any], notes: list[str], defaults: Mapping[str, Any] | None
) -> None:
    scaling = values.pop("rope_scaling", None)
    rope: dict[str, Any] = copy.deepcopy(dict(scaling or values.get("rope_parameters") or {}))
    theta = values.pop("rope_theta", _theta_of(defaults))
    if theta is not _MISSING:
        rope.setdefault("rope_theta", theta)
    rope.setdefault("partial_rotary_factor", values.get("partial_rotary_factor", 1.0))
    _standardize(values, rope, original_field=True)
    if rope["rope_type"] in ("su", "yarn"):
        rope["rope_type"] = "longrope"
    values["rope_parameters"] = rope


def _rope_gemma3(
    values: dict[str, Any], notes: list[str], defaults: Mapping[str, Any] | None
) -> None:
    scaling = values.pop("rope_scaling", None)
    rope: dict[str, Any] = copy.deepcopy(dict(values.get("rope_parameters") or {}))
    if not rope:
        rope = {
            "sliding_attention": {"rope_type": "default"},
            "full_attention": {"rope_type": "default"},
        }
    if rope.get("full_attention") is None:
        rope["full_attention"] = {"rope_type": "default"}
    if scaling is not None:
        rope["full_attention"].update(scaling)
    for layer_type, key in (("full_attention", "rope_theta"), ("sliding_attention", _LOCAL)):
        theta = values.pop(key, _theta_of(defaults, layer_type))
        if rope.get(layer_type) is None:
            rope[layer_type] = {"rope_type": "default"}
        if theta is not _MISSING:
            rope[layer_type].setdefault("rope_theta", theta)
    _ignored_top_level(values, notes, ("partial_rotary_factor",))
    _standardize(values, rope, original_field=False)
    values["rope_parameters"] = rope


def _rope_gemma4(
    values: dict[str, Any], notes: list[str], defaults: Mapping[str, Any] | None
) -> None:
    _ignored_top_level(
        values,
        notes,
        ("rope_theta", "rope_scaling", "rope_local_base_freq", "partial_rotary_factor"),
    )
    rope = values.get("rope_parameters") or defaults
    if rope is None:
        values.pop("rope_parameters", None)  # asked for, it names what is missing
        return
    rope = copy.deepcopy(dict(rope))
    for key in _nested_keys(values, rope):
        if rope[key] is not None:
            _rope_type(rope[key])
    values["rope_parameters"] = rope


_ROPE_READINGS: dict[str, Callable[[dict[str, Any], list[str], Mapping[str, Any] | None], None]] = {
    "standard": _rope_standard,
    "gemma3": _rope_gemma3,
    "gemma4": _rope_gemma4,
    "phi3": _rope_phi3,
}

#: The keys of a file that set its rotary entries (read by pe_lib, also where the class fills
#: in the others).
_ROPE_KEYS = (
    "rope_scaling",
    "rope_parameters",
    "rope_theta",
    "rope_local_base_freq",
    "partial_rotary_factor",
)


def _derive(config: Mapping[str, Any], reading: ClassReading) -> tuple[dict[str, Any], list[str]]:
    """The keys ``config`` gives, with what the class derives from them (nothing filled in)."""
    values: dict[str, Any] = copy.deepcopy(dict(config))
    notes: list[str] = []
    for key, off in reading.off.items():
        values.setdefault(key, off)
    if reading.derive is not None:
        reading.derive(values, notes)
    return values, notes


def _rope(
    values: dict[str, Any],
    rope_keys: Mapping[str, Any],
    reading: ClassReading,
    defaults: Mapping[str, Any] | None,
) -> list[str]:
    """Put the file's rotary keys into ``values["rope_parameters"]`` as the class does, the
    class's own entries (``defaults``: what it builds from no rotary key) where the file has no
    value; returns the notes."""
    for key in _ROPE_KEYS:
        values.pop(key, None)
    values.update(copy.deepcopy(dict(rope_keys)))
    notes: list[str] = []
    _ROPE_READINGS[reading.rope](values, notes, defaults)
    return notes


# --- the result --------------------------------------------------------------------------------

#: The keys whose filled-in values :attr:`ModelConfig.assumed` reports.
_TRACKED = (
    "num_hidden_layers",
    "max_position_embeddings",
    _ORIGINAL,
    "head_dim",
    "layer_types",
    "sliding_window",
    "attention_chunk_size",
    "no_rope_layers",
    "use_bidirectional_attention",
    "attn_temperature_tuning",
    "floor_scale",
    "attn_scale",
    "rope_interleave",
    "qk_rope_head_dim",
    "per_layer_config",
)


def _paths(values: Mapping[str, Any]) -> dict[str, Any]:
    """The tracked keys, the rotary entries' keys one by one (``rope_parameters['full_attention']
    ['rope_theta']``)."""
    found = {key: values[key] for key in _TRACKED if key in values}
    rope = values.get("rope_parameters")
    if isinstance(rope, Mapping):
        for key, value in rope.items():
            if isinstance(value, Mapping):
                for name, item in value.items():
                    found[f"rope_parameters[{key!r}][{name!r}]"] = item
            else:
                found[f"rope_parameters[{key!r}]"] = value
    return found


def _same(a: object, b: object) -> bool:
    if isinstance(a, numbers.Real) and isinstance(b, numbers.Real):
        return math.isclose(float(a), float(b), rel_tol=1e-12)
    if isinstance(a, Sequence) and isinstance(b, Sequence) and not isinstance(a, str):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@dataclass(frozen=True)
class ModelConfig:
    """A model's configuration as its transformers configuration class fills it in.

    Attributes:
        model_type: the (text) model type, a key of :data:`CLASS_READINGS`.
        values: every key, as the class holds it (its ``to_dict()``), or as pe_lib rewrote the
            file's keys where the class was not used; the rotary entries under
            ``rope_parameters`` with ``rope_theta`` inside, as the class puts them there.
        assumed: for each key that sets positions and that the file leaves out, the value the
            class filled in (rotary entries key by key: ``"rope_parameters['full_attention']
            ['rope_theta']"``); empty where nothing was filled in.
        notes: keys the class reads otherwise than the file writes them (ignored, moved,
            changed), one sentence each.
        filled_by: ``"transformers 5.23.0's Gemma3TextConfig"``, or ``None`` where the file's
            keys were read without transformers.
    """

    model_type: str
    values: Mapping[str, Any]
    assumed: Mapping[str, Any]
    notes: tuple[str, ...]
    filled_by: str | None

    @property
    def reading(self) -> ClassReading | None:
        """The model type's entry of :data:`CLASS_READINGS` (``None``: a config without one)."""
        return CLASS_READINGS.get(self.model_type)

    def has(self, key: str) -> bool:
        """Whether the configuration holds ``key`` (a ``None`` value counts: it means "none")."""
        return key in self.values

    def get(self, key: str, why: str = "") -> Any:
        """``values[key]``, or ``ValueError`` naming the key where the configuration lacks it.

        ``why`` (``"for the sliding layers' window"``) goes into the message.
        """
        if key not in self.values:
            raise ValueError(self.lacks(key, why))
        return self.values[key]

    def lacks(self, key: str, why: str = "") -> str:
        """The message for a key the configuration does not hold."""
        what = f"model_type {self.model_type!r}" if self.model_type else "this rule"
        because = f" {why}" if why else ""
        reading = self.reading
        if self.filled_by is not None:
            how = f"{self.filled_by} does not fill it in either; give it in the config"
        elif reading is None:
            how = "give it in the config"
        else:
            why_not = (
                "transformers is not installed"
                if _version() is None
                else "the config was read without transformers (use_transformers=False)"
            )
            how = (
                f"{why_not}, so the default of its {reading.class_name} is not read, and pe_lib "
                f"substitutes none: give it in the config"
            )
        return f"config lacks {key!r}, which {what} needs{because}; {how}"

    def rope_parameters(self) -> Mapping[str, Any]:
        """``values["rope_parameters"]``, each entry holding its ``rope_theta`` (and its training
        length where the method has one); a missing one raises ``ValueError`` naming the key of
        the file it comes from."""
        rope = self.get("rope_parameters", "for its rotary embedding")
        if not isinstance(rope, Mapping):
            raise TypeError(
                f"config['rope_parameters'] must be a mapping, got {type(rope).__name__}"
            )
        reading = self.reading
        nested = "rope_type" not in rope and "type" not in rope
        entries = list(rope.items()) if nested else [(None, rope)]
        for layer_type, entry in entries:
            if not isinstance(entry, Mapping):
                continue
            where = "" if layer_type is None else f" of the {layer_type!r} layers"
            if "rope_theta" not in entry:
                keys = reading.theta_keys if reading is not None else {None: "rope_theta"}
                key = keys.get(layer_type, keys.get(None, "rope_theta"))
                raise ValueError(self.lacks(key, f"for the rotary base{where}"))
            kind = entry.get("rope_type", entry.get("type"))
            if kind in SCALED_TYPES and _ORIGINAL not in entry:
                key = (
                    _ORIGINAL
                    if reading is not None and reading.rope == "phi3"
                    else "max_position_embeddings"
                )
                raise ValueError(
                    self.lacks(key, f"for the training length of its {kind} scaling{where}")
                )
        return rope

    def head_size(self, layer: int | None = None) -> int:
        """The head size of layer ``layer`` (Gemma 4's full layers have their own), as
        transformers' rotary code takes it: ``head_dim``, else ``hidden_size //
        num_attention_heads``."""
        if layer is not None:
            per_layer = self.values.get("per_layer_config") or {}
            own = per_layer.get(str(layer), per_layer.get(layer)) or {}
            if own.get("head_dim") is not None:
                return check_positive_int(
                    f"config['per_layer_config'][{str(layer)!r}]['head_dim']", own["head_dim"]
                )
        if self.values.get("head_dim") is not None:
            return check_positive_int("config['head_dim']", self.values["head_dim"])
        hidden = self.get("hidden_size", "for the head size (no head_dim given)")
        heads = self.get("num_attention_heads", "for the head size (no head_dim given)")
        return check_positive_int(
            "config['hidden_size'] // config['num_attention_heads']", hidden // heads
        )


def _text_part(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The text model's keys: ``config["text_config"]`` for a multimodal model type."""
    model_type = config.get("model_type")
    if model_type not in TEXT_PARTS:
        return config
    text = config.get("text_config")
    if not isinstance(text, Mapping):
        raise ValueError(
            f"config['text_config'] must hold the text model's keys for model_type "
            f"{model_type!r} (its config.json keeps them there), got {text!r}"
        )
    return {"model_type": TEXT_PARTS[str(model_type)], **text}


def _theta_given(path: str, text: Mapping[str, Any], reading: ClassReading) -> bool:
    """Whether ``path`` is a rotary base the file gives under a key of its own (gpt-oss's
    ``rope_theta`` beside no entry: the class puts it into its own)."""
    if not path.endswith("['rope_theta']"):
        return False
    for layer_type, key in reading.theta_keys.items():
        inside = path == "rope_parameters['rope_theta']" or f"[{layer_type!r}]" in path
        if inside and key in text:
            return True
    return False


def as_given(config: Mapping[str, Any]) -> ModelConfig:
    """A config with no ``model_type``, its keys checked, read as it is (temperature rules
    that need no model type read such configs)."""
    config = check_instance("config", config, Mapping)  # type: ignore[type-abstract]
    _check_keys(config)
    return ModelConfig("", MappingProxyType(dict(config)), {}, (), None)


def _fill(model_type: str, config: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The class built from ``config`` without its rotary keys (``AutoConfig.for_model``), as
    ``to_dict()``, and the class's name; ``None`` where transformers is not installed or has no
    class for ``model_type``. Its ``rope_parameters`` are the class's own, for a file with no
    rotary keys."""
    try:
        transformers = importlib.import_module("transformers")
    except ImportError:
        return None
    mapping = transformers.CONFIG_MAPPING
    if model_type not in mapping:
        return None
    cls = mapping[model_type]
    name = f"transformers {transformers.__version__}'s {cls.__name__}"
    keys = {k: v for k, v in config.items() if k != "model_type" and k not in _ROPE_KEYS}
    logger = transformers.logging
    level = logger.get_verbosity()
    logger.set_verbosity_error()  # Gemma 4 warns where it forces its last layer; pe_lib notes it
    try:
        made = cls(**copy.deepcopy(keys))
    except Exception as error:  # the class's own checks: TypeError, ValueError and others
        raise ValueError(f"{name} refused the config: {error}") from error
    finally:
        logger.set_verbosity(level)
    return made.to_dict(), name


def read_config(config: Mapping[str, Any], *, use_transformers: bool | None = None) -> ModelConfig:
    """A model's configuration as its transformers configuration class fills it in.

    Args:
        config: a model's ``config.json`` as a mapping (``json.load``), or transformers'
            ``config.to_dict()``. Its ``model_type`` must be a key of :data:`CLASS_READINGS`;
            for a multimodal model type (``"gemma3"``, ``"llama4"``, ``"gemma4"``) its
            ``text_config`` is read. The mapping is not changed.
        use_transformers: ``None`` (the default): fill in the keys the file leaves out from
            transformers' configuration class where transformers is installed; ``False``:
            read the file's keys alone (a key the class would fill in is refused when asked
            for); ``True``: require transformers.

    Returns:
        a :class:`ModelConfig`.

    Raises:
        TypeError: ``config`` is not a mapping, or a key that sets positions has the wrong type.
        ValueError: the model type is missing or unknown, a key's value is out of range
            (``rope_theta`` of -5, one ``layer_types`` entry per layer), transformers' class
            refuses the config, or ``use_transformers=True`` without transformers.
    """
    config = check_instance("config", config, Mapping)  # type: ignore[type-abstract]
    if use_transformers is not None:
        check_bool("use_transformers", use_transformers)
    text = _text_part(config)
    model_type = text.get("model_type")
    if not isinstance(model_type, str) or model_type not in CLASS_READINGS:
        raise ValueError(
            f"config['model_type'] must be one of {', '.join(map(repr, CLASS_READINGS))} (or "
            f"{', '.join(map(repr, TEXT_PARTS))} with a 'text_config'); a new model type is an "
            f"entry of pe_lib.models.config_reader.CLASS_READINGS and a rule of "
            f"pe_lib.models.layer_pattern.LAYER_PATTERNS; got {model_type!r}"
        )
    _check_keys(text)
    reading = CLASS_READINGS[model_type]
    ours, notes = _derive(text, reading)
    rope_keys = {key: text[key] for key in _ROPE_KEYS if key in text}
    rope_notes = _rope(ours, rope_keys, reading, None)
    filled = None if use_transformers is False else _fill(model_type, text)
    if filled is None:
        if use_transformers:
            raise ValueError(
                f"use_transformers=True needs transformers with a configuration class for "
                f"model_type {model_type!r}; it is not installed (or has none)"
            )
        notes += rope_notes
        return ModelConfig(model_type, MappingProxyType(ours), {}, tuple(notes), None)
    theirs, filled_by = filled
    notes += _rope(theirs, rope_keys, reading, theirs.get("rope_parameters"))
    our_paths, their_paths = _paths(ours), _paths(theirs)
    assumed = {
        path: value
        for path, value in their_paths.items()
        if path not in our_paths and not _theta_given(path, text, reading)
    }
    for path in sorted(our_paths.keys() & their_paths.keys()):
        if not _same(our_paths[path], their_paths[path]):
            notes.append(
                f"{path} is read as {their_paths[path]!r} by {filled_by} (the file's keys give "
                f"{our_paths[path]!r})"
            )
    return ModelConfig(
        model_type, MappingProxyType(theirs), MappingProxyType(assumed), tuple(notes), filled_by
    )
