"""Tests of pe_lib.rope.scaling and of scaled RoPE, against the published formulas.

The references below are written here, in numpy and plain Python, from the primary sources, and
share no code with pe_lib:

* position interpolation: Chen et al. (2023), arXiv:2306.15595, f'(x, m) = f(x, m L / L');
* NTK-aware base change: bloc97 (2023), as Hugging Face writes it (the base change of its
  dynamic NTK with the ratio fixed at factor): base' = base * factor ** (d / (d - 2));
* dynamic NTK: Hugging Face's ``_compute_dynamic_ntk_parameters``:
  base' = base * (factor * l / L - (factor - 1)) ** (d / (d - 2)), l = max(seq_len, L), with L
  the model's max_position_embeddings;
* YaRN: Peng et al. (2023), arXiv:2309.00071, NTK-by-parts and sqrt(1/t) = 0.1 ln s + 1, with the ramp of its
  reference code (``find_correction_range`` / ``linear_ramp_mask`` in jquesnelle/yarn) and
  DeepSeek-V2's ``yarn_get_mscale`` for ``mscale`` / ``mscale_all_dim`` (both non-zero, as
  Hugging Face tests them);
* LongRoPE: Ding et al. (2024), arXiv:2402.13753, one divisor per pair, with Hugging Face's
  choice of list by length and attention factor sqrt(1 + ln s / ln L);
* Llama 3.1: Meta's ``apply_scaling`` (meta-llama/llama-models), a loop over the frequencies;
* proportional (Gemma 4): the first share of the pairs at base ** (-2i / head_dim), the rest 0.

tests/lib/test_rope_parity.py compares the same functions with transformers' own code.

Inputs are config.json ``rope_scaling`` entries of published models (Llama 3.1 8B, Qwen2.5,
DeepSeek-V3) and one in the style of gpt-oss's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from pe_reference import llama3_theta, rope_theta, rotate_pairs
from rope_entries import DEEPSEEK_V3_YARN, GPT_OSS_YARN, LLAMA31, QWEN25_YARN

from pe_lib.rope import RotaryEmbedding, apply_rope, rope_angles
from pe_lib.rope.scaling import (
    DEFAULT_BASE,
    ROPE_SCALINGS,
    Key,
    RopeScaling,
    ScalingConfig,
    resolve_scaling,
    rope_frequencies,
)

# --- config.json entries ----------------------------------------------------------------------

LLAMA31_THETA, LLAMA31_HEAD_DIM = 500000.0, 128


# --- independent references -------------------------------------------------------------------


def ref_linear(head_dim, base, scaling, seq_len=None):
    """PI (Chen et al.): position m is read as m / factor, i.e. theta_i / factor."""
    return rope_theta(head_dim, base) / scaling["factor"], 1.0


def ref_ntk(head_dim, base, scaling, seq_len=None):
    return rope_theta(head_dim, base * scaling["factor"] ** (head_dim / (head_dim - 2))), 1.0


#: The model's max_position_embeddings wherever a method reads it (dynamic NTK's L).
MAX_POSITIONS = 64


def ref_dynamic(head_dim, base, scaling, seq_len):
    factor, original = scaling["factor"], MAX_POSITIONS
    length = max(seq_len, original)
    alpha = factor * length / original - (factor - 1)
    return rope_theta(head_dim, base * alpha ** (head_dim / (head_dim - 2))), 1.0


def ref_yarn(head_dim, base, scaling, seq_len=None):
    """YaRN's reference code, one pair at a time (its clamps of the ramp's ends included)."""
    factor = scaling["factor"]
    original = scaling["original_max_position_embeddings"]
    beta_fast, beta_slow = scaling.get("beta_fast", 32), scaling.get("beta_slow", 1)

    def correction_dim(rotations):  # the pair index at which a pair turns `rotations` times in L
        return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001
    theta = rope_theta(head_dim, base)
    out = np.empty_like(theta)
    for i, t in enumerate(theta):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)  # 0: extrapolate, 1: interpolate
        extrapolation = 1.0 - ramp
        out[i] = (t / factor) * (1 - extrapolation) + t * extrapolation

    def get_mscale(scale, mscale=1.0):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    mscale, mscale_all_dim = scaling.get("mscale"), scaling.get("mscale_all_dim")
    if scaling.get("attention_factor") is not None:
        attention = scaling["attention_factor"]
    elif mscale and mscale_all_dim:
        attention = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
    else:
        attention = get_mscale(factor)
    return out, attention


def ref_longrope(head_dim, base, scaling, seq_len):
    """LongRoPE: theta_i / f_i, f the long list beyond L and the short one up to L."""
    original = scaling["original_max_position_embeddings"]
    factor = scaling.get("factor") or MAX_POSITIONS / original
    divisors = scaling["long_factor" if seq_len > original else "short_factor"]
    attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    return rope_theta(head_dim, base) / np.array(divisors), attention


def ref_proportional(head_dim, base, scaling, seq_len=None):
    """Gemma 4: the first int(p * head_dim // 2) pairs at base ** (-2i / head_dim), the rest 0."""
    rotated = int(scaling.get("partial_rotary_factor", 1.0) * head_dim // 2)
    theta = rope_theta(head_dim, base)
    theta[rotated:] = 0.0
    return theta / scaling.get("factor", 1.0), 1.0


def ref_llama3(head_dim, base, scaling, seq_len=None):
    """Meta's apply_scaling (:func:`pe_reference.llama3_theta`) for an entry."""
    keys = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
    return llama3_theta(head_dim, base, *(scaling[k] for k in keys)), 1.0


REFERENCES = {
    "default": lambda head_dim, base, scaling, seq_len=None: (rope_theta(head_dim, base), 1.0),
    "linear": ref_linear,
    "ntk": ref_ntk,
    "dynamic": ref_dynamic,
    "yarn": ref_yarn,
    "longrope": ref_longrope,
    "llama3": ref_llama3,
    "proportional": ref_proportional,
}

#: One config per method (factor, L = original_max_position_embeddings) for the generic tests.
EXAMPLES = {
    "default": {"rope_type": "default"},
    "linear": {"rope_type": "linear", "factor": 4.0},
    "ntk": {"rope_type": "ntk", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 4.0},  # L: max_position_embeddings
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
    "longrope": {  # the lists get one divisor per pair in example()
        "rope_type": "longrope",
        "factor": 4.0,
        "original_max_position_embeddings": 64,
    },
    "llama3": {
        "rope_type": "llama3",
        "factor": 4.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    },
    "proportional": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "factor": 2.0},
}


def example(rope_type: str, head_dim: int) -> dict[str, object]:
    """EXAMPLES[rope_type] for a head size: LongRoPE's lists get head_dim // 2 divisors."""
    scaling = dict(EXAMPLES[rope_type])
    if rope_type == "longrope":
        pairs = head_dim // 2
        scaling["short_factor"] = [1.0 + i / pairs for i in range(pairs)]
        scaling["long_factor"] = [1.0 + 8.0 * i / pairs for i in range(pairs)]
    return scaling


def scaled(rope_type: str, head_dim: int, base: float | None = None) -> ScalingConfig:
    """example() checked, with the model's max_position_embeddings MAX_POSITIONS."""
    return resolve_scaling(
        example(rope_type, head_dim),
        DEFAULT_BASE if base is None else base,
        max_position_embeddings=MAX_POSITIONS,
    )


def as_numpy(theta: torch.Tensor) -> np.ndarray:
    assert theta.dtype == torch.float64
    return theta.numpy()


# --- the registry against the references ------------------------------------------------------


def test_every_registered_scaling_has_a_reference_and_an_example():
    assert set(REFERENCES) == set(ROPE_SCALINGS) == set(EXAMPLES)


@pytest.mark.parametrize("rope_type", sorted(ROPE_SCALINGS))
def test_each_method_forms_its_frequencies_on_the_device_asked_for(rope_type):
    # a compiled graph forms them on the GPU it runs on; a factory left on the CPU would mix
    # devices (an error) or return a CPU tensor. Here the meta device stands for a GPU.
    config = resolve_scaling(example(rope_type, 64), 10000.0, max_position_embeddings=MAX_POSITIONS)
    for seq_len in (16, 100):
        on_cpu, attention = config.frequencies(64, seq_len)
        on_meta, attention_meta = config.frequencies(64, seq_len, torch.device("meta"))
        assert on_meta.device.type == "meta" and on_cpu.device.type == "cpu"
        assert (on_meta.shape, on_meta.dtype, attention_meta) == (
            on_cpu.shape,
            on_cpu.dtype,
            attention,
        )
        explicit, _ = config.frequencies(64, seq_len, torch.device("cpu"))
        assert torch.equal(explicit, on_cpu)


@pytest.mark.parametrize("rope_type", sorted(ROPE_SCALINGS))
@pytest.mark.parametrize("head_dim", [4, 16, 64, 128])
@pytest.mark.parametrize("base", [500.0, 10000.0, 500000.0])
def test_each_method_matches_its_published_formula(rope_type, head_dim, base):
    scaling = example(rope_type, head_dim)
    for seq_len in (16, 63, 64, 65, 100, 1000):
        theta, attention = rope_frequencies(
            head_dim,
            base=base,
            scaling=scaling,
            seq_len=seq_len,
            max_position_embeddings=MAX_POSITIONS,
        )
        expected, expected_attention = REFERENCES[rope_type](head_dim, base, scaling, seq_len)
        assert theta.shape == (head_dim // 2,) and theta.dtype == torch.float64
        np.testing.assert_allclose(as_numpy(theta), expected, rtol=1e-14, atol=0)
        assert attention == pytest.approx(expected_attention, rel=1e-15)


def test_llama31_8b_config():
    theta, attention = rope_frequencies(LLAMA31_HEAD_DIM, base=LLAMA31_THETA, scaling=LLAMA31)
    expected, _ = ref_llama3(LLAMA31_HEAD_DIM, LLAMA31_THETA, LLAMA31)
    np.testing.assert_allclose(as_numpy(theta), expected, rtol=1e-15, atol=0)
    assert attention == 1.0
    # The bands: wavelengths below 8192 / 4 = 2048 positions kept, above 8192 divided by 8.
    plain = rope_theta(LLAMA31_HEAD_DIM, LLAMA31_THETA)
    wavelength = 2 * math.pi / plain
    kept, divided = wavelength < 2048, wavelength > 8192
    middle = ~kept & ~divided
    # lambda_i = 2 pi 500000 ** (i / 64) < 2048 <=> i < 64 ln(2048 / 2 pi) / ln 500000 = 28.2;
    # > 8192 <=> i > 64 ln(8192 / 2 pi) / ln 500000 = 34.98: pairs 0-28 kept, 35-63 divided.
    assert kept.sum() == 29 and divided.sum() == 29 and middle.sum() == 6  # of 64 pairs
    np.testing.assert_allclose(as_numpy(theta)[kept], plain[kept], rtol=1e-15, atol=0)
    kept_by_pe_lib = rope_frequencies(LLAMA31_HEAD_DIM, base=LLAMA31_THETA)[0][
        torch.from_numpy(kept)
    ]
    torch.testing.assert_close(theta[torch.from_numpy(kept)], kept_by_pe_lib, rtol=0, atol=0)
    np.testing.assert_allclose(as_numpy(theta)[divided], plain[divided] / 8, rtol=1e-15)


@pytest.mark.parametrize(
    ("scaling", "head_dim", "base", "attention"),
    [
        (QWEN25_YARN, 128, 1e6, 0.1 * math.log(4.0) + 1),
        (DEEPSEEK_V3_YARN, 64, 10000.0, 1.0),  # mscale == mscale_all_dim: the ratio is 1
        (GPT_OSS_YARN, 64, 150000.0, 0.1 * math.log(32.0) + 1),
        # mscale_all_dim 0 (or absent): the ratio is skipped, 0.1 ln s + 1 as without mscale
        ({**DEEPSEEK_V3_YARN, "mscale": 0.707, "mscale_all_dim": 0.0}, 64, 10000.0, None),
        ({**QWEN25_YARN, "mscale": 0.707}, 128, 1e6, 0.1 * math.log(4.0) + 1),
        # attention_factor given: it is the factor, whatever mscale says
        ({**DEEPSEEK_V3_YARN, "attention_factor": 1.25}, 64, 10000.0, 1.25),
        ({**QWEN25_YARN, "attention_factor": 1.25}, 128, 1e6, 1.25),
    ],
)
def test_yarn_configs(scaling, head_dim, base, attention):
    theta, got_attention = rope_frequencies(head_dim, base=base, scaling=scaling)
    expected, expected_attention = ref_yarn(head_dim, base, scaling)
    np.testing.assert_allclose(as_numpy(theta), expected, rtol=1e-14, atol=0)
    assert got_attention == pytest.approx(expected_attention, rel=1e-15)
    if attention is not None:  # the paper's sqrt(1/t) = 0.1 ln s + 1, or as configured
        assert got_attention == pytest.approx(attention, rel=1e-15)
    else:
        assert got_attention == pytest.approx(0.1 * math.log(40) + 1, rel=1e-15)


def test_rope_theta_is_the_base():
    with_theta = {**LLAMA31, "rope_theta": LLAMA31_THETA}
    theta, _ = rope_frequencies(128, scaling=with_theta)
    torch.testing.assert_close(
        theta, rope_frequencies(128, base=LLAMA31_THETA, scaling=LLAMA31)[0], rtol=0, atol=0
    )
    assert resolve_scaling(with_theta, LLAMA31_THETA).base == LLAMA31_THETA
    assert resolve_scaling(None).base == 10000.0
    assert resolve_scaling({"rope_type": "default"}).base == 10000.0  # plain RoPE: RoFormer's


def test_an_entry_without_its_base_is_refused():
    """Llama 3.1's entry as config.json writes it holds no rope_theta (500000, at the top
    level): read with RoFormer's 10000 it would silently give other frequencies."""
    for call in (
        lambda: rope_frequencies(128, scaling=LLAMA31),
        lambda: resolve_scaling(LLAMA31),
        lambda: apply_rope(torch.randn(3, 128), scaling=LLAMA31),
        lambda: RotaryEmbedding(128, scaling=LLAMA31),
        lambda: rope_angles(torch.arange(3), 128, scaling=LLAMA31),
    ):
        with pytest.raises(
            ValueError, match=r"scaling \(rope_type 'llama3'\) has no 'rope_theta' and base is None"
        ):
            call()
    ours, _ = rope_frequencies(128, base=LLAMA31_THETA, scaling=LLAMA31)
    default, _ = rope_frequencies(128, base=10000.0, scaling=LLAMA31)
    assert not torch.allclose(ours, default)  # what the old default silently gave


def test_a_checked_config_is_accepted_as_it_is():
    rotary = RotaryEmbedding(128, scaling={**LLAMA31, "rope_theta": LLAMA31_THETA})
    assert resolve_scaling(rotary.scaling) is rotary.scaling
    q = torch.randn(5, 128)
    torch.testing.assert_close(
        apply_rope(q, scaling=rotary.scaling), rotary(q, q)[0], rtol=0, atol=0
    )
    with pytest.raises(ValueError, match=r"scaling holds the base 500000\.0.*base=10000\.0"):
        rope_frequencies(128, base=10000.0, scaling=rotary.scaling)


def test_plain_frequencies_are_ropes():
    theta, attention = rope_frequencies(64)
    torch.testing.assert_close(theta, rope_angles(torch.tensor([1]), 64)[0], rtol=0, atol=0)
    assert attention == 1.0


# --- properties -------------------------------------------------------------------------------

LAYOUTS = ("interleaved", "half")


@settings(max_examples=40, deadline=None)
@given(
    factor=st.floats(1.0, 64.0),
    positions=st.lists(st.integers(0, 10**6), min_size=1, max_size=8),
    head_dim=st.sampled_from([2, 8, 64]),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**16),
)
def test_linear_scaling_is_rotation_at_position_over_factor(
    factor, positions, head_dim, layout, seed
):
    x = torch.randn(
        len(positions), head_dim, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )
    m = torch.tensor(positions)
    linear = {"type": "linear", "factor": factor, "rope_theta": 10000.0}
    scaled = apply_rope(x, m, layout=layout, scaling=linear)
    at_fraction = apply_rope(x, m.double() / factor, layout=layout)
    # float64 angles of up to 1e6 rad: absolute errors of about 1e6 * 2**-53 per angle
    torch.testing.assert_close(scaled, at_fraction, rtol=0, atol=1e-9 * x.abs().max().item())
    angles = rope_angles(m, head_dim, scaling=linear)
    torch.testing.assert_close(
        angles, rope_angles(m.double() / factor, head_dim), rtol=1e-15, atol=0
    )


def unit_factor_example(rope_type: str, original: int, head_dim: int) -> dict[str, object]:
    scaling = example(rope_type, head_dim)
    scaling.pop("partial_rotary_factor", None)
    for key in ("factor", "short_factor", "long_factor"):
        if key in scaling:
            scaling[key] = 1.0 if key == "factor" else [1.0] * (head_dim // 2)
    if "original_max_position_embeddings" in scaling:
        scaling["original_max_position_embeddings"] = original
    return scaling


@settings(max_examples=60, deadline=None)
@given(
    rope_type=st.sampled_from(sorted(ROPE_SCALINGS)),
    head_dim=st.sampled_from([4, 6, 32, 128]),
    base=st.floats(2.0, 1e7),
    original=st.integers(1, 10**6),
    seq_len=st.integers(1, 10**6),
)
def test_every_method_with_factor_one_is_plain_rope(rope_type, head_dim, base, original, seq_len):
    scaling = unit_factor_example(rope_type, original, head_dim)
    if rope_type == "dynamic":
        # dynamic NTK with factor 1 still grows the base by (seq_len / L) beyond L: plain within L
        seq_len = min(seq_len, original)
    theta, attention = rope_frequencies(
        head_dim, base=base, scaling=scaling, seq_len=seq_len, max_position_embeddings=original
    )
    np.testing.assert_allclose(as_numpy(theta), rope_theta(head_dim, base), rtol=1e-14, atol=0)
    assert attention == 1.0


def yarn_pair_index(turns: float, head_dim: int, base: float, original: int) -> float:
    """The pair index i with L / lambda_i = turns, lambda_i = 2 pi base ** (2i / d)."""
    return (head_dim / 2) * math.log(original / (2 * math.pi * turns)) / math.log(base)


@settings(max_examples=80, deadline=None)
@given(
    head_dim=st.sampled_from([16, 64, 128, 256]),
    base=st.floats(100.0, 1e7),
    factor=st.floats(1.0, 64.0),
    original=st.integers(64, 2**17),
    beta_fast=st.floats(2.0, 64.0),
    beta_ratio=st.floats(2.0, 64.0),
    truncate=st.booleans(),
)
def test_yarn_keeps_fast_pairs_and_interpolates_slow_ones(
    head_dim, base, factor, original, beta_fast, beta_ratio, truncate
):
    beta_slow = beta_fast / beta_ratio
    scaling = {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original,
        "beta_fast": beta_fast,
        "beta_slow": beta_slow,
        "truncate": truncate,
    }
    theta = as_numpy(rope_frequencies(head_dim, base=base, scaling=scaling)[0])
    plain = rope_theta(head_dim, base)
    turns = original * plain / (2 * math.pi)  # r_i = L / lambda_i
    index = np.arange(head_dim // 2)
    first = yarn_pair_index(beta_fast, head_dim, base, original)
    if truncate:  # the ramp's ends rounded outwards to whole pair indices
        kept = index <= math.floor(first)
        interpolated = index >= math.ceil(yarn_pair_index(beta_slow, head_dim, base, original))
    else:  # the paper's statement: r > beta_fast kept, r < beta_slow interpolated
        kept, interpolated = turns > beta_fast, turns < beta_slow
    # the ramp starts at pair 0 at the earliest (the reference code's clamp): pair 0 is kept
    kept |= (index == 0) & (first < 0)
    np.testing.assert_allclose(theta[kept], plain[kept], rtol=1e-15, atol=0)
    np.testing.assert_allclose(
        theta[interpolated], plain[interpolated] / factor, rtol=1e-15, atol=0
    )
    # in between, every pair lies between the two
    assert np.all(theta <= plain * (1 + 1e-15)) and np.all(theta >= plain / factor * (1 - 1e-15))


@settings(max_examples=80, deadline=None)
@given(
    head_dim=st.sampled_from([16, 64, 128]),
    base=st.floats(100.0, 1e7),
    factor=st.floats(1.0, 64.0),
    original=st.integers(64, 2**17),
    low=st.floats(0.25, 8.0),
    width=st.floats(0.5, 16.0),
)
def test_llama31_three_bands(head_dim, base, factor, original, low, width):
    high = low + width
    scaling = {
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "original_max_position_embeddings": original,
    }
    theta = as_numpy(rope_frequencies(head_dim, base=base, scaling=scaling)[0])
    plain = rope_theta(head_dim, base)
    wavelength = 2 * math.pi / plain
    short, long = wavelength < original / high, wavelength > original / low
    middle = ~short & ~long
    np.testing.assert_allclose(theta[short], plain[short], rtol=1e-15)  # high frequencies: kept
    np.testing.assert_allclose(theta[long], plain[long] / factor, rtol=1e-15)  # low: divided
    smooth = (original / wavelength[middle] - low) / (high - low)
    np.testing.assert_allclose(
        theta[middle], (1 - smooth) * plain[middle] / factor + smooth * plain[middle], rtol=1e-14
    )


@pytest.mark.parametrize("original", [4, 32, 64, 128])
def test_yarn_ramp_ends_outside_the_pairs(original):
    """A short L (the toy models of the book): the ramp's start lies below pair 0.

    The reference code clamps it to pair 0, which keeps pair 0 unchanged (for L below
    2 pi beta_slow both ends are clamped and every pair is kept); ``clamp_ramp=False`` is the
    variant without the clamp, which blends pair 0 too.
    """
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": original}
    scaling["rope_theta"] = 10000.0
    theta = as_numpy(rope_frequencies(16, scaling=scaling)[0])
    np.testing.assert_allclose(theta, ref_yarn(16, 10000.0, scaling)[0], rtol=1e-15, atol=0)
    assert theta[0] == 1.0
    unclamped = as_numpy(rope_frequencies(16, scaling={**scaling, "clamp_ramp": False})[0])
    if original < 2 * math.pi:  # r_0 < 1 = beta_slow: the unclamped rule divides every pair
        np.testing.assert_allclose(unclamped, rope_theta(16, 10000.0) / 4.0, rtol=1e-15)
    else:  # pair 0 turns r_0 = L / 2 pi times, between beta_slow and beta_fast: blended
        assert 1.0 / 4.0 < unclamped[0] < 1.0


# --- the attention factor scales cos and sin --------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rope_type", sorted(ROPE_SCALINGS))
def test_scaled_rotation_against_the_complex_formula(layout, rope_type):
    scaling = example(rope_type, 16)
    if rope_type == "yarn":
        scaling["attention_factor"] = 1.7  # a visible scale
    config = resolve_scaling(scaling, 10000.0, max_position_embeddings=MAX_POSITIONS)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(2, 200, 16, dtype=torch.float64, generator=generator)
    positions = torch.arange(100, 300)
    out = apply_rope(x, positions, layout=layout, scaling=config)
    theta, attention = REFERENCES[rope_type](
        16, 10000.0, scaling, 300
    )  # dynamic: the last position + 1
    angles = positions.numpy()[:, None].astype(np.float64) * theta
    for b in range(2):
        expected = rotate_pairs(x[b].numpy(), angles, layout, scale=attention)
        np.testing.assert_allclose(out[b].numpy(), expected, rtol=0, atol=1e-10)


def test_yarn_attention_factor_multiplies_logits_by_one_over_t():
    """Peng et al.: scaling q and k by sqrt(1/t) multiplies q.k by 1/t = (0.1 ln s + 1)**2."""
    scaling = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 128}
    scaling["rope_theta"] = 10000.0
    generator = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 50, 32, dtype=torch.float64, generator=generator)
    positions = torch.arange(50)
    scores = apply_rope(q, positions, scaling=scaling) @ apply_rope(k, positions, scaling=scaling).T
    yarn_theta = {**scaling, "attention_factor": 1.0}
    unscaled = (
        apply_rope(q, positions, scaling=yarn_theta)
        @ apply_rope(k, positions, scaling=yarn_theta).T
    )
    torch.testing.assert_close(scores, unscaled * (0.1 * math.log(16.0) + 1) ** 2)


@pytest.mark.parametrize("rope_type", sorted(ROPE_SCALINGS))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_rotary_embedding_with_scaling_equals_apply_rope(rope_type, layout, dtype):
    scaling = scaled(rope_type, 16)
    rotary = RotaryEmbedding(16, layout=layout, scaling=scaling, max_len=40)
    q = torch.randn(2, 3, 60, 16).to(dtype)  # positions 0 .. 59: beyond the cache and beyond L = 64
    k = torch.randn(2, 1, 60, 16).to(dtype)
    q_rot, k_rot = rotary(q, k)
    torch.testing.assert_close(q_rot, apply_rope(q, layout=layout, scaling=scaling), rtol=0, atol=0)
    torch.testing.assert_close(k_rot, apply_rope(k, layout=layout, scaling=scaling), rtol=0, atol=0)
    if not scaling.entry.needs_seq_len:  # a window after an offset (see the decoding tests)
        q_tail, _ = rotary(q[..., 30:, :], k[..., 30:, :], offset=30)
        torch.testing.assert_close(q_tail, q_rot[..., 30:, :], rtol=0, atol=0)


# --- dynamic NTK with a key-value cache -------------------------------------------------------

DYNAMIC = resolve_scaling(
    {"rope_type": "dynamic", "factor": 2.0}, DEFAULT_BASE, max_position_embeddings=8
)


def test_dynamic_ntk_with_rotated_keys_cached_breaks_scores():
    """Keys cached under one base, queries rotated under another: not what the full sequence gives."""
    length = 20
    generator = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, length, 16, dtype=torch.float64, generator=generator)
    positions = torch.arange(length)
    # The full sequence: every position rotated with the frequencies of length 20.
    full = apply_rope(q, positions, scaling=DYNAMIC) @ apply_rope(k, positions, scaling=DYNAMIC).T
    # Decoding with a cache of rotated keys: step t rotates its own query and key with length t + 1.
    cached_keys = [
        apply_rope(k[t : t + 1], positions[t : t + 1], scaling=DYNAMIC) for t in range(length)
    ]
    last_query = apply_rope(q[-1:], positions[-1:], scaling=DYNAMIC)
    decoded = (last_query @ torch.cat(cached_keys).T)[0]
    # Within L = 8 nothing is scaled: decoding agrees with the sequence of the first 8 tokens.
    early_query = apply_rope(q[7:8], positions[7:8], scaling=DYNAMIC)
    prefix = apply_rope(k[:8], positions[:8], scaling=DYNAMIC)
    torch.testing.assert_close(early_query @ torch.cat(cached_keys[:8]).T, early_query @ prefix.T)
    assert not torch.allclose(decoded, full[-1], rtol=1e-3, atol=1e-3)
    # Keys kept unrotated and rotated again at each step with the current length give it back.
    rerotated = apply_rope(k, positions, scaling=DYNAMIC, seq_len=length)
    torch.testing.assert_close((last_query @ rerotated.T)[0], full[-1], rtol=0, atol=1e-12)


