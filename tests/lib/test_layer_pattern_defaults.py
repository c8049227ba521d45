"""Configs that leave keys to their model type, against what transformers 5.23 runs.

:func:`pe_lib.models.layer_pattern.layer_pattern` and :func:`pe_lib.models.temperature.attention_temperature`
read a config through :func:`pe_lib.models.config_reader.read_config`, which takes the keys a file leaves
out from the model type's configuration class, and refuses them, by name, without transformers.
Each test below fails on the readings pe_lib had before: windows reported as full attention
(Mistral, Phi-3, Qwen2 with sliding ``layer_types``), bidirectional Gemma read as causal, the
defaults of gpt-oss, Gemma 3 and Gemma 4 replaced by generic ones, YaRN's temperature refused
under ``partial_rotary_factor``, LongRoPE's temperature missing, and bad values accepted.

Then a property test per API: hypothesis draws configs of every model type pe_lib reads, in the
shapes published files have (keys left out, ``rope_theta`` and ``rope_scaling`` at the top level,
patterns as ints), and a tiny model of transformers, built from the same dict, is the reference:
per layer, the mask its eager attention gets, whether it rotates, and the queries its rotation
function returns, against pe_lib's :class:`~pe_lib.models.layer_pattern.LayerPositions` and
:func:`pe_lib.rope.apply_rope`; per rule, the factor its modules apply. :func:`verdict_of_pattern`
and :func:`verdict_of_temperature` say "match", "refused" (a ValueError or TypeError from pe_lib)
or "wrong"; the properties allow no "wrong".
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

transformers = pytest.importorskip("transformers")

from pe_lib.models.config_reader import read_config  # noqa: E402
from pe_lib.models.layer_pattern import LAYER_PATTERNS, LayerPositions, layer_pattern  # noqa: E402
from pe_lib.models.temperature import attention_temperature  # noqa: E402
from pe_lib.rope import apply_rope  # noqa: E402
from pe_lib.rope.scaling import resolve_scaling  # noqa: E402

transformers.logging.set_verbosity_error()  # tiny configs draw warnings

#: Length of the sequences the tiny models run.
LENGTH = 9
#: transformers rotates in float32 with float32 cos and sin; pe_lib's float64 angles, rounded once.
ATOL = 2e-5


def _mask(layer: LayerPositions, length: int = LENGTH) -> torch.Tensor:
    return torch.tensor([[layer.visible(i, j) for j in range(length)] for i in range(length)])


# --- the items of the issue ---------------------------------------------------------------------


def test_gemma3_bidirectional_attention_sees_both_ways():
    """Gemma 3's full layers see every key; its sliding ones those with |i - j| < w // 2 + 1."""
    config = transformers.Gemma3TextConfig(
        num_hidden_layers=2,
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=8,
        use_bidirectional_attention=True,
    )
    sliding, full = layer_pattern(config.to_dict())
    assert full.visible(0, 5) and not full.causal
    assert [sliding.visible(4, j) for j in range(10)] == [abs(4 - j) < 5 for j in range(10)]


def test_gemma4_all_bidirectional_and_last_layer_full():
    """Gemma 4's ``"all"``: |i - j| <= w // 2 + 1 on sliding layers; its class forces the last
    layer to full attention, with a warning, where layer_types says otherwise."""
    published = {
        "model_type": "gemma4_text",
        "num_hidden_layers": 3,
        "layer_types": ["sliding_attention"] * 3,
        "sliding_window": 6,
        "use_bidirectional_attention": "all",
    }
    pattern = layer_pattern(published)
    assert [layer.attention for layer in pattern] == ["sliding", "sliding", "full"]
    assert [pattern[0].visible(0, j) for j in range(7)] == [j <= 4 for j in range(7)]
    assert pattern[2].visible(0, 5)
    notes = read_config(published).notes
    assert any("forces the last layer" in note for note in notes), notes


def test_gemma2_bidirectional_is_refused():
    config = transformers.Gemma2Config(num_hidden_layers=2, use_bidirectional_attention=True)
    with pytest.raises(ValueError, match="use_bidirectional_attention"):
        layer_pattern(config.to_dict())


