"""Tests for pe_lib.experiments.toy: the shifted-copy task, the one-layer causal model, training and scoring."""

from __future__ import annotations

import math

import pytest
import torch

from pe_lib.encodings import ENCODINGS
from pe_lib.experiments.toy import (
    IGNORE_INDEX,
    POSITION_KINDS,
    ShiftedCopyModel,
    evaluate,
    shifted_copy_batch,
    train,
)

#: Every kind the model takes, read from the registry: "none" and each registered encoding.
KINDS = ("none", *ENCODINGS)


pytestmark = pytest.mark.usefixtures("one_thread_and_seed")


# --- shifted_copy_batch -------------------------------------------------------------------------


@pytest.mark.parametrize("lag", [1, 2, 5])
def test_batch_shapes_and_targets(lag):
    tokens, targets = shifted_copy_batch(4, 12, vocab_size=7, lag=lag)
    assert tokens.shape == targets.shape == (4, 12)
    assert tokens.dtype == targets.dtype == torch.int64
    assert int(tokens.min()) >= 0 and int(tokens.max()) < 7
    assert (targets[:, :lag] == IGNORE_INDEX).all()
    torch.testing.assert_close(targets[:, lag:], tokens[:, :-lag])


def test_batch_uses_the_generator():
    first = shifted_copy_batch(3, 10, generator=torch.Generator().manual_seed(5))
    second = shifted_copy_batch(3, 10, generator=torch.Generator().manual_seed(5))
    other = shifted_copy_batch(3, 10, generator=torch.Generator().manual_seed(6))
    torch.testing.assert_close(first, second)
    assert not torch.equal(first[0], other[0])


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"seq_len": 0}, ValueError, "seq_len"),
        ({"seq_len": 8.0}, TypeError, "seq_len"),
        ({"vocab_size": True}, TypeError, "vocab_size"),
        ({"lag": 0}, ValueError, "lag"),
        ({"lag": 8}, ValueError, "lag"),
        ({"lag": 9}, ValueError, "lag"),
    ],
)
def test_batch_rejects_bad_arguments(kwargs, error, names):
    arguments = {"batch_size": 2, "seq_len": 8, **kwargs}
    with pytest.raises(error, match=names):
        shifted_copy_batch(**arguments)


# --- ShiftedCopyModel ---------------------------------------------------------------------------


def test_position_kinds_are_none_and_the_registry():
    assert POSITION_KINDS == KINDS


@pytest.mark.parametrize("position", KINDS)
def test_model_builds_and_runs(position):
    model = ShiftedCopyModel(position, vocab_size=11, d_model=16, num_heads=2, max_len=20)
    tokens = torch.randint(11, (3, 20))
    logits = model(tokens)
    assert logits.shape == (3, 20, 11)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


def test_only_the_learned_table_adds_parameters_to_the_encoding():
    for position in KINDS:
        model = ShiftedCopyModel(position, d_model=16, num_heads=2, max_len=24)
        trainable = sum(p.numel() for p in model.encoding.parameters())
        assert trainable == (24 * 16 if position == "learned" else 0), position


@pytest.mark.parametrize("position", KINDS)
def test_model_is_causal(position):
    """Changing the last token leaves the logits at every earlier position unchanged."""
    model = ShiftedCopyModel(position, d_model=16, num_heads=2, max_len=16).eval()
    tokens = torch.randint(16, (2, 16))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 16
    before, after = model(tokens), model(changed)
    torch.testing.assert_close(before[:, :-1], after[:, :-1])
    assert not torch.allclose(before[:, -1], after[:, -1])


def test_without_positions_the_model_cannot_tell_where_a_token_was():
    """No encoding: reordering the prefix before the last token leaves the last logits unchanged."""
    model = ShiftedCopyModel("none", d_model=16, num_heads=2).eval()
    tokens = torch.randint(16, (2, 10))
    shuffled = tokens.clone()
    shuffled[:, :-1] = tokens[:, :-1].flip(1)
    torch.testing.assert_close(model(tokens)[:, -1], model(shuffled)[:, -1])
    with_positions = ShiftedCopyModel("sinusoidal", d_model=16, num_heads=2).eval()
    assert not torch.allclose(with_positions(tokens)[:, -1], with_positions(shuffled)[:, -1])