def test_rotary_embedding_detects_the_dynamic_cache_pitfall():
    rotary = RotaryEmbedding(16, scaling=DYNAMIC)
    q = torch.randn(1, 20, 16)
    for t in range(8):  # within L = 8: decoding works, the frequencies are the plain ones
        rotary(q[:, t : t + 1], q[:, t : t + 1], offset=t)
    with pytest.raises(
        ValueError, match=r"dynamic NTK.*offset=8.*length 9 > original_max_position_embeddings=8"
    ):
        rotary(q[:, 8:9], q[:, 8:9], offset=8)
    rotary(q[:, :12], q[:, :12])  # a full sequence (offset 0) is consistent at any length


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotary_embedding_with_one_fixed_length_decodes_dynamic_ntk_consistently(layout):
    length = 20
    rotary = RotaryEmbedding(16, layout=layout, scaling=DYNAMIC)
    q, k = torch.randn(2, 2, length, 16, dtype=torch.float64)
    q_full, k_full = rotary(q, k)  # offset 0: the frequencies of length 20
    steps = [
        rotary(q[:, t : t + 1], k[:, t : t + 1], offset=t, seq_len=length) for t in range(length)
    ]
    torch.testing.assert_close(torch.cat([s[0] for s in steps], dim=1), q_full, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat([s[1] for s in steps], dim=1), k_full, rtol=0, atol=0)
    torch.testing.assert_close(
        q_full, apply_rope(q, layout=layout, scaling=DYNAMIC, seq_len=length), rtol=0, atol=0
    )
    with pytest.raises(
        ValueError, match=r"seq_len must be at least offset \+ q.shape\[-2\] = 6.*5"
    ):
        rotary(q[:, :1], k[:, :1], offset=5, seq_len=5)


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scaling", "error", "match"),
    [
        ({"rope_type": "linear"}, ValueError, r"missing the key 'factor'.*'linear'"),
        (
            {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
            ValueError,
            r"missing the key 'original_max_position_embeddings'",
        ),
        ({"rope_type": "yarn", "factor": 4.0}, ValueError, r"'original_max_position_embeddings'"),
        (
            {"rope_type": "linear", "factor": 2.0, "beta_fast": 3},
            ValueError,
            r"unknown key.*'beta_fast'.*'linear'",
        ),
        ({**QWEN25_YARN, "low_freq_factor": 1.0}, ValueError, r"unknown key.*'low_freq_factor'"),
        (
            {"rope_type": "linear", "factor": 0.5},
            ValueError,
            r"scaling\['factor'\] must be.*>= 1.*0\.5",
        ),
        ({"rope_type": "ntk", "factor": float("nan")}, ValueError, r"scaling\['factor'\].*nan"),
        (
            {"rope_type": "linear", "factor": True},
            TypeError,
            r"scaling\['factor'\] must be a real.*True",
        ),
        ({"rope_type": "linear", "factor": "2"}, TypeError, r"scaling\['factor'\].*'2'"),
        (
            {**LLAMA31, "low_freq_factor": 5.0},
            ValueError,
            r"scaling\['low_freq_factor'\] must be at most scaling\['high_freq_factor'\].*5\.0.*4",
        ),
        (
            {**LLAMA31, "high_freq_factor": 0.5},
            ValueError,
            r"low_freq_factor.*at most.*high_freq_factor.*1\.0.*0\.5",
        ),
        (
            {**LLAMA31, "low_freq_factor": 0.0},
            ValueError,
            r"scaling\['low_freq_factor'\].*> 0.*0\.0",
        ),
        (
            {**LLAMA31, "original_max_position_embeddings": 8192.0},
            TypeError,
            r"scaling\['original_max_position_embeddings'\] must be an int.*8192\.0",
        ),
        (
            {**LLAMA31, "original_max_position_embeddings": 0},
            ValueError,
            r"scaling\['original_max_position_embeddings'\] must be a positive int.*0",
        ),
        (
            {**QWEN25_YARN, "beta_fast": 1, "beta_slow": 2},
            ValueError,
            r"'beta_slow'.*below.*'beta_fast'",
        ),
        (
            {**QWEN25_YARN, "truncate": 1},
            TypeError,
            r"scaling\['truncate'\] must be True or False.*1",
        ),
        (
            {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 64},
            ValueError,
            r"unknown key.*'original_max_position_embeddings'.*never reads.*"
            r"resolve_scaling\(entry, max_position_embeddings=\.\.\.\)",
        ),
        (
            {"rope_type": "dynamic", "factor": 2.0},
            ValueError,
            r"'dynamic' needs the model's max_position_embeddings.*"
            r"scaling=pe_lib.rope.scaling.resolve_scaling\(entry, max_position_embeddings=\.\.\.\)",
        ),
        (
            {
                "rope_type": "longrope",
                "short_factor": [1.0],
                "long_factor": [2.0],
                "original_max_position_embeddings": 64,
            },  # fmt: skip
            ValueError,
            r"'longrope' needs the model's max_position_embeddings.*without 'factor'",
        ),
        (
            {"rope_type": "longrope", "factor": 2.0, "original_max_position_embeddings": 64},
            ValueError,
            r"missing the key 'short_factor'.*'longrope'",
        ),
        (
            {
                "rope_type": "longrope",
                "factor": 2.0,
                "short_factor": 1.0,
                "long_factor": [2.0],
                "original_max_position_embeddings": 64,
            },  # fmt: skip
            TypeError,
            r"scaling\['short_factor'\] must be a list of real numbers",
        ),
        (
            {
                "rope_type": "longrope",
                "factor": 2.0,
                "short_factor": [1.0, -1.0],
                "long_factor": [2.0],
                "original_max_position_embeddings": 64,
            },  # fmt: skip
            ValueError,
            r"scaling\['short_factor'\]\[1\] must be.*> 0.*-1\.0",
        ),
        (
            {"rope_type": "ntk", "factor": 1e300},
            ValueError,
            r"scaling\['factor'\] is too large.*float64",
        ),
        (
            {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 1.5},
            ValueError,
            r"scaling\['partial_rotary_factor'\] must be in \(0, 1\].*1\.5",
        ),
        (
            {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.3},
            ValueError,
            r"head_dim \* scaling\['partial_rotary_factor'\] must round down to an even.*19",
        ),
        (
            {
                "full_attention": {"rope_type": "linear", "factor": 8.0},
                "sliding_attention": {"rope_type": "default"},
            },  # fmt: skip
            ValueError,
            r"one entry per layer type \('full_attention', 'sliding_attention'\).*layer_type=",
        ),
        (
            {"factor": 2.0},
            ValueError,
            r"must name its method under 'rope_type' \(or the older 'type'\)",
        ),
        (
            {"rope_type": "xpos"},
            ValueError,
            r"scaling\['rope_type'\] must be one of 'default'.*'longrope'.*'su'.*ROPE_SCALINGS.*"
            r"'xpos'",
        ),
        (
            {"type": "LINEAR", "factor": 2.0},
            ValueError,
            r"scaling\['type'\] must be one of.*'LINEAR'",
        ),
        (
            {"rope_type": "linear", "type": "yarn", "factor": 2.0},
            ValueError,
            r"rope_type.*type.*must agree.*'linear'.*'yarn'",
        ),
        (
            {**LLAMA31, "rope_theta": 1.0},
            ValueError,
            r"scaling\['rope_theta'\] must be a finite number > 1",
        ),
        ([("rope_type", "linear")], TypeError, r"scaling must be None or a mapping.*list"),
    ],
)
def test_bad_scaling_raises_naming_the_key(scaling, error, match):
    with pytest.raises(error, match=match):
        rope_frequencies(64, base=10000.0, scaling=scaling)
    with pytest.raises(error, match=match):  # RotaryEmbedding checks once, at construction
        RotaryEmbedding(64, base=10000.0, scaling=scaling)


