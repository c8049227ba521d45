"""pe_lib.describe: a model's positions layer by layer, against transformers 5.23.

The configs are chapter 11's (``book/11_todays_models.ipynb``): the keys of each row's
``config.json`` that set positions, typed from the cited files, with keys the file leaves out
left to the model type's class (the LongRoPE lists, which the chapter does not type, as ones),
and its four hybrids, read from their classes' defaults.
For every layer of every model, the description's kind of attention and window, rotation, base,
method, rotated channels, factor on cos and sin and the lengths read are those of transformers'
configuration class and rotary module built from the same keys; so are the wavelengths. Then
the warnings a config reveals, refusals that name the field, the three outputs (text, HTML, JSON),
and the command line (the time a description takes is measured by
``benchmarks/describe_speed.py``).
"""

from __future__ import annotations

import copy
import importlib
import json
import math
import re
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib import describe  # noqa: E402
from pe_lib.__main__ import main  # noqa: E402
from pe_lib.models.description import Description, LayerGroup  # noqa: E402

transformers.logging.set_verbosity_error()  # tiny configs draw warnings

# chapter 11's keys (its table cell), as the chapter types them
LLAMA3 = {
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}
PUBLISHED: dict[str, dict[str, Any]] = {
    "Llama 3.1 8B": {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "rope_scaling": {"factor": 8.0, **LLAMA3},
    },
    "Llama 3.2 1B": {
        "model_type": "llama",
        "hidden_size": 2048,
        "head_dim": 64,
        "num_attention_heads": 32,
        "num_hidden_layers": 16,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "rope_scaling": {"factor": 32.0, **LLAMA3},
    },
    "Llama 4 Scout": {  # the Instruct checkpoint's file
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "head_dim": 128,
        "num_attention_heads": 40,
        "num_hidden_layers": 48,
        "max_position_embeddings": 10485760,
        "rope_theta": 500000.0,
        "rope_scaling": {**LLAMA3, "factor": 16.0, "high_freq_factor": 1.0},
        "attention_chunk_size": 8192,
        "no_rope_layers": [],
        "attn_scale": 0.1,
        "floor_scale": 8192,
    },
    "Qwen2.5 7B": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "rope_theta": 1000000.0,
        "rope_scaling": None,
        "use_sliding_window": False,
    },
    "Qwen3 8B": {
        "model_type": "qwen3",
        "hidden_size": 4096,
        "head_dim": 128,
        "num_attention_heads": 32,
        "num_hidden_layers": 36,
        "rope_theta": 1000000.0,
        "rope_scaling": None,
        "use_sliding_window": False,
    },
    "Gemma 2 9B": {
        "model_type": "gemma2",
        "hidden_size": 3584,
        "head_dim": 256,
        "num_attention_heads": 16,
        "num_hidden_layers": 42,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
    },
    "Gemma 3 4B": {
        "model_type": "gemma3_text",
        "hidden_size": 2560,
        "head_dim": 256,
        "num_attention_heads": 8,
        "num_hidden_layers": 34,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
    },
    "DeepSeek-V3": {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "num_attention_heads": 128,
        "num_hidden_layers": 61,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "rope_theta": 10000,
        "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
    },
    "Mistral 7B v0.3": {
        "model_type": "mistral",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "rope_theta": 1000000.0,
        "sliding_window": None,
    },
    "Phi-3 mini 128k": {
        "model_type": "phi3",
        "hidden_size": 3072,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "rope_theta": 10000.0,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope"},
    },  # lists: below
    "Phi-4 mini": {
        "model_type": "phi3",
        "hidden_size": 3072,
        "num_attention_heads": 24,
        "num_hidden_layers": 32,
        "partial_rotary_factor": 0.75,
        "rope_theta": 10000.0,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope"},
    },
    "gpt-oss 20b": {
        "model_type": "gpt_oss",
        "hidden_size": 2880,
        "head_dim": 64,
        "num_attention_heads": 64,
        "num_hidden_layers": 24,
        "layer_types": ["sliding_attention", "full_attention"] * 12,
        "sliding_window": 128,
        "rope_theta": 150000,
        "rope_scaling": {
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "rope_type": "yarn",
            "truncate": False,
        },
    },
    "Command R7B": {
        "model_type": "cohere2",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "rope_theta": 50000.0,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
    },
    "OLMo 2 7B": {
        "model_type": "olmo2",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "rope_theta": 500000,
    },
    "SmolLM2 135M": {  # as chapter 10 reads it from its weights' file
        "model_type": "llama",
        "hidden_size": 576,
        "num_attention_heads": 9,
        "num_hidden_layers": 30,
        "rope_theta": 100000,
    },
}
# chapter 11's hybrids: no file is typed; each row is its configuration class's defaults
HYBRIDS: dict[str, dict[str, Any]] = {
    "Jamba (JambaConfig)": {"model_type": "jamba"},
    "Falcon-H1 (FalconH1Config)": {"model_type": "falcon_h1"},
    "Qwen3-Next (Qwen3NextConfig)": {"model_type": "qwen3_next"},
    "Kimi Linear (KimiLinearConfig)": {"model_type": "kimi_linear"},
}
MODELS = {**PUBLISHED, **HYBRIDS}
#: The hybrids whose attention layers rotate: Jamba's and Kimi Linear's models build no rotary
#: embedding (modeling_jamba.py, modeling_kimi_linear.py).
_HYBRIDS_ROTATING = ("falcon_h1", "qwen3_next")
#: transformers' frequencies are float32; pe_lib's float64 (as tests/lib/test_rope_parity.py)
RTOL = 2e-6
_FAMILY = {"gemma3_text": "gemma3", "llama4_text": "llama4"}


