"""Tests for pe_lib.lm: the pinned corpus, the character model, training and perplexity."""

from __future__ import annotations

import hashlib
import math
from importlib import resources

import pytest
import torch

from pe_lib import lm
from pe_lib.encodings import ENCODINGS
from pe_lib.lm import (
    CORPUS_SHA256,
    HELD_OUT_CHARS,
    POSITION_KINDS,
    CharTransformer,
    CharVocabulary,
    corpus_splits,
    load_corpus,
    perplexity,
    train_lm,
    with_rope_scaling,
)
from pe_lib.modules import LearnedPositionalEncoding
from pe_lib.rope import RotaryEmbedding

VOCAB = 11


pytestmark = pytest.mark.usefixtures("one_thread_and_seed")


def small(position, **kwargs):
    settings = {"vocab_size": VOCAB, "d_model": 16, "num_heads": 2, "max_len": 64}
    return CharTransformer(position, **{**settings, **kwargs}).eval()


def random_ids(n, seed=0):
    return torch.randint(VOCAB, (n,), generator=torch.Generator().manual_seed(seed))


# --- the corpus ----------------------------------------------------------------------------------


def test_corpus_file_has_the_pinned_digest():
    data = resources.files("pe_lib").joinpath("data").joinpath("python_reference.txt")
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert digest == CORPUS_SHA256 == lm.CORPUS_SHA256
    text = load_corpus()
    assert len(text) == 239_155 and text.isascii()
    assert text.startswith('The "assert" statement\n')
    assert "\r" not in text


def test_corpus_ships_its_notice():
    notice = resources.files("pe_lib").joinpath("data").joinpath("python_reference.NOTICE.txt")
    words = notice.read_text(encoding="ascii")
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in words
    assert "pydoc_data/topics.py" in words and "3.11.7" in words
    assert "CORPUS_SHA256" in words


