"""check_rope_tables and check_rope_rotate: an engine's rotary tables, held against the config.

Three kinds of evidence. The tables transformers 5.23 itself computes pass, for every model type
of chapter 11's table: each row's published keys (``tests/lib/test_describe.py``'s copy of the
chapter's), shrunk to a tiny model built from the config, its rotary module called for each layer
type, near the start and at far offsets. The tables of a small engine written here, from the
config alone and without pe_lib (as an inference engine computes them: float32 frequencies, one
column per pair or two), pass; and each mistake of reading a config, planted in that engine, is
named, in English and in Korean. Odd and partial head sizes, layouts, arguments.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
import torch
from checker_failures import failing_with

transformers = pytest.importorskip("transformers")

from pe_lib.checks import CheckFailed, check_rope_rotate, check_rope_tables  # noqa: E402
from pe_lib.models.layer_pattern import layer_pattern  # noqa: E402
from tests.lib.test_describe import HYBRIDS, PUBLISHED  # noqa: E402

transformers.logging.set_verbosity_error()  # tiny configs draw warnings

tables_fail = failing_with(check_rope_tables)
rotate_fails = failing_with(check_rope_rotate)

NEAR = torch.arange(0, 24)
FAR = torch.arange(100_000, 100_012)

# --- transformers' own tables, every model type of chapter 11 ---------------------------------

#: Sizes that make a row tiny; the head size, the layers' kinds and the rotary keys are the row's.
SMALL = {"vocab_size": 64, "intermediate_size": 32, "pad_token_id": 0}


def _longrope_lists(keys: dict[str, Any]) -> None:
    """Phi's LongRoPE lists (not typed in the chapter): one divisor per rotated pair, rising."""
    entry = keys.get("rope_scaling") or {}
    if entry.get("type") == "longrope":
        head = keys["hidden_size"] // keys["num_attention_heads"]
        pairs = int(head * keys.get("partial_rotary_factor", 1.0)) // 2
        keys["rope_scaling"] = {
            **entry,
            "short_factor": np.linspace(1.0, 1.5, pairs).tolist(),
            "long_factor": np.linspace(1.0, 40.0, pairs).tolist(),
        }


def tiny(model: str) -> dict[str, Any]:
    """The row's keys with two heads of the row's head size and a few layers."""
    keys = copy.deepcopy({**PUBLISHED, **HYBRIDS}[model])
    _longrope_lists(keys)
    config = transformers.AutoConfig.for_model(**copy.deepcopy(keys))
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if keys["model_type"] == "deepseek_v3":
        keys.update(
            hidden_size=64,
            num_attention_heads=2,
            q_lora_rank=None,
            kv_lora_rank=16,
            qk_nope_head_dim=8,
            v_head_dim=8,
            n_routed_experts=4,
            n_group=1,
            topk_group=1,
            first_k_dense_replace=1,
        )
    elif keys["model_type"] in ("jamba", "falcon_h1", "qwen3_next", "kimi_linear"):
        keys.update(hidden_size=64, num_attention_heads=2, head_dim=32)
    else:
        keys.update(hidden_size=2 * head, num_attention_heads=2)
        if "head_dim" in keys or keys["model_type"] in ("gpt_oss", "gemma2", "qwen3"):
            keys["head_dim"] = head
    period = {"gemma3_text": 6, "cohere2": 4, "llama4_text": 4, "gpt_oss": 2}.get(
        keys["model_type"], 2
    )
    if keys["model_type"] in ("jamba", "falcon_h1", "qwen3_next", "kimi_linear"):
        period = config.num_hidden_layers
    keys["num_hidden_layers"] = period
    if "layer_types" in keys:
        keys["layer_types"] = keys["layer_types"][:period]
    keys.update(SMALL)
    if keys["model_type"] not in ("deepseek_v3",):
        keys["num_key_value_heads"] = 2
    return keys


def rotary_module(keys: dict[str, Any]) -> torch.nn.Module:
    config = transformers.AutoConfig.for_model(**copy.deepcopy(keys))
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    return next(
        module
        for name, module in model.named_modules()
        if type(module).__name__.endswith("RotaryEmbedding") and "vision" not in name
    )