def _published(model: str) -> dict[str, Any]:
    """The row's keys, with ones for the LongRoPE lists (one divisor per rotated pair)."""
    keys = copy.deepcopy(MODELS[model])
    entry = keys.get("rope_scaling") or {}
    if entry.get("type") == "longrope":
        head = keys["hidden_size"] // keys["num_attention_heads"]
        pairs = int(head * keys.get("partial_rotary_factor", 1.0)) // 2
        keys["rope_scaling"] = {
            **entry,
            "short_factor": [1.0] * pairs,
            "long_factor": [1.0] * pairs,
        }
    return keys


def _theirs(keys: dict[str, Any]) -> Any:
    return transformers.AutoConfig.for_model(**copy.deepcopy(keys))


def _per_layer(description: Description) -> list[LayerGroup]:
    rows: dict[int, LayerGroup] = {}
    for group in description.groups:
        for index in group.layers:
            rows[index] = group
    assert sorted(rows) == list(range(description.layers))
    return [rows[index] for index in range(description.layers)]


def _rotary(config: Any, layer_type: str | None, length: int) -> tuple[torch.Tensor, float]:
    """The family's rotary module's inverse frequencies and factor after a call at ``length``."""
    family = _FAMILY.get(config.model_type, config.model_type)
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    name = type(config).__name__.removesuffix("Config")
    rotary = getattr(
        module,
        f"{name}RotaryEmbedding",
        getattr(module, f"{name.removesuffix('Text')}RotaryEmbedding", None),
    )(config)
    positions = torch.tensor([[0, length - 1]])
    with torch.no_grad():
        if layer_type is None:
            rotary(torch.zeros(1, 2, 4), positions)
        else:
            rotary(torch.zeros(1, 2, 4), positions, layer_type)
    prefix = "" if layer_type is None else f"{layer_type}_"
    return getattr(rotary, f"{prefix}inv_freq"), float(
        getattr(rotary, f"{prefix}attention_scaling")
    )


