"""Today's models' positional choices, rebuilt by pe_lib inside tiny transformers models.

Each test builds a tiny random model of transformers 5.23 from a config (no download), runs it,
then runs it again with its positional part decided by pe_lib: the model's rotation function
and its eager attention are replaced by pe_lib's. The replacement ignores what the model
computed for positions (its cos and sin, its masks, its softmax scale): for each layer,
:func:`pe_lib.models.layer_pattern.layer_pattern` says whether it rotates, with which rotary entry, and
which keys it sees; :func:`pe_lib.models.temperature.attention_temperature` gives the temperature;
:func:`pe_lib.models.sinks.softmax_with_sinks` the learned sinks. The logits must agree to float32
rounding, and the layers the model rotated must be those pe_lib says rotate.

* Llama 4 (``models/llama4/modeling_llama4.py``): ``no_rope_layers``, chunked attention on the
  RoPE layers, the query temperature on the NoPE layers (counted from the cache), and Scout's
  ``llama3`` scaling (factor 16, equal frequency factors) on the RoPE layers;
* Cohere 2 (``models/cohere2/modeling_cohere2.py``): RoPE on the sliding layers only;
* Gemma 2 (``models/gemma2/modeling_gemma2.py``): sliding and full layers in turn, one base;
* Gemma 3 (``models/gemma3/modeling_gemma3.py``): two bases, sliding windows;
* gpt-oss (``models/gpt_oss/modeling_gpt_oss.py``): windows of alternating layers, YaRN's
  factor on cos and sin (``truncate: false``), learned sinks;
* DeepSeek-V3 (``models/deepseek_v3/modeling_deepseek_v3.py``): mscale on the softmax scale,
  decoupled RoPE, and the absorbed form of multi-head latent attention built by hand;
* Gemma 4 (``models/gemma4/modeling_gemma4.py``): ``"proportional"`` rotation.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pe_lib.models.layer_pattern import LayerPositions, layer_pattern  # noqa: E402
from pe_lib.models.sinks import softmax_with_sinks, streaming_cache  # noqa: E402
from pe_lib.models.temperature import attention_temperature  # noqa: E402
from pe_lib.rope import apply_rope  # noqa: E402

SEQ_LEN = 12
#: The positions the models run at: not from 0, so that a rotation at the wrong positions shows.
POSITIONS = torch.arange(3, 3 + SEQ_LEN)
ATOL, RTOL = 2e-5, 1e-4

_SMALL = {
    "vocab_size": 64,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "attn_implementation": "eager",
}


def _mask(layer: LayerPositions, length: int) -> torch.Tensor:
    """0 where pe_lib's pattern lets query i see key j, -inf elsewhere: (length, length)."""
    seen = torch.tensor([[layer.visible(i, j) for j in range(length)] for i in range(length)])
    return torch.zeros(length, length).masked_fill(~seen, float("-inf"))


