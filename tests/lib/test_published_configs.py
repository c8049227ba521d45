"""pe_lib reads whole published ``config.json`` files as transformers 5.23 reads them.

Each configuration below has the keys, the nesting and the values of a model's published
``config.json`` (for Gemma 3, the ``text_config`` part): ``rope_theta``, ``rope_scaling`` and
``partial_rotary_factor`` at the top level, the pattern of layers as an int, and keys left out
where the file leaves them to the model type's defaults. pe_lib reads the dict as it is
(:func:`pe_lib.models.layer_pattern.layer_pattern`, then :func:`pe_lib.rope.scaling.rope_frequencies`
and :func:`pe_lib.models.temperature.attention_temperature`); transformers reads a deep copy of it
through its configuration class (``AutoConfig.for_model``), and its own rotary module and
attention module, built from that configuration, give the reference: per layer, the kind of
attention and its window, the inverse frequencies and the attention factor on cos and sin, at
a short length and beyond the training length; for DeepSeek-V3, the softmax scale.

The tests fail if pe_lib

* applies Gemma 3's ``rope_scaling`` to its sliding-window layers too (their slowest pair would
  turn once in 467,757 positions instead of 58,470: linear scaling by 8);
* drops a top-level ``partial_rotary_factor`` (Phi-2 rotates 32 of its 80 channels);
* reads ``mscale`` where YaRN's attention factor or DeepSeek-V3's softmax scale needs
  ``mscale_all_dim``: the published DeepSeek-V3 entry gives both the value 1.0, so the variants
  below give them unequal values, and one leaves ``mscale_all_dim`` out.

Two published shapes leave keys to transformers' configuration classes: Gemma 3 4B's bases
(1,000,000 and 10,000) and Phi-4 mini's rotary training length (its top-level
``original_max_position_embeddings``, which ``Phi3Config`` moves into the entry); pe_lib reads
them through the same classes (:func:`pe_lib.models.config_reader.read_config`).
"""

from __future__ import annotations

import copy
import importlib
import math
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.models.layer_pattern import layer_pattern  # noqa: E402
from pe_lib.models.temperature import attention_temperature  # noqa: E402
from pe_lib.rope.scaling import rope_frequencies  # noqa: E402

#: transformers computes frequencies in float32, pe_lib in float64 (as tests/lib/test_rope_parity)
RTOL = 2e-6

_GEMMA3_SCALING = {"factor": 8.0, "rope_type": "linear"}

#: google/gemma-3-12b-it, "text_config" as saved with every key (transformers 4.51).
GEMMA3_12B = {
    "head_dim": 256,
    "hidden_size": 3840,
    "max_position_embeddings": 131072,
    "model_type": "gemma3_text",
    "num_attention_heads": 16,
    "num_hidden_layers": 48,
    "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256,
    "rope_local_base_freq": 10000,
    "rope_scaling": _GEMMA3_SCALING,
    "rope_theta": 1000000,
    "sliding_window": 1024,
    "sliding_window_pattern": 6,
}
#: google/gemma-3-1b-it: text only, no scaling (``rope_scaling`` null).
GEMMA3_1B = {
    "head_dim": 256,
    "hidden_size": 1152,
    "max_position_embeddings": 32768,
    "model_type": "gemma3_text",
    "num_attention_heads": 4,
    "num_hidden_layers": 26,
    "num_key_value_heads": 1,
    "query_pre_attn_scalar": 256,
    "rope_local_base_freq": 10000,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": 512,
    "sliding_window_pattern": 6,
}
#: google/gemma-3-4b-it, "text_config" as published: the bases, the head size and the pattern
#: are left to Gemma3TextConfig's defaults (1,000,000 global, 10,000 local, 256, every 6th).
GEMMA3_4B_SPARSE = {
    "hidden_size": 2560,
    "intermediate_size": 10240,
    "model_type": "gemma3_text",
    "num_hidden_layers": 34,
    "rope_scaling": _GEMMA3_SCALING,
    "sliding_window": 1024,
}
#: microsoft/phi-2: a top-level partial_rotary_factor, plain RoPE (head 2560 / 32 = 80).
PHI_2 = {
    "hidden_size": 2560,
    "max_position_embeddings": 2048,
    "model_type": "phi",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "partial_rotary_factor": 0.4,
    "rope_scaling": None,
    "rope_theta": 10000.0,
}
#: microsoft/Phi-4-mini-instruct: top-level partial_rotary_factor and original length, LongRoPE
#: with no "factor" (transformers takes max_position_embeddings / 4096); head 3072 / 24 = 128,
#: 96 channels rotated, 48 divisors per list (values here of the published lists' shape:
#: rising from 1, the long ones far more).
PHI_4_MINI = {
    "hidden_size": 3072,
    "max_position_embeddings": 131072,
    "model_type": "phi3",
    "num_attention_heads": 24,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "original_max_position_embeddings": 4096,
    "partial_rotary_factor": 0.75,
    "rope_scaling": {
        "long_factor": [1.0 + 0.05 * i**1.5 for i in range(48)],
        "short_factor": [1.0 + 0.01 * i for i in range(48)],
        "type": "longrope",
    },
    "rope_theta": 10000.0,
    "sliding_window": 262144,
}
_DEEPSEEK_V3_YARN = {
    "beta_fast": 32,
    "beta_slow": 1,
    "factor": 40,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096,
    "type": "yarn",
}
#: deepseek-ai/DeepSeek-V3: YaRN on the 64 decoupled rotary channels of each head.
DEEPSEEK_V3 = {
    "hidden_size": 7168,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "num_attention_heads": 128,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "rope_scaling": _DEEPSEEK_V3_YARN,
    "rope_theta": 10000,
    "v_head_dim": 128,
}