def test_a_changed_corpus_is_refused(monkeypatch):
    monkeypatch.setattr(lm, "CORPUS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        load_corpus()


def test_splits_hold_out_the_end():
    text = load_corpus()
    train, held_out, vocab = corpus_splits()
    assert held_out.numel() == HELD_OUT_CHARS
    assert train.numel() + held_out.numel() == len(text)
    assert train.dtype == held_out.dtype == torch.int64
    assert vocab.decode(train) + vocab.decode(held_out) == text
    assert len(vocab) == len(set(text)) == 93


def test_vocabulary_round_trip_and_errors():
    vocab = CharVocabulary("banana!")
    assert vocab.chars == "!abn" and len(vocab) == 4
    ids = vocab.encode("nab!")
    assert ids.tolist() == [3, 1, 2, 0] and vocab.decode(ids) == "nab!"
    with pytest.raises(ValueError, match="'z'"):
        vocab.encode("baz")
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        vocab.decode([4])
    with pytest.raises(ValueError, match="at least one"):
        CharVocabulary("")
    with pytest.raises(TypeError, match="text must be a str"):
        CharVocabulary(b"abc")  # type: ignore[arg-type]


# --- the model -------------------------------------------------------------------------------


def test_position_kinds_come_from_the_registry():
    assert POSITION_KINDS == ("none", *ENCODINGS)


@pytest.mark.parametrize("position", POSITION_KINDS)
def test_registry_driven_construction(position):
    model = small(position)
    spec = ENCODINGS.get(position)
    assert (model.rotation is not None) == (spec is not None and spec.rotation is not None)
    assert model.score_bias is (spec.score_bias if spec is not None else None)
    if spec is None or spec.additive is None:
        assert isinstance(model.encoding, torch.nn.Identity)
    else:
        assert not isinstance(model.encoding, torch.nn.Identity)
    assert model.max_seq_len == (64 if position == "learned" else None)
    assert len(model.blocks) == 2


@pytest.mark.parametrize("position", POSITION_KINDS)
def test_logit_shapes(position):
    tokens = random_ids(2 * 10).view(2, 10)
    logits = small(position)(tokens)
    assert logits.shape == (2, 10, VOCAB) and logits.dtype == torch.float32


@pytest.mark.parametrize("position", POSITION_KINDS)
def test_a_later_character_cannot_change_an_earlier_prediction(position):
    model = small(position)
    tokens = random_ids(12).view(1, 12)
    changed = tokens.clone()
    changed[0, 7] = (changed[0, 7] + 1) % VOCAB
    before, after = model(tokens), model(changed)
    torch.testing.assert_close(before[:, :7], after[:, :7], rtol=0, atol=0)
    assert not torch.allclose(before[:, 7:], after[:, 7:])


@pytest.mark.parametrize("position", ["none", "rope", "alibi"])
def test_a_uniform_model_has_the_vocabulary_size_as_perplexity(position):
    model = small(position)
    with torch.no_grad():
        model.read_out.weight.zero_()
        model.read_out.bias.zero_()
    value = perplexity(model, random_ids(200), 16)
    assert math.isclose(value, VOCAB, rel_tol=1e-12)


def test_perplexity_matches_the_cross_entropy_of_each_window():
    model = small("rope")
    ids = random_ids(3 * 8 + 5)
    expected = []
    for start in range(0, 3 * 8, 8):
        logits = model(ids[start : start + 8][None])[0].double()
        expected.append(torch.nn.functional.cross_entropy(logits, ids[start + 1 : start + 9]))
    value = perplexity(model, ids, 8)  # the 4 ids after the last whole window are left out
    assert math.isclose(value, math.exp(torch.stack(expected).mean().item()), rel_tol=1e-6)


def test_a_learned_table_cannot_be_scored_past_its_length():
    model = small("learned", max_len=16)
    ids = random_ids(100)
    assert math.isfinite(perplexity(model, ids, 16))
    with pytest.raises(ValueError, match=r"seq_len=17 is longer than the 16 positions"):
        perplexity(model, ids, 17)
    with pytest.raises(ValueError, match=r"tokens.shape\[1\]=20"):
        model(ids[:20][None])
    with pytest.raises(ValueError, match="seq_len=32"):
        train_lm(model, ids, steps=1, seq_len=32)
    assert isinstance(model.encoding, LearnedPositionalEncoding)


@pytest.mark.parametrize("position", ["none", "sinusoidal", "rope", "alibi"])
def test_other_encodings_are_scored_at_any_length(position):
    model = small(position, max_len=8)
    assert math.isfinite(perplexity(model, random_ids(70), 64))


def test_rope_scaling_builds_the_rotation():
    entry = {"rope_type": "linear", "factor": 2.0}
    model = small("rope", rope_scaling=entry)
    assert isinstance(model.rotation, RotaryEmbedding)
    assert model.rotation.scaling.rope_type == "linear" and "linear" in repr(model)
    with pytest.raises(ValueError, match="rope_scaling applies to RoPE's rotation.*'alibi'"):
        small("alibi", rope_scaling=entry)
    with pytest.raises(ValueError, match="factor"):
        small("rope", rope_scaling={"rope_type": "linear"})


def test_with_rope_scaling_copies_and_leaves_the_model_alone():
    model = small("rope")
    stretched = with_rope_scaling(model, {"rope_type": "linear", "factor": 4.0})
    assert model.rotation.scaling.rope_type == "default"
    assert stretched.rotation.scaling.rope_type == "linear"
    for a, b in zip(model.parameters(), stretched.parameters(), strict=True):
        assert torch.equal(a, b) and a is not b
    tokens = random_ids(16).view(1, 16)
    plain = with_rope_scaling(model, None)
    torch.testing.assert_close(plain(tokens), model(tokens), rtol=0, atol=0)
    assert not torch.allclose(stretched(tokens), model(tokens))
    with pytest.raises(ValueError, match="position='sinusoidal'"):
        with_rope_scaling(small("sinusoidal"), {"rope_type": "linear", "factor": 2.0})
    with pytest.raises(TypeError, match="CharTransformer"):
        with_rope_scaling(torch.nn.Linear(2, 2), None)  # type: ignore[arg-type]


# --- training ------------------------------------------------------------------------------------


def test_training_learns_and_is_reproducible():
    ids = torch.arange(400) % VOCAB  # a periodic text: easy to predict
    first, second = small("rope"), small("rope")
    second.load_state_dict(first.state_dict())
    before = perplexity(first, ids, 16)
    losses = train_lm(first, ids, steps=40, seq_len=16, batch_size=8, lr=1e-2, seed=3)
    again = train_lm(second, ids, steps=40, seq_len=16, batch_size=8, lr=1e-2, seed=3)
    assert losses == again and len(losses) == 40
    assert perplexity(first, ids, 16) < 0.5 * before
    assert not first.training


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"position": "xpos"}, ValueError, "position"),
        ({"vocab_size": 0}, ValueError, "vocab_size"),
        ({"d_model": 15}, ValueError, "d_model=15"),
        ({"num_layers": 0}, ValueError, "num_layers"),
        ({"num_heads": 2.0}, TypeError, "num_heads"),
        ({"max_len": -1}, ValueError, "max_len"),
        ({"position": "rope", "d_model": 6, "num_heads": 2}, ValueError, "head_dim=3"),
    ],
)
def test_bad_model_arguments(kwargs, error, names):
    settings = {"position": "none", "vocab_size": VOCAB, "d_model": 16, "num_heads": 2}
    with pytest.raises(error, match=names):
        CharTransformer(**{**settings, **kwargs})


