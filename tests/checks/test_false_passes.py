"""Wrong work that the checkers once passed, and diagnoses they once got wrong.

Each case is a planted mistake a student or an adversarial user wrote: the checker must fail it
with the code named here, in English and in Korean (:func:`checker_failures.failing_with`), and
correct work written in two styles must still pass. The cases come from an audit of the
checkers (seven kinds of wrong work passed, four wrong diagnoses given).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
from checker_failures import failing_with
from torch import nn
from torch.nn import functional as F

import pe_lib
from pe_lib.checks import (
    CheckFailed,
    check_flat,
    check_kv_cache,
    check_positional_encoding_module,
    check_relative_shift,
    check_rope,
    check_sinusoidal_table,
    set_language,
)

# --- check_sinusoidal_table: the tolerance of the angles the exercise asks for -----------------

table_fails = failing_with(check_sinusoidal_table)


def rows_with_angles_in(dtype: torch.dtype, offset: int, count: int, d_model: int) -> torch.Tensor:
    """Chapter 6's rows (positions offset .. offset + count - 1) as a float32 tensor, the angles
    formed in ``dtype`` from integer positions."""
    position = torch.arange(offset, offset + count, dtype=dtype)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    angle = position * omega
    table = torch.empty(count, d_model, dtype=dtype)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


def numpy_rows(offset: int, count: int, d_model: int) -> np.ndarray:
    """The same rows written with numpy, float64 throughout, cast at the end."""
    pos = np.arange(offset, offset + count)[:, None]
    angle = pos / 10000.0 ** (np.arange(0, d_model, 2) / d_model)
    table = np.zeros((count, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle[:, : d_model // 2])
    return table.astype(np.float32)


@pytest.mark.parametrize("offset", [1024, 50_000])
def test_float32_angles_fail_where_float64_angles_are_asked_for(offset: int) -> None:
    """Off by 8e-5 at offset 1,024 and 3.7e-3 at 50,000: within float32 angles' rounding, far
    beyond float64's."""
    table = rows_with_angles_in(torch.float32, offset, 64, 768)
    table_fails("precision", table, offset=offset, angle_dtype=torch.float64)
    check_sinusoidal_table(table, offset=offset)  # float32 angles are accepted when not asked
    for right in (rows_with_angles_in(torch.float64, offset, 64, 768), numpy_rows(offset, 64, 768)):
        check_sinusoidal_table(right, offset=offset, angle_dtype=torch.float64)


def _numbers(pattern: str, text: str) -> list[float]:
    return [float(v) for v in re.findall(pattern, text)]


def test_a_precision_message_states_an_error_beyond_what_it_allows() -> None:
    """float16 values at offset 1,024 were 'off by up to 2.44e-04, more than rounding to float32
    explains (at most 1.7e-03 here)': the error and the allowance now belong to one entry."""
    table = torch.from_numpy(numpy_rows(1024, 64, 32)).half().float()
    message = str(table_fails("precision", table, offset=1024))
    (error,) = _numbers(r"off by ([0-9.e+-]+)", message)
    (allowed,) = _numbers(r"where ([0-9.e+-]+) is allowed", message)
    assert error > allowed, message
    assert "float16" in message  # the values are float16 numbers: that is the evidence


def test_precision_is_not_blamed_without_the_pattern_of_a_real_computation() -> None:
    """One pair turned by 3e-6 rad stays on the unit circle and within half precision's bound,
    but no half-precision computation made it: say what differs and where."""
    table = torch.from_numpy(numpy_rows(0, 40, 16)).double()
    angle = math.atan2(float(table[5, 2]), float(table[5, 3])) + 3e-6
    table[5, 2], table[5, 3] = math.sin(angle), math.cos(angle)
    error = table_fails("wrong_values", table.float())
    message = str(error)
    assert "position 5, dimension 2" in message or "position 5, dimension 3" in message
    assert "float16" not in message and "half" not in message


# --- check_positional_encoding_module(strict=True): what chapter 5's exercise forbids ----------

module_fails = failing_with(check_positional_encoding_module)


