"""check_rope: correct rotations pass, each planted mistake is named.

The rotations are written here the way students write them (Meta's complex-number code,
Hugging Face's ``rotate_half``, an explicit 2x2 rotation, modules with an offset), independently
of pe_lib; each wrong one plants one mistake. Every code of the checker's catalogue has a planted
case (``test_every_mistake_has_a_planted_case``).
"""

from __future__ import annotations

import math

import pytest
import torch
from checker_failures import failing_with
from hypothesis import given
from hypothesis import strategies as st
from pe_reference import llama3_theta
from torch import nn

import pe_lib
from pe_lib.checks import rope as rope_checker
from pe_lib.checks._core import CheckFailed
from pe_lib.checks.rope import CONVENTIONS, check_rope
from pe_lib.rope.scaling import resolve_scaling, rope_frequencies

ROPE_MISTAKES = check_rope.mistakes
fails_with = failing_with(check_rope)


# --- how students write the frequencies and the rotation ---------------------------------------


def inv_freq(head_dim: int, base: float = 10000.0, dtype=torch.float32) -> torch.Tensor:
    """theta_i = 1 / base ** (2i / d), as Meta's and Hugging Face's code compute it."""
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=dtype) / head_dim))


def meta_complex(x, positions, base=10000.0, scale_positions=1.0):
    """Meta's Llama layout: pairs (2i, 2i+1) as complex numbers times exp(i m theta)."""
    freqs = torch.outer(positions.float() / scale_positions, inv_freq(x.shape[-1], base))
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # (seq_len, d/2) complex64
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def hf_half(x, positions, base=10000.0):
    """Hugging Face's formula: cos and sin cached in x's dtype, x * cos + rotate_half(x) * sin."""
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1], base)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin


def explicit_pairs(x, positions, base=10000.0):
    """An explicit 2x2 rotation of each pair (2i, 2i+1), in float64, cast back."""
    d = x.shape[-1]
    theta = base ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    angle = positions.to(torch.float64)[:, None] * theta[None, :]
    c, s = torch.cos(angle), torch.sin(angle)
    rotation = torch.stack(
        (torch.stack((c, -s), -1), torch.stack((s, c), -1)), -2
    )  # (L, d/2, 2, 2)
    pairs = x.to(torch.float64).unflatten(-1, (d // 2, 2))  # (..., L, d/2, 2)
    return torch.einsum("lpij,...lpj->...lpi", rotation, pairs).flatten(-2).to(x.dtype)


class OffsetRotary(nn.Module):
    """forward(x, offset): half layout, frequencies recomputed in float32 in forward."""

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim, self.base = head_dim, base

    def forward(self, x, offset=0):
        positions = torch.arange(offset, offset + x.shape[-2])
        return hf_half(x, positions, self.base)


class PositionsRotary(nn.Module):
    """forward(x, positions): Meta's complex-number code in a module."""

    def forward(self, x, positions):
        return meta_complex(x, positions)


class QKRotary(nn.Module):
    """forward(q, k, offset) -> (q, k): interleaved, cos/sin cached in float64 as a plain attribute."""

    def __init__(self, head_dim: int, max_len: int = 16) -> None:
        super().__init__()
        self.head_dim = head_dim

    def forward(self, q, k, offset=0):
        positions = torch.arange(offset, offset + q.shape[-2])
        return explicit_pairs(q, positions), explicit_pairs(k, positions)


def llama3_inv_freq(head_dim, base, factor, low, high, original):
    """Meta's Llama 3.1 apply_scaling (:func:`pe_reference.llama3_theta`) as a float64 tensor."""
    return torch.from_numpy(llama3_theta(head_dim, base, factor, low, high, original))


LINEAR = {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0}
YARN = {
    "rope_type": "yarn",
    "factor": 8.0,
    "original_max_position_embeddings": 64,
    "rope_theta": 10000.0,
}
NTK = {"rope_type": "ntk", "factor": 4.0, "rope_theta": 10000.0}
#: Dynamic NTK as config.json writes it; L is the model's max_position_embeddings, 64.
DYNAMIC = resolve_scaling(
    {"rope_type": "dynamic", "factor": 4.0}, 10000.0, max_position_embeddings=64
)
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
    "rope_theta": 500000.0,
}


def with_theta(theta_fn, attention=1.0):
    """A float32 interleaved rotation with the given theta (float64 (d/2,)) and cos/sin factor."""

    def rotate(x, positions):
        angle = positions.float()[:, None] * theta_fn(x.shape[-1]).float()[None, :]
        z = torch.polar(torch.full_like(angle, attention), angle)
        x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_ * z).flatten(-2).type_as(x)

    return rotate