def _deepseek(**yarn: Any) -> dict[str, Any]:
    """DeepSeek-V3's config.json with its YaRN entry changed (``None``: the key left out)."""
    entry = {**_DEEPSEEK_V3_YARN, **yarn}
    return {**DEEPSEEK_V3, "rope_scaling": {k: v for k, v in entry.items() if v is not None}}


#: Qwen/Qwen2.5-7B-Instruct with the YaRN entry its model card gives for long inputs: beta_fast
#: and beta_slow left to their defaults.
QWEN25_7B_YARN = {
    "hidden_size": 3584,
    "max_position_embeddings": 32768,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
    "rope_theta": 1000000.0,
}
#: meta-llama/Llama-3.1-8B.
LLAMA_31_8B = {
    "hidden_size": 4096,
    "max_position_embeddings": 131072,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rope_scaling": {
        "factor": 8.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
}
#: openai/gpt-oss-20b: layer_types written out, windows of 128, YaRN with truncate false.
GPT_OSS_20B = {
    "head_dim": 64,
    "hidden_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072,
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "rope_scaling": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "rope_type": "yarn",
        "truncate": False,
    },
    "rope_theta": 150000,
    "sliding_window": 128,
}

PUBLISHED = [
    pytest.param(GEMMA3_12B, id="gemma-3-12b"),
    pytest.param(GEMMA3_1B, id="gemma-3-1b"),
    pytest.param(GEMMA3_4B_SPARSE, id="gemma-3-4b-bases-left-to-defaults"),
    pytest.param(PHI_2, id="phi-2"),
    pytest.param(PHI_4_MINI, id="phi-4-mini"),
    pytest.param(DEEPSEEK_V3, id="deepseek-v3"),
    pytest.param(_deepseek(mscale=0.707), id="deepseek-v3-mscale-0.707-all-dim-1"),
    pytest.param(_deepseek(mscale_all_dim=0.707), id="deepseek-v3-mscale-1-all-dim-0.707"),
    pytest.param(_deepseek(mscale=0.707, mscale_all_dim=None), id="deepseek-v3-no-all-dim"),
    pytest.param(QWEN25_7B_YARN, id="qwen2.5-7b-yarn"),
    pytest.param(LLAMA_31_8B, id="llama-3.1-8b"),
    pytest.param(GPT_OSS_20B, id="gpt-oss-20b"),
]

_FAMILY = {"gemma3_text": "gemma3"}


def _theirs(published: dict[str, Any]) -> Any:
    """transformers' configuration, read from a deep copy (its classes change nested dicts)."""
    return transformers.AutoConfig.for_model(**copy.deepcopy(published))


def _head_dim(config: Any) -> int:
    return int(
        getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    )


def _rotary_module(config: Any) -> Any:
    family = _FAMILY.get(config.model_type, config.model_type)
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    prefix = type(config).__name__.removesuffix("Config").removesuffix("Text")
    return getattr(module, f"{prefix}RotaryEmbedding")(config)


def _their_frequencies(
    rotary: Any, layer_type: str | None, length: int
) -> tuple[torch.Tensor, float]:
    """The rotary module's inverse frequencies and factor after a call at ``length`` positions
    (a call is what makes LongRoPE and dynamic NTK choose their frequencies)."""
    positions = torch.tensor([[0, length - 1]])
    x = torch.zeros(1, 2, 4)
    prefix = "" if layer_type is None else f"{layer_type}_"
    with torch.no_grad():
        if layer_type is None:
            rotary(x, positions)
        else:
            rotary(x, positions, layer_type)
    return getattr(rotary, f"{prefix}inv_freq"), float(
        getattr(rotary, f"{prefix}attention_scaling")
    )


def _lengths(config: Any) -> list[int]:
    """A short length, and one beyond the training length where a method looks at it."""
    original = max(
        [4096, config.max_position_embeddings]
        + [
            entry.get("original_max_position_embeddings", 0)
            for entry in _entries(config.rope_parameters)
        ]
    )
    return [16, 2 * original]