def test_other_argument_errors():
    with pytest.raises(
        ValueError, match=r"scaling\['rope_theta'\].*agree with base.*500000\.0.*10000\.0"
    ):
        rope_frequencies(64, base=10000.0, scaling={**LLAMA31, "rope_theta": 500000.0})
    with pytest.raises(ValueError, match=r"seq_len is required for rope_type 'dynamic'"):
        rope_frequencies(64, scaling=DYNAMIC)
    with pytest.raises(ValueError, match=r"seq_len must be a positive int.*0"):
        rope_frequencies(64, scaling=DYNAMIC, seq_len=0)
    with pytest.raises(
        ValueError, match=r"head_dim must give at least 4 rotated channels for rope_type 'ntk'.*2"
    ):
        rope_frequencies(2, base=10000.0, scaling={"rope_type": "ntk", "factor": 2.0})
    with pytest.raises(ValueError, match=r"head_dim must be even.*7"):
        rope_frequencies(7)
    with pytest.raises(ValueError, match=r"base must be a finite number > 1.*0\.5"):
        rope_frequencies(8, base=0.5)
    with pytest.raises(ValueError, match=r"unknown key.*'factor'"):
        apply_rope(torch.randn(4, 8), scaling={"rope_type": "default", "factor": 2.0})


def test_optional_keys_may_be_null_and_ints_are_accepted():
    """config.json files write ``null`` for unset keys and ``8`` for ``8.0``."""
    scaling = {**QWEN25_YARN, "attention_factor": None, "beta_fast": None, "mscale": None}
    theta, attention = rope_frequencies(128, base=1e6, scaling=scaling)
    expected, expected_attention = ref_yarn(128, 1e6, QWEN25_YARN)
    np.testing.assert_allclose(as_numpy(theta), expected, rtol=1e-14)
    assert attention == pytest.approx(expected_attention)
    theta_int, _ = rope_frequencies(128, base=5e5, scaling={**LLAMA31, "factor": 8})
    expected, _ = rope_frequencies(128, base=5e5, scaling=LLAMA31)
    torch.testing.assert_close(theta_int, expected, rtol=0, atol=0)