def test_sinusoidal_model_runs_beyond_max_len_learned_refuses():
    tokens = torch.randint(16, (1, 40))
    sinusoidal = ShiftedCopyModel("sinusoidal", d_model=16, num_heads=2, max_len=32)
    assert sinusoidal(tokens).shape == (1, 40, 16)
    learned = ShiftedCopyModel("learned", d_model=16, num_heads=2, max_len=32)
    with pytest.raises(ValueError, match="max_len=32"):
        learned(tokens)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "names"),
    [
        (("sinus",), {}, ValueError, "position"),
        ((3,), {}, TypeError, "position"),
        (("none",), {"vocab_size": 0}, ValueError, "vocab_size"),
        (("none",), {"d_model": 30, "num_heads": 4}, ValueError, "num_heads"),
        (("none",), {"num_heads": 0}, ValueError, "num_heads"),
        (("none",), {"max_len": 0}, ValueError, "max_len"),
        (("learned",), {"max_len": -3}, ValueError, "max_len"),
        (("sinusoidal",), {"max_len": 2.5}, TypeError, "max_len"),
    ],
)
def test_model_rejects_bad_arguments(args, kwargs, error, names):
    with pytest.raises(error, match=names):
        ShiftedCopyModel(*args, **kwargs)


@pytest.mark.parametrize(
    ("tokens", "error", "names"),
    [
        (torch.zeros(2, 5), TypeError, "int64"),
        (torch.zeros(5, dtype=torch.int64), TypeError, r"\(batch, seq_len\)"),
        ([[0, 1, 2]], TypeError, "list"),
        (torch.zeros(2, 0, dtype=torch.int64), ValueError, "at least one"),
        (torch.full((2, 5), 16, dtype=torch.int64), ValueError, "vocab_size=16"),
        (torch.full((2, 5), -1, dtype=torch.int64), ValueError, "vocab_size=16"),
    ],
)
def test_model_rejects_bad_tokens(tokens, error, names):
    model = ShiftedCopyModel("sinusoidal", d_model=16, num_heads=2)
    with pytest.raises(error, match=names):
        model(tokens)


# --- train and evaluate -------------------------------------------------------------------------


def test_short_training_reduces_the_loss_and_is_reproducible():
    torch.manual_seed(0)
    model = ShiftedCopyModel("sinusoidal")
    losses = train(model, steps=100, seq_len=16, batch_size=16)
    assert len(losses) == 100
    assert all(math.isfinite(loss) for loss in losses)
    # The first loss is close to chance, ln(16); the last ten are well below it.
    assert abs(losses[0] - math.log(16)) < 0.5
    assert sum(losses[-10:]) / 10 < 0.6 * losses[0]
    assert not model.training  # train() leaves the model in eval mode

    torch.manual_seed(0)
    again = ShiftedCopyModel("sinusoidal")
    assert train(again, steps=100, seq_len=16, batch_size=16) == losses


def test_training_leaves_untrained_learned_rows_untouched():
    torch.manual_seed(0)
    model = ShiftedCopyModel("learned", d_model=16, num_heads=2, max_len=24)
    initial = model.encoding.weight.detach().clone()
    train(model, steps=5, seq_len=8, batch_size=4)
    assert torch.equal(model.encoding.weight[8:], initial[8:])
    assert not torch.equal(model.encoding.weight[:8], initial[:8])


def test_evaluate_scores_in_unit_interval_and_learning_beats_no_positions():
    torch.manual_seed(0)
    sinusoidal = ShiftedCopyModel("sinusoidal")
    untrained_accuracy = evaluate(sinusoidal, 16, num_sequences=32)
    assert 0.0 <= untrained_accuracy <= 1.0
    train(sinusoidal, steps=150, seq_len=16, batch_size=16)
    trained_accuracy = evaluate(sinusoidal, 16, num_sequences=32)
    assert trained_accuracy > 0.8 > 0.3 > untrained_accuracy
    assert evaluate(sinusoidal, 16, num_sequences=32) == trained_accuracy  # seeded