@pytest.mark.parametrize(
    ("published", "window"),
    [
        ({"model_type": "mistral", "num_hidden_layers": 2, "rope_theta": 1e6}, 4096),
        (
            {
                "model_type": "mistral",
                "num_hidden_layers": 2,
                "rope_theta": 1e6,
                "sliding_window": 7,
            },
            7,
        ),
        ({"model_type": "phi3", "num_hidden_layers": 2, "sliding_window": 2047}, 2047),
    ],
    ids=["mistral-default", "mistral-7", "phi3-2047"],
)
def test_one_window_for_every_layer(published, window):
    pattern = layer_pattern(published)
    assert {(layer.attention, layer.window) for layer in pattern} == {("sliding", window)}


def test_mistral_with_no_window_is_full():
    published = {"model_type": "mistral", "num_hidden_layers": 2, "sliding_window": None}
    assert {layer.attention for layer in layer_pattern(published)} == {"full"}


def test_qwen2_explicit_sliding_layer_types():
    published = {
        "model_type": "qwen2",
        "num_hidden_layers": 3,
        "use_sliding_window": True,
        "sliding_window": 5,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
    }
    pattern = layer_pattern(published)
    assert [(layer.attention, layer.window) for layer in pattern] == [
        ("full", None),
        ("sliding", 5),
        ("sliding", 5),
    ]
    off = {**published, "use_sliding_window": False}
    with pytest.raises(ValueError, match="sliding_window"):  # transformers raises at run time
        layer_pattern(off)


def test_gpt_oss_without_rope_scaling_takes_its_class_yarn():
    published = {
        "model_type": "gpt_oss",
        "num_hidden_layers": 2,
        "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 128,
        "rope_theta": 150000,
    }
    rope = layer_pattern(published)[0].rope
    assert rope is not None
    assert (rope["rope_type"], rope["factor"], rope["original_max_position_embeddings"]) == (
        "yarn",
        32.0,
        4096,
    )
    assert rope["rope_theta"] == 150000
    with pytest.raises(ValueError, match=r"'rope_parameters'.*GptOssConfig"):
        layer_pattern(read_config(published, use_transformers=False))


def test_gemma3_without_local_base_keeps_window_layers_at_10000_unscaled():
    published = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 6,
        "sliding_window_pattern": 6,
        "sliding_window": 1024,
        "rope_theta": 1e6,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    }
    pattern = layer_pattern(published)
    assert pattern[0].rope == {"rope_type": "default", "rope_theta": 10000.0}
    assert pattern[5].rope is not None and pattern[5].rope["factor"] == 8.0
    assumed = read_config(published).assumed
    assert assumed["rope_parameters['sliding_attention']['rope_theta']"] == 10000.0
    with pytest.raises(ValueError, match="rope_local_base_freq"):
        layer_pattern(read_config(published, use_transformers=False))


def test_phi3_top_level_training_length_goes_into_its_longrope_entry():
    pairs = 8
    published = {
        "model_type": "phi3",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "max_position_embeddings": 8192,
        "original_max_position_embeddings": 512,
        "rope_theta": 1e4,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0] * pairs,
            "long_factor": [2.0] * pairs,
        },
    }
    for reading in (read_config(published), read_config(published, use_transformers=False)):
        assert reading.rope_parameters()["original_max_position_embeddings"] == 512


def test_top_level_training_length_is_ignored_outside_phi3():
    """LlamaConfig keeps a top-level original_max_position_embeddings but its entry takes
    max_position_embeddings: pe_lib reads it so, and says so."""
    published = {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "max_position_embeddings": 4096,
        "original_max_position_embeddings": 1024,
        "rope_theta": 5e5,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
        },
    }
    config = transformers.LlamaConfig(
        **copy.deepcopy({k: v for k, v in published.items() if k != "model_type"})
    )
    reading = read_config(published)
    assert (
        reading.rope_parameters()["original_max_position_embeddings"]
        == (config.rope_parameters["original_max_position_embeddings"])
        == 4096
    )
    assert any("only Phi-3" in note for note in reading.notes)