def float64_table(num_positions: int, d_model: int, dtype=torch.float64) -> torch.Tensor:
    position = torch.arange(num_positions, dtype=dtype)[:, None]
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
    table = torch.zeros(num_positions, d_model, dtype=dtype)
    table[:, 0::2] = torch.sin(position * omega)
    table[:, 1::2] = torch.cos(position * omega[: d_model // 2])
    return table


class ExerciseModule(nn.Module):
    """Chapter 5's solution: float64 angles, a non-persistent buffer, rows beyond max_len from
    the formula, the input's dtype kept. The class attributes plant one mistake each."""

    angle_dtype = torch.float64
    persistent = False

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.1) -> None:
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(p=self.p(dropout))
        table = float64_table(max_len, d_model, self.angle_dtype)
        self.register_buffer("pe", table, persistent=self.persistent)

    def p(self, dropout: float) -> float:
        return dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq_len = x.size(1)
        if seq_len <= self.max_len:
            rows = self.pe[:seq_len]
        else:
            rows = float64_table(seq_len, self.d_model, self.angle_dtype)
        return self.dropout(x + rows.to(x.dtype))


class Float32Angles(ExerciseModule):
    angle_dtype = torch.float32


class PersistentBuffer(ExerciseModule):
    persistent = True


class HardCodedDropout(ExerciseModule):
    def p(self, dropout: float) -> float:
        return 0.1  # the argument is accepted and ignored


class OnTheFlyModule(nn.Module):
    """Correct, written another way: no buffer at all, the table made for each length."""

    def __init__(self, d_model: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.d_model = d_model
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(x + float64_table(x.size(1), self.d_model).to(x.dtype))


def test_the_exercises_module_passes_strictly_written_two_ways() -> None:
    assert check_positional_encoding_module(ExerciseModule, d_model=32, strict=True) == ()
    assert check_positional_encoding_module(OnTheFlyModule, d_model=32, strict=True) == ()


@pytest.mark.parametrize(
    ("cls", "mistake"),
    [
        (Float32Angles, "precision"),  # off by 2.7e-3 at 100,000 positions
        (PersistentBuffer, "persistent_buffer"),
        (HardCodedDropout, "dropout_ignored"),
    ],
)
def test_what_the_exercise_forbids_fails_strictly(cls: type[nn.Module], mistake: str) -> None:
    module_fails(mistake, cls, d_model=32, strict=True)


def test_an_ignored_dropout_argument_fails_by_default_too() -> None:
    module_fails("dropout_ignored", HardCodedDropout, d_model=32)


# --- check_relative_shift: sizes, shifts and the precision of the angles ----------------------

shift_fails = failing_with(check_relative_shift)


def shift_in(dtype: torch.dtype, pairs: int | None = None):
    """M_k with angles formed in ``dtype``; only the first ``pairs`` blocks rotated."""

    def build(k: int, d_model: int) -> torch.Tensor:
        omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)
        angle = k * omega
        if pairs is not None:
            angle[pairs:] = 0.0
        c, s = torch.cos(angle), torch.sin(angle)
        blocks = [
            torch.stack((torch.stack((ci, si)), torch.stack((-si, ci))))
            for ci, si in zip(c, s, strict=True)
        ]
        return torch.block_diag(*blocks)

    return build


def numpy_shift(k: int, d_model: int) -> np.ndarray:
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        w = 1.0 / 10000.0 ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


def test_correct_shift_builders_pass_written_two_ways() -> None:
    check_relative_shift(numpy_shift)
    check_relative_shift(shift_in(torch.float64))
    check_relative_shift(lambda k, d: shift_in(torch.float64)(k, d).float())  # cast at the end


def test_a_builder_that_rotates_only_the_first_eight_pairs_fails() -> None:
    """Right for d_model <= 16, off by 0.30 at d_model = 64."""
    error = shift_fails("wrong_values", shift_in(torch.float64, pairs=8))
    assert "block 8" in str(error)


def test_angles_formed_in_float32_fail_at_long_shifts() -> None:
    """Off by 0.10 at k = 3e6: the angle k * omega_i rounded to float32."""
    shift_fails("precision", shift_in(torch.float32))


def test_a_transposed_matrix_with_a_float32_block_is_named_transposed() -> None:
    def build(k: int, d_model: int) -> torch.Tensor:
        m = shift_in(torch.float64)(k, d_model).T.clone()
        m[:2, :2] = m[:2, :2].float().double()
        return m

    shift_fails("transposed", build)


# --- check_rope: packed positions, and the llama3 entry -----------------------------------------

rope_fails = failing_with(check_rope)
LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def rotate_with(theta: torch.Tensor):
    """An interleaved float64 rotation by ``positions * theta``."""

    def rotate(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        angles = positions.to(torch.float64)[:, None] * theta
        even, odd = x[..., 0::2].double(), x[..., 1::2].double()
        cos, sin = angles.cos(), angles.sin()
        return (
            torch.stack((even * cos - odd * sin, even * sin + odd * cos), -1)
            .flatten(-2)
            .to(x.dtype)
        )

    return rotate


def plain_theta(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def contiguous_from_first(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Reads only the first position: positions[0] + arange(n)."""
    counted = positions[0] + torch.arange(len(positions))
    return rotate_with(plain_theta(x.shape[-1]))(x, counted)


def test_positions_counted_from_the_first_fail_on_packed_positions() -> None:
    """Off by 3.1 on packed positions such as [0, 1, 2, 0, 1] (chapter 12)."""
    error = rope_fails("positions", contiguous_from_first)
    assert "0, 1, 2, 0, 1" in str(error) or "packed" in str(error)


def test_rotations_that_read_every_position_pass_written_two_ways() -> None:
    check_rope(lambda x, p: rotate_with(plain_theta(x.shape[-1]))(x, p))
    check_rope(lambda x, p: pe_lib.apply_rope(x, p, layout="interleaved"))


def llama3_theta(head_dim: int, base: float, variant: str = "") -> torch.Tensor:
    """Meta's apply_scaling in float64, with one natural mistake planted by ``variant``."""
    theta = plain_theta(head_dim, base)
    wavelength = (1.0 if variant == "no_two_pi" else 2 * math.pi) / theta
    if variant == "no_blend":  # the two ends only, nothing in between
        return torch.where(wavelength > 8192.0, theta / 8.0, theta)
    gamma = ((8192 / wavelength - 1.0) / (4.0 - 1.0)).clamp(0.0, 1.0)
    if variant == "inverted":
        gamma = 1.0 - gamma
    return (1 - gamma) * theta / 8.0 + gamma * theta


@pytest.mark.parametrize("head_dim", [16, 128])
@pytest.mark.parametrize("variant", ["no_two_pi", "inverted", "no_blend"])
def test_llama3_mistakes_in_float64_are_not_called_half_precision(head_dim, variant) -> None:
    rotate = rotate_with(llama3_theta(head_dim, 500000.0, variant))
    with pytest.raises(CheckFailed) as info:
        check_rope(rotate, head_dim=head_dim, base=500000.0, scaling=LLAMA3)
    message = str(info.value)
    assert info.value.mistake != "precision", message
    assert "half precision" not in message and "bfloat16" not in message
    assert re.search(r"position \d+, pair \d+", message), message


def test_llama3_rotation_passes() -> None:
    check_rope(
        rotate_with(llama3_theta(128, 500000.0)), head_dim=128, base=500000.0, scaling=LLAMA3
    )


def test_wrong_values_under_a_scaling_gives_the_scaled_rule_as_the_fix() -> None:
    rotate = rotate_with(llama3_theta(16, 500000.0, "inverted"))
    error = rope_fails("wrong_values", rotate, head_dim=16, base=500000.0, scaling=LLAMA3)
    fix = str(error).split(" Fix: ")[1]
    assert "scaling" in fix and "rope_frequencies" in fix, fix
    assert "theta_i = base ** (-2i / head_dim)" not in fix, fix


def test_the_llama3_rule_on_base_10000_is_a_base_mistake() -> None:
    rotate = rotate_with(llama3_theta(64, 10000.0))
    error = rope_fails("base", rotate, head_dim=64, base=500000.0, scaling=LLAMA3)
    assert "10000" in str(error)


# --- check_kv_cache: multi-token steps, head sizes, dtypes, hidden state ----------------------

cache_fails = failing_with(check_kv_cache)


def rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return pe_lib.apply_rope(x, positions, layout="half")


def cached_step(*, mask_steps=True, one_position=False, scale=None, out_dtype=None):
    """Chapter 12's step; the keyword arguments plant one mistake each."""

    def step(q, k, v, cache):
        offset = 0 if cache is None else cache["k"].shape[-2]
        new = q.shape[-2]
        at = torch.arange(offset, offset + new)
        if one_position and cache is not None:
            at = torch.full((new,), offset)
        q, k = rope(q, at), rope(k, at)
        if cache is not None:
            k, v = torch.cat((cache["k"], k), -2), torch.cat((cache["v"], v), -2)
        scores = q @ k.transpose(-1, -2) / (scale or math.sqrt(q.shape[-1]))
        if cache is None or mask_steps:
            later = torch.arange(k.shape[-2])[None, :] > torch.arange(offset, offset + new)[:, None]
            scores = scores.masked_fill(later, -math.inf)
        out = torch.softmax(scores, -1) @ v
        return (out if out_dtype is None else out.to(out_dtype)), {"k": k, "v": v}

    return step


def sdpa_step(q, k, v, cache):
    """Correct, written another way: unrotated keys in a tuple, PyTorch's attention."""
    keys, values = (
        (k, v) if cache is None else (torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2))
    )
    total, new = keys.shape[-2], q.shape[-2]
    positions = torch.arange(total)
    allowed = positions[None, :] <= positions[-new:, None]
    out = F.scaled_dot_product_attention(
        rope(q, positions[-new:]), rope(keys, positions), values, attn_mask=allowed
    )
    return out, (keys, values)


def test_correct_steps_pass_written_two_ways() -> None:
    check_kv_cache(cached_step())
    check_kv_cache(sdpa_step)


def test_a_step_right_only_for_one_new_token_fails() -> None:
    """No mask and one position for every new token: off by 0.20 on a 2-token step."""
    cache_fails("single_token", cached_step(mask_steps=False, one_position=True))


def test_a_causal_mask_applied_only_in_the_prefill_fails() -> None:
    """Off by 1.66 on a 3-token step."""
    cache_fails("not_causal", cached_step(mask_steps=False))


def test_a_scale_hard_coded_for_head_size_16_fails() -> None:
    """/ 4 is 1 / sqrt(16): off by 0.77 at head size 64."""
    cache_fails("scale", cached_step(scale=4.0))


def test_a_float64_output_for_float32_inputs_fails() -> None:
    cache_fails("dtype", cached_step(out_dtype=torch.float64))


_STATE: dict[str, torch.Tensor] = {}


def global_state_step(q, k, v, cache):
    """Keeps its keys and values in a module-level dict instead of the cache it returns."""
    offset = _STATE["k"].shape[-2] if "k" in _STATE else 0
    at = torch.arange(offset, offset + q.shape[-2])
    q, k = rope(q, at), rope(k, at)
    if "k" in _STATE:
        k, v = torch.cat((_STATE["k"], k), -2), torch.cat((_STATE["v"], v), -2)
    _STATE["k"], _STATE["v"] = k, v
    later = torch.arange(k.shape[-2])[None, :] > at[:, None]
    scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(later, -math.inf)
    return torch.softmax(scores, -1) @ v, "unused"


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize("runs_before", [0, 1])
def test_a_step_that_keeps_its_state_in_a_global_fails(language: str, runs_before: int) -> None:
    """On a first run, and when the checker is run again in the same session."""
    _STATE.clear()
    for _ in range(runs_before):
        with pytest.raises(CheckFailed):
            check_kv_cache(global_state_step)
    set_language(language)
    with pytest.raises(CheckFailed) as info:
        check_kv_cache(global_state_step)
    assert info.value.mistake == "hidden_state", str(info.value)
    assert ("고치는 법:" in str(info.value)) == (language == "ko")


# --- check_flat: what cannot be a perplexity, and the lengths the exercise asks for -----------

flat_fails = failing_with(check_flat)
SEEDS = (0, 1, 2)
LENGTHS = (32, 64, 128, 256)
PERPLEXITY = torch.tensor(
    [[11.4, 11.4, 11.5, 11.4], [11.2, 11.3, 11.3, 11.2], [11.6, 11.6, 11.7, 11.6]]
)


@pytest.mark.parametrize(
    "table",
    [
        torch.full((3, 4), math.inf),
        torch.zeros(3, 4),
        -10.0 * torch.ones(3, 4),
        torch.tensor([[12.0, 0.5, 12.0, 12.0], [11.0, 11.0, 11.0, 11.0], [9.0, 9.0, 9.0, 9.0]]),
    ],
    ids=["all inf", "all zero", "negative", "a value below 1"],
)
def test_a_table_that_cannot_hold_perplexities_fails(table: torch.Tensor) -> None:
    message = str(flat_fails("not_perplexity", table, seeds=SEEDS, lengths=LENGTHS))
    assert "exceeds" not in message


def test_a_table_of_losses_fails() -> None:
    flat_fails("losses", PERPLEXITY.log(), seeds=SEEDS, lengths=LENGTHS)
    rising = PERPLEXITY * torch.tensor([1.0, 1.1, 1.2, 1.25])  # 25 % worse at 8 L
    flat_fails("not_flat", rising, seeds=SEEDS, lengths=LENGTHS)
    flat_fails("losses", rising.log(), seeds=SEEDS, lengths=LENGTHS)  # 9 % worse as a loss


def test_lengths_that_do_not_rise_from_l_to_8_l_fail() -> None:
    check_flat(PERPLEXITY, seeds=SEEDS, lengths=LENGTHS)
    flat_fails("lengths", PERPLEXITY.flip(1), seeds=SEEDS, lengths=LENGTHS[::-1])
    flat_fails("lengths", PERPLEXITY[:, :2], seeds=SEEDS, lengths=LENGTHS[:2])


def test_an_empty_table_is_an_argument_error_that_says_so() -> None:
    with pytest.raises(ValueError) as info:
        check_flat(torch.zeros(0, 0), seeds=(), lengths=())
    message = str(info.value)
    assert "seeds must hold at least one seed" in message, message


# --- the drawn cases: seeded, reproducible, named ---------------------------------------------


DRAWING = [
    (check_relative_shift, (numpy_shift,)),
    (check_rope, (lambda x, p: rotate_with(plain_theta(x.shape[-1]))(x, p),)),
    (check_kv_cache, (sdpa_step,)),
    (check_positional_encoding_module, (OnTheFlyModule, 16)),
]


@pytest.mark.parametrize(("checker", "args"), DRAWING, ids=[c.__name__ for c, _ in DRAWING])
def test_every_seed_draws_cases_that_correct_work_passes(checker, args) -> None:
    for seed in (1, 2, 12345):
        checker(*args, seed=seed)


@pytest.mark.parametrize(("checker", "args"), DRAWING, ids=[c.__name__ for c, _ in DRAWING])
@pytest.mark.parametrize(("seed", "error"), [(-1, ValueError), ("0", TypeError), (1.5, TypeError)])
def test_a_bad_seed_is_named(checker, args, seed, error) -> None:
    with pytest.raises(error, match="seed"):
        checker(*args, seed=seed)


def test_a_failure_in_a_drawn_case_names_the_case_and_its_seed() -> None:
    message = str(shift_fails("wrong_values", shift_in(torch.float64, pairs=8)))
    assert "drawn with seed=0" in message
    again = str(shift_fails("wrong_values", shift_in(torch.float64, pairs=8), seed=0))
    assert again == message  # the same seed, the same case, the same message


@pytest.mark.parametrize(
    ("angle_dtype", "error"), [("float64", TypeError), (torch.int64, TypeError), (64, TypeError)]
)
def test_a_bad_angle_dtype_is_named(angle_dtype, error) -> None:
    with pytest.raises(error, match="angle_dtype"):
        check_sinusoidal_table(numpy_rows(0, 4, 8), angle_dtype=angle_dtype)