def their_tables(
    rotary: torch.nn.Module, positions: torch.Tensor, layer_type: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.zeros(1, len(positions), 8)
    args = (x, positions[None]) if layer_type is None else (x, positions[None], layer_type)
    with torch.no_grad():
        out = rotary(*args)
    if isinstance(out, torch.Tensor):  # Llama 4: complex cos + i sin
        return out.real, out.imag
    return out


@pytest.mark.parametrize("model", list(PUBLISHED) + list(HYBRIDS))
def test_transformers_tables_pass_for_every_model_of_chapter_11(model: str) -> None:
    keys = tiny(model)
    pattern = layer_pattern(keys)
    rotating = [i for i, layer in enumerate(pattern) if layer.rotates]
    if keys["model_type"] in ("jamba", "kimi_linear"):  # their attention carries no position
        assert not rotating
        with pytest.raises(ValueError, match="applies no rotation"):
            check_rope_tables(torch.ones(2, 2), torch.zeros(2, 2), keys, layer=0)
        return
    rotary = rotary_module(keys)
    config = transformers.AutoConfig.for_model(**copy.deepcopy(keys))
    per_type = "rope_type" not in config.rope_parameters
    types = getattr(config, "layer_types", None) or [None] * len(pattern)
    # transformers' DeepSeek-V3 turns its interleaved channels into the half layout first
    layout = "half" if keys["model_type"] == "deepseek_v3" else None
    checked = set()
    for index in rotating:
        layer_type = types[index] if per_type else None
        if layer_type in checked:
            continue
        checked.add(layer_type)
        for positions in (NEAR, FAR):
            cos, sin = their_tables(rotary, positions, layer_type)
            check_rope_tables(cos, sin, keys, layer=index, positions=positions[None], layout=layout)
    assert checked


def test_transformers_tables_of_a_batch_with_its_own_positions_pass() -> None:
    keys = tiny("Gemma 3 4B")
    rotary = rotary_module(keys)
    positions = torch.stack((torch.arange(5, 17), torch.arange(2000, 2012)))
    x = torch.zeros(2, 12, 8)
    with torch.no_grad():
        cos, sin = rotary(x, positions, "full_attention")
    check_rope_tables(cos, sin, keys, layer=5, positions=positions)
    tables_fail("layer_type", cos, sin, keys, layer=0, positions=positions)


# --- an engine written from the config alone --------------------------------------------------


def _mscale(factor: float, mscale: float = 1.0) -> float:
    return 0.1 * mscale * math.log(factor) + 1.0 if factor > 1 else 1.0


def engine_frequencies(
    entry: dict[str, Any], head: int, maximum: int, seq_len: int, bug: str = ""
) -> tuple[torch.Tensor, float, int]:
    """``(inv_freq float32, attention factor, pairs)`` of one rotary entry, as an engine
    computes them from the config (transformers' formulas, written again); ``bug`` plants one
    mistake."""
    entry = dict(entry)
    kind = entry.get("rope_type", entry.get("type", "default"))
    base = entry["rope_theta"]
    share = entry.get("partial_rotary_factor", 1.0)
    factor = entry.get("factor", 1.0)
    if bug == "factor_squared":
        factor = factor**2
    original = entry.get("original_max_position_embeddings", maximum)
    if bug == "original_length":
        original = maximum
    if kind == "proportional":
        pairs = head // 2 if bug == "partial_all" else int(share * head // 2)
        exponent = 2 * pairs if bug == "proportional_as_partial" else head
        inv = base ** (-torch.arange(0, 2 * pairs, 2, dtype=torch.float64) / exponent) / factor
        inv = torch.cat((inv, torch.zeros(head // 2 - pairs, dtype=torch.float64)))
        return inv.float(), 1.0, head // 2
    dim = head if bug == "partial_all" else int(head * share)
    exponent = head if bug == "partial_exponent" else dim
    inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / exponent)
    attention = 1.0
    if kind == "linear":
        inv = inv / factor
    elif kind == "llama3":
        low, high = entry["low_freq_factor"], entry["high_freq_factor"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > original / low, inv / factor, inv)
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= original / high) & (wavelen <= original / low)
        inv = torch.where(medium, smoothed, scaled)
    elif kind == "yarn":

        def pair_at(turns: float) -> float:
            return dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

        low, high = pair_at(entry.get("beta_fast", 32)), pair_at(entry.get("beta_slow", 1))
        truncate = entry.get("truncate", True)
        if bug == "truncate":
            truncate = not truncate
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        keep = 1 - ramp
        inv = inv / factor * (1 - keep) + inv * keep
        mscale, all_dim = entry.get("mscale"), entry.get("mscale_all_dim")
        attention = (
            _mscale(factor, mscale) / _mscale(factor, all_dim)
            if mscale and all_dim
            else _mscale(factor)
        )
    elif kind == "longrope":
        lists = entry["long_factor"] if seq_len > original else entry["short_factor"]
        inv = inv / torch.tensor(lists, dtype=torch.float64)
        if "factor" not in entry:
            factor = maximum / original
        attention = math.sqrt(1 + math.log(factor) / math.log(original)) if factor > 1 else 1.0
    if bug == "factor_again":
        inv = inv / factor
    if bug == "scaling_dropped":
        inv = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
        attention = 1.0
    inv = inv.float()
    if bug == "precision":
        inv = inv.to(torch.bfloat16).float()  # model.to(torch.bfloat16) on a buffer
    return inv, attention, dim // 2


def engine_entry(keys: dict[str, Any], layer: int, bug: str) -> dict[str, Any]:
    """The entry an engine reads for ``layer``, from the file's keys (no pe_lib), with a bug of
    reading the config planted."""
    if keys["model_type"] == "gemma3_text":  # one entry per layer type
        full = {"rope_type": "default", "rope_theta": keys["rope_theta"]}
        full.update(keys.get("rope_scaling") or {})
        local = {"rope_type": "default", "rope_theta": keys["rope_local_base_freq"]}
        sliding = (layer + 1) % keys["sliding_window_pattern"] != 0
        own, other = (local, full) if sliding else (full, local)
        if bug == "layer_type":
            return other
        if bug == "scaling_layers":
            return {**other, "rope_theta": own["rope_theta"]}
        if bug == "base":
            return {**own, "rope_theta": other["rope_theta"]}
        return own
    entry = {"rope_type": "default", **(keys.get("rope_scaling") or {})}
    entry["rope_type"] = entry.pop("type", entry["rope_type"])
    entry["rope_theta"] = keys.get("rope_theta", 10_000.0)
    if "partial_rotary_factor" in keys:
        entry["partial_rotary_factor"] = keys["partial_rotary_factor"]
    if entry["rope_type"] == "longrope":
        entry.setdefault(
            "original_max_position_embeddings", keys["original_max_position_embeddings"]
        )
    if bug == "base":
        entry["rope_theta"] = 10_000.0
    return entry


def engine_head(keys: dict[str, Any]) -> int:
    return keys.get("head_dim") or keys["hidden_size"] // keys["num_attention_heads"]


def engine_tables(
    keys: dict[str, Any],
    layer: int,
    positions: torch.Tensor,
    *,
    bug: str = "",
    layout: str = "half",
    per_pair: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cos and sin tables of ``layer`` at ``positions``, float32, as an engine builds them."""
    head = engine_head(keys)
    maximum = keys.get("max_position_embeddings", 131_072)
    seq_len = int(positions.max()) + 1
    inv, attention, _ = engine_frequencies(
        engine_entry(keys, layer, bug), head, maximum, seq_len, bug
    )
    if bug == "factor_missing":
        attention = 1.0
    if bug == "factor_squared_on_tables":
        attention = attention**2
    angles = positions.float()[:, None] * inv[None, :]
    if not per_pair:
        if (layout == "half") != (bug == "layout"):
            angles = torch.cat((angles, angles), dim=-1)
        else:
            angles = angles.repeat_interleave(2, dim=-1)
    sign = -1.0 if bug == "sign" else 1.0
    return angles.cos() * attention, sign * angles.sin() * attention


def engine_rotate(keys: dict[str, Any], layer: int, *, bug: str = "", layout: str = "half"):
    """The engine's rotation of one layer: ``rotate(x, positions)``, x ``(..., seq, head)``."""

    def rotate(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        cos, sin = engine_tables(keys, layer, positions, bug=bug, layout=layout, per_pair=True)
        pairs = cos.shape[-1]
        rotated = 2 * pairs
        if layout == "half":
            a, b = x[..., :pairs], x[..., pairs:rotated]
        else:
            a, b = x[..., 0:rotated:2], x[..., 1:rotated:2]
        ya, yb = a * cos - b * sin, a * sin + b * cos
        if layout == "half":
            out = torch.cat((ya, yb), dim=-1)
        else:
            out = torch.stack((ya, yb), dim=-1).flatten(-2)
        return torch.cat((out, x[..., rotated:]), dim=-1)

    return rotate


GEMMA3 = PUBLISHED["Gemma 3 4B"]
GPT_OSS = PUBLISHED["gpt-oss 20b"]
LLAMA31 = PUBLISHED["Llama 3.1 8B"]
PHI4 = copy.deepcopy(PUBLISHED["Phi-4 mini"])
_longrope_lists(PHI4)
COHERE = PUBLISHED["Command R7B"]
#: A config shaped like Phi-2's: 40% of each 80-channel head rotated.
PARTIAL = {
    "model_type": "phi",
    "hidden_size": 2560,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "partial_rotary_factor": 0.4,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
}
GEMMA4 = {
    "model_type": "gemma4_text",
    "hidden_size": 256,
    "num_attention_heads": 2,
    "head_dim": 64,
    "global_head_dim": 128,
    "num_hidden_layers": 6,
    "max_position_embeddings": 131072,
    "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        "full_attention": {
            "rope_type": "proportional",
            "rope_theta": 1_000_000.0,
            "partial_rotary_factor": 0.25,
        },
    },
}


def gemma4_tables(positions: torch.Tensor, bug: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    entry = GEMMA4["rope_parameters"]["full_attention"]
    inv, _, _ = engine_frequencies(entry, 128, 131072, int(positions.max()) + 1, bug)
    if bug == "proportional_as_partial":
        inv = inv[inv > 0]  # the engine's own head of the rotated channels
    angles = positions.float()[:, None] * inv[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


#: (config, layer, bug, code, positions, options): each planted mistake and the name it gets.
PLANTED = [
    (GEMMA3, 0, "layer_type", "layer_type", NEAR, {}),
    (GEMMA3, 0, "scaling_layers", "scaling_layers", NEAR, {}),
    (GEMMA3, 0, "base", "base", NEAR, {}),
    (GEMMA3, 5, "base", "base", NEAR, {}),
    (GEMMA3, 5, "layer_type", "layer_type", NEAR, {}),
    (GEMMA3, 5, "scaling_dropped", "scaling_dropped", NEAR, {}),
    (GPT_OSS, 1, "truncate", "truncate", NEAR, {"per_pair": True}),
    (GPT_OSS, 1, "factor_squared", "factor_twice", NEAR, {"per_pair": True}),
    (GPT_OSS, 1, "original_length", "original_length", FAR, {"per_pair": True}),
    (GPT_OSS, 1, "factor_missing", "attention_factor", NEAR, {"per_pair": True}),
    (GPT_OSS, 1, "factor_squared_on_tables", "attention_factor", NEAR, {"per_pair": True}),
    (LLAMA31, 0, "factor_squared", "factor_twice", FAR, {}),
    (LLAMA31, 0, "factor_again", "factor_twice", FAR, {}),
    (LLAMA31, 0, "original_length", "original_length", FAR, {}),
    (LLAMA31, 0, "scaling_dropped", "scaling_dropped", FAR, {}),
    (LLAMA31, 0, "precision", "precision", NEAR + 4000, {}),
    (LLAMA31, 0, "layout", "layout", NEAR, {}),
    (LLAMA31, 0, "sign", "sign", NEAR, {}),
    (PARTIAL, 0, "partial_all", "partial", NEAR, {}),
    (PARTIAL, 0, "partial_exponent", "partial", NEAR, {}),
    (PHI4, 0, "original_length", "original_length", FAR, {}),
    (COHERE, 0, "layout", "layout", NEAR, {"layout": "interleaved"}),
    (COHERE, 0, "base", "base", NEAR, {"layout": "interleaved"}),
]


def _id(case: tuple[Any, ...]) -> str:
    return f"{case[0]['model_type']}-{case[1]}-{case[2]}"


@pytest.mark.parametrize("case", PLANTED, ids=[_id(case) for case in PLANTED])
def test_each_planted_mistake_is_named(case: tuple[Any, ...]) -> None:
    keys, layer, bug, code, positions, options = case
    # without the bug, the engine's tables pass: the test's engine is right
    cos, sin = engine_tables(keys, layer, positions, **options)
    check_rope_tables(cos, sin, keys, layer=layer, positions=positions)
    cos, sin = engine_tables(keys, layer, positions, bug=bug, **options)
    tables_fail(code, cos, sin, keys, layer=layer, positions=positions)


@pytest.mark.parametrize(
    "bug", ["", "proportional_as_partial", "partial_all"], ids=["right", "as-partial", "all"]
)
def test_gemma4_proportional_rotation(bug: str) -> None:
    cos, sin = gemma4_tables(NEAR + 1000, bug)
    if not bug:
        check_rope_tables(cos, sin, GEMMA4, layer=5, positions=NEAR + 1000)
        return
    message = str(tables_fail("partial", cos, sin, GEMMA4, layer=5, positions=NEAR + 1000))
    assert "proportional" in message


@pytest.mark.parametrize("case", PLANTED[:12], ids=[_id(case) for case in PLANTED[:12]])
def test_each_planted_mistake_is_named_through_the_rotation(case: tuple[Any, ...]) -> None:
    keys, layer, bug, code, positions, options = case
    layout = options.get("layout", "half")
    check_rope_rotate(engine_rotate(keys, layer, layout=layout), keys, layer=layer)
    rotate_fails(code, engine_rotate(keys, layer, bug=bug, layout=layout), keys, layer=layer)


def test_a_rotation_in_the_other_layout_and_one_that_is_no_rotation() -> None:
    rotate_fails("layout", engine_rotate(LLAMA31, 0, layout="interleaved"), LLAMA31)

    def mixes(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + 0.5 * x.roll(3, dims=-1)

    message = str(rotate_fails("pairing", mixes, LLAMA31))
    assert "channel" in message
    rotate_fails("exception", lambda x, p: x[..., :3] @ x, LLAMA31)
    rotate_fails("shape", lambda x, p: x[..., :4], LLAMA31)
    rotate_fails("wrong_type", lambda x, p: x.tolist(), LLAMA31)


def test_the_attention_factor_kept_out_of_the_tables() -> None:
    cos, sin = engine_tables(GPT_OSS, 1, NEAR, per_pair=True, bug="factor_missing")
    check_rope_tables(cos, sin, GPT_OSS, layer=1, positions=NEAR, attention_factor=False)
    cos, sin = engine_tables(GPT_OSS, 1, NEAR, per_pair=True)
    message = str(
        tables_fail(
            "attention_factor", cos, sin, GPT_OSS, layer=1, positions=NEAR, attention_factor=False
        )
    )
    assert "attention_factor=False" in message


def test_odd_and_partial_head_sizes_and_long_offsets() -> None:
    """Five pairs, three of them rotated; positions past a million."""
    keys = {
        "model_type": "llama",
        "hidden_size": 20,
        "num_attention_heads": 2,
        "head_dim": 10,
        "num_hidden_layers": 1,
        "rope_theta": 10_000.0,
        "partial_rotary_factor": 0.6,
        "max_position_embeddings": 4096,
    }
    for positions in (NEAR, torch.arange(1_000_000, 1_000_009)):
        cos, sin = engine_tables(keys, 0, positions)
        check_rope_tables(cos, sin, keys, layer=0, positions=positions)
        check_rope_tables(
            *engine_tables(keys, 0, positions, per_pair=True), keys, positions=positions
        )
    tables_fail("partial", *engine_tables(keys, 0, NEAR, bug="partial_exponent"), keys)
    tables_fail("partial", *engine_tables(keys, 0, NEAR, bug="partial_all"), keys)
    check_rope_rotate(engine_rotate(keys, 0), keys)
    rotate_fails("partial", engine_rotate(keys, 0, bug="partial_all"), keys)


def test_an_unknown_mistake_names_the_worst_entry() -> None:
    cos, sin = engine_tables(LLAMA31, 0, NEAR)
    cos = cos.clone()
    cos[7, 3] += 0.25
    message = str(tables_fail("wrong_values", cos, sin, LLAMA31, positions=NEAR))
    assert "position 7, column 3" in message


def test_numpy_tables_and_batches_pass() -> None:
    cos, sin = engine_tables(LLAMA31, 0, FAR)
    check_rope_tables(cos.numpy(), sin.numpy(), LLAMA31, positions=FAR.numpy())
    check_rope_tables(
        cos[None].expand(3, -1, -1), sin[None].expand(3, -1, -1), LLAMA31, positions=FAR
    )


def test_shapes_and_values_that_are_not_tables() -> None:
    cos, sin = engine_tables(LLAMA31, 0, NEAR)
    tables_fail("shape", cos, sin[:, :10], LLAMA31)
    tables_fail("shape", cos[0], sin[0], LLAMA31)
    tables_fail("shape", cos[:, :10], sin[:, :10], LLAMA31)
    bad = cos.clone()
    bad[3, 2] = float("nan")
    tables_fail("not_finite", bad, sin, LLAMA31)


def test_bad_arguments_are_named() -> None:
    cos, sin = engine_tables(LLAMA31, 0, NEAR)
    with pytest.raises(TypeError, match="cos must be a numpy array or a torch tensor"):
        check_rope_tables(cos.tolist(), sin, LLAMA31)
    with pytest.raises(TypeError, match="sin must be"):
        check_rope_tables(cos, sin.long(), LLAMA31)
    with pytest.raises(ValueError, match="layer must be the index of one of the config's 32"):
        check_rope_tables(cos, sin, LLAMA31, layer=32)
    with pytest.raises(TypeError, match="layer"):
        check_rope_tables(cos, sin, LLAMA31, layer="0")
    with pytest.raises(ValueError, match="applies no rotation"):
        check_rope_tables(cos, sin, COHERE, layer=3)
    with pytest.raises(ValueError, match="positions must have one entry per row"):
        check_rope_tables(cos, sin, LLAMA31, positions=torch.arange(5))
    with pytest.raises(ValueError, match="positions must be non-negative"):
        check_rope_tables(cos, sin, LLAMA31, positions=NEAR - 3)
    with pytest.raises(ValueError, match="layout must be one of"):
        check_rope_tables(cos, sin, LLAMA31, layout="neox")
    with pytest.raises(TypeError, match="attention_factor"):
        check_rope_tables(cos, sin, LLAMA31, attention_factor=1)
    with pytest.raises(ValueError, match="model_type"):
        check_rope_tables(cos, sin, {"model_type": "bert"})
    with pytest.raises(TypeError, match="rotate must be"):
        check_rope_rotate(3, LLAMA31)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dtype"):
        check_rope_rotate(engine_rotate(LLAMA31, 0), LLAMA31, dtype=torch.int64)


def test_every_code_is_planted_here() -> None:
    planted = {case[3] for case in PLANTED} | {"partial", "shape", "not_finite", "wrong_values"}
    assert set(check_rope_tables.mistakes) == planted
    assert isinstance(CheckFailed("x", "y"), AssertionError)