def test_yarn_temperature_under_partial_rotary_factor():
    published = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "partial_rotary_factor": 0.5,
        "rope_theta": 1e4,
        "rope_scaling": {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    }
    config = transformers.LlamaConfig(
        **copy.deepcopy({k: v for k, v in published.items() if k != "model_type"})
    )
    rotary = importlib.import_module(
        "transformers.models.llama.modeling_llama"
    ).LlamaRotaryEmbedding
    factor = float(rotary(config).attention_scaling)
    assert math.isclose(factor, 1.1386, abs_tol=1e-4)
    tau = attention_temperature("yarn", published, torch.tensor([0, 100]))
    torch.testing.assert_close(tau, torch.full((2,), factor**2, dtype=torch.float64))
    assert math.isclose(tau[0].item(), 1.2965, abs_tol=1e-4)


@pytest.mark.parametrize("factor", [None, 1.0, 2.0, 16.0])
def test_longrope_temperature_is_transformers_attention_factor_squared(factor):
    from transformers.modeling_rope_utils import _compute_longrope_parameters

    pairs = 8
    entry: dict[str, Any] = {
        "rope_type": "longrope",
        "short_factor": [1.0] * pairs,
        "long_factor": [3.0] * pairs,
    }
    if factor is not None:
        entry["factor"] = factor
    published = {
        "model_type": "phi3",
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_hidden_layers": 1,
        "max_position_embeddings": 16384,
        "original_max_position_embeddings": 2048,
        "rope_theta": 1e4,
        "rope_scaling": entry,
    }
    config = transformers.Phi3Config(
        **copy.deepcopy({k: v for k, v in published.items() if k != "model_type"})
    )
    _, theirs = _compute_longrope_parameters(config)
    tau = attention_temperature("longrope", published, torch.tensor([0, 10**6]))
    torch.testing.assert_close(tau, torch.full((2,), theirs**2, dtype=torch.float64))
    assert attention_temperature("yarn", published, torch.tensor([0])).item() == 1.0


def test_bad_values_are_refused_by_name():
    with pytest.raises(ValueError, match="attention must be one of"):
        LayerPositions("local", 4, None)
    with pytest.raises(ValueError, match="window must be a positive int"):
        LayerPositions("sliding", 0, None)
    with pytest.raises(ValueError, match="window must be a positive int"):
        LayerPositions("sliding", None, None)
    with pytest.raises(ValueError, match="window must be None"):
        LayerPositions("full", 4, None)
    layer = LayerPositions("sliding", 4, None)
    with pytest.raises(ValueError, match="query must be a non-negative int"):
        layer.visible(-1, 0)
    with pytest.raises(TypeError, match="key must be an int"):
        layer.visible(3, 1.5)
    for theta, error in (("1e4", TypeError), (-5, ValueError)):
        published = {"model_type": "llama", "num_hidden_layers": 1, "rope_theta": theta}
        with pytest.raises(error, match=r"config\['rope_theta'\]"):
            layer_pattern(published)
    scout = {"model_type": "llama4_text", "attn_temperature_tuning": "false"}
    with pytest.raises(TypeError, match=r"config\['attn_temperature_tuning'\]"):
        attention_temperature("nope_log", scout, torch.tensor([0]))


def test_unknown_model_type_is_refused():
    with pytest.raises(ValueError, match="model_type"):
        layer_pattern({"model_type": "bert", "num_hidden_layers": 2})


@pytest.mark.parametrize(
    ("published", "key"),
    [
        ({"model_type": "llama", "num_hidden_layers": 2}, "rope_theta"),
        ({"model_type": "mistral", "num_hidden_layers": 2, "rope_theta": 1e6}, "sliding_window"),
        ({"model_type": "gemma2", "num_hidden_layers": 2, "rope_theta": 1e4}, "layer_types"),
        (
            {
                "model_type": "llama4_text",
                "num_hidden_layers": 4,
                "rope_theta": 5e5,
                "no_rope_layers": [],
            },
            "no_rope_layers",
        ),
        (
            {"model_type": "deepseek_v3", "num_hidden_layers": 1, "rope_theta": 1e4},
            "rope_interleave",
        ),
    ],
)
def test_without_transformers_a_missing_key_is_named(published, key):
    with pytest.raises(ValueError, match=f"lacks '{key}'"):
        layer_pattern(read_config(published, use_transformers=False))
    assert layer_pattern(published)  # the class fills it in