def _their_layers(config: Any) -> list[tuple[str, int | None, bool]]:
    """Per layer: the kind of attention, its window, whether it rotates, as the class says."""
    count = config.num_hidden_layers
    window = getattr(config, "sliding_window", None)
    if config.model_type in ("mistral", "phi3"):  # one window for every layer, or none
        return [("sliding" if window else "full", window, True)] * count
    types = getattr(config, "layer_types", None) or ["full_attention"] * count
    if "linear_attention" in types or "hybrid" in types:  # a hybrid: attention or a mixer
        rotating = config.model_type in _HYBRIDS_ROTATING
        return [
            ("none", None, False) if kind == "linear_attention" else ("full", None, rotating)
            for kind in types
        ]
    rotates = [True] * count
    if config.model_type == "llama4_text":
        rotates = [bool(flag) for flag in config.no_rope_layers]
    if config.model_type == "cohere2":
        rotates = [kind == "sliding_attention" for kind in types]
    sizes = {
        "sliding_attention": window,
        "chunked_attention": getattr(config, "attention_chunk_size", None),
    }
    return [
        (kind.removesuffix("_attention"), sizes.get(kind), rotated)
        for kind, rotated in zip(types, rotates, strict=True)
    ]


@pytest.mark.parametrize("model", list(MODELS))
def test_every_layer_is_what_transformers_configures(model: str) -> None:
    keys = _published(model)
    config = _theirs(keys)
    ours = describe(keys)
    assert ours.model_type == config.model_type and ours.layers == config.num_hidden_layers
    assert _per_layer(describe(config.to_dict())) == _per_layer(ours)
    length = config.max_position_embeddings
    per_type = "rope_type" not in (getattr(config, "rope_parameters", None) or {"rope_type": None})
    types = getattr(config, "layer_types", None) or [None] * config.num_hidden_layers
    for index, (group, (kind, window, rotates)) in enumerate(
        zip(_per_layer(ours), _their_layers(config), strict=True)
    ):
        where = f"{model}, layer {index}"
        assert (group.attention, group.window, group.rotates) == (kind, window, rotates), where
        if not rotates:
            assert group.base is group.scaling is group.rotated is None, where
            continue
        layer_type = types[index] if per_type else None
        entry = config.rope_parameters[layer_type] if per_type else config.rope_parameters
        assert (group.base, group.scaling) == (entry["rope_theta"], entry["rope_type"]), where
        inv_freq, factor = _rotary(config, layer_type, length)
        assert group.rotated == 2 * int((inv_freq > 0).sum()), where
        assert math.isclose(group.cos_sin_factor, factor, rel_tol=1e-12), where
        original = entry.get("original_max_position_embeddings")
        assert group.lengths.get("original_max_position_embeddings") == (
            original if entry["rope_type"] in ("llama3", "yarn", "longrope") else None
        ), where


@pytest.mark.parametrize("model", list(MODELS))
def test_wavelengths_are_the_rotary_modules(model: str) -> None:
    keys = _published(model)
    config = _theirs(keys)
    ours = describe(keys)
    per_type = "rope_type" not in (getattr(config, "rope_parameters", None) or {"rope_type": None})
    types = getattr(config, "layer_types", None) or [None] * config.num_hidden_layers
    length = config.max_position_embeddings
    for wave in ours.wavelengths:
        layer_type = types[wave.layers[0]] if per_type else None
        inv_freq, _ = _rotary(config, layer_type, length)
        turning = inv_freq[inv_freq > 0].double()
        waves = 2 * math.pi / turning
        assert math.isclose(wave.fastest, float(waves.min()), rel_tol=RTOL), model
        assert math.isclose(wave.slowest, float(waves.max()), rel_tol=RTOL), model
        assert wave.pairs == len(turning) and wave.unrotated == len(inv_freq) - len(turning)
        assert wave.short_at_maximum == int((waves > length).sum()), model
        entry = config.rope_parameters[layer_type] if per_type else config.rope_parameters
        assert wave.training == entry.get("original_max_position_embeddings", length), model