# --- transformers 5's rope_parameters, and the registry as the extension point ----------------

GEMMA3_ROPE_PARAMETERS = {
    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
}


def test_per_layer_type_rope_parameters_are_chosen_with_layer_type():
    full, _ = rope_frequencies(256, scaling=GEMMA3_ROPE_PARAMETERS, layer_type="full_attention")
    np.testing.assert_allclose(as_numpy(full), rope_theta(256, 1e6) / 8.0, rtol=1e-15)
    sliding, _ = rope_frequencies(
        256, scaling=GEMMA3_ROPE_PARAMETERS, layer_type="sliding_attention"
    )
    np.testing.assert_allclose(as_numpy(sliding), rope_theta(256, 10000.0), rtol=1e-15)
    with pytest.raises(ValueError, match=r"layer_type must be one of 'full_attention', "):
        rope_frequencies(256, scaling=GEMMA3_ROPE_PARAMETERS, layer_type="global")
    with pytest.raises(ValueError, match=r"layer_type is for rope_parameters with one entry"):
        rope_frequencies(128, scaling=LLAMA31, layer_type="full_attention")


#: transformers 5 rope_parameters with a layer type without RoPE (Llama 4's and SmolLM3's NoPE
#: layers, Cohere 2's full-attention layers): that layer type's entry is None.
NOPE_ROPE_PARAMETERS = {
    "sliding_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 5e4},
    "full_attention": None,
}