# --- differential: random published-shaped configs against tiny transformers models -------------

_SIZES: dict[str, Any] = {
    "vocab_size": 32,
    "hidden_size": 32,
    "intermediate_size": 32,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "pad_token_id": 0,
}
#: Sizes that keep each model type tiny (experts, latent ranks), not positions.
_EXTRA: dict[str, dict[str, Any]] = {
    "qwen3": {"head_dim": 16},
    "gemma": {"head_dim": 16},
    "gemma2": {"head_dim": 16},
    "gemma3_text": {"head_dim": 16},
    "gemma4_text": {
        "head_dim": 16,
        "global_head_dim": 16,
        "hidden_size_per_layer_input": 4,
        "vocab_size_per_layer_input": 32,
    },
    "llama4_text": {
        "head_dim": 16,
        "intermediate_size_mlp": 32,
        "num_local_experts": 2,
        "num_experts_per_tok": 1,
    },
    "gpt_oss": {"head_dim": 16, "num_local_experts": 2, "num_experts_per_tok": 1},
    "deepseek_v3": {
        "num_key_value_heads": 2,
        "q_lora_rank": None,
        "kv_lora_rank": 8,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8,
        "v_head_dim": 8,
        "n_routed_experts": 2,
        "num_experts_per_tok": 1,
        "n_group": 1,
        "topk_group": 1,
        "moe_intermediate_size": 16,
        "first_k_dense_replace": 1,
    },
}
#: The model types drawn: every one pe_lib has a rule for (checked below).
MODEL_TYPES = (
    "llama",
    "olmo2",
    "gemma",
    "phi",
    "deepseek_v3",
    "mistral",
    "phi3",
    "qwen2",
    "qwen3",
    "gemma2",
    "gemma3_text",
    "gemma4_text",
    "cohere2",
    "gpt_oss",
    "llama4_text",
    "smollm3",
)
_FAMILY = {"gemma3_text": "gemma3", "gemma4_text": "gemma4", "llama4_text": "llama4"}
_ROTATIONS = ("apply_rotary_pos_emb", "apply_rotary_emb", "apply_rotary_pos_emb_interleave")

_small_windows = st.integers(1, 6)
_bases = st.sampled_from([100.0, 10000.0, 500000.0])


@st.composite
def _entry(draw: st.DrawFn, methods: tuple[str, ...], pairs: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(methods))
    entry: dict[str, Any] = {"rope_type": kind}
    if kind in ("linear", "dynamic", "yarn", "llama3"):
        entry["factor"] = draw(st.sampled_from([2.0, 4.0, 8.0]))
    if kind == "llama3":
        entry |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    if kind == "yarn" and draw(st.booleans()):
        entry["truncate"] = draw(st.booleans())
    if kind == "longrope":
        entry |= {"short_factor": [1.0] * pairs, "long_factor": [2.5] * pairs}
        if draw(st.booleans()):
            entry["factor"] = 4.0
    if kind in ("llama3", "yarn", "longrope") and draw(st.booleans()):
        entry["original_max_position_embeddings"] = draw(st.sampled_from([4, 16]))
    if kind == "default":
        del entry["rope_type"]
        entry["type"] = "default"
    return entry


