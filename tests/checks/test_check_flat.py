"""check_flat: a perplexity table that stays within the band passes; the first seed and length
that leave it are named, in English and in Korean."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from checker_failures import failing_with

from pe_lib.checks import CheckFailed, check_flat
from pe_lib.checks.flat import FlatnessFailed

fails_with = failing_with(check_flat)
SEEDS = (0, 1, 2)
LENGTHS = (32, 64, 128, 256)


def table(*rows: list[float]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


FLAT = table([10.0, 10.5, 10.9, 11.0], [8.0, 8.0, 7.5, 8.79], [12.0, 12.0, 12.0, 12.0])


@pytest.mark.parametrize("kind", [torch.tensor, np.asarray])
def test_a_flat_table_passes_as_a_tensor_or_an_array(kind: object) -> None:
    check_flat(kind(FLAT.tolist()), seeds=SEEDS, lengths=LENGTHS)  # type: ignore[operator]
    check_flat(FLAT.float(), seeds=SEEDS, lengths=LENGTHS)


def test_falling_perplexity_is_flat_enough() -> None:
    check_flat(table([10.0, 6.0, 3.0, 1.0]), seeds=(7,), lengths=LENGTHS)


def test_the_first_seed_and_length_out_of_the_band_are_named() -> None:
    rising = table([10.0, 10.5, 10.9, 11.0], [8.0, 8.0, 9.0, 30.0], [12.0, 14.0, 12.0, 12.0])
    failure = fails_with("not_flat", rising, seeds=SEEDS, lengths=LENGTHS)
    assert isinstance(failure, FlatnessFailed)
    assert (failure.seed, failure.length) == (1, 128), "row order first, then the length"
    message = str(failure)
    assert message.startswith("seed 1: at 128 characters the perplexity 9.0 exceeds 8.0")
    assert "by more than 10%" in message and "up to 256 characters" in message


def test_the_tolerance_is_the_callers() -> None:
    check_flat(table([10.0, 11.9]), seeds=(0,), lengths=(16, 128), tolerance=0.2)
    failure = fails_with(
        "not_flat", table([10.0, 12.1]), seeds=(0,), lengths=(16, 128), tolerance=0.2
    )
    assert "by more than 20%" in str(failure)


def test_a_nan_leaves_the_band() -> None:
    failure = fails_with("not_flat", table([10.0, float("nan")]), seeds=(3,), lengths=(8, 64))
    assert (failure.seed, failure.length) == (3, 64)  # type: ignore[attr-defined]


def test_the_korean_message_names_the_place_and_the_band() -> None:
    from pe_lib.checks import set_language

    set_language("ko")
    with pytest.raises(FlatnessFailed) as info:
        check_flat(table([10.0, 11.5]), seeds=(5,), lengths=(32, 256))
    message = str(info.value)
    assert message.startswith(
        "시드 5에서 256자의 퍼플렉서티(11.5)가 32자에서의 퍼플렉서티(10.0)보다 10% 넘게"
    )
    assert "256자까지" in message


def test_the_failure_survives_pickling() -> None:
    with pytest.raises(FlatnessFailed) as info:
        check_flat(table([10.0, 20.0]), seeds=(0,), lengths=(1, 8))
    copy = pickle.loads(pickle.dumps(info.value))
    assert isinstance(copy, CheckFailed)
    assert (copy.mistake, copy.message, copy.seed, copy.length) == (  # type: ignore[attr-defined]
        "not_flat",
        info.value.message,
        0,
        8,
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"table": [[1.0, 1.0]]}, TypeError, "table must be a numpy array or torch tensor"),
        ({"table": torch.ones(2, 4)}, ValueError, "shape (len(seeds), len(lengths)) = (1, 2)"),
        ({"seeds": 0}, TypeError, "seeds must be a sequence of integers, got 0"),
        ({"lengths": (1.5, 2)}, TypeError, "lengths must hold integers, got 1.5"),
        ({"seeds": ()}, ValueError, "seeds must hold at least one seed, got ()"),
        ({"multiple": 0}, ValueError, "multiple must be"),
        ({"vocab_size": "93"}, TypeError, "vocab_size must be"),
        ({"tolerance": 0.0}, ValueError, "tolerance must be in (0, 1), got 0.0"),
        ({"tolerance": "10%"}, TypeError, "tolerance must be a float in (0, 1), got '10%'"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], error: type, words: str) -> None:
    arguments: dict[str, object] = {"table": torch.ones(1, 2), "seeds": (0,), "lengths": (1, 8)}
    with pytest.raises(error) as info:
        check_flat(**{**arguments, **kwargs})  # type: ignore[arg-type]
    assert words in str(info.value)


@pytest.mark.parametrize(
    "seeds",
    [
        np.array(SEEDS),
        torch.tensor(SEEDS),
        [np.int64(s) for s in SEEDS],
        np.arange(3, dtype=np.int32),
    ],
    ids=["numpy array", "tensor", "numpy integers", "int32 array"],
)
def test_seeds_and_lengths_may_be_numpy_integers_or_tensors(seeds: object) -> None:
    check_flat(FLAT, seeds=seeds, lengths=np.array(LENGTHS))  # type: ignore[arg-type]
    failure = fails_with(
        "not_flat",
        table([10.0, 10.5, 10.9, 11.0], [8.0, 8.0, 9.0, 30.0], [12.0, 14.0, 12.0, 12.0]),
        seeds=seeds,
        lengths=torch.tensor(LENGTHS),
    )
    assert type(failure.seed) is int and failure.seed == int(list(seeds)[1])  # type: ignore[attr-defined, call-overload]


@pytest.mark.parametrize(
    "seeds",
    [np.array([0.0, 1.0]), torch.tensor([[0, 1]]), np.array([True, False]), [0, 1.0]],
    ids=["float array", "2-d tensor", "bool array", "a float in a list"],
)
def test_seeds_that_are_not_integers_are_refused_by_name(seeds: object) -> None:
    with pytest.raises(TypeError, match="seeds must"):
        check_flat(table([10.0, 10.0], [10.0, 10.0]), seeds=seeds, lengths=(32, 256))  # type: ignore[arg-type]