def test_a_layer_type_without_rope_is_named_and_the_others_work():
    theta, factor = rope_frequencies(
        64, scaling=NOPE_ROPE_PARAMETERS, layer_type="sliding_attention"
    )
    alone = rope_frequencies(64, scaling=NOPE_ROPE_PARAMETERS["sliding_attention"])
    torch.testing.assert_close(theta, alone[0], rtol=0, atol=0)
    assert factor == alone[1] == 1.0
    x = torch.randn(3, 64, dtype=torch.float64)
    config = resolve_scaling(NOPE_ROPE_PARAMETERS, layer_type="sliding_attention")
    torch.testing.assert_close(
        apply_rope(x, scaling=config),
        apply_rope(x, scaling=NOPE_ROPE_PARAMETERS["sliding_attention"]),
        rtol=0,
        atol=0,
    )
    with pytest.raises(ValueError, match=r"layer_type='full_attention' has no rotary embedding"):
        resolve_scaling(NOPE_ROPE_PARAMETERS, layer_type="full_attention")
    with pytest.raises(ValueError, match=r"one entry per layer type.*choose one with layer_type"):
        resolve_scaling(NOPE_ROPE_PARAMETERS)
    with pytest.raises(ValueError, match=r"must name its method"):  # no entry at all
        resolve_scaling({"full_attention": None}, 1e4)


