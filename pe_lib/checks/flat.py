"""``check_flat``: does a model's perplexity stay flat as the inference length grows?

Chapter 9's exercise asks whether an encoding keeps its perplexity at eight times its training
length within 10 % of its perplexity at the training length, on every seed. The evidence is a
table of perplexities, one row per seed and one column per length (the first column the training
length, the last at least eight times it); this checker reads it and names the first seed and
length that leave the band.

Before the band, what the table holds is checked, since a band around numbers that are not
perplexities passes anything: a perplexity is ``exp`` of a mean cross-entropy, at least 1, and
finite at the training length, every other column's reference. A table whose every value lies
below :math:`\\ln V`, the loss of a uniform guess over the corpus's ``V`` characters, holds
losses: on chapter 9's corpus a perplexity that low would be below every model and every
counting baseline the chapter measures, and a rise of 10 % in a loss is a larger rise in
perplexity (``exp(0.1 * loss)`` times).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence

import numpy as np
import torch

from .._validation import check_positive_int
from ._core import Catalogue, CheckFailed, NotAnArray, as_float64

__all__ = ["FlatnessFailed", "check_flat"]

MISTAKES = Catalogue("check_flat")

_FIX_TABLE = (
    "pass the perplexities: for each seed (a row) and each length (a column), exp of the mean "
    "cross-entropy per character, e.g. torch.exp(loss)."
)
_FIX_LENGTHS = (
    "score each seed at 1, 2, 4 and 8 times its training length L, in that order, and pass "
    "lengths=[L, 2 * L, 4 * L, 8 * L] with the table's columns in the same order."
)
_LENGTHS_DOWN = MISTAKES.declare(
    "lengths",
    "the lengths {lengths} do not rise: the first column must be the training length and each "
    "later one longer, so that every column is compared with the training length.",
    _FIX_LENGTHS,
)
_LENGTHS_SHORT = MISTAKES.declare(
    "lengths",
    "the lengths {lengths} stop at {last} characters, {ratio} times the first: the question is "
    "the perplexity at {multiple} times the training length ({wanted} characters).",
    _FIX_LENGTHS,
)
_NOT_PERPLEXITY = MISTAKES.declare(
    "not_perplexity",
    "seed {seed}, {length} characters: {value} cannot be a perplexity. A perplexity is exp of a "
    "mean cross-entropy: at least 1 (1 is a model certain of every character), and finite.",
    _FIX_TABLE,
)
_NO_REFERENCE = MISTAKES.declare(
    "not_perplexity",
    "seed {seed}: the perplexity at the training length, {length} characters, is {value}, so "
    "there is no band to compare the longer lengths with.",
    _FIX_TABLE,
)
_LOSSES = MISTAKES.declare(
    "losses",
    "every value lies between {low} and {high}, below ln {vocab} = {log_vocab}, the loss of a "
    "uniform guess over the corpus's {vocab} characters: these are losses (mean cross-entropy "
    "per character, in nats), not perplexities. A loss {tolerance} higher is a perplexity "
    "exp({fraction} * loss) times higher: {factor} times at a loss of {high}.",
    "pass torch.exp(losses): the perplexity is exp of the loss.",
)
_NOT_FLAT = MISTAKES.declare(
    "not_flat",
    "seed {seed}: at {length} characters the perplexity {value} exceeds {first}, its "
    "perplexity at {first_length} characters, by more than {tolerance}.",
    "this encoding and setting do not keep their perplexity flat up to {last_length} "
    "characters on every seed: say so, or change one setting (training length, blocks, steps) "
    "and check again.",
)


class FlatnessFailed(CheckFailed):
    """:func:`~pe_lib.checks.check_flat`'s failure ``"not_flat"``: a
    :class:`~pe_lib.checks.CheckFailed` that also says where.

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


#: More characters than any corpus of bytes holds.
_BYTES = 256


def _whole_numbers(name: str, values: object, what: str) -> list[int]:
    """``values`` as a list of ints: a sequence of integers (numpy's included), or a 1-d integer
    numpy array or tensor."""
    if isinstance(values, (np.ndarray, torch.Tensor)):
        integer = (
            not values.dtype.is_floating_point and not values.dtype.is_complex
            if isinstance(values, torch.Tensor)
            else np.issubdtype(values.dtype, np.integer)
        )
        if values.ndim != 1 or not integer or values.dtype in (torch.bool, np.bool_):
            raise TypeError(
                f"{name} must be a sequence of integers or a 1-d integer array, got an array "
                f"of shape {tuple(values.shape)} and dtype {values.dtype}"
            )
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}")
    out = []
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must hold integers, got {value!r} in {values!r}")
        out.append(int(value))
    if not out:
        raise ValueError(f"{name} must hold at least one {what}, got {values!r}")
    return out


@functools.cache
def corpus_vocabulary() -> int:
    """The number of distinct characters of chapter 9's corpus (:func:`pe_lib.experiments.lm.load_corpus`)."""
    from ..experiments.lm import load_corpus

    return len(set(load_corpus()))