def ntk_rotate(x, positions):
    """The NTK-aware base b * s ** (d / (d - 2)) (bloc97), in Meta's code."""
    d = x.shape[-1]
    return meta_complex(x, positions, base=10000.0 * 4.0 ** (d / (d - 2)))


def dynamic_rotate(x, positions):
    """Dynamic NTK at the current length: alpha = s * length / L - (s - 1), length >= L."""
    d, length = x.shape[-1], max(int(positions[-1]) + 1, 64)
    alpha = 4.0 * length / 64 - 3.0
    return meta_complex(x, positions, base=10000.0 * alpha ** (d / (d - 2)))


def hf_yarn_inv_freq(d, base, factor, original, beta_fast=32.0, beta_slow=1.0):
    """YaRN's frequencies as Hugging Face's _compute_yarn_parameters and the authors'
    find_correction_range compute them: float32, the ramp's ends clamped to [0, d - 1]."""

    def correction_dim(rotations):
        return (d * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, d, 2).float() / d)
    ramp = ((torch.arange(d // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    extrapolation = 1 - ramp
    return (1 / (factor * pos_freqs)) * (1 - extrapolation) + (1 / pos_freqs) * extrapolation


def hf_yarn_rotate(original):
    """Hugging Face's rotation with YaRN: rotate_half, cos and sin times 0.1 ln s + 1."""

    def rotate(x, positions):
        inv = hf_yarn_inv_freq(x.shape[-1], 10000.0, 4.0, original)
        freqs = positions.float()[:, None] * inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        attention = 0.1 * math.log(4.0) + 1.0
        cos, sin = (emb.cos() * attention).to(x.dtype), (emb.sin() * attention).to(x.dtype)
        return x * cos + rotate_half(x) * sin

    return rotate


@pytest.mark.parametrize("original", [32, 64, 128])
@pytest.mark.parametrize("head_dim", [8, 16, 64])
def test_a_hugging_face_yarn_rotation_with_a_short_original_length_passes(original, head_dim):
    """The toy models' lengths: the ramp's start is clamped to pair 0, as the reference does."""
    scaling = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": original}
    scaling["rope_theta"] = 10000.0
    check_rope(hf_yarn_rotate(original), head_dim=head_dim, layout="half", scaling=scaling)
    # and the unclamped variant is told apart, naming the reference it was compared with
    unclamped = {**scaling, "clamp_ramp": False}
    with pytest.raises(CheckFailed) as info:
        check_rope(hf_yarn_rotate(original), head_dim=head_dim, layout="half", scaling=unclamped)
    message = str(info.value)
    assert "against the 'yarn' frequencies of pe_lib.rope.rope_frequencies" in message
    assert "transformers 5.23's _compute_yarn_parameters" in message


def test_messages_name_the_reference_of_plain_rope():
    failure = fails_with("base", base_500)
    assert "against plain RoPE, theta_i = 10000 ** (-2i / 16)" in str(failure)


def test_partial_rotary_factor_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match=r"rotates 8 of 16: check the rotated channels alone"):
        check_rope(meta_complex, scaling={"rope_type": "default", "partial_rotary_factor": 0.5})


def llama3_rotate(x, positions):
    return with_theta(lambda d: llama3_inv_freq(d, 500000.0, 8.0, 1.0, 4.0, 64))(x, positions)


CORRECT = [
    pytest.param(meta_complex, {}, id="meta-complex-interleaved"),
    pytest.param(explicit_pairs, {}, id="explicit-2x2-float64"),
    pytest.param(hf_half, {"layout": "half"}, id="hf-rotate-half"),
    pytest.param(lambda x, p: meta_complex(x, p, 500000.0), {"base": 500000.0}, id="base-500000"),
    pytest.param(OffsetRotary(16), {"layout": "half", "convention": "offset"}, id="module-offset"),
    pytest.param(QKRotary(16), {"convention": "qk"}, id="module-qk"),
    pytest.param(PositionsRotary(), {}, id="module-positions"),
    pytest.param(OffsetRotary(64), {"layout": "half", "convention": "offset", "head_dim": 64}),
    pytest.param(lambda x, p: meta_complex(x, p, scale_positions=4.0), {"scaling": LINEAR}),
    pytest.param(llama3_rotate, {"scaling": LLAMA3}, id="llama3"),
    pytest.param(ntk_rotate, {"scaling": NTK}, id="ntk"),
    pytest.param(dynamic_rotate, {"scaling": DYNAMIC}, id="dynamic"),
    pytest.param(lambda x, p: pe_lib.apply_rope(x, p), {}, id="pe_lib-interleaved"),
    pytest.param(lambda x, p: pe_lib.apply_rope(x, p, layout="half"), {"layout": "half"}),
    pytest.param(lambda x, p: pe_lib.apply_rope(x, p, scaling=YARN), {"scaling": YARN}),
    pytest.param(pe_lib.RotaryEmbedding(16), {"convention": "qk"}, id="pe_lib-module"),
]


@pytest.mark.parametrize(("rotate", "kwargs"), CORRECT)
def test_correct_rotations_pass(rotate, kwargs) -> None:
    check_rope(rotate, **kwargs)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_correct_rotations_pass_in_each_dtype(dtype) -> None:
    for rotate, kwargs in [(meta_complex, {}), (hf_half, {"layout": "half"})]:
        check_rope(rotate, dtypes=(dtype,), **kwargs)


# --- planted mistakes ---------------------------------------------------------------------------


def raises(x, positions):
    return x.reshape(-1, 3) @ torch.eye(3)  # fails for head_dim 16: "shape '[-1, 3]' is invalid"


def as_numpy(x, positions):
    return meta_complex(x, positions).numpy()


def halves_only(x, positions):
    return meta_complex(x, positions)[..., : x.shape[-1] // 2]


def no_type_as(x, positions):
    """Meta's code without .type_as(x): a float32 result for bfloat16 input."""
    return meta_complex(x, positions).float()


def rotates_in_place(x, positions):
    x[...] = meta_complex(x, positions)
    return x


def one_based_exponent(x, positions):
    """theta_i = 1 / (base ** (i/d) - 1): theta_0 divides by zero."""
    d = x.shape[-1]
    theta = 1.0 / (10000.0 ** (torch.arange(d // 2) / d) - 1.0)
    return with_theta(lambda _: theta)(x, positions)


def meta_on_half_layout(x, positions):
    """Meta's complex code where the half layout is asked for."""
    return meta_complex(x, positions)


def half_pairs_interleaved_frequencies(x, positions):
    """rotate_half with Meta's frequency layout: freqs.repeat_interleave(2)."""
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1])[None, :]
    emb = freqs.repeat_interleave(2, dim=-1)
    return (x * emb.cos() + rotate_half(x) * emb.sin()).to(x.dtype)


def interleaved_pairs_half_frequencies(x, positions):
    """Interleaved pairs (-x_{2i+1}, x_{2i}) with Hugging Face's torch.cat((freqs, freqs))."""
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1])[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    partner = torch.stack((-b, a), dim=-1).flatten(-2)
    return (x * emb.cos() + partner * emb.sin()).to(x.dtype)


def cache_of_4096(x, positions):
    """A cos/sin cache of 4096 positions, indexed without a bound check."""
    angles = torch.arange(4096).float()[:, None] * inv_freq(x.shape[-1])[None, :]
    cos, sin = torch.cos(angles)[positions], torch.sin(angles)[positions]
    z = torch.complex(cos, sin)
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * z).flatten(-2).type_as(x)


def exponent_over_d_minus_2(x, positions):
    d = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / (d - 2))
    return with_theta(lambda _: theta)(x, positions)


def negative_sin(x, positions):
    """rotate_half returning (x2, -x1): rotation by -m theta."""
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1])[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return (x * emb.cos() + torch.cat((x2, -x1), dim=-1) * emb.sin()).to(x.dtype)


def from_zero(x, positions):
    """Ignores the positions: every call starts at 0."""
    return meta_complex(x, torch.arange(x.shape[-2]))


class IgnoresOffset(OffsetRotary):
    def forward(self, x, offset=0):
        return hf_half(x, torch.arange(x.shape[-2]), self.base)


class OffsetTwice(OffsetRotary):
    def forward(self, x, offset=0):
        positions = offset + torch.arange(offset, offset + x.shape[-2])
        return hf_half(x, positions, self.base)


def one_based(x, positions):
    return meta_complex(x, positions + 1)


def linear_not_applied(x, positions):
    return meta_complex(x, positions)


def linear_twice(x, positions):
    return meta_complex(x, positions, scale_positions=16.0)


def linear_inverted(x, positions):
    return meta_complex(x, positions, scale_positions=0.25)


def dynamic_frozen_at_training_length(x, positions):
    """Dynamic NTK whose base is never updated past L: plain RoPE."""
    return meta_complex(x, positions)


def yarn_without_attention_factor(x, positions):
    theta, _ = rope_frequencies(x.shape[-1], scaling=YARN)
    return with_theta(lambda _: theta)(x, positions)


def base_500(x, positions):
    return meta_complex(x, positions, base=500.0)


def exponent_without_2(x, positions):
    theta = 10000.0 ** (-torch.arange(x.shape[-1] // 2, dtype=torch.float64) / x.shape[-1])
    return with_theta(lambda _: theta)(x, positions)


def default_base_for_llama(x, positions):
    return meta_complex(x, positions, base=10000.0)


def angles_in_x_dtype(x, positions):
    """Positions and frequencies cast to x's dtype before the product: bfloat16 angles."""
    freqs = positions.to(x.dtype)[:, None] * inv_freq(x.shape[-1]).to(x.dtype)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + rotate_half(x) * emb.sin()


def bfloat16_angles(x, positions):
    """Angles cast to bfloat16 before cos and sin, whatever x's dtype."""
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1])[None, :]
    emb = torch.cat((freqs, freqs), dim=-1).to(torch.bfloat16).float()
    return (x.float() * emb.cos() + rotate_half(x.float()) * emb.sin()).to(x.dtype)


class BufferRotary(nn.Module):
    """An inv_freq buffer: module.to(torch.bfloat16) rounds the frequencies, then the angles."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.register_buffer("inv_freq", inv_freq(head_dim), persistent=False)

    def forward(self, x, offset=0):
        positions = torch.arange(offset, offset + x.shape[-2], dtype=self.inv_freq.dtype)
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos().to(x.dtype) + rotate_half(x) * emb.sin().to(x.dtype)


class FreqsCisRotary(nn.Module):
    """Meta's Llama code as a module: a complex freqs_cis buffer, which module.to(bfloat16)
    makes real (its cosines), dropping the sines."""

    def __init__(self, head_dim: int, max_len: int = 16384) -> None:
        super().__init__()
        angles = torch.outer(torch.arange(max_len).float(), inv_freq(head_dim))
        freqs_cis = torch.polar(torch.ones_like(angles), angles)
        self.register_buffer("freqs_cis", freqs_cis, persistent=False)

    def forward(self, x, offset=0):
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        turned = pairs * self.freqs_cis[offset : offset + x.shape[-2]]
        return torch.view_as_real(turned).flatten(-2).type_as(x)


def start_at_pair_one(x, positions):
    """theta_i = base ** (-2(i+1)/d): no pair turns by 1 rad per position."""
    d = x.shape[-1]
    theta = 10000.0 ** (-2.0 * (torch.arange(d // 2, dtype=torch.float64) + 1) / d)
    return with_theta(lambda _: theta)(x, positions)


def cos_only(x, positions):
    freqs = positions.float()[:, None] * inv_freq(x.shape[-1])[None, :]
    return (x.float() * torch.cat((freqs, freqs), dim=-1).cos()).to(x.dtype)


class QKRotatesQOnly(QKRotary):
    def forward(self, q, k, offset=0):
        return super().forward(q, k, offset)[0], k


class QKReturnsQ(QKRotary):
    def forward(self, q, k, offset=0):
        return super().forward(q, k, offset)[0]


# (rotate, checker kwargs, mistake, words the message must contain)
def counted_from_first(x, positions):
    """Reads positions[0] only: right on every contiguous call, wrong on packed positions."""
    return meta_complex(x, positions[0] + torch.arange(len(positions)))


def llama3_theta_of(base, scale=1.0):
    """An interleaved rotation by Llama 3.1's frequencies (LLAMA3's parameters) at ``base``."""
    return with_theta(lambda d: scale * llama3_inv_freq(d, base, 8.0, 1.0, 4.0, 64))


PLANTED = [
    (raises, {}, "exception", ["RuntimeError"]),
    (counted_from_first, {}, "positions", ["0, 1, 2, 0, 1, 2, 3, 0"]),
    (llama3_theta_of(10000.0), {"scaling": LLAMA3}, "base", ["applied to base 10000"]),
    (
        llama3_theta_of(500000.0, scale=1.01),
        {"scaling": LLAMA3},
        "wrong_values",
        ["rope_frequencies(head_dim, base=base, scaling=scaling)"],
    ),
    (cache_of_4096, {}, "exception", ["IndexError", "positions 10000..10001", "up to 10001"]),
    (as_numpy, {}, "wrong_type", ["ndarray"]),
    (QKReturnsQ(16), {"convention": "qk"}, "wrong_type", ["(q_rotated, k_rotated)"]),
    (halves_only, {}, "shape", ["(2, 2, 8, 8)"]),
    (no_type_as, {"dtypes": (torch.bfloat16,)}, "dtype", ["float32", "bfloat16"]),
    (rotates_in_place, {}, "in_place", ["in place"]),
    (one_based_exponent, {}, "not_finite", ["NaN"]),
    (QKRotatesQOnly(16), {"convention": "qk"}, "not_rotated", ["input unchanged"]),
    (hf_half, {}, "layout", ['"half" layout', '"interleaved" layout was asked']),
    (meta_on_half_layout, {"layout": "half"}, "layout", ['"interleaved" layout (pairs']),
    (
        half_pairs_interleaved_frequencies,
        {"layout": "half"},
        "layout",
        ["paired in the 'half' layout", "freqs.repeat_interleave(2, dim=-1)"],
    ),
    (
        interleaved_pairs_half_frequencies,
        {},
        "layout",
        ["paired in the 'interleaved' layout", "torch.cat((freqs, freqs), dim=-1))"],
    ),
    (negative_sin, {"layout": "half"}, "sign", ["-m * theta_i"]),
    (from_zero, {}, "offset", ["positions 0 instead of 8", "ignored"]),
    (IgnoresOffset(16), {"layout": "half", "convention": "offset"}, "offset", ["ignored"]),
    (OffsetTwice(16), {"layout": "half", "convention": "offset"}, "offset", ["16 instead of 8"]),
    (one_based, {}, "offset", ["positions 1..8 instead of 0..7", "+1"]),
    (linear_not_applied, {"scaling": LINEAR}, "scaling", ["not applied"]),
    (linear_twice, {"scaling": LINEAR}, "scaling", ["applied twice", "16"]),
    (linear_inverted, {"scaling": LINEAR}, "scaling", ["inverted"]),
    (
        dynamic_frozen_at_training_length,
        {"scaling": DYNAMIC},
        "scaling",
        ["positions 100..103", "'dynamic' scaling (factor 4.0) is not applied"],
    ),
    (yarn_without_attention_factor, {"scaling": YARN}, "scaling", ["attention factor 1.20794"]),
    (base_500, {}, "base", ["base 500, not 10000"]),
    (exponent_without_2, {}, "base", ["base 100, not 10000", "sqrt(base)"]),
    (exponent_over_d_minus_2, {}, "base", ["base 37276", "head_dim - 2"]),
    (default_base_for_llama, {"base": 500000.0}, "base", ["base 10000, not 500000"]),
    (
        angles_in_x_dtype,
        {"layout": "half"},
        "precision",
        ["bfloat16 at positions 100..103", "positions, frequencies and angles in bfloat16"],
    ),
    (bfloat16_angles, {"layout": "half"}, "precision", ["float64 at positions"]),
    (
        BufferRotary(16),
        {"layout": "half", "convention": "offset"},
        "precision",
        ["a copy of the module cast with .to(torch.bfloat16)", "frequency buffer"],
    ),
    (
        FreqsCisRotary(16),
        {"convention": "offset"},
        "complex_buffer",
        ["complex buffer 'freqs_cis' to real bfloat16", "drops the imaginary ones"],
    ),
    (start_at_pair_one, {}, "wrong_values", ["pair 0 (channels 0, 1)"]),
    (cos_only, {}, "wrong_values", ["scales its length"]),
]


@pytest.mark.parametrize(
    ("rotate", "kwargs", "mistake", "words"),
    PLANTED,
    ids=[f"{m}-{getattr(r, '__name__', type(r).__name__)}" for r, _, m, _ in PLANTED],
)
def test_planted_mistake_is_named(rotate, kwargs, mistake, words) -> None:
    message = str(fails_with(mistake, rotate, **kwargs))
    for word in words:
        assert word in message, message


#: Planted cases whose mistake shows in every input dtype: not those about the dtype itself
#: (half-precision angles are right for float32 input, numpy has no bfloat16).
EVERY_DTYPE = [
    case
    for case in PLANTED
    if case[2] not in ("precision", "dtype", "complex_buffer") and case[0] is not as_numpy
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    ("rotate", "kwargs", "mistake"),
    [case[:3] for case in EVERY_DTYPE],
    ids=[f"{m}-{getattr(r, '__name__', type(r).__name__)}" for r, _, m, _ in EVERY_DTYPE],
)
def test_planted_mistake_is_named_in_each_dtype(rotate, kwargs, mistake, dtype) -> None:
    fails_with(mistake, rotate, **{**kwargs, "dtypes": (dtype,)})


def test_a_complex_buffer_passes_in_float32() -> None:
    check_rope(FreqsCisRotary(16), convention="offset", dtypes=(torch.float32, torch.float64))


def test_every_mistake_has_a_planted_case() -> None:
    assert {mistake for _, _, mistake, _ in PLANTED} == set(ROPE_MISTAKES)
    assert check_rope.mistakes == ROPE_MISTAKES


def test_every_variant_of_a_mistake_is_planted() -> None:
    """Each declared record (a mistake may have variants) is the diagnosis of a planted case."""
    messages = []
    for rotate, kwargs, _, _ in PLANTED:
        with pytest.raises(CheckFailed) as info:
            check_rope(rotate, **kwargs)
        messages.append(str(info.value))
    for record in rope_checker.MISTAKES:
        fixed = record.what.split("{")[0]
        assert any(fixed in m and record.how.split("{")[0] in m for m in messages), record.code


BASES = st.sampled_from([100.0, 500.0, 10000.0, 123456.0, 500000.0, 1e6])


@given(base=BASES, used=BASES, head_dim=st.sampled_from([4, 8, 16, 64]))
def test_another_base_is_named_with_its_value(base, used, head_dim) -> None:
    def rotate(x, positions):
        return meta_complex(x, positions, base=used)

    if used == base:
        check_rope(rotate, base=base, head_dim=head_dim)
        return
    message = str(fails_with("base", rotate, base=base, head_dim=head_dim))
    found = float(message.split("RoPE with base ")[1].split(",")[0])
    # The fewest significant digits that explain the result within the tolerance are reported.
    assert math.isclose(found, used, rel_tol=1e-4), message
    assert f", not {base:.0f}" in message, message


@given(
    base=BASES,
    head_dim=st.sampled_from([4, 8, 16, 64]),
    layout=st.sampled_from(["interleaved", "half"]),
)
def test_a_negated_angle_is_a_sign_mistake_at_any_base(base, head_dim, layout) -> None:
    rotation = explicit_pairs if layout == "interleaved" else hf_half

    def rotate(x, positions):
        return rotation(x, -positions, base)

    fails_with("sign", rotate, base=base, head_dim=head_dim, layout=layout)


def test_a_cache_is_probed_up_to_its_last_position() -> None:
    check_rope(cache_of_4096, max_len=4096)
    message = str(fails_with("exception", cache_of_4096, max_len=4097))
    assert "positions 4095..4096" in message, message


def test_student_errors_are_chained() -> None:
    error = fails_with("exception", raises)
    assert isinstance(error.__cause__, RuntimeError)
    assert "rotate(x, positions) with x of shape (2, 2, 8, 16) float64" in str(error)


def test_module_modes_are_restored_and_module_not_cast() -> None:
    module = BufferRotary(16).train()
    with pytest.raises(CheckFailed):
        check_rope(module, layout="half", convention="offset")
    assert module.training
    assert module.inv_freq.dtype == torch.float32


def test_bfloat16_buffer_passes_when_bfloat16_is_not_checked() -> None:
    check_rope(BufferRotary(16), layout="half", convention="offset", dtypes=(torch.float32,))


def test_every_convention_is_documented() -> None:
    assert set(CONVENTIONS) == {"positions", "offset", "qk"}
    for name, convention in CONVENTIONS.items():
        assert convention.signature in check_rope.__doc__, name


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"rotate": 3}, TypeError, ["rotate must be a function or nn.Module", "int"]),
        ({"head_dim": 15}, ValueError, ["head_dim", "15", "even"]),
        ({"head_dim": 16.0}, TypeError, ["head_dim", "16.0"]),
        ({"base": 1.0}, ValueError, ["base", "1.0", "> 1"]),
        ({"base": "10000"}, TypeError, ["base", "'10000'"]),
        ({"layout": "concat"}, ValueError, ["layout", "'interleaved', 'half'", "'concat'"]),
        ({"convention": "x"}, ValueError, ["convention", "'positions', 'offset', 'qk'", "'x'"]),
        ({"dtypes": torch.float32}, TypeError, ["dtypes", "sequence"]),
        ({"dtypes": "float32"}, TypeError, ["dtypes", "sequence", "'float32'"]),
        ({"max_len": 8}, ValueError, ["max_len", "at least 9", "8"]),
        ({"max_len": 4096.0}, TypeError, ["max_len", "4096.0"]),
        ({"dtypes": (torch.float8_e4m3fn,)}, ValueError, ["dtypes[0]", "float8_e4m3fn"]),
        ({"dtypes": ()}, ValueError, ["dtypes", "at least one"]),
        ({"dtypes": (torch.int64,)}, TypeError, ["dtypes[0]", "torch.int64"]),
        ({"dtypes": (torch.float32, "float64")}, TypeError, ["dtypes[1]", "'float64'"]),
        ({"scaling": {"rope_type": "linear"}, "base": 1e4}, ValueError, ["'factor'"]),
        (
            {"scaling": {"rope_type": "linear", "factor": 2.0, "f": 1}, "base": 1e4},
            ValueError,
            ["'f'"],
        ),
        (
            {"scaling": {"rope_type": "ntk", "factor": 2.0}, "head_dim": 2, "base": 1e4},
            ValueError,
            ["head_dim"],
        ),
        (
            {"scaling": {"rope_type": "linear", "factor": 2.0}},
            ValueError,
            ["scaling", "'rope_theta'", "base is None"],
        ),
        ({"scaling": [("rope_type", "linear")]}, TypeError, ["scaling", "list"]),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, words) -> None:
    kwargs = {"rotate": meta_complex, **kwargs}
    with pytest.raises(error) as info:
        check_rope(**kwargs)
    for word in words:
        assert word in str(info.value), str(info.value)
