"""check_kv_cache: correct cached decoding passes however it is written; each mistake is named.

The steps are written here the way students write them, independently of the checker: a cache
of rotated keys with ``pe_lib.apply_rope`` and PyTorch's attention, and a cache of unrotated keys
rotated at every read with a hand-written ``rotate_half`` and softmax. Each wrong step plants
one mistake; every code of the checker's catalogue has a planted case.
"""

from __future__ import annotations

import math

import pytest
import torch
from checker_failures import failing_with
from torch.nn import functional as F

import pe_lib
from pe_lib.checks import CheckFailed, check_kv_cache

fails_with = failing_with(check_kv_cache)


def rope(x, positions, base=10000.0):
    return pe_lib.apply_rope(x, positions, base=base, layout="half")


def attend(q, k, v, offset, causal=True):
    """Attention of the new queries (at offset + i) over every key 0 .. offset + new - 1."""
    new, total = q.shape[-2], k.shape[-2]
    allowed = torch.arange(total)[None, :] <= torch.arange(offset, offset + new)[:, None]
    if not causal:
        allowed = torch.ones(new, total, dtype=torch.bool)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def make_step(query_at=None, key_at=None, keep=True, causal=True, rotate=True):
    """A step with a cache of rotated keys; the keyword arguments plant mistakes.

    ``query_at(offset, new)`` and ``key_at(offset, new)`` give the positions (default
    ``offset .. offset + new - 1``)."""

    def at(offset, new):
        return torch.arange(offset, offset + new)

    query_at = query_at or at
    key_at = key_at or at

    def step(q, k, v, cache):
        offset = 0 if cache is None else cache["k"].shape[-2]
        new = q.shape[-2]
        if rotate:
            q, k = rope(q, query_at(offset, new)), rope(k, key_at(offset, new))
        if cache is not None:
            k = torch.cat((cache["k"], k), dim=-2)
            v = torch.cat((cache["v"], v), dim=-2)
        cache = {"k": k, "v": v}
        if not keep:
            k, v = k[..., -new:, :], v[..., -new:, :]
            return attend(q, k, v, 0, causal), cache
        return attend(q, k, v, offset, causal or offset > 0), cache

    return step