@MISTAKES.attach
def check_flat(
    table: object,
    *,
    seeds: Sequence[int],
    lengths: Sequence[int],
    tolerance: float = 0.10,
    multiple: int = 8,
    vocab_size: int | None = None,
) -> None:
    """Fail unless every seed's perplexity stays within ``tolerance`` of its first length's.

    Args:
        table: perplexities, shape ``(len(seeds), len(lengths))`` (numpy array or torch tensor),
            the first column at the training length.
        seeds: the seed of each row, at least one.
        lengths: the inference length (characters) of each column, rising, the last at least
            ``multiple`` times the first.
        tolerance: the relative rise allowed, a float in ``(0, 1)``.
        multiple: how far the lengths must reach, in training lengths (the exercise's 8).
        vocab_size: the number of characters the model chooses from, to tell losses from
            perplexities; ``None``: chapter 9's corpus's.

    Raises:
        CheckFailed: ``.mistake`` ``"lengths"`` (the lengths do not rise, or stop short of
            ``multiple`` times the first), ``"not_perplexity"`` (a value below 1, a NaN or
            infinite value at the training length), ``"losses"`` (every value below
            :math:`\\ln` ``vocab_size``).
        FlatnessFailed: ``"not_flat"``, the first seed (in row order) and length whose
            perplexity exceeds that seed's perplexity at ``lengths[0]`` by more than
            ``tolerance`` (a NaN counts as out of the band), in the language
            :func:`~pe_lib.checks.set_language` chose.
        TypeError, ValueError: an argument of the wrong kind or shape, named in the message.
    """
    seed_list = _whole_numbers("seeds", seeds, "seed")
    length_list = _whole_numbers("lengths", lengths, "length")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TypeError(f"tolerance must be a float in (0, 1), got {tolerance!r}")
    if not 0.0 < tolerance < 1.0:
        raise ValueError(f"tolerance must be in (0, 1), got {tolerance!r}")
    multiple = check_positive_int("multiple", multiple)
    vocab = None if vocab_size is None else check_positive_int("vocab_size", vocab_size)
    try:
        values, _, _ = as_float64(table)
    except NotAnArray as error:
        raise TypeError(
            f"table must be a numpy array or torch tensor of perplexities, got {error.english}"
        ) from None
    expected = (len(seed_list), len(length_list))
    if tuple(values.shape) != expected:
        raise ValueError(
            f"table must have shape (len(seeds), len(lengths)) = {expected}, "
            f"got {tuple(values.shape)}"
        )

    shown = f"[{', '.join(map(str, length_list))}]"
    if any(b <= a for a, b in zip(length_list, length_list[1:], strict=False)):
        raise _LENGTHS_DOWN.fail(lengths=shown)
    first_length, last_length = length_list[0], length_list[-1]
    if last_length < multiple * first_length:
        raise _LENGTHS_SHORT.fail(
            lengths=shown,
            last=last_length,
            ratio=f"{last_length / first_length:.3g}",
            multiple=multiple,
            wanted=multiple * first_length,
        )
    _check_perplexities(values, seed_list, length_list, tolerance, vocab)

    bound = values[:, :1] * (1.0 + tolerance)
    outside = ~(values <= bound)  # a NaN is outside
    if not bool(outside.any()):
        return
    row, column = (int(i) for i in torch.nonzero(outside)[0])
    message = _NOT_FLAT.explain(
        seed=seed_list[row],
        length=length_list[column],
        value=f"{float(values[row, column]):.1f}",
        first=f"{float(values[row, 0]):.1f}",
        first_length=first_length,
        tolerance=f"{tolerance:.0%}",
        last_length=last_length,
    )
    raise FlatnessFailed(_NOT_FLAT.code, message, seed_list[row], length_list[column])


def _check_perplexities(
    values: torch.Tensor,
    seeds: list[int],
    lengths: list[int],
    tolerance: float,
    vocab: int | None,
) -> None:
    """Raise what makes ``values`` not a table of perplexities, if anything does."""
    first = values[:, 0]
    if not bool(torch.isfinite(first).all()):
        row = int((~torch.isfinite(first)).nonzero()[0])
        raise _NO_REFERENCE.fail(seed=seeds[row], length=lengths[0], value=f"{float(first[row])}")
    below = values <= 0.0
    if bool(below.any()):
        row, column = (int(i) for i in below.nonzero()[0])
        raise _NOT_PERPLEXITY.fail(
            seed=seeds[row], length=lengths[column], value=f"{float(values[row, column]):.4g}"
        )
    finite = values[torch.isfinite(values)]
    high = float(finite.max())
    # The corpus is read only for a table that could hold losses: below ln 256, the loss of a
    # uniform guess over every byte.
    if high <= math.log(vocab if vocab is not None else _BYTES):
        size = vocab if vocab is not None else corpus_vocabulary()
        if high <= math.log(size):
            raise _LOSSES.fail(
                low=f"{float(finite.min()):.3g}",
                high=f"{high:.3g}",
                vocab=size,
                log_vocab=f"{math.log(size):.3g}",
                tolerance=f"{tolerance:.0%}",
                fraction=f"{tolerance:g}",
                factor=f"{math.exp(tolerance * high):.3g}",
            )
    small = values < 1.0
    if bool(small.any()):
        row, column = (int(i) for i in small.nonzero()[0])
        raise _NOT_PERPLEXITY.fail(
            seed=seeds[row], length=lengths[column], value=f"{float(values[row, column]):.4g}"
        )