def test_evaluate_restores_training_mode():
    model = ShiftedCopyModel("none", d_model=16, num_heads=2).train()
    evaluate(model, 8, num_sequences=4)
    assert model.training


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": -1e-3}, ValueError, "lr"),
        ({"lr": float("nan")}, ValueError, "lr"),
        ({"lr": "fast"}, TypeError, "lr"),
        ({"steps": 0}, ValueError, "steps"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"seq_len": 4, "lag": 4}, ValueError, "lag"),
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 10**30}, ValueError, "seed"),
        ({"seed": True}, TypeError, "seed"),
        ({"lr": float("inf")}, ValueError, "lr"),
        ({"lr": True}, TypeError, "lr"),
        ({"steps": 10**30}, ValueError, "steps"),
    ],
)
def test_train_rejects_bad_arguments(kwargs, error, names):
    model = ShiftedCopyModel("none", d_model=16, num_heads=2)
    with pytest.raises(error, match=names):
        train(model, **{"steps": 1, **kwargs})


def test_train_and_evaluate_need_a_shifted_copy_model():
    with pytest.raises(TypeError, match="ShiftedCopyModel"):
        train(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="ShiftedCopyModel"):
        evaluate(torch.nn.Linear(2, 2), 8)


def test_evaluate_rejects_bad_arguments():
    model = ShiftedCopyModel("learned", d_model=16, num_heads=2, max_len=16)
    with pytest.raises(ValueError, match="lag"):
        evaluate(model, 4, lag=4)
    with pytest.raises(ValueError, match="num_sequences"):
        evaluate(model, 8, num_sequences=0)
    with pytest.raises(ValueError, match="max_len=16"):
        evaluate(model, 17)


# --- attention weights --------------------------------------------------------------------------


def _weights_step_by_step(model: ShiftedCopyModel, tokens: torch.Tensor) -> torch.Tensor:
    """The attention weights recomputed from the model's layers and the registry entry's
    parts (a fresh rotation, the score bias), attention written out by hand."""
    entry = ENCODINGS.get(model.position)
    hidden = model.norm_attention(model.encoding(model.embedding(tokens)))
    batch, length, _ = hidden.shape
    q, k, _ = (
        t.view(batch, length, model.num_heads, model.head_dim).transpose(1, 2)
        for t in model.qkv(hidden).chunk(3, dim=-1)
    )
    if entry is not None and entry.rotation is not None:
        q, k = entry.rotation(model.head_dim)(q, k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(model.head_dim)
    if entry is not None and entry.score_bias is not None:
        scores = scores + entry.score_bias(
            model.num_heads, length, length, dtype=scores.dtype, device=scores.device
        )
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    return scores.masked_fill(~causal, -math.inf).softmax(dim=-1)


@pytest.mark.parametrize("position", POSITION_KINDS)
def test_model_returns_its_attention_weights(position):
    model = ShiftedCopyModel(position, d_model=16, num_heads=2, max_len=16).eval()
    tokens = torch.randint(16, (3, 10))
    with torch.no_grad():
        logits, weights = model(tokens, return_weights=True)
        assert torch.equal(logits, model(tokens))
        expected = _weights_step_by_step(model, tokens)
    assert weights.shape == (3, 2, 10, 10)
    torch.testing.assert_close(weights, expected)


def test_return_weights_must_be_a_bool():
    model = ShiftedCopyModel("none", d_model=16, num_heads=2)
    with pytest.raises(TypeError, match="return_weights must be a bool, got 1"):
        model(torch.zeros(1, 4, dtype=torch.int64), return_weights=1)


def test_rope_with_an_odd_head_size_names_the_model_arguments():
    with pytest.raises(
        ValueError, match=r"position='rope' .*d_model=6, num_heads=2 \(head_dim=3\)"
    ):
        ShiftedCopyModel("rope", d_model=6, num_heads=2)


def test_batch_rejects_a_generator_that_is_not_one():
    with pytest.raises(TypeError, match="generator must be a torch.Generator or None, got 0"):
        shifted_copy_batch(2, 8, generator=0)