def rotate_half_by_hand(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta[None, :]
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return (x.double() * cos + torch.cat((-x2, x1), -1).double() * sin).to(x.dtype)


class RawKeyCache:
    """Correct, written differently: keys kept unrotated in lists, all of them rotated at their
    positions at every call, attention by hand in float64."""

    def __call__(self, q, k, v, cache):
        keys, values = cache if cache is not None else ([], [])
        keys, values = keys + [k], values + [v]
        every_k, every_v = torch.cat(keys, -2), torch.cat(values, -2)
        total, new = every_k.shape[-2], q.shape[-2]
        positions = torch.arange(total)
        qr = rotate_half_by_hand(q, positions[-new:]).double()
        kr = rotate_half_by_hand(every_k, positions).double()
        scores = qr @ kr.transpose(-1, -2) / math.sqrt(q.shape[-1])
        later = positions[None, :] > positions[-new:, None]
        weights = torch.softmax(scores.masked_fill(later, -math.inf), -1)
        return (weights @ every_v.double()).float(), (keys, values)


def test_correct_steps_written_two_ways_pass() -> None:
    check_kv_cache(make_step())
    check_kv_cache(RawKeyCache())


def test_the_other_layout_and_base_are_checked_as_asked() -> None:
    def interleaved_step(q, k, v, cache):
        offset = 0 if cache is None else cache[0].shape[-2]
        at = torch.arange(offset, offset + q.shape[-2])
        q, k = (pe_lib.apply_rope(x, at, base=500.0, layout="interleaved") for x in (q, k))
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        return attend(q, k, v, offset), (k, v)

    check_kv_cache(interleaved_step, base=500.0, layout="interleaved")
    error = fails_with("wrong_values", interleaved_step)  # the default: half layout, 10000
    assert "layout 'half'" in str(error) and "base 10000" in str(error)


def zero(offset, new):
    return torch.arange(new)


PLANTED = {
    "offset": make_step(query_at=zero, key_at=zero),
    "cache_dropped": make_step(keep=False),
    "not_causal": make_step(causal=False),
    "not_rotated": make_step(rotate=False),
}


@pytest.mark.parametrize("mistake", sorted(PLANTED))
def test_each_planted_mistake_is_named(mistake: str) -> None:
    fails_with(mistake, PLANTED[mistake])


def test_the_query_alone_at_position_zero_is_an_offset_mistake() -> None:
    error = fails_with("offset", make_step(query_at=zero))
    assert "query's offset" in str(error)


@pytest.mark.parametrize("by", [1, -1])
def test_an_offset_off_by_one_is_named_with_its_sign(by: int) -> None:
    def shifted(offset, new):
        return torch.arange(offset, offset + new) + (by if offset else 0)

    error = fails_with("off_by_one", make_step(query_at=shifted, key_at=shifted))
    assert f"n {by:+d}" in str(error) and f"off by {by}" in str(error)


def test_an_offset_counted_after_the_token_is_cached_is_off_by_one() -> None:
    """The offset read after appending: len(cache) + 1 for the token after n cached ones."""

    def step(q, k, v, cache):
        keys = k if cache is None else torch.cat((cache[0], k), -2)
        values = v if cache is None else torch.cat((cache[1], v), -2)
        offset = keys.shape[-2] - q.shape[-2]
        shown = offset + 1 if cache is not None else offset  # the bug
        at = torch.arange(shown, shown + q.shape[-2])
        qr, kr = rope(q, at), rope(k, at)
        rotated = kr if cache is None else torch.cat((cache[2], kr), -2)
        return attend(qr, rotated, values, offset), (keys, values, rotated)

    fails_with("off_by_one", step)


def test_a_cache_kept_unrotated_and_rotated_at_the_new_position_is_named() -> None:
    """Hugging Face's apply_rotary_pos_emb called after the concatenation: the new token's cos
    and sin broadcast over every cached key."""

    def step(q, k, v, cache):
        offset = 0 if cache is None else cache[0].shape[-2]
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        at = torch.arange(offset, offset + q.shape[-2])
        cos_sin_at = at if cache is None else at.expand(k.shape[-2])
        return attend(rope(q, at), rope(k, cos_sin_at), v, offset), (k, v)

    error = fails_with("cache_positions", step)
    assert "unrotated" in str(error)


def test_a_cache_rotated_twice_is_named() -> None:
    def step(q, k, v, cache):
        offset = 0 if cache is None else cache[0].shape[-2]
        at = torch.arange(offset, offset + q.shape[-2])
        k = rope(k, at)
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        again = rope(k, torch.arange(k.shape[-2]))
        return attend(rope(q, at), again, v, offset), (k, v)

    error = fails_with("cache_positions", step)
    assert "twice" in str(error)


def test_what_no_mistake_explains_names_the_first_wrong_token() -> None:
    def step(q, k, v, cache):
        out, cache = make_step()(q, k, v, cache)
        if cache["k"].shape[-2] == 8:
            out = out + 0.01
        return out, cache

    error = fails_with("wrong_values", step)
    assert "decoding step 3 (call 4), token 7 (position 7)" in str(error)


def test_nan_is_wrong_values() -> None:
    def step(q, k, v, cache):
        out, cache = make_step()(q, k, v, cache)
        return out * math.nan, cache

    fails_with("wrong_values", step)


def test_what_the_step_returns_is_checked() -> None:
    fails_with("wrong_type", lambda q, k, v, cache: q)
    fails_with("wrong_type", lambda q, k, v, cache: (q.tolist(), cache))
    fails_with("shape", lambda q, k, v, cache: (q[..., :1, :], cache))


def test_an_exception_in_the_step_is_reported_with_the_call() -> None:
    def step(q, k, v, cache):
        return cache["k"], cache  # None at the first call

    error = fails_with("exception", step)
    assert "step(q, k, v, None) at the prefill (call 1) raised TypeError" in str(error)
    assert isinstance(error.__cause__, TypeError)


def test_every_mistake_has_a_planted_case() -> None:
    """The codes planted here, and in test_false_passes.py the ones multi-token steps, other
    head sizes, dtypes and a second run find."""
    planted = (
        set(PLANTED)
        | {"single_token", "scale", "dtype", "hidden_state"}
        | {
            "off_by_one",
            "cache_positions",
            "wrong_values",
            "wrong_type",
            "shape",
            "exception",
        }
    )
    assert set(check_kv_cache.mistakes) == planted


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"base": 1.0}, ValueError, "base"),
        ({"layout": "neox"}, ValueError, "layout"),
        ({"base": "big"}, TypeError, "base"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        check_kv_cache(make_step(), **kwargs)


def test_a_step_that_is_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"step must be a function step\(q, k, v, cache\)"):
        check_kv_cache("step")  # type: ignore[arg-type]


def test_passing_work_raises_nothing_and_failing_work_is_an_assertion() -> None:
    with pytest.raises(AssertionError):
        check_kv_cache(make_step(rotate=False))
    assert issubclass(CheckFailed, AssertionError)