def test_what_was_assumed_is_said() -> None:
    qwen = describe(_published("Qwen2.5 7B"))
    assert qwen.assumed == {"max_position_embeddings": 32768}
    sparse = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 12,
        "sliding_window": 1024,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    }
    gemma = describe(sparse)
    assert gemma.assumed["rope_parameters['full_attention']['rope_theta']"] == 1_000_000.0
    assert gemma.assumed["rope_parameters['sliding_attention']['rope_theta']"] == 10_000.0
    assert "assumed" in str(gemma) and "10000.0" in str(gemma)


def test_warnings_a_config_reveals() -> None:
    # Meta's own file: factor 8 x 8,192 = 65,536 against 131,072, by design of its rule
    assert not describe(_published("Llama 3.1 8B")).warnings
    assert not describe(_published("gpt-oss 20b")).warnings  # 32 x 4,096 = 131,072
    halved = describe({**_published("gpt-oss 20b"), "max_position_embeddings": 65536})
    assert any("yarn factor 32 x" in w and "131,072" in w for w in halved.warnings), halved
    phi4 = describe({**_published("Phi-4 mini"), "sliding_window": 262144})
    assert any("reaches max_position_embeddings" in w for w in phi4.warnings), phi4.warnings
    gemma4 = {"model_type": "gemma4_text", "num_hidden_layers": 6, "rope_theta": 5e5}
    assert any("rope_theta is ignored" in w for w in describe(gemma4).warnings)
    mixed = {
        **_published("SmolLM2 135M"),
        "rope_scaling": {"rope_type": "linear", "factor": 2.0},
        "rope_parameters": {"rope_type": "default", "rope_theta": 1e4},
    }
    warnings = describe(mixed).warnings
    assert any("rope_parameters is ignored" in w for w in warnings), warnings
    old = {**_published("Gemma 3 4B"), "transformers_version": "4.50.0.dev0"}
    assert any("written by transformers 4.50" in w for w in describe(old).warnings)


def test_refusals_name_the_field(tmp_path) -> None:
    with pytest.raises(ValueError, match="'rope_theta'"):
        describe({"model_type": "llama", "num_hidden_layers": 2}, use_transformers=False)
    no_lists = copy.deepcopy(PUBLISHED["Phi-4 mini"])
    with pytest.raises(ValueError, match="short_factor"):
        describe(no_lists)
    with pytest.raises(ValueError, match="model_type"):
        describe({"model_type": "bert"})
    with pytest.raises(ValueError, match="cannot read"):
        describe(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="is not JSON"):
        describe(tmp_path / "broken.json")
    with pytest.raises(TypeError, match="config must be a mapping"):
        describe(3)  # type: ignore[arg-type]


def test_text_html_and_json(tmp_path) -> None:
    found = describe(_published("Gemma 3 4B"))
    text = str(found)
    assert "0-4 of every 6 (29)" in text and "every 6th from 5 (5)" in text
    assert "sliding 1,024" in text and "linear (factor 8.0)" in text
    assert repr(found) == text  # a notebook's text/plain: no float printed to its last bit
    assert not re.search(r"\d\.\d{7,}", text), text
    page = found._repr_html_()
    assert page.count("<table>") == 2 and "sliding 1,024" in page
    data = found.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert [group["layers"][:2] for group in data["groups"]] == [[0, 1], [5, 11]]


def test_command_line(tmp_path, capsys) -> None:
    folder = tmp_path / "gemma-3-4b-it"  # the Hugging Face layout: text_config inside
    folder.mkdir()
    text = {k: v for k, v in _published("Gemma 3 4B").items() if k != "model_type"}
    published = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", **text}}
    (folder / "config.json").write_text(json.dumps(published), encoding="utf-8")
    assert main(["describe", str(folder)]) == 0
    assert "gemma3_text, 34 layers" in capsys.readouterr().out
    assert main(["describe", str(folder / "config.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == describe(folder).to_dict()
    (tmp_path / "bare.json").write_text(json.dumps({"model_type": "llama"}), encoding="utf-8")
    assert main(["describe", str(tmp_path / "bare.json"), "--no-transformers"]) == 2
    assert "'rope_theta'" in capsys.readouterr().err