def test_bad_tokens():
    model = small("none")
    with pytest.raises(TypeError, match="int64"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"\[0, vocab_size=11\)"):
        model(torch.full((1, 4), VOCAB))


@pytest.mark.parametrize(
    ("call", "error", "names"),
    [
        (lambda m, ids: perplexity(m, ids, 0), ValueError, "seq_len"),
        (lambda m, ids: perplexity(m, ids, 50), ValueError, "at least 51 ids"),
        (lambda m, ids: perplexity(m, ids.float(), 8), TypeError, "ids must be a 1-d int64"),
        (lambda m, ids: perplexity(m, ids[None], 8), TypeError, "ids must be a 1-d int64"),
        (lambda m, ids: perplexity(m, ids + VOCAB, 8), ValueError, "vocab_size=11"),
        (lambda m, ids: perplexity(torch.nn.Linear(2, 2), ids, 8), TypeError, "CharTransformer"),
        (lambda m, ids: train_lm(m, ids, steps=0), ValueError, "steps"),
        (lambda m, ids: train_lm(m, ids, seq_len=8, lr=0.0), ValueError, "lr"),
        (lambda m, ids: train_lm(m, ids, seq_len=8, batch_size=0), ValueError, "batch_size"),
        (lambda m, ids: train_lm(m, ids, seq_len=8, seed=-1), ValueError, "seed"),
        (lambda m, ids: train_lm(m, ids, seq_len=50), ValueError, "at least 51 ids"),
    ],
)
def test_bad_scoring_and_training_arguments(call, error, names):
    with pytest.raises(error, match=names):
        call(small("none"), random_ids(50))


def test_adam_matches_torch_optim_adam():
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(4))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    start = ours[0].detach().clone()
    mine, reference = lm._Adam(ours, 0.01), torch.optim.Adam(theirs, lr=0.01)
    for step in range(5):
        for params, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad(set_to_none=True)
            loss = (params[0].sin().sum() + params[1].pow(3).sum()) * (step + 1)
            loss.backward()
            optimizer.step()
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert (ours[0] - start).abs().min() > 0.01  # every entry moved