class _PeLibPositions:
    """Replaces a model's rotation function and eager attention with pe_lib's."""

    def __init__(
        self,
        model: Any,
        family: str,
        *,
        rotation: str = "apply_rotary_pos_emb",
        layout: str = "half",
        scale: Callable[[Any], float] = lambda module: module.head_dim**-0.5,
        temperatures: tuple[str, ...] = (),
        seq_first: bool = False,
        single: bool = False,
        cache_start: int = 0,
    ) -> None:
        self.model, self.config = model, model.config
        self.module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        self.pattern = layer_pattern(self.config.to_dict())
        self.rotation, self.layout, self.scale = rotation, layout, scale
        self.temperatures, self.seq_first = temperatures, seq_first
        self.cache_start, self.single = cache_start, single
        self.layer = -1
        self.rotated: list[int] = []

    def _entry(self) -> dict[str, Any]:
        entry = self.pattern[self.layer].rope
        assert entry is not None, f"the model rotated layer {self.layer}, a NoPE layer for pe_lib"
        entry = dict(entry)
        if "yarn" in self.temperatures:  # the factor comes from pe_lib.models.temperature instead
            entry["attention_factor"] = 1.0
        return entry

    def rotate(self, q: torch.Tensor, k: torch.Tensor, *args: Any, **kwargs: Any):
        self.rotated.append(self.layer)
        entry = self._entry()

        def turn(x: torch.Tensor) -> torch.Tensor:
            x = x.transpose(1, 2) if self.seq_first else x
            y = apply_rope(x, POSITIONS, layout=self.layout, scaling=entry)
            return y.transpose(1, 2) if self.seq_first else y

        if self.single:  # Gemma 4 rotates queries and keys in separate calls
            return turn(q)
        return turn(q), turn(k)

    def attention(self, module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
        layer = self.pattern[module.layer_idx]
        groups = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
        where = torch.arange(query.shape[-2]) + self.cache_start  # query positions in the cache
        layer_type = next((t for t in self._types() if self._types()[module.layer_idx] == t), None)
        factor = torch.ones(len(where), dtype=torch.float64)
        for rule in self.temperatures:
            if rule == "nope_log" and not layer.rotates:
                factor = factor * attention_temperature(rule, self.config.to_dict(), where)
            if rule in ("yarn", "mla_mscale") and layer.rotates:
                per_layer = "rope_type" not in self.config.rope_parameters
                factor = factor * attention_temperature(
                    rule, self.config.to_dict(), where, layer_type=layer_type if per_layer else None
                )
        scores = query @ key.transpose(-1, -2) * self.scale(module)
        scores = scores * factor.to(scores.dtype)[:, None] + _mask(layer, query.shape[-2])
        if hasattr(module, "sinks"):
            weights = softmax_with_sinks(scores, module.sinks)
        else:
            weights = scores.softmax(dim=-1)
        return (weights @ value).transpose(1, 2).contiguous(), weights

    def _types(self) -> list[str]:
        return list(getattr(self.config, "layer_types", None) or [])

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        def note(attention: Any, *args: Any, **kwargs: Any) -> None:
            self.layer = attention.layer_idx

        hooks = [
            m.register_forward_pre_hook(note, with_kwargs=True)
            for m in self.model.modules()
            if hasattr(m, "layer_idx") and "Attention" in type(m).__name__
        ]
        saved = {
            name: getattr(self.module, name) for name in (self.rotation, "eager_attention_forward")
        }
        setattr(self.module, self.rotation, self.rotate)
        self.module.eager_attention_forward = self.attention
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(self.module, name, value)
            for hook in hooks:
                hook.remove()


def _logits(model: Any) -> torch.Tensor:
    ids = torch.randint(0, 64, (2, SEQ_LEN), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return model(input_ids=ids, position_ids=POSITIONS.expand(2, -1)).logits


def _model(config: Any) -> Any:
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def _rotating(pattern: list[LayerPositions]) -> list[int]:
    return [i for i, layer in enumerate(pattern) if layer.rotates]


def _llama4_config(**extra: Any) -> Any:
    return transformers.Llama4TextConfig(
        **{**_SMALL, "num_hidden_layers": 8},
        head_dim=16,
        intermediate_size_mlp=96,
        num_local_experts=2,
        num_experts_per_tok=1,
        attention_chunk_size=4,
        floor_scale=4,  # the temperature grows within 12 positions
        attn_scale=0.5,
        **{"rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}, **extra},
    )


def test_llama4_nope_layers_chunks_and_temperature():
    config = _llama4_config()
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(
        model,
        "llama4",
        rotation="apply_rotary_emb",
        layout="interleaved",
        temperatures=("nope_log",),
        seq_first=True,
    )
    assert _rotating(positions.pattern) == [0, 1, 2, 4, 5, 6]  # every fourth has no RoPE
    assert [layer.attention for layer in positions.pattern[:4]] == [
        "chunked",
        "chunked",
        "chunked",
        "full",
    ]
    for attention in model.modules():  # pe_lib applies the temperature instead of the model
        if hasattr(attention, "attn_temperature_tuning"):
            attention.attn_temperature_tuning = False
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert sorted(set(positions.rotated)) == _rotating(positions.pattern)
    # the test can fail: the temperature counted from position_ids, not the cache, differs
    late = _PeLibPositions(
        model,
        "llama4",
        rotation="apply_rotary_emb",
        layout="interleaved",
        temperatures=("nope_log",),
        seq_first=True,
        cache_start=int(POSITIONS[0]),
    )
    with late.active():
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 10 * ATOL  # a small model: small effects


def test_llama4_scout_llama3_scaling_on_the_rope_layers():
    """Scout's entry, ``llama3`` with factor 16 and equal frequency factors (no smooth band:
    pairs slower than the original length are divided by 16, the others kept), with the
    original length scaled down to the tiny model so that the divided pairs turn visibly
    within its 12 positions."""
    scout = {
        "rope_type": "llama3",
        "factor": 16.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 1.0,
        "original_max_position_embeddings": 8,
        "rope_theta": 500000.0,
    }
    config = _llama4_config(rope_parameters=scout)
    model = _model(config)
    theirs = _logits(model)

    def pe_lib_positions() -> _PeLibPositions:
        return _PeLibPositions(
            model,
            "llama4",
            rotation="apply_rotary_emb",
            layout="interleaved",
            temperatures=("nope_log",),
            seq_first=True,
        )

    for attention in model.modules():  # pe_lib applies the temperature instead of the model
        if hasattr(attention, "attn_temperature_tuning"):
            attention.attn_temperature_tuning = False
    positions = pe_lib_positions()
    assert all(layer.rope == scout for layer in positions.pattern if layer.rotates)
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert sorted(set(positions.rotated)) == _rotating(positions.pattern) == [0, 1, 2, 4, 5, 6]
    # the test can fail: the same layers without the scaling give other logits
    plain = pe_lib_positions()
    plain.pattern = [
        LayerPositions(layer.attention, layer.window, {"rope_type": "default", "rope_theta": 5e5})
        if layer.rotates
        else layer
        for layer in plain.pattern
    ]
    with plain.active():
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 10 * ATOL


def test_llama4_temperature_formula_and_explicit_no_rope_layers():
    config = {"model_type": "llama4_text", "attn_scale": 0.1, "floor_scale": 8192}
    p = torch.tensor([0, 8190, 8191, 3 * 8192 - 1, 10**6])
    expected = [1.0, 1.0, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(4)]
    got = attention_temperature("nope_log", config, p)
    torch.testing.assert_close(got[:4], torch.tensor(expected, dtype=torch.float64))
    assert got[4] > got[3]
    flags = [1, 0, 0, 1]
    explicit = transformers.Llama4TextConfig(
        **_SMALL, no_rope_layers=flags, rope_parameters={"rope_type": "default", "rope_theta": 1e4}
    )
    assert [layer.rotates for layer in layer_pattern(explicit.to_dict())] == [
        True,
        False,
        False,
        True,
    ]


def test_cohere2_rotates_its_sliding_layers_only():
    config = transformers.Cohere2Config(
        **{**_SMALL, "pad_token_id": 0},
        sliding_window=4,
        layer_types=[
            "sliding_attention",
            "sliding_attention",
            "sliding_attention",
            "full_attention",
        ],
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
    )
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(model, "cohere2", layout="interleaved")
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert _rotating(positions.pattern) == [0, 1, 2]
    assert sorted(set(positions.rotated)) == [0, 1, 2]
    assert positions.pattern[0].window == 4 and positions.pattern[3].attention == "full"


def test_gemma2_alternates_sliding_and_full_layers():
    config = transformers.Gemma2Config(
        **{**_SMALL, "head_dim": 16},
        sliding_window=5,
        query_pre_attn_scalar=16,
        attn_logit_softcapping=None,  # pe_lib's attention here has no softcapping
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(
        model, "gemma2", scale=lambda module: config.query_pre_attn_scalar**-0.5
    )
    assert [layer.attention for layer in positions.pattern] == ["sliding", "full"] * 2
    assert [layer.window for layer in positions.pattern] == [5, None] * 2
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert sorted(set(positions.rotated)) == [0, 1, 2, 3]
    # the test can fail: every layer seeing every key gives other logits
    full = _PeLibPositions(model, "gemma2", scale=lambda module: config.query_pre_attn_scalar**-0.5)
    full.pattern = [LayerPositions("full", None, layer.rope) for layer in full.pattern]
    with full.active():
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 10 * ATOL


def test_gemma3_two_bases_and_windows():
    rope = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    }
    config = transformers.Gemma3TextConfig(
        **{**_SMALL, "head_dim": 16},
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        sliding_window=5,
        query_pre_attn_scalar=16,
        rope_parameters=rope,
    )
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(
        model, "gemma3", scale=lambda module: config.query_pre_attn_scalar**-0.5
    )
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    bases = [layer.rope["rope_theta"] for layer in positions.pattern if layer.rope]
    assert bases == [10000.0, 10000.0, 10000.0, 1000000.0]


def test_gemma3_from_a_published_style_config():
    """A config.json keeps the local base as rope_local_base_freq and the pattern as an int."""
    published = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 12,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        "sliding_window": 1024,
        "sliding_window_pattern": 6,
    }
    pattern = layer_pattern(published)
    ours = transformers.Gemma3TextConfig(
        num_hidden_layers=12,
        sliding_window=1024,
        rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
    )
    assert [layer.attention for layer in pattern] == [
        "full" if t == "full_attention" else "sliding" for t in ours.layer_types
    ]
    assert [layer.rope["rope_theta"] for layer in pattern if layer.rope] == [
        1e6 if t == "full_attention" else 1e4 for t in ours.layer_types
    ]


def _gpt_oss_config() -> Any:
    return transformers.GptOssConfig(
        **_SMALL,
        head_dim=16,
        num_local_experts=2,
        num_experts_per_tok=1,
        sliding_window=4,
        rope_parameters={
            "rope_type": "yarn",
            "factor": 32.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 16,
            "rope_theta": 150000.0,
        },
    )


def test_gpt_oss_windows_yarn_temperature_and_learned_sinks():
    config = _gpt_oss_config()
    model = _model(config)
    with torch.no_grad():
        for attention in model.modules():
            if hasattr(attention, "sinks"):
                attention.sinks.normal_(0.0, 2.0)  # sinks that take a visible share
    theirs = _logits(model)
    positions = _PeLibPositions(model, "gpt_oss", temperatures=("yarn",))
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert [layer.attention for layer in positions.pattern] == ["sliding", "full"] * 2
    factor = attention_temperature("yarn", config.to_dict(), torch.tensor([0]))
    assert factor.item() == pytest.approx((0.1 * math.log(32) + 1) ** 2)


def test_softmax_with_sinks_leaves_weight_to_the_sink():
    scores = torch.zeros(1, 2, 1, 3, dtype=torch.float64)
    weights = softmax_with_sinks(scores, torch.tensor([0.0, math.log(3.0)], dtype=torch.float64))
    torch.testing.assert_close(
        weights.sum(-1).flatten(), torch.tensor([0.75, 0.5], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="sinks must have shape"):
        softmax_with_sinks(scores, torch.zeros(3))
    with pytest.raises(TypeError, match="scores must be a floating"):
        softmax_with_sinks(scores.long(), torch.zeros(2))


def test_streaming_cache_keeps_sinks_and_window_at_cache_positions():
    kept, positions = streaming_cache(10, sinks=2, window=3)
    assert kept.tolist() == [0, 1, 7, 8, 9]
    assert positions.tolist() == [0, 1, 2, 3, 4]
    kept, _ = streaming_cache(4, sinks=2, window=3)
    assert kept.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="window"):
        streaming_cache(4, sinks=2, window=0)


def _deepseek_config(**extra: Any) -> Any:
    rope = {
        "rope_type": "yarn",
        "factor": 40.0,
        "original_max_position_embeddings": 16,
        "beta_fast": 32,
        "beta_slow": 1,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "rope_theta": 10000.0,
    }
    return transformers.DeepseekV3Config(
        **{**_SMALL, "num_key_value_heads": 4, "num_hidden_layers": 1},
        q_lora_rank=None,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=8,
        v_head_dim=8,
        first_k_dense_replace=1,
        n_routed_experts=4,
        n_group=1,
        topk_group=1,
        rope_interleave=True,
        rope_parameters=rope,
        **extra,
    )


def test_deepseek_v3_mscale_on_the_softmax_scale():
    config = _deepseek_config()
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(
        model,
        "deepseek_v3",
        rotation="apply_rotary_pos_emb_interleave",
        layout="interleaved",
        scale=lambda module: module.qk_head_dim**-0.5,
        temperatures=("mla_mscale",),
    )
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    tau = attention_temperature("mla_mscale", config.to_dict(), torch.tensor([0])).item()
    assert tau == pytest.approx((0.1 * math.log(40) + 1) ** 2)
    # without it, the logits differ
    plain = _PeLibPositions(
        model,
        "deepseek_v3",
        rotation="apply_rotary_pos_emb_interleave",
        layout="interleaved",
        scale=lambda module: module.qk_head_dim**-0.5,
    )
    with plain.active():
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 10 * ATOL  # a small model: small effects


def test_deepseek_v3_absorbed_latent_attention_equals_the_expanded_one():
    """MLA with the key up-projection absorbed into the query: the scores over the latent and
    the one shared rotary key equal transformers' scores over the expanded keys."""
    config = _deepseek_config()
    model = _model(config)
    attention = model.model.layers[0].self_attn
    heads, nope, rot = config.num_attention_heads, config.qk_nope_head_dim, config.qk_rope_head_dim
    x = torch.randn(1, SEQ_LEN, config.hidden_size, generator=torch.Generator().manual_seed(2))
    captured: dict[str, torch.Tensor] = {}
    module = importlib.import_module("transformers.models.deepseek_v3.modeling_deepseek_v3")
    original = module.eager_attention_forward

    def capture(module_, query, key, value, mask, scaling, **kwargs):
        captured["scores"] = query @ key.transpose(-1, -2) * scaling
        return original(module_, query, key, value, mask, scaling, **kwargs)

    module.eager_attention_forward = capture
    try:
        with torch.no_grad():
            cos, sin = model.model.rotary_emb(x, POSITIONS[None])
            attention(x, (cos, sin), attention_mask=None)
    finally:
        module.eager_attention_forward = original
    with torch.no_grad():
        q = attention.q_proj(x).view(1, SEQ_LEN, heads, nope + rot).transpose(1, 2)
        q_nope, q_rot = q.split([nope, rot], dim=-1)
        latent, k_rot = attention.kv_a_proj_with_mqa(x).split([config.kv_lora_rank, rot], dim=-1)
        latent = attention.kv_a_layernorm(latent)  # (1, seq, kv_lora_rank): all the cache holds
        entry = dict(config.rope_parameters)
        q_rot = apply_rope(q_rot, POSITIONS, layout="interleaved", scaling=entry)
        k_rot = apply_rope(k_rot[:, None], POSITIONS, layout="interleaved", scaling=entry)
        w_uk = attention.kv_b_proj.weight.view(heads, nope + config.v_head_dim, -1)[:, :nope]
        q_latent = q_nope @ w_uk  # (1, heads, seq, kv_lora_rank): W_UK absorbed into the query
        scale = (
            attention.qk_head_dim**-0.5
            * attention_temperature("mla_mscale", config.to_dict(), torch.tensor([0])).item()
        )
        absorbed = q_latent @ latent[:, None].transpose(-1, -2) + q_rot @ k_rot.transpose(-1, -2)
        absorbed = absorbed * scale
    torch.testing.assert_close(absorbed, captured["scores"], atol=ATOL, rtol=RTOL)


def test_gemma4_proportional_rotation():
    gemma4 = pytest.importorskip("transformers.models.gemma4.modeling_gemma4")
    del gemma4
    rope = {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {
            "rope_type": "proportional",
            "partial_rotary_factor": 0.25,
            "rope_theta": 1e6,
        },
    }
    config = transformers.Gemma4TextConfig(
        **{**_SMALL, "head_dim": 16},
        global_head_dim=32,
        vocab_size_per_layer_input=64,  # its per-layer embeddings: small too
        hidden_size_per_layer_input=8,
        layer_types=["sliding_attention"] * 3 + ["full_attention"],
        sliding_window=5,
        rope_parameters=rope,
    )
    model = _model(config)
    theirs = _logits(model)
    positions = _PeLibPositions(
        model, "gemma4", scale=lambda module: 1.0, seq_first=True, single=True
    )
    with positions.active():
        ours = _logits(model)
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=RTOL)
    assert sorted(set(positions.rotated)) == [0, 1, 2, 3]
    # the test can fail: rotating the leading quarter of the head as a smaller head (partial
    # rotation's convention) instead of the whole head's fastest pairs gives other logits
    tail = LayerPositions("full", None, {**rope["full_attention"], "rope_type": "default"})
    partial = _PeLibPositions(
        model, "gemma4", scale=lambda module: 1.0, seq_first=True, single=True
    )
    partial.pattern[3] = tail
    with partial.active():
        wrong = _logits(model)
    assert (wrong - theirs).abs().max() > 10 * ATOL


def test_layer_pattern_errors_name_the_key():
    with pytest.raises(TypeError, match="config must be a Mapping"):
        layer_pattern([1, 2])
    with pytest.raises(ValueError, match="model_type"):
        layer_pattern({"num_hidden_layers": 2})
    with pytest.raises(ValueError, match="layer_types"):
        layer_pattern(
            {
                "model_type": "gpt_oss",
                "num_hidden_layers": 2,
                "layer_types": ["full_attention"],
                "rope_theta": 1e4,
                "sliding_window": 8,
            }
        )
    with pytest.raises(ValueError, match="no_rope_layers"):
        layer_pattern(
            {
                "model_type": "llama4_text",
                "num_hidden_layers": 2,
                "no_rope_layers": [1, 2],
                "rope_theta": 1e4,
                "attention_chunk_size": 8,
            }
        )
    with pytest.raises(ValueError, match="rule must be one of"):
        attention_temperature("cold", {}, torch.tensor([0]))


@pytest.mark.parametrize("window", [1, 3, 5])
def test_visible_keys_are_transformers_masks(window):
    masking = importlib.import_module("transformers.masking_utils")
    sliding = masking.sliding_window_causal_mask_function(window)
    chunked = masking.and_masks(
        masking.chunked_overlay(window, torch.zeros(1, dtype=torch.int64)),
        masking.causal_mask_function,
    )
    kinds = {
        "sliding": sliding,
        "chunked": chunked,
        "full": masking.causal_mask_function,
    }
    for kind, theirs in kinds.items():
        layer = LayerPositions(kind, None if kind == "full" else window, None)
        for i in range(12):
            for j in range(12):
                assert layer.visible(i, j) == bool(
                    theirs(0, 0, torch.tensor(i), torch.tensor(j))
                ), (kind, i, j)


def test_temperature_and_sink_errors_name_the_argument():
    p = torch.arange(4)
    with pytest.raises(ValueError, match=r"config\['seq_length'\]"):
        attention_temperature("logn", {"model_type": "qwen"}, p)
    with pytest.raises(TypeError, match="config must be a Mapping"):
        attention_temperature("logn", [("seq_length", 8)], p)
    with pytest.raises(TypeError, match="positions must be an int64"):
        attention_temperature("logn", {"seq_length": 8}, p.double())
    with pytest.raises(ValueError, match=r"config\['floor_scale'\]"):
        attention_temperature("nope_log", {"floor_scale": 0}, p)
    with pytest.raises(TypeError, match="length must be an int"):
        streaming_cache(True, sinks=1, window=2)


def test_logn_is_one_within_the_training_length_and_log_beyond():
    got = attention_temperature("logn", {"seq_length": 8}, torch.tensor([0, 7, 8, 63]))
    expected = torch.tensor([1.0, 1.0, math.log(9, 8), 2.0], dtype=torch.float64)
    torch.testing.assert_close(got, expected)


def test_published_style_llama4_and_cohere2_configs_read_as_transformers_reads_them():
    """A config.json keeps rope_theta and rope_scaling at the top level, Llama 4 an empty
    no_rope_layers, Cohere 2 an int sliding_window_pattern: pe_lib reads them as the
    configuration classes of transformers do."""
    scaling = {
        "rope_type": "llama3",
        "factor": 16.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
    }
    published = {
        "model_type": "llama4_text",
        "num_hidden_layers": 8,
        "no_rope_layers": [],
        "attention_chunk_size": 8192,
        "rope_theta": 500000.0,
        "rope_scaling": scaling,
    }
    theirs = transformers.Llama4TextConfig(
        num_hidden_layers=8, no_rope_layers=[], rope_parameters={**scaling, "rope_theta": 5e5}
    )
    ours = layer_pattern(published)
    assert ours == layer_pattern(theirs.to_dict())
    assert [layer.rotates for layer in ours] == [bool(flag) for flag in theirs.no_rope_layers]
    cohere = {
        "model_type": "cohere2",
        "num_hidden_layers": 8,
        "sliding_window": 4096,
        "sliding_window_pattern": 4,
        "rope_theta": 50000.0,
    }
    reference = transformers.Cohere2Config(num_hidden_layers=8, sliding_window_pattern=4)
    assert [layer.attention for layer in layer_pattern(cohere)] == [
        "sliding" if kind == "sliding_attention" else "full" for kind in reference.layer_types
    ]
