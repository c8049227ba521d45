"""pe_lib.rope.scaling against the code real models run: transformers' ``ROPE_INIT_FUNCTIONS``.

Each row of ``MODELS`` is a rope entry a published model ships, cited to the Hugging Face Hub
repository and the ``config.json`` field it was read from, with the model's head size and
``max_position_embeddings``. ``EDGES`` adds the cases where a careless implementation parts from
the reference: short training lengths for YaRN, factor 1, ``mscale`` alone, ``truncate`` null,
equal Llama 3 frequency factors, and the current length just below, at and above the original
length for dynamic NTK and LongRoPE.

transformers computes in float32 and pe_lib in float64, so the frequencies must agree to float32
rounding (relative 2e-6: a few float32 ulps from the power and the division) and the attention
factors to float64 rounding (both compute it in Python floats). No network: the configs are built
here from the entries.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

transformers = pytest.importorskip("transformers")
from rope_entries import DEEPSEEK_V3_YARN, GPT_OSS_YARN, LLAMA31, QWEN25_YARN  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

from pe_lib.rope import apply_rope  # noqa: E402
from pe_lib.rope import scaling as rope_scaling  # noqa: E402
from pe_lib.rope.scaling import ROPE_SCALINGS, rope_frequencies  # noqa: E402

#: float32 rounding of transformers' computation, relative.
RTOL = 2e-6


def _phi3_style_factors(count: int, top: float) -> list[float]:
    """A rising list of ``count`` per-pair divisors from 1 to ``top``, the shape of Phi-3's lists
    (slow pairs divided more); the real lists could not be read here, so these stand in."""
    return [1.0 + (top - 1.0) * (i / (count - 1)) ** 2 for i in range(count)]


#: (id, entry as published, head_dim, max_position_embeddings, layer_type)
MODELS = [
    # meta-llama/Llama-3.1-8B, config.json "rope_scaling" (rope_theta 500000.0 at the top level,
    # head_dim 4096 / 32 = 128, max_position_embeddings 131072).
    (
        "llama-3.1-8b",
        {**LLAMA31, "rope_theta": 500000.0},
        128,
        131072,
        None,
    ),
    # meta-llama/Llama-3.2-1B, config.json "rope_scaling" (rope_theta 500000.0, head_dim 64).
    (
        "llama-3.2-1b",
        {
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
            "rope_theta": 500000.0,
        },
        64,
        131072,
        None,
    ),
    # meta-llama/Llama-4-Scout-17B-16E, config.json "text_config"."rope_scaling" (rope_theta
    # 500000.0, head_dim 128, max_position_embeddings 10485760): equal frequency factors.
    (
        "llama-4-scout",
        {
            "factor": 16.0,
            "high_freq_factor": 1.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
            "rope_theta": 500000.0,
        },
        128,
        10485760,
        None,
    ),
    # Qwen/Qwen2.5-7B-Instruct, the model card's "Processing Long Texts" entry to add to
    # config.json as "rope_scaling" (rope_theta 1000000.0, head_dim 3584 / 28 = 128).
    (
        "qwen2.5-7b-yarn",
        {**QWEN25_YARN, "rope_theta": 1000000.0},
        128,
        131072,
        None,
    ),
    # deepseek-ai/DeepSeek-V3, config.json "rope_scaling" (rope_theta 10000, qk_rope_head_dim 64,
    # max_position_embeddings 163840).
    (
        "deepseek-v3",
        {**DEEPSEEK_V3_YARN, "rope_theta": 10000.0},
        64,
        163840,
        None,
    ),
    # openai/gpt-oss-20b, config.json "rope_scaling" (rope_theta 150000, head_dim 64,
    # max_position_embeddings 131072).
    (
        "gpt-oss-20b",
        {**GPT_OSS_YARN, "rope_theta": 150000.0},
        64,
        131072,
        None,
    ),
    # google/gemma-3-4b-it, config.json "text_config": "rope_scaling" {"factor": 8.0,
    # "rope_type": "linear"} with rope_theta 1000000.0 for the full-attention layers and
    # rope_local_base_freq 10000.0 for the sliding ones (head_dim 256), as transformers 5
    # writes them in "rope_parameters", one entry per layer type.
    *(
        (
            f"gemma-3-4b-{layer_type}",
            {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            },
            256,
            131072,
            layer_type,
        )
        for layer_type in ("full_attention", "sliding_attention")
    ),
    # microsoft/Phi-3-mini-128k-instruct, config.json: "rope_scaling" {"type": "longrope",
    # "long_factor": [48 numbers], "short_factor": [48 numbers]}, "original_max_position_embeddings"
    # 4096 and "max_position_embeddings" 131072 at the top level (transformers 5 moves the
    # original length into "rope_parameters", as here), rope_theta 10000.0, head_dim 3072 / 32 = 96.
    # The 48-number lists are stand-ins of the same length and shape (rising from 1; the long list
    # to about 65, the short one to about 3), not the published values.
    (
        "phi-3-mini-128k",
        {
            "type": "longrope",
            "long_factor": _phi3_style_factors(48, 65.0),
            "short_factor": _phi3_style_factors(48, 3.0),
            "original_max_position_embeddings": 4096,
            "rope_theta": 10000.0,
        },
        96,
        131072,
        None,
    ),
    # google/gemma-4 (transformers 5.23, models/gemma4/configuration_gemma4.py: the default
    # "rope_parameters" of Gemma4TextConfig): full-attention layers "proportional" with
    # partial_rotary_factor 0.25 and rope_theta 1000000.0, head_dim 512 (global_head_dim).
    (
        "gemma-4-full",
        {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6},
        512,
        131072,
        None,
    ),
]

_SHORT_YARN = [
    (
        f"yarn-L{length}",
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": length},
        8,
        4 * length,
        None,
    )
    for length in (32, 64, 128)
]

EDGES = [
    *_SHORT_YARN,
    (
        "yarn-L64-head64",
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
        64,
        256,
        None,
    ),
    (
        "yarn-factor-1",
        {"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": 4096},
        64,
        4096,
        None,
    ),
    (
        "yarn-mscale-alone",
        {
            "rope_type": "yarn",
            "factor": 40.0,
            "mscale": 0.707,
            "original_max_position_embeddings": 4096,
        },
        64,
        163840,
        None,
    ),
    (
        "yarn-mscale-zero",
        {
            "rope_type": "yarn",
            "factor": 40.0,
            "mscale": 1.0,
            "mscale_all_dim": 0.0,
            "original_max_position_embeddings": 4096,
        },
        64,
        163840,
        None,
    ),
    (
        "yarn-attention-factor",
        {
            "rope_type": "yarn",
            "factor": 8.0,
            "attention_factor": 1.5,
            "original_max_position_embeddings": 4096,
        },
        64,
        32768,
        None,
    ),
    (
        "yarn-truncate-null",
        {
            "rope_type": "yarn",
            "factor": 32.0,
            "truncate": None,
            "original_max_position_embeddings": 4096,
            "rope_theta": 150000.0,
        },
        64,
        131072,
        None,
    ),
    (
        "yarn-partial",
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 2048,
            "partial_rotary_factor": 0.5,
        },
        128,
        8192,
        None,
    ),
    (
        "linear-partial",
        {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.25},
        80,
        4096,
        None,
    ),  # fmt: skip
    ("default-partial", {"rope_type": "default", "partial_rotary_factor": 0.25}, 256, 2048, None),
    ("default", {"rope_type": "default", "rope_theta": 10000.0}, 128, 2048, None),
    (
        "llama3-step",
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 2.0,
            "high_freq_factor": 2.0,
            "original_max_position_embeddings": 2048,
        },
        128,
        16384,
        None,
    ),
    ("dynamic", {"rope_type": "dynamic", "factor": 2.0}, 128, 2048, None),
    (
        "dynamic-partial",
        {"rope_type": "dynamic", "factor": 4.0, "partial_rotary_factor": 0.5},
        128,
        2048,
        None,
    ),  # fmt: skip
    (
        "longrope-no-factor",
        {
            "rope_type": "longrope",
            "long_factor": _phi3_style_factors(16, 8.0),
            "short_factor": _phi3_style_factors(16, 1.5),
            "original_max_position_embeddings": 512,
        },
        32,
        4096,
        None,
    ),
    (
        "longrope-factor-and-attention",
        {
            "rope_type": "longrope",
            "long_factor": _phi3_style_factors(16, 8.0),
            "short_factor": _phi3_style_factors(16, 1.5),
            "factor": 4.0,
            "attention_factor": 1.2,
            "original_max_position_embeddings": 512,
        },
        32,
        4096,
        None,
    ),
    (
        "proportional-factor",
        {"rope_type": "proportional", "partial_rotary_factor": 0.5, "factor": 2.0},
        64,
        2048,
        None,
    ),
]

ROWS = MODELS + EDGES


def _flat(entry: dict, layer_type: str | None) -> dict:
    return entry if layer_type is None else entry[layer_type]


def _rope_type(entry: dict) -> str:
    name = entry.get("rope_type", entry.get("type", "default"))
    return "longrope" if name == "su" else name


def hf_config(entry: dict, head_dim: int, max_position_embeddings: int, layer_type: str | None):
    """A transformers config holding ``entry`` as ``rope_parameters`` (a copy: it is edited)."""
    flat = copy.deepcopy(_flat(entry, layer_type))
    flat.setdefault("rope_theta", 10000.0)
    if "type" in flat:
        flat["rope_type"] = _rope_type(flat)
        del flat["type"]
    return transformers.PretrainedConfig(
        head_dim=head_dim,
        hidden_size=head_dim * 4,
        num_attention_heads=4,
        max_position_embeddings=max_position_embeddings,
        rope_parameters=flat,
    )


def hf_frequencies(
    entry: dict, head_dim: int, max_len: int, layer_type: str | None, seq_len: int | None
) -> tuple[torch.Tensor, float]:
    flat = _flat(entry, layer_type)
    rope_type = _rope_type(flat)
    config = hf_config(entry, head_dim, max_len, layer_type)
    if rope_type == "default":  # each model's own compute_default_rope_parameters
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        dim = int(head_dim * flat.get("partial_rotary_factor", 1.0))
        config.head_dim = dim  # Llama's default reads no partial_rotary_factor
        inv_freq, factor = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
        return inv_freq, factor
    inv_freq, factor = ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)
    return inv_freq, float(factor)


def _base(entry: dict, layer_type: str | None) -> float | None:
    """``base=`` for pe_lib: hf_config's 10000 where the entry holds no rope_theta."""
    return None if "rope_theta" in _flat(entry, layer_type) else 10000.0