def test_partial_rotary_factor_gives_the_frequencies_of_the_rotated_share():
    theta, _ = rope_frequencies(
        80, scaling={"rope_type": "default", "partial_rotary_factor": 0.25, "rope_theta": 1e4}
    )
    np.testing.assert_allclose(as_numpy(theta), rope_theta(20, 1e4), rtol=1e-15)
    config = resolve_scaling(
        {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}, 10000.0
    )
    assert config.rotary_dim(64) == 32
    assert resolve_scaling(example("proportional", 64), 1e4).rotary_dim(64) == 64  # full width


def test_su_is_the_older_name_of_longrope():
    scaling = example("longrope", 16)
    longrope = rope_frequencies(16, base=1e4, scaling=scaling, seq_len=65)
    su = rope_frequencies(16, base=1e4, scaling={**scaling, "rope_type": "su"}, seq_len=65)
    torch.testing.assert_close(su[0], longrope[0], rtol=0, atol=0)
    assert su[1] == longrope[1]
    assert resolve_scaling({**scaling, "rope_type": "su"}, 1e4).rope_type == "longrope"
    # both names in one entry, as converted configs write them: they agree
    both = {**scaling, "type": "su", "rope_type": "longrope"}
    assert resolve_scaling(both, 1e4).rope_type == "longrope"
    with pytest.raises(ValueError, match=r"must agree.*rope_type='yarn' and type='su'"):
        resolve_scaling({**both, "rope_type": "yarn"}, 1e4)


