"""pe_lib's rotation inside real transformers models, in place of their own.

Each test builds a tiny random model of transformers 5.23 (a few layers of width 64, no network,
no weights downloaded), runs it, then runs it again with the model's ``apply_rotary_pos_emb``
(DeepSeek-V3's ``apply_rotary_pos_emb_interleave``) replaced by :func:`pe_lib.rope.apply_rope`.
The replacement ignores the cos and sin the model computed: it rotates queries and keys at the
positions given to the model, with the frequencies pe_lib reads from the model's own
``config.rope_parameters`` (:func:`pe_lib.rope.scaling.resolve_scaling`, the layer's entry for
per-layer configs). The logits must agree to float32 rounding: the frequencies, the attention
factor, the layout, partial rotation and per-layer entries of pe_lib are then those the model
runs.

The models and what each puts to the test:

* Llama (``models/llama/modeling_llama.py``): Llama 3.1's ``"llama3"`` frequencies, ``"half"``;
* Qwen2 (``models/qwen2/modeling_qwen2.py``): YaRN with its attention factor;
* Phi-3 (``models/phi3/modeling_phi3.py``): LongRoPE beyond its original length, with partial
  rotation (``partial_rotary_factor`` 0.5);
* Gemma 3 (``models/gemma3/modeling_gemma3.py``): one entry per layer type (linear on the full
  attention layers, plain RoPE with another base on the sliding ones);
* GPT-NeoX (``models/gpt_neox/modeling_gpt_neox.py``): partial rotation of a quarter of the head;
* DeepSeek-V3 (``models/deepseek_v3/modeling_deepseek_v3.py``): the ``"interleaved"`` layout
  (``rope_interleave``) on the rotary share of the heads, with YaRN.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.rope import apply_rope  # noqa: E402
from pe_lib.rope.scaling import resolve_scaling  # noqa: E402

SEQ_LEN = 12
#: Positions the models are run at: not from 0, so that a rotation at the wrong positions shows.
POSITIONS = torch.arange(3, 3 + SEQ_LEN)
#: float32 logits of a model whose cos and sin pe_lib forms from float64 angles: a few ulps.
ATOL, RTOL = 2e-5, 1e-4

_SMALL = {
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "attn_implementation": "eager",
}


@contextlib.contextmanager
def _pe_lib_rotation(
    model: Any, module: Any, name: str, layout: str, seq_len: int | None = None
) -> Iterator[list[str]]:
    """``module.<name>`` replaced by pe_lib's rotation; yields the layer types it rotated."""
    config = model.config
    # layer types name the entries only where rope_parameters holds one per layer type
    per_layer = None if "rope_type" in config.rope_parameters else config.layer_types
    layer: dict[str, str | None] = {"type": None}
    rotated: list[str] = []

    def note_layer(attention: Any, *args: Any, **kwargs: Any) -> None:
        layer["type"] = None if per_layer is None else per_layer[attention.layer_idx]

    def rotate(q: torch.Tensor, k: torch.Tensor, *args: Any, **kwargs: Any):
        entry = resolve_scaling(
            config.rope_parameters,
            max_position_embeddings=config.max_position_embeddings,
            layer_type=layer["type"],
        )
        rotated.append(str(layer["type"]))
        turn: Callable[[torch.Tensor], torch.Tensor] = lambda x: apply_rope(  # noqa: E731
            x, POSITIONS, layout=layout, scaling=entry, seq_len=seq_len
        )
        return turn(q), turn(k)

    hooks = [
        attention.register_forward_pre_hook(note_layer, with_kwargs=True)
        for attention in model.modules()
        if hasattr(attention, "layer_idx") and "Attention" in type(attention).__name__
    ]
    original = getattr(module, name)
    setattr(module, name, rotate)
    try:
        yield rotated
    finally:
        setattr(module, name, original)
        for hook in hooks:
            hook.remove()


def _logits(model: Any) -> torch.Tensor:
    ids = torch.randint(0, 64, (2, SEQ_LEN), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return model(input_ids=ids, position_ids=POSITIONS.expand(2, -1)).logits


def _compare(family: str, config: Any, layout: str, name: str = "apply_rotary_pos_emb"):
    """The model's logits with its own rotation and with pe_lib's; returns both and the layer
    types pe_lib rotated."""
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    theirs = _logits(model)
    with _pe_lib_rotation(model, module, name, layout) as rotated:
        ours = _logits(model)
    assert rotated, "the model never called the replaced rotation"
    return ours, theirs, rotated


def test_llama_with_llama3_frequencies():
    rope = {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8,
        "rope_theta": 500000.0,
    }
    config = transformers.LlamaConfig(**_SMALL, rope_parameters=rope)
    ours, theirs, rotated = _compare("llama", config, "half")
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert len(rotated) == config.num_hidden_layers
    # the comparison can fail: the other layout gives other logits
    module = importlib.import_module("transformers.models.llama.modeling_llama")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with _pe_lib_rotation(model, module, "apply_rotary_pos_emb", "interleaved"):
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 100 * ATOL


def test_qwen2_with_yarn_and_its_attention_factor():
    rope = {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 16,
        "rope_theta": 1000000.0,
    }
    config = transformers.Qwen2Config(**_SMALL, rope_parameters=rope)
    ours, theirs, _ = _compare("qwen2", config, "half")
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)


def test_phi3_with_longrope_beyond_its_original_length_and_partial_rotation():
    pairs = 4  # head_dim 16, half of it rotated: 4 pairs
    rope = {
        "rope_type": "longrope",
        "short_factor": [1.0 + 0.1 * i for i in range(pairs)],
        "long_factor": [1.0 + 2.0 * i for i in range(pairs)],
        "original_max_position_embeddings": 8,  # the positions reach 14: the long factors
        "partial_rotary_factor": 0.5,
        "rope_theta": 10000.0,
    }
    config = transformers.Phi3Config(
        **{**_SMALL, "num_key_value_heads": 4},
        original_max_position_embeddings=8,  # Phi-3 keeps it at the top level too
        rope_parameters=rope,
        pad_token_id=0,
    )
    assert config.rope_parameters["original_max_position_embeddings"] == 8
    ours, theirs, _ = _compare("phi3", config, "half")
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)


def test_gemma3_with_one_entry_per_layer_type():
    rope = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    }
    config = transformers.Gemma3TextConfig(
        **{**_SMALL, "head_dim": 16},
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=8,
        rope_parameters=rope,
    )
    ours, theirs, rotated = _compare("gemma3", config, "half")
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert rotated == ["sliding_attention", "full_attention"]


def test_gpt_neox_with_a_quarter_of_the_head_rotated():
    config = transformers.GPTNeoXConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=2,  # head size 32, 8 channels rotated
        max_position_embeddings=64,
        attn_implementation="eager",
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    assert config.rope_parameters["partial_rotary_factor"] == 0.25
    ours, theirs, _ = _compare("gpt_neox", config, "half")
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)


def test_deepseek_v3_with_the_interleaved_layout_and_yarn():
    rope = {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 16,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "rope_theta": 10000.0,
    }
    config = transformers.DeepseekV3Config(
        **{**_SMALL, "num_key_value_heads": 4, "num_hidden_layers": 1},
        q_lora_rank=None,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=8,
        first_k_dense_replace=1,  # a dense MLP: no experts in a one-layer model
        n_routed_experts=4,
        rope_interleave=True,
        rope_parameters=rope,
    )
    ours, theirs, _ = _compare(
        "deepseek_v3", config, "interleaved", name="apply_rotary_pos_emb_interleave"
    )
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