def _lengths(entry: dict, layer_type: str | None, max_len: int) -> list[int | None]:
    """The current lengths to compare at: around the original length where it matters."""
    flat = _flat(entry, layer_type)
    if _rope_type(flat) == "dynamic":
        return [max_len // 2, max_len - 1, max_len, max_len + 1, 3 * max_len]
    if _rope_type(flat) == "longrope":
        original = flat["original_max_position_embeddings"]
        return [1, original - 1, original, original + 1, max_len]
    return [None]


def _cases():
    for row_id, entry, head_dim, max_len, layer_type in ROWS:
        for seq_len in _lengths(entry, layer_type, max_len):
            suffix = "" if seq_len is None else f"-len{seq_len}"
            yield pytest.param(entry, head_dim, max_len, layer_type, seq_len, id=row_id + suffix)


def relative_difference(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """max |ours - theirs| / |theirs| over the pairs (theirs 0: the absolute difference)."""
    theirs = theirs.to(torch.float64)
    scale = theirs.abs().where(theirs != 0, torch.ones_like(theirs))
    return float(((ours - theirs).abs() / scale).max())


@pytest.mark.parametrize(("entry", "head_dim", "max_len", "layer_type", "seq_len"), list(_cases()))
def test_frequencies_and_attention_factor_match_transformers(
    entry, head_dim, max_len, layer_type, seq_len
):
    theirs, their_factor = hf_frequencies(entry, head_dim, max_len, layer_type, seq_len)
    ours, our_factor = rope_frequencies(
        head_dim,
        base=_base(entry, layer_type),
        scaling=copy.deepcopy(entry),
        seq_len=seq_len if seq_len is not None else max_len,
        max_position_embeddings=max_len,
        layer_type=layer_type,
    )
    assert ours.dtype == torch.float64 and ours.shape == theirs.shape
    assert relative_difference(ours, theirs) < RTOL
    assert math.isclose(our_factor, their_factor, rel_tol=1e-12)


def test_every_reference_rope_type_is_in_the_table():
    """Every rope_type transformers defines is registered in pe_lib and compared above."""
    compared = {_rope_type(_flat(entry, layer)) for _, entry, _, _, layer in ROWS}
    assert set(ROPE_INIT_FUNCTIONS) <= set(ROPE_SCALINGS)
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} <= compared


def test_the_older_name_su_is_longrope():
    row = next(row for row in MODELS if row[0] == "phi-3-mini-128k")
    entry = {**row[1], "type": "su"}
    for seq_len in (4096, 4097):
        ours, factor = rope_frequencies(
            96, scaling=entry, seq_len=seq_len, max_position_embeddings=131072
        )
        theirs, their_factor = hf_frequencies(row[1], 96, 131072, None, seq_len)
        assert relative_difference(ours, theirs) < RTOL and math.isclose(factor, their_factor)


def _entry(row_id: str) -> dict:
    return next(entry for name, entry, *_ in ROWS if name == row_id)


def test_the_edges_differ_from_the_naive_formulas():
    """The edge rows are edges: each is where an implementation that skips the clamp, reads
    mscale alone, or treats truncate null as true, gives other numbers than the reference."""
    short = _entry("yarn-L32")
    clamped, _ = rope_frequencies(8, base=1e4, scaling=short)
    unclamped, _ = rope_frequencies(8, base=1e4, scaling={**short, "clamp_ramp": False})
    assert relative_difference(unclamped, clamped) > 0.1
    _, alone = rope_frequencies(64, base=1e4, scaling=_entry("yarn-mscale-alone"))
    assert not math.isclose(alone, (0.1 * 0.707 * math.log(40) + 1))
    null_entry = _entry("yarn-truncate-null")
    null, _ = rope_frequencies(64, scaling=null_entry)
    true, _ = rope_frequencies(64, scaling={**null_entry, "truncate": True})
    assert relative_difference(null, true) > 0.1


# --- where pe_lib and transformers' modules part, on purpose or by state ---------------------


def _llama_rotary(entry: dict, head_dim: int, max_position_embeddings: int):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = transformers.LlamaConfig(
        head_dim=head_dim,
        hidden_size=head_dim * 4,
        num_attention_heads=4,
        max_position_embeddings=max_position_embeddings,
        rope_parameters=copy.deepcopy(entry),
    )
    return LlamaRotaryEmbedding(config)


def test_per_layer_yarn_reads_the_layers_own_truncate():
    """transformers 5.23 reads ``truncate`` from the top level of ``rope_parameters``, which a
    per-layer dict does not hold, so it truncates whatever the layer says; pe_lib follows the
    layer's entry (the module docstring of pe_lib.rope.scaling says so)."""
    layer = {**GPT_OSS_YARN, "rope_theta": 150000.0}  # truncate: false
    per_layer = {"full_attention": layer, "sliding_attention": {"rope_type": "default"}}
    per_layer["sliding_attention"]["rope_theta"] = 10000.0
    config = transformers.Gemma3TextConfig(
        head_dim=64,
        hidden_size=256,
        num_attention_heads=4,
        num_hidden_layers=2,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=131072,
        rope_parameters=copy.deepcopy(per_layer),
    )
    theirs, _ = ROPE_INIT_FUNCTIONS["yarn"](config, None, layer_type="full_attention")
    ours, _ = rope_frequencies(64, scaling=per_layer, layer_type="full_attention")
    as_one_entry, _ = hf_frequencies(layer, 64, 131072, None, None)  # reads truncate: false
    truncated, _ = rope_frequencies(64, scaling={**layer, "truncate": True})
    assert relative_difference(ours, as_one_entry) < RTOL
    assert relative_difference(truncated, theirs) < RTOL  # what transformers does per layer
    assert relative_difference(ours, theirs) > 0.4  # the difference, named
    assert 'config.rope_parameters.get("truncate", True)' in (rope_scaling.__doc__ or "")


def test_transformers_dynamic_ntk_keeps_the_longest_lengths_frequencies():
    """Hugging Face's dynamic NTK module keeps state: after 5,000 positions, a call with 3,000
    keeps the 5,000-length frequencies. pe_lib's are those of the current length, as a fresh
    module's (the module docstring of pe_lib.rope.scaling says so)."""
    entry = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    used = _llama_rotary(entry, 64, 2048)
    x = torch.zeros(1, 1, 64)
    used(x, torch.arange(5000)[None])
    used(x, torch.arange(3000)[None])
    fresh = _llama_rotary(entry, 64, 2048)
    fresh(x, torch.arange(3000)[None])
    at_3000, _ = rope_frequencies(64, scaling=entry, seq_len=3000, max_position_embeddings=2048)
    at_5000, _ = rope_frequencies(64, scaling=entry, seq_len=5000, max_position_embeddings=2048)
    assert relative_difference(at_3000, fresh.inv_freq) < RTOL
    assert relative_difference(at_5000, used.inv_freq) < RTOL
    assert relative_difference(at_3000, used.inv_freq) > 0.5
    assert "still uses the 5,000-token frequencies" in " ".join(
        (rope_scaling.__doc__ or "").split()
    )


def test_fractional_positions_choose_longropes_factors_as_transformers():
    """Positions [0, 511.5]: the length is 512.5, beyond L = 512, so the long factors."""
    entry = _entry("longrope-factor-and-attention")  # L = 512, head_dim 32
    rotary = _llama_rotary({**entry, "rope_theta": 10000.0}, 32, 4096)
    positions = torch.tensor([0.0, 100.25, 511.5], dtype=torch.float64)
    x = torch.randn(1, 1, 3, 32, dtype=torch.float64)
    cos, sin = rotary(x, positions[None].float())
    theirs = x * cos[:, None] + torch.cat((-x[..., 16:], x[..., :16]), dim=-1) * sin[:, None]
    ours = apply_rope(x, positions, layout="half", scaling=entry, base=10000.0)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=2e-4)  # float32 angles up to 511.5
    at_513 = apply_rope(x, positions, layout="half", scaling=entry, base=10000.0, seq_len=513)
    torch.testing.assert_close(ours, at_513, rtol=0, atol=0)  # 512.5 and 513: both long
