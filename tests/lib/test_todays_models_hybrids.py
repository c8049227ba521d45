"""Hybrids: ``layer_pattern`` against the tiny models transformers 5.23 builds.

For each hybrid model type, a tiny model is built on the CPU from a small config, and each
layer's modules decide the reference: whether it holds an attention module, which recurrent
mixer it holds, and whether the model builds a rotary embedding for its attention (Jamba's and
Kimi Linear's models build none: ``modeling_jamba.py`` and ``modeling_kimi_linear.py`` apply no
rotation; Falcon-H1's and Qwen3-Next's rotate with ``rotary_emb``, Qwen3-Next a share
``partial_rotary_factor`` of each head).
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.models.config_reader import read_config  # noqa: E402
from pe_lib.models.layer_pattern import NO_ATTENTION, LayerPositions, layer_pattern  # noqa: E402

MIXERS = {  # the module class of each recurrent mixer, by pe_lib's name
    "mamba": "JambaMambaMixer",
    "mamba2": "FalconH1Mixer",
    "gated_deltanet": "Qwen3NextGatedDeltaNet",
    "kimi_delta": "KimiLinearDeltaAttention",
}
ATTENTIONS = ("JambaAttention", "FalconH1Attention", "Qwen3NextAttention", "KimiLinearAttention")

SMALL = dict(
    hidden_size=32,
    intermediate_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=64,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)
TINY = {
    "jamba": dict(
        SMALL,
        num_hidden_layers=6,
        attn_layer_period=3,
        attn_layer_offset=1,
        num_experts=1,
        use_mamba_kernels=False,
    ),
    "falcon_h1": dict(
        SMALL,
        num_hidden_layers=3,
        mamba_d_ssm=32,
        mamba_n_heads=4,
        mamba_d_state=8,
        mamba_chunk_size=8,
        head_dim=8,
    ),
    "qwen3_next": dict(
        SMALL,
        num_hidden_layers=6,
        head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=2,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        num_experts=2,
        num_experts_per_tok=1,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=16,
        full_attention_interval=3,
    ),
    "kimi_linear": dict(
        SMALL,
        num_hidden_layers=5,
        kv_lora_rank=8,
        qk_rope_head_dim=4,
        qk_nope_head_dim=8,
        v_head_dim=8,
        linear_head_dim=8,
        linear_num_heads=4,
        num_experts=2,
        num_experts_per_tok=1,
        moe_intermediate_size=16,
        n_group=1,
        topk_group=1,
    ),
}


def _model(model_type: str) -> tuple[object, torch.nn.Module]:
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **TINY[model_type])
    return config, transformers.AutoModel.from_config(config)


def _reference(layer: torch.nn.Module) -> tuple[bool, str | None]:
    """(has attention, recurrent mixer) of a decoder layer, from its modules."""
    names = {type(module).__name__ for module in layer.modules()}
    mixers = [name for name, cls in MIXERS.items() if cls in names]
    assert len(mixers) <= 1
    return any(a in names for a in ATTENTIONS), mixers[0] if mixers else None


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_layers_as_the_tiny_model_builds_them(model_type: str) -> None:
    config, model = _model(model_type)
    pattern = layer_pattern(config.to_dict())
    assert len(pattern) == len(model.layers) == config.num_hidden_layers
    rotary = getattr(model, "rotary_emb", None)
    for layer, positions in zip(model.layers, pattern, strict=True):
        attends, mixer = _reference(layer)
        assert (positions.attention != NO_ATTENTION) == attends
        assert positions.recurrent == mixer
        if attends:
            assert positions.attention == "full" and positions.causal
            assert positions.rotates == (rotary is not None)
    kinds = {p.attention for p in pattern}
    assert "full" in kinds  # each tiny model has attention layers
    if model_type != "falcon_h1":
        assert NO_ATTENTION in kinds


def test_rotated_share_as_the_model_rotates() -> None:
    """Qwen3-Next's attention rotates a quarter of each head (its class's default), Falcon-H1's
    the whole head: the rotary embedding's inverse frequencies against the entry."""
    for model_type, share in (("qwen3_next", 0.25), ("falcon_h1", 1.0)):
        config, model = _model(model_type)
        entry = next(p.rope for p in layer_pattern(config.to_dict()) if p.rotates)
        assert entry is not None
        assert entry.get("partial_rotary_factor", 1.0) == share
        pairs = model.rotary_emb.inv_freq.numel()
        assert pairs == int(config.head_dim * share) // 2
        rotated = 2 * pairs
        expected = entry["rope_theta"] ** (-torch.arange(0, rotated, 2).double() / rotated)
        torch.testing.assert_close(model.rotary_emb.inv_freq.double(), expected)


def test_attention_modules_rotate_or_not() -> None:
    """Jamba's and Kimi Linear's attention modules take no cos and sin; Falcon-H1's and
    Qwen3-Next's do (their forward's ``position_embeddings``)."""
    import inspect

    for model_type, rotates in (
        ("jamba", False),
        ("kimi_linear", False),
        ("falcon_h1", True),
        ("qwen3_next", True),
    ):
        _, model = _model(model_type)
        attention = next(m for m in model.modules() if type(m).__name__ in ATTENTIONS)
        takes = "position_embeddings" in inspect.signature(attention.forward).parameters
        assert takes == rotates, model_type


def test_published_layer_lists() -> None:
    """Kimi Linear's checkpoint lists its layers 1-indexed; Qwen3-Next derives them from
    ``full_attention_interval``; Jamba from ``attn_layer_period`` and ``attn_layer_offset``."""
    kimi = transformers.KimiLinearConfig(
        num_hidden_layers=6,
        linear_attn_config={"full_attn_layers": [3, 6], "kda_layers": [1, 2, 4, 5]},
    )
    assert [p.attention for p in layer_pattern(kimi.to_dict())] == (
        [NO_ATTENTION] * 2 + ["full"] + [NO_ATTENTION] * 2 + ["full"]
    )
    qwen = transformers.Qwen3NextConfig(num_hidden_layers=8, full_attention_interval=4)
    assert [p.rotates for p in layer_pattern(qwen.to_dict())] == [False, False, False, True] * 2
    jamba = transformers.JambaConfig(num_hidden_layers=16)
    assert [i for i, p in enumerate(layer_pattern(jamba.to_dict())) if p.attention == "full"] == [
        4,
        12,
    ]


def test_a_layer_without_attention_is_checked() -> None:
    layer = LayerPositions(NO_ATTENTION, None, None, recurrent="mamba")
    assert not layer.rotates
    with pytest.raises(ValueError, match="no attention"):
        layer.visible(1, 0)
    with pytest.raises(ValueError, match="recurrent mixer"):
        LayerPositions(NO_ATTENTION, None, None)
    with pytest.raises(ValueError, match="recurrent mixer"):
        LayerPositions(
            NO_ATTENTION, None, {"rope_type": "default", "rope_theta": 1e4}, recurrent="mamba"
        )
    with pytest.raises(ValueError, match="recurrent"):
        LayerPositions("full", None, None, recurrent="lstm")
    without = read_config({"model_type": "jamba", "num_hidden_layers": 8}, use_transformers=False)
    with pytest.raises(ValueError, match="attn_layer_period"):
        layer_pattern(without)  # pe_lib substitutes no default of its own