def _entries(rope: dict[str, Any]) -> list[dict[str, Any]]:
    if "rope_type" in rope:
        return [rope]
    return [entry for entry in rope.values() if entry is not None]


def _relative_difference(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    theirs = theirs.to(torch.float64)
    scale = theirs.abs().where(theirs != 0, torch.ones_like(theirs))
    return float(((ours - theirs).abs() / scale).max())


@pytest.mark.parametrize("published", PUBLISHED)
def test_each_layer_reads_as_transformers_reads_it(published):
    before = copy.deepcopy(published)
    ours = layer_pattern(published)
    assert published == before, "pe_lib must not change the config it reads"
    config = _theirs(published)
    # Phi-3 (and Mistral) give every layer the window sliding_window, where it is not None
    one = "sliding_attention" if getattr(config, "sliding_window", None) else "full_attention"
    types = getattr(config, "layer_types", None) or [one] * config.num_hidden_layers
    assert len(ours) == config.num_hidden_layers == len(types)
    rotary = _rotary_module(config)
    per_layer_type = "rope_type" not in config.rope_parameters
    head_dim = _head_dim(config)
    for length in _lengths(config):
        theirs = {
            kind: _their_frequencies(rotary, kind if per_layer_type else None, length)
            for kind in sorted(set(types))
        }
        for index, (layer, kind) in enumerate(zip(ours, types, strict=True)):
            where = f"layer {index} ({kind}) at length {length}"
            assert layer.attention == kind.removesuffix("_attention"), where
            window = config.sliding_window if kind == "sliding_attention" else None
            assert layer.window == window, where
            assert layer.rope is not None, where
            theta, factor = rope_frequencies(
                head_dim,
                scaling=layer.rope,
                seq_len=length,
                max_position_embeddings=published.get("max_position_embeddings"),
            )
            their_theta, their_factor = theirs[kind]
            assert theta.shape == their_theta.shape, where
            assert _relative_difference(theta, their_theta) < RTOL, where
            assert math.isclose(factor, their_factor, rel_tol=1e-12), where


def test_gemma3_window_layers_keep_their_own_base_unscaled():
    """Gemma 3's slowest pair, as chapter 11 reads it: on the window layers it turns once in
    2 pi 10000^(254/256) positions, on the global layers in 8 times 2 pi 1000000^(254/256)."""
    wavelengths: dict[str, set[float]] = {}
    for layer in layer_pattern(GEMMA3_12B):
        theta, _ = rope_frequencies(256, scaling=layer.rope)
        wavelengths.setdefault(layer.attention, set()).add(2 * math.pi / float(theta[-1]))
    assert wavelengths.keys() == {"sliding", "full"}
    expected = {
        "sliding": 2 * math.pi * 10000 ** (254 / 256),
        "full": 8 * 2 * math.pi * 1e6 ** (254 / 256),
    }
    for kind, found in wavelengths.items():
        assert len(found) == 1 and math.isclose(found.pop(), expected[kind], rel_tol=1e-12), kind


@pytest.mark.parametrize(
    "published",
    [
        pytest.param(DEEPSEEK_V3, id="published"),
        pytest.param(_deepseek(mscale=0.707), id="mscale-0.707-all-dim-1"),
        pytest.param(_deepseek(mscale_all_dim=0.707), id="mscale-1-all-dim-0.707"),
        pytest.param(_deepseek(mscale=0.707, mscale_all_dim=None), id="no-all-dim"),
    ],
)
def test_deepseek_v3_softmax_scale_is_transformers(published):
    """DeepSeek-V3's attention multiplies its softmax scale by the square of YaRN's mscale of
    ``mscale_all_dim``; its rotary module multiplies cos and sin by the ratio of the two. The
    attention module is built with the published rope keys and small sizes."""
    small = {
        **published,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "q_lora_rank": None,
        "kv_lora_rank": 16,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8,
        "v_head_dim": 8,
    }
    config = _theirs(small)
    module = importlib.import_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    attention = module.DeepseekV3Attention(config, layer_idx=0)
    temperature = attention_temperature("mla_mscale", published, torch.tensor([0, 10**5]))
    assert temperature.unique().numel() == 1
    ours = float(temperature[0]) * attention.qk_head_dim**-0.5
    assert math.isclose(ours, attention.scaling, rel_tol=1e-12)
    rotary = module.DeepseekV3RotaryEmbedding(config)
    _, factor = rope_frequencies(8, scaling=layer_pattern(published)[0].rope)
    assert math.isclose(factor, float(rotary.attention_scaling), rel_tol=1e-12)
    entry = published["rope_scaling"]
    if entry.get("mscale_all_dim") and entry["mscale"] != entry["mscale_all_dim"]:
        assert not math.isclose(factor, 1.0, rel_tol=1e-3)  # the case the published file hides
