"""The passkey retrieval task of pe_lib.experiments.retrieval (chapter 8): its sequences, the rule that needs
no learning, the accuracy at each distance, the training loop, and the test data's disjointness
from every sequence the chapter trains on."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import torch

from pe_lib.experiments.lm import CharTransformer, with_rope_scaling
from pe_lib.experiments.retrieval import (
    FILLERS,
    PASSKEYS,
    QUERY,
    TEST_SEED,
    VOCAB_SIZE,
    passkey_accuracy,
    passkey_batch,
    passkey_rule,
    passkey_test,
    train_passkey,
)
from pe_lib.experiments.toy import IGNORE_INDEX, ShiftedCopyModel

pytestmark = pytest.mark.usefixtures("one_thread_and_seed")

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "08_stretching_rope.ipynb"


def is_passkey(tokens: torch.Tensor) -> torch.Tensor:
    return (tokens >= FILLERS) & (tokens < QUERY)


def test_batch_holds_one_passkey_and_queries_after_it() -> None:
    generator = torch.Generator().manual_seed(0)
    tokens, targets = passkey_batch(64, 32, generator=generator)
    assert tokens.shape == targets.shape == (64, 32) and tokens.dtype == torch.int64
    assert (is_passkey(tokens).sum(dim=1) == 1).all()
    where = is_passkey(tokens).int().argmax(dim=1)
    passkey = tokens[torch.arange(64), where]
    queries = tokens == QUERY
    assert queries[:, -1].all()
    for row in range(64):
        asked = queries[row].nonzero().flatten()
        assert (asked > where[row]).all()  # every query comes after the passkey
        assert (targets[row, asked] == passkey[row]).all()
        others = torch.ones(32, dtype=torch.bool)
        others[asked] = False
        assert (targets[row, others] == IGNORE_INDEX).all()
    # a query at about a quarter of the places after the passkey (the last one always)
    share = (queries[:, :-1].sum() / (torch.arange(31) > where[:, None]).sum()).item()
    assert 0.18 < share < 0.32
    # the passkey lands anywhere but the last place, passkeys of every kind
    assert set(where.tolist()) <= set(range(31)) and len(set(where.tolist())) > 15
    assert set(passkey.tolist()) == set(range(FILLERS, FILLERS + PASSKEYS))


def test_test_sequences_put_the_passkey_first_and_queries_at_the_distances() -> None:
    tokens, passkeys = passkey_test((3, 10, 40), num_sequences=16, seed=5)
    assert tokens.shape == (16, 41) and passkeys.shape == (16,)
    assert torch.equal(tokens[:, 0], passkeys) and is_passkey(passkeys).all()
    assert ((tokens == QUERY).nonzero()[:, 1].unique().tolist()) == [3, 10, 40]
    assert not is_passkey(tokens[:, 1:]).any()
    again, _ = passkey_test((3, 10, 40), num_sequences=16, seed=5)
    assert torch.equal(tokens, again)


def test_the_rule_finds_every_passkey_and_nothing_before_one() -> None:
    tokens, passkeys = passkey_test((1, 7, 63), num_sequences=32)
    answers = passkey_rule(tokens)
    assert (answers[:, [1, 7, 63]] == passkeys[:, None]).all()
    tokens, targets = passkey_batch(32, 24, generator=torch.Generator().manual_seed(1))
    answers = passkey_rule(tokens)
    asked = targets != IGNORE_INDEX
    assert torch.equal(answers[asked], targets[asked])
    before = torch.cumsum(is_passkey(tokens).int(), dim=1) == 0
    assert (answers[before] == -1).all()


def test_accuracy_counts_the_queries_answered() -> None:
    torch.manual_seed(0)
    model = CharTransformer("none", vocab_size=VOCAB_SIZE, d_model=8, num_heads=2, num_layers=1)
    distances = (4, 9)
    tokens, passkeys = passkey_test(distances, num_sequences=32)
    with torch.no_grad():
        answers = model(tokens)[:, list(distances)].argmax(dim=-1)
    expected = (answers == passkeys[:, None]).double().mean(dim=0).tolist()
    got = passkey_accuracy(model, distances, num_sequences=32)
    assert got == dict(zip(distances, expected, strict=True))


def test_a_trained_model_finds_the_passkey_and_the_copy_model_is_accepted() -> None:
    torch.manual_seed(0)
    model = CharTransformer("none", vocab_size=VOCAB_SIZE, d_model=32, num_heads=4, num_layers=1)
    before = passkey_accuracy(model, (8, 31), num_sequences=64)
    losses = train_passkey(model, steps=60, batch_size=32, seed=0)
    assert len(losses) == 60 and losses[-1] < 0.1 * losses[0]
    after = passkey_accuracy(model, (8, 31), num_sequences=64)
    assert min(after.values()) > 0.95 > max(before.values())
    assert not model.training
    copy_model = ShiftedCopyModel("rope", vocab_size=VOCAB_SIZE)
    assert len(train_passkey(copy_model, steps=2, seed=0)) == 2
    assert set(passkey_accuracy(copy_model, (5,), num_sequences=4)) == {5}


def test_a_stretched_model_is_scored_beyond_the_training_length() -> None:
    torch.manual_seed(0)
    model = CharTransformer("rope", vocab_size=VOCAB_SIZE, d_model=16, num_heads=2, num_layers=1)
    entry = {"rope_type": "linear", "factor": 8.0}
    got = passkey_accuracy(with_rope_scaling(model, entry), (8, 256), num_sequences=4)
    assert set(got) == {8, 256} and all(0 <= v <= 1 for v in got.values())


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: passkey_batch(0, 8), ValueError, "batch_size"),
        (lambda: passkey_batch(4, 1), ValueError, "seq_len must be at least 2"),
        (lambda: passkey_batch(4, 8, query_share=1.5), ValueError, "query_share must be in"),
        (lambda: passkey_batch(4, 8, generator=3), TypeError, "generator must be"),
        (lambda: passkey_test(()), TypeError, "distances must be a non-empty"),
        (lambda: passkey_test((4, 4)), ValueError, "distances must be distinct"),
        (lambda: passkey_test((4, 0)), ValueError, "distances\\[1\\]"),
        (lambda: passkey_test((4,), seed=-1), ValueError, "seed"),
        (lambda: passkey_rule(torch.zeros(3)), TypeError, "tokens must be an int64"),
        (
            lambda: passkey_accuracy("model", (4,)),
            TypeError,
            "model must be a pe_lib.experiments.lm",
        ),
        (
            lambda: passkey_accuracy(CharTransformer("none", vocab_size=5), (4,)),
            ValueError,
            "vocab_size=17",
        ),
        (
            lambda: passkey_accuracy(
                CharTransformer("none", vocab_size=VOCAB_SIZE, num_layers=2), (4,)
            ),
            ValueError,
            "one layer",
        ),
        (
            lambda: passkey_accuracy(
                CharTransformer("learned", vocab_size=VOCAB_SIZE, num_layers=1, max_len=32),
                (8, 32),
            ),
            ValueError,
            "32 rows and none beyond",
        ),
        (
            lambda: train_passkey(CharTransformer("none", vocab_size=VOCAB_SIZE), lr=0.0),
            ValueError,
            "lr",
        ),
    ],
)
def test_bad_arguments_are_named(call: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]


def chapter_setting(pattern: str) -> str:
    """A value the chapter's passkey cell sets, read from its source."""
    notebook = nbformat.read(CHAPTER, as_version=4)
    source = next(c.source for c in notebook.cells if "train_passkey(" in c.source)
    found = re.search(pattern, source)
    assert found, pattern
    return found[1]