@st.composite
def _rope_keys(draw: st.DrawFn, model_type: str, config: dict[str, Any]) -> None:
    """The rotary keys, in one of the shapes files have, or none (the class's own)."""
    if model_type == "gemma4_text":
        if draw(st.booleans()):
            config["rope_parameters"] = {
                "sliding_attention": {"rope_type": "default", "rope_theta": draw(_bases)},
                "full_attention": {
                    "rope_type": "proportional",
                    "partial_rotary_factor": 0.25,
                    "rope_theta": draw(_bases),
                },
            }
        return
    if model_type in ("phi", "phi3") and draw(st.booleans()):
        config["partial_rotary_factor"] = 0.5
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    pairs = int(head * config.get("partial_rotary_factor", 1.0)) // 2
    methods = (
        ("default", "longrope")
        if model_type == "phi3"
        else ("default", "linear", "dynamic", "yarn", "llama3")
    )
    shape = draw(st.sampled_from(["none", "theta", "scaling", "parameters"]))
    if shape == "none":
        return
    theta = draw(_bases)
    if model_type == "gemma3_text" and draw(st.booleans()):
        config["rope_local_base_freq"] = draw(_bases)
    if shape == "theta":
        config["rope_theta"] = theta
    elif shape == "scaling":
        config["rope_theta"] = theta
        config["rope_scaling"] = draw(_entry(methods, pairs))
    elif model_type != "gemma3_text":
        config["rope_parameters"] = {**draw(_entry(methods, pairs)), "rope_theta": theta}


@st.composite
def published_configs(
    draw: st.DrawFn, model_types: tuple[str, ...] = MODEL_TYPES
) -> dict[str, Any]:
    """A config of a model type pe_lib reads, with keys its files leave to the class left out."""
    model_type = draw(st.sampled_from(model_types))
    count = draw(st.integers(1, 5))
    config: dict[str, Any] = {"model_type": model_type, "num_hidden_layers": count, **_SIZES}
    config |= _EXTRA.get(model_type, {})
    if draw(st.booleans()):
        config["max_position_embeddings"] = draw(st.sampled_from([8, 64, 4096]))
    types = st.lists(
        st.sampled_from(["full_attention", "sliding_attention"]), min_size=count, max_size=count
    )
    flags = st.lists(st.sampled_from([0, 1]), min_size=count, max_size=count)

    def maybe(key: str, values: st.SearchStrategy[Any]) -> None:
        if draw(st.booleans()):
            config[key] = draw(values)

    if model_type in ("mistral", "phi3"):
        maybe("sliding_window", st.none() | _small_windows)
    if model_type == "phi3":
        maybe("original_max_position_embeddings", st.sampled_from([4, 16]))
    if model_type in ("qwen2", "qwen3"):
        maybe("use_sliding_window", st.booleans())
        maybe("sliding_window", _small_windows)
        maybe("max_window_layers", st.integers(0, count))
        maybe("layer_types", types)
    if model_type in ("gemma2", "gemma3_text", "gemma4_text", "cohere2", "gpt_oss"):
        maybe("sliding_window", _small_windows)
        maybe("layer_types", types)
    if model_type in ("gemma3_text", "cohere2") and "layer_types" not in config:
        maybe("sliding_window_pattern", st.integers(1, 4))
    if model_type in ("gemma2", "gemma3_text"):
        maybe("use_bidirectional_attention", st.booleans())
    if model_type == "gemma4_text":
        maybe("use_bidirectional_attention", st.sampled_from([None, "all", "vision"]))
    if model_type in ("llama4_text", "smollm3"):
        maybe("no_rope_layers", flags | st.just([]))
        maybe("no_rope_layer_interval", st.integers(1, 3))
    if model_type == "llama4_text":
        maybe("attention_chunk_size", _small_windows)
    if model_type == "smollm3":
        maybe("use_sliding_window", st.booleans())
        maybe("sliding_window", _small_windows)
    if model_type == "deepseek_v3":
        maybe("rope_interleave", st.booleans())
    draw(_rope_keys(model_type, config))
    return config


class _Recorder:
    """The masks a tiny model's eager attention gets, and its rotations' inputs and outputs, by
    layer (a forward pre-hook on each attention module says which layer runs)."""

    def __init__(self) -> None:
        self.layer = -1
        self.masks: dict[int, torch.Tensor | None] = {}
        self.rotations: dict[int, list[tuple[str, tuple[Any, ...], dict[str, Any], Any]]] = {}

    def attention(
        self, module: Any, query: Any, key: Any, value: Any, mask: Any, **kwargs: Any
    ) -> Any:
        self.masks[module.layer_idx] = None if mask is None else mask[0, 0] == 0
        eager = importlib.import_module(type(module).__module__).eager_attention_forward
        return eager(module, query, key, value, mask, **kwargs)

    @contextlib.contextmanager
    def rotations_of(self, module: Any) -> Iterator[None]:
        saved = {name: getattr(module, name) for name in _ROTATIONS if hasattr(module, name)}

        def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
            def recorded(*args: Any, **kwargs: Any) -> Any:
                out = function(*args, **kwargs)
                self.rotations.setdefault(self.layer, []).append((name, args, kwargs, out))
                return out

            return recorded

        for name, function in saved.items():
            setattr(module, name, wrap(name, function))
        try:
            yield
        finally:
            for name, function in saved.items():
                setattr(module, name, function)