def test_longrope_switches_lists_after_the_original_length():
    scaling = example("longrope", 16)
    plain = rope_theta(16, 10000.0)
    for seq_len, key in ((1, "short_factor"), (64, "short_factor"), (65, "long_factor")):
        theta, _ = rope_frequencies(16, base=1e4, scaling=scaling, seq_len=seq_len)
        np.testing.assert_allclose(as_numpy(theta), plain / np.array(scaling[key]), rtol=1e-15)
    assert resolve_scaling(scaling, 1e4).entry.needs_seq_len


def test_a_scaling_registered_from_outside_is_accepted(monkeypatch):
    """A new method is one RopeScaling with its own keys: no other edit to pe_lib."""

    def check_even(name, value):
        if not isinstance(value, int) or value % 2:
            raise ValueError(f"{name} must be an even int, got {value!r}")
        return value

    def halve_every_other(head_dim, base, params, seq_len):
        theta = torch.pow(base, -torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        theta[:: params["stride"]] /= 2.0
        return theta, params["gain"]

    monkeypatch.setitem(
        ROPE_SCALINGS,
        "halve_every_other",
        RopeScaling(
            halve_every_other, keys={"stride": Key(check_even), "gain": Key(lambda n, v: v, 1.0)}
        ),
    )
    theta, gain = rope_frequencies(
        8, base=10000.0, scaling={"rope_type": "halve_every_other", "stride": 2}
    )
    np.testing.assert_allclose(as_numpy(theta), rope_theta(8, 10000.0) / [2, 1, 2, 1])
    assert gain == 1.0
    with pytest.raises(ValueError, match=r"scaling\['stride'\] must be an even int, got 3"):
        rope_frequencies(8, base=1e4, scaling={"rope_type": "halve_every_other", "stride": 3})
    with pytest.raises(ValueError, match=r"missing the key 'stride'"):
        rope_frequencies(8, base=1e4, scaling={"rope_type": "halve_every_other"})