def test_test_sequences_are_disjoint_from_every_training_sequence() -> None:
    """Every sequence the chapter trains on (its seeds and the other seeds' runs, 0 to 14; the
    training at 32 tokens and the fine-tuning at 128) differs from the start of every test
    sequence of the same length; a training sequence asks for a passkey at most 31 tokens
    back (127 in the fine-tuning), and the test asks at up to 256."""
    steps = int(chapter_setting(r"train_passkey\(model, steps=(\d+)"))
    batch_size = int(chapter_setting(r"batch_size=(\d+),\s*lr=1e-2"))
    tuning_steps = int(chapter_setting(r'"steps": (\d+), "seq_len": 4'))
    distances = tuple(int(n) for n in chapter_setting(r"DISTANCES = \(([\d, ]+)\)").split(","))
    sequences = int(chapter_setting(r"num_sequences=(\d+)"))
    assert (steps, batch_size, tuning_steps, sequences) == (60, 32, 10, 64)
    tests, _ = passkey_test(distances, num_sequences=sequences, seed=TEST_SEED)
    runs = [(32, steps, batch_size), (128, tuning_steps, 8)]
    for seq_len, count, size in runs:
        heads = {tuple(row) for row in tests[:, :seq_len].tolist()}
        for seed in range(15):
            generator = torch.Generator().manual_seed(seed)
            for _ in range(count):
                tokens, targets = passkey_batch(size, seq_len, generator=generator)
                assert not heads & {tuple(row) for row in tokens.tolist()}, (seq_len, seed)
                asked = (targets != IGNORE_INDEX).nonzero()
                where = is_passkey(tokens).int().argmax(dim=1)
                assert (asked[:, 1] - where[asked[:, 0]]).max() < seq_len
    assert max(distances) >= 8 * 32 and 32 > max(n for n in distances if n < 32)