_RECORDER = _Recorder()


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register("pe_lib_record", lambda *a, **k: _RECORDER.attention(*a, **k))
    AttentionMaskInterface.register("pe_lib_record", eager_mask)


def _run(config: dict[str, Any]) -> tuple[_Recorder, Any] | None:
    """The tiny model's masks and rotations, or ``None`` where transformers cannot build or run
    the config."""
    _register()
    recorder = _RECORDER
    recorder.__init__()  # type: ignore[misc]
    keys = {k: v for k, v in copy.deepcopy(config).items() if k != "model_type"}
    family = _FAMILY.get(config["model_type"], config["model_type"])
    try:
        theirs = transformers.AutoConfig.for_model(config["model_type"], **keys)
        theirs._attn_implementation = "pe_lib_record"
        torch.manual_seed(0)
        model = transformers.AutoModel.from_config(theirs).eval()
        module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        hooks = []
        for index, layer in enumerate(model.layers):

            def enter(_module: Any, _args: Any, index: int = index) -> None:
                recorder.layer = index

            hooks.append(layer.self_attn.register_forward_pre_hook(enter))
        with torch.no_grad(), recorder.rotations_of(module):
            model(input_ids=torch.arange(LENGTH)[None] % 32)
        for hook in hooks:
            hook.remove()
    except Exception:  # noqa: BLE001 - transformers refuses this config: no reference
        return None
    return recorder, theirs


def _rotated_as_transformers(
    layer: LayerPositions,
    call: tuple[str, tuple[Any, ...], dict[str, Any], Any],
    reading: Any,
    index: int,
) -> bool:
    """Whether pe_lib rotates the first tensor of a recorded rotation call as the model did."""
    name, args, kwargs, out = call
    x = args[0]
    y = out[0] if isinstance(out, tuple) else out
    seq_first = name == "apply_rotary_emb" or kwargs.get("unsqueeze_dim") == 2  # Llama 4, Gemma 4
    if seq_first:
        x, y = x.transpose(1, 2), y.transpose(1, 2)
    entry = dict(layer.rope or {})
    if x.shape[-1] < reading.head_size(index):  # the model passes only the rotated channels (Phi)
        entry.pop("partial_rotary_factor", None)
    scaling = resolve_scaling(
        entry, max_position_embeddings=reading.values.get("max_position_embeddings")
    )
    ours = apply_rope(x.double(), torch.arange(LENGTH), layout=layer.layout, scaling=scaling)
    if name.endswith("_interleave"):  # DeepSeek-V3 pairs neighbours, and returns the pairs' two
        ours = torch.cat([ours[..., 0::2], ours[..., 1::2]], dim=-1)  # halves (same scores)
    return torch.allclose(ours, y.double(), rtol=1e-4, atol=ATOL)


def verdict_of_pattern(config: dict[str, Any]) -> str | None:
    """``"match"``, ``"refused"`` or ``"wrong"`` for ``layer_pattern(config)`` against a tiny
    model; ``None`` where transformers cannot run the config."""
    ran = _run(config)
    if ran is None:
        return None
    recorder, _ = ran
    try:
        pattern = layer_pattern(copy.deepcopy(config))
        reading = read_config(copy.deepcopy(config))
        if len(pattern) != len(recorder.masks):
            return "wrong"
        for index, layer in enumerate(pattern):
            theirs = recorder.masks[index]
            theirs = torch.ones(LENGTH, LENGTH, dtype=torch.bool) if theirs is None else theirs
            if not torch.equal(_mask(layer), theirs):
                return "wrong"
            calls = recorder.rotations.get(index, [])
            if bool(calls) != layer.rotates:
                return "wrong"
            if calls and not _rotated_as_transformers(layer, calls[0], reading, index):
                return "wrong"
    except (TypeError, ValueError):
        return "refused"
    return "match"


