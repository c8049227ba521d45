"""``check_flat``: does a model's perplexity stay flat as the inference length grows?

Chapter 9's exercise asks whether an encoding keeps its perplexity at eight times its training
length within 10 % of its perplexity at the training length, on every seed. The evidence is a
table of perplexities, one row per seed and one column per length (the first column the training
length); this checker reads it and names the first seed and length that leave the band.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._core import Catalogue, CheckFailed, NotAnArray, as_float64

__all__ = ["FlatnessFailed", "check_flat"]

MISTAKES = Catalogue("check_flat")

_NOT_FLAT = MISTAKES.declare(
    "not_flat",
    "seed {seed}: at {length} characters the perplexity {value} exceeds {first}, its "
    "perplexity at {first_length} characters, by more than {tolerance}.",
    "this encoding and setting do not keep their perplexity flat up to {last_length} "
    "characters on every seed: say so, or change one setting (training length, blocks, steps) "
    "and check again.",
    ko=(
        "시드 {seed}에서 {length}자의 퍼플렉서티({value})가 {first_length}자에서의 "
        "퍼플렉서티({first})보다 {tolerance} 넘게 높다.",
        "이 인코딩과 설정으로는 모든 시드에서 {last_length}자까지 퍼플렉서티가 평평하게 유지되지 "
        "않는다. 그렇다고 답하거나, 설정 하나(학습 길이, 블록 수, 학습 스텝 수)를 바꿔 다시 "
        "검사하라.",
    ),
)


class FlatnessFailed(CheckFailed):
    """:func:`~pe_lib.checks.check_flat`'s failure: a :class:`~pe_lib.checks.CheckFailed`
    that also says where.

    Attributes:
        seed: the first seed (of ``seeds``) whose perplexity leaves the band.
        length: the first length (of ``lengths``) at which it does, on that seed.
    """

    def __init__(self, mistake: str, message: str, seed: int, length: int) -> None:
        super().__init__(mistake, message)
        self.seed = seed
        self.length = length

    def __reduce__(self) -> tuple[type[FlatnessFailed], tuple[str, str, int, int]]:  # type: ignore[override]
        return (type(self), (self.mistake, self.message, self.seed, self.length))


def _whole_numbers(name: str, values: object) -> list[int]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}")
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must hold integers, got {value!r} in {values!r}")
        out.append(value)
    return out


@MISTAKES.attach
def check_flat(
    table: object, *, seeds: Sequence[int], lengths: Sequence[int], tolerance: float = 0.10
) -> None:
    """Fail unless every seed's perplexity stays within ``tolerance`` of its first length's.

    Args:
        table: perplexities, shape ``(len(seeds), len(lengths))`` (numpy array or torch tensor),
            the first column at the training length.
        seeds: the seed of each row.
        lengths: the inference length (characters) of each column.
        tolerance: the relative rise allowed, a float in ``(0, 1)``.

    Raises:
        FlatnessFailed: the first seed (in row order) and length whose perplexity exceeds that
            seed's perplexity at ``lengths[0]`` by more than ``tolerance`` (a NaN counts as out
            of the band), in the language :func:`~pe_lib.checks.set_language` chose.
        TypeError, ValueError: an argument of the wrong kind or shape, named in the message.
    """
    seed_list = _whole_numbers("seeds", seeds)
    length_list = _whole_numbers("lengths", lengths)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TypeError(f"tolerance must be a float in (0, 1), got {tolerance!r}")
    if not 0.0 < tolerance < 1.0:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
    try:
        values, _, _ = as_float64(table)
    except NotAnArray as error:
        raise TypeError(
            f"table must be a numpy array or torch tensor of perplexities, got {error.english}"
        ) from None
    expected = (len(seed_list), len(length_list))
    if tuple(values.shape) != expected or 0 in expected:
        raise ValueError(
            f"table must have shape (len(seeds), len(lengths)) = {expected}, "
            f"got {tuple(values.shape)}"
        )
    bound = values[:, :1] * (1.0 + tolerance)
    outside = ~(values <= bound)  # a NaN is outside
    if not bool(outside.any()):
        return
    row, column = (int(i) for i in torch.nonzero(outside)[0])
    first = float(values[row, 0])
    message = _NOT_FLAT.explain(
        seed=seed_list[row],
        length=length_list[column],
        value=f"{float(values[row, column]):.1f}",
        first=f"{first:.1f}",
        first_length=length_list[0],
        tolerance=f"{tolerance:.0%}",
        last_length=length_list[-1],
    )
    raise FlatnessFailed(_NOT_FLAT.code, message, seed_list[row], length_list[column])