#: Hybrids, checked layer by layer against their tiny models in test_todays_models_hybrids.py.
HYBRIDS = ("jamba", "falcon_h1", "qwen3_next", "kimi_linear")


def test_every_model_type_with_a_rule_is_drawn():
    assert sorted(MODEL_TYPES + HYBRIDS) == sorted(LAYER_PATTERNS)


@settings(max_examples=25, deadline=None)
@given(published_configs())
def test_layer_pattern_is_what_a_tiny_model_runs(config):
    assert verdict_of_pattern(config) != "wrong", config


# --- differential: the temperature rules ---------------------------------------------------------


@st.composite
def temperature_cases(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A rule, and a config of the model type whose code applies it."""
    rule = draw(st.sampled_from(["yarn", "longrope", "mla_mscale", "nope_log"]))
    if rule == "nope_log":
        config: dict[str, Any] = {
            "model_type": "llama4_text",
            "num_hidden_layers": 4,
            **_SIZES,
            **_EXTRA["llama4_text"],
        }
        config["no_rope_layers"] = [1, 1, 1, 0]
        for key, values in (
            ("attn_temperature_tuning", st.booleans()),
            ("attn_scale", st.sampled_from([0.1, 0.5, 2.0])),
            ("floor_scale", st.integers(1, 5)),
        ):
            if draw(st.booleans()):
                config[key] = draw(values)
        return rule, config
    model_type = {"yarn": "llama", "longrope": "phi3", "mla_mscale": "deepseek_v3"}[rule]
    if rule == "yarn":
        model_type = draw(st.sampled_from(["llama", "qwen2", "gpt_oss"]))
    config = {
        "model_type": model_type,
        "num_hidden_layers": 1,
        **_SIZES,
        **_EXTRA.get(model_type, {}),
    }
    if rule != "mla_mscale" and draw(st.booleans()):
        config["partial_rotary_factor"] = draw(st.sampled_from([0.5, 0.75]))
    if draw(st.booleans()):
        config["max_position_embeddings"] = draw(st.sampled_from([64, 4096, 131072]))
    if rule == "longrope":
        config["original_max_position_embeddings"] = draw(st.sampled_from([16, 4096]))
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    pairs = int(head * config.get("partial_rotary_factor", 1.0)) // 2
    if rule == "mla_mscale":
        pairs = config["qk_rope_head_dim"] // 2
    entry = draw(
        _entry(("yarn", "longrope") if rule == "longrope" else ("yarn", "linear", "default"), pairs)
    )
    if entry.get("rope_type") == "yarn" and rule != "longrope":
        for key in ("mscale", "mscale_all_dim", "attention_factor"):
            if draw(st.booleans()):
                entry[key] = draw(st.sampled_from([0.5, 0.707, 1.0, 1.3]))
    if model_type == "gpt_oss" and draw(st.booleans()):
        entry = {}  # the class's own YaRN
    if entry:
        config["rope_scaling"] = entry
    config["rope_theta"] = draw(_bases)
    return rule, config


def _their_temperature(
    rule: str, config: dict[str, Any], positions: torch.Tensor
) -> torch.Tensor | None:
    keys = {k: v for k, v in copy.deepcopy(config).items() if k != "model_type"}
    model_type = config["model_type"]
    family = _FAMILY.get(model_type, model_type)
    try:
        theirs = transformers.AutoConfig.for_model(model_type, **keys)
        module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        if rule in ("yarn", "longrope"):  # the factor on cos and sin, squared, for its method
            prefix = type(theirs).__name__.removesuffix("Config").removesuffix("Text")
            rotary = getattr(module, f"{prefix}RotaryEmbedding")(theirs)
            kind = theirs.rope_parameters["rope_type"]
            value = float(rotary.attention_scaling) ** 2 if kind == rule else 1.0
            return torch.full(positions.shape, value, dtype=torch.float64)
        if rule == "mla_mscale":
            attention = module.DeepseekV3Attention(theirs, layer_idx=0)
            value = attention.scaling / attention.qk_head_dim**-0.5
            return torch.full(positions.shape, value, dtype=torch.float64)
        theirs._attn_implementation = "pe_lib_record"
        _register()
        attention = module.Llama4TextAttention(theirs, layer_idx=3).eval()  # a NoPE layer
        x = torch.randn(1, len(positions), theirs.hidden_size)
        _RECORDER.__init__()  # type: ignore[misc]
        captured: dict[str, torch.Tensor] = {}

        def keep(_module: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            captured["query"] = query
            return _RECORDER.attention(_module, query, *args, **kwargs)

        from transformers import AttentionInterface

        AttentionInterface.register("pe_lib_record", keep)
        freqs = torch.ones(1, len(positions), attention.head_dim // 2, dtype=torch.complex64)
        with torch.no_grad():
            attention(x, freqs, None)
            plain = attention.q_proj(x).view(1, len(positions), -1, attention.head_dim)
        ratio = captured["query"].transpose(1, 2) / plain
        return ratio[0, :, 0, 0].double()
    except Exception:  # noqa: BLE001 - transformers refuses this config: no reference
        return None


def verdict_of_temperature(rule: str, config: dict[str, Any]) -> str | None:
    """``"match"``, ``"refused"`` or ``"wrong"`` for ``attention_temperature(rule, config)``
    against the factor transformers' modules apply; ``None`` where they cannot be built."""
    positions = torch.arange(12)
    theirs = _their_temperature(rule, config, positions)
    if theirs is None:
        return None
    try:
        ours = attention_temperature(rule, copy.deepcopy(config), positions)
    except (TypeError, ValueError):
        return "refused"
    return "match" if torch.allclose(ours, theirs, rtol=1e-5, atol=0.0) else "wrong"


@settings(max_examples=30, deadline=None)
@given(temperature_cases())
def test_attention_temperature_is_what_transformers_applies(case):
    rule, config = case
    assert verdict_of_temperature(rule, config) != "wrong", case


def test_reading_without_transformers_equals_the_class_on_complete_configs():
    """For configs that give every key, pe_lib's own rewriting of the keys is the class's."""
    complete = [
        {
            "model_type": "gemma3_text",
            "num_hidden_layers": 4,
            "rope_theta": 1e6,
            "rope_local_base_freq": 1e4,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
            "sliding_window": 16,
            "sliding_window_pattern": 2,
            "max_position_embeddings": 4096,
        },
        {
            "model_type": "gpt_oss",
            "num_hidden_layers": 2,
            "layer_types": ["sliding_attention", "full_attention"],
            "sliding_window": 4,
            "rope_theta": 150000,
            "max_position_embeddings": 4096,
            "rope_scaling": {
                "rope_type": "yarn",
                "factor": 32.0,
                "original_max_position_embeddings": 4096,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
                "truncate": False,
            },
        },
        {
            "model_type": "llama4_text",
            "num_hidden_layers": 4,
            "no_rope_layers": [1, 1, 1, 0],
            "attention_chunk_size": 8,
            "rope_theta": 5e5,
            "max_position_embeddings": 4096,
        },
        {
            "model_type": "qwen2",
            "num_hidden_layers": 3,
            "use_sliding_window": True,
            "sliding_window": 4,
            "max_window_layers": 1,
            "rope_theta": 1e6,
            "max_position_embeddings": 4096,
        },
        {
            "model_type": "phi3",
            "num_hidden_layers": 1,
            "hidden_size": 64,
            "num_attention_heads": 4,
            "original_max_position_embeddings": 32,
            "max_position_embeddings": 4096,
            "rope_theta": 1e4,
            "sliding_window": 2047,
            "rope_scaling": {
                "type": "longrope",
                "short_factor": [1.0] * 8,
                "long_factor": [2.0] * 8,
            },
        },
    ]
    for published in complete:
        assert layer_pattern(read_config(published, use_transformers=False)) == layer_pattern(
            published
        )
