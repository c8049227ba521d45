"""Tests for pe_lib.experiments.lm: the pinned corpus, the character model, training and perplexity."""

from __future__ import annotations

import hashlib
import math
from importlib import resources

import pytest
import torch

from pe_lib.encodings import ENCODINGS
from pe_lib.encodings.modules import LearnedPositionalEncoding
from pe_lib.experiments import lm
from pe_lib.experiments.lm import (
    CORPUS_SHA256,
    HELD_OUT_TOPICS,
    POSITION_KINDS,
    SHARED_STRETCH,
    CharTransformer,
    CharVocabulary,
    bigram_perplexity,
    corpus_splits,
    corpus_topics,
    load_corpus,
    ngram_perplexity,
    perplexity,
    train_lm,
    train_lms,
    with_rope_scaling,
)
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
    data = resources.files("pe_lib.experiments").joinpath("data").joinpath("python_reference.txt")
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert digest == CORPUS_SHA256 == lm.CORPUS_SHA256
    text = load_corpus()
    assert len(text) == 239_155 and text.isascii()
    assert text.startswith('The "assert" statement\n')
    assert "\r" not in text


def test_corpus_ships_its_notice():
    notice = (
        resources.files("pe_lib.experiments")
        .joinpath("data")
        .joinpath("python_reference.NOTICE.txt")
    )
    words = notice.read_text(encoding="ascii")
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in words
    assert "pydoc_data/topics.py" in words and "3.11.7" in words
    assert "CORPUS_SHA256" in words


def test_a_changed_corpus_is_refused(monkeypatch):
    monkeypatch.setattr(lm, "CORPUS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        load_corpus()


def test_topics_cut_the_corpus_at_its_titles():
    text = load_corpus()
    topics = corpus_topics()
    assert "".join(body for _, body in topics) == text
    # CPython 3.11.7's pydoc topics "assert" to "numeric-types" (the NOTICE's 52)
    assert len(topics) == 52
    assert topics[0][0] == 'The "assert" statement'
    assert topics[-1][0] == "Emulating numeric types"
    assert all(body.startswith(title + "\n***") for title, body in topics)


def test_held_out_topics_are_whole_and_never_trained_on():
    """The held-out text is the last topics, whole; no stretch of SHARED_STRETCH characters of
    it occurs anywhere in the training text (checked here with str.find on a sample and with a
    set of every training stretch on all of it)."""
    topics = corpus_topics()
    train, held_out, vocab = corpus_splits()
    held_text, train_text = vocab.decode(held_out), vocab.decode(train)
    assert held_text == "".join(body for _, body in topics[-HELD_OUT_TOPICS:])
    n = SHARED_STRETCH
    trained = {train_text[i : i + n] for i in range(len(train_text) - n + 1)}
    assert not any(held_text[i : i + n] in trained for i in range(len(held_text) - n + 1))
    assert all(train_text.find(held_text[i : i + n]) < 0 for i in range(0, len(held_text), 997))
    # The corpus repeats itself: without the cuts, the training topics share stretches with it.
    uncut = "".join(body for _, body in topics[:-HELD_OUT_TOPICS])
    assert any(held_text[i : i + n] in uncut for i in range(0, len(held_text) - n, 50))
    assert 0.9 * len(uncut) < len(train_text) < len(uncut)
    assert train.dtype == held_out.dtype == torch.int64
    assert len(vocab) == len(set(load_corpus())) == 93


def test_cuts_reach_stretches_made_by_joining():
    """A stretch that appears only where two kept pieces meet is cut too."""
    held = "abcdefgh"
    # cutting "cdef" (shared, 4 characters) from "xxcdefyy" leaves nothing shared
    assert lm._without("xxcdefyy", held, 4) == "xxyy"
    # "abcd" cut leaves "ab" + "cdzz"... joined pieces that spell a shared stretch are cut again
    text = lm._without("qabcdqefghq", "bcdqefgh", 4)
    assert all(text[i : i + 4] not in "bcdqefgh" for i in range(len(text) - 3))
    assert lm._without("abab", "xyz", 2) == "abab"


def test_bigram_baseline_counts_pairs():
    # "ab" repeated: after a comes b, after b comes a (Laplace smoothing over 3 ids)
    training = torch.tensor([0, 1] * 50)
    ids = torch.tensor([0, 1, 0, 1, 0])
    p = (49 + 1) / (49 + 3)  # b->a seen 49 times (b precedes 49 times); smoothing 1, 3 ids
    q = (50 + 1) / (50 + 3)  # a->b seen 50 times
    expected = math.exp(-(2 * math.log(q) + 2 * math.log(p)) / 4)
    assert bigram_perplexity(training, ids, 3) == pytest.approx(expected, rel=1e-12)
    # an unseen pair is still possible, and uniform text scores the vocabulary's size
    assert math.isfinite(bigram_perplexity(training, torch.tensor([2, 2]), 3))
    uniform = torch.arange(3).repeat(400)
    assert bigram_perplexity(torch.tensor([0, 0]), uniform, 3, smoothing=1e9) == pytest.approx(3)
    with pytest.raises(ValueError, match="smoothing"):
        bigram_perplexity(training, ids, 3, smoothing=0.0)
    with pytest.raises(ValueError, match="vocab_size=3"):
        bigram_perplexity(training, ids + 3, 3)


def _witten_bell(training, ids, vocab_size, order):
    """The interpolated n-gram written out with dictionaries: a second, independent count."""
    text, held = training.tolist(), ids.tolist()
    after = {}  # context tuple -> {next id: count}
    for k in range(1, order + 1):
        for i in range(len(text) - k + 1):
            context, nxt = tuple(text[i : i + k - 1]), text[i + k - 1]
            after.setdefault(context, {}).setdefault(nxt, 0)
            after[context][nxt] += 1

    def p(context, c):
        if context is None:
            return 1 / vocab_size
        lower = p(context[1:] if context else None, c)
        counts = after.get(context)
        if not counts:
            return lower
        total, distinct = sum(counts.values()), len(counts)
        return (counts.get(c, 0) + distinct * lower) / (total + distinct)

    logs = [math.log(p(tuple(held[max(0, t - order + 1) : t]), held[t]))
            for t in range(1, len(held))]  # fmt: skip
    return math.exp(-sum(logs) / len(logs)), p


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_ngram_baseline_matches_counts_written_out(order):
    training, ids = random_ids(300, seed=1) % 4, random_ids(60, seed=2)
    training[::7] = 5  # a skewed text; ids 6 to 10 never occur in it
    expected, p = _witten_bell(training, ids, VOCAB, order)
    assert ngram_perplexity(training, ids, VOCAB, order=order) == pytest.approx(expected, 1e-12)
    # every conditional distribution sums to 1, over a context seen and one never seen
    for context in [tuple(training[: order - 1].tolist()), (9,) * (order - 1)]:
        assert sum(p(context, c) for c in range(VOCAB)) == pytest.approx(1.0, 1e-12)


def test_ngram_baseline_by_hand():
    # "ab" repeated, 3 ids. Order 1: a and b each seen 50 times, 2 distinct ids in 100:
    # p(a) = (50 + 2 * 1/3) / (100 + 2)
    training = torch.tensor([0, 1] * 50)
    unigram_a = (50 + 2 / 3) / 102
    assert ngram_perplexity(training, torch.tensor([1, 0]), 3, order=1) == pytest.approx(
        1 / unigram_a
    )
    # after b: a 49 times, one distinct next id: p(a | b) = (49 + p1(a)) / 50
    p_a_after_b = (49 + unigram_a) / 50
    assert ngram_perplexity(training, torch.tensor([1, 0]), 3, order=2) == pytest.approx(
        1 / p_a_after_b
    )
    # the order-2 model knows its context: it beats the order-1 model on the text it counted
    held = torch.tensor([0, 1] * 20)
    assert (
        ngram_perplexity(training, held, 3, order=2)
        < 1.1
        < 1.9
        < ngram_perplexity(training, held, 3, order=1)
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"order": 0}, ValueError, "order"),
        ({"order": 2.0}, TypeError, "order"),
        ({"order": 10, "vocab_size": 100}, ValueError, "order=10 is too large for vocab_size=100"),
        ({"order": 2, "vocab_size": 0}, ValueError, "vocab_size"),
        ({"order": 2, "ids": torch.tensor([1])}, ValueError, "ids must hold at least 2"),
        ({"order": 5, "training": torch.tensor([1, 2, 3])}, ValueError, "training must hold"),
        ({"order": 2, "ids": torch.tensor([1.0, 2.0])}, TypeError, "ids must be a 1-d int64"),
        ({"order": 2, "ids": torch.tensor([1, 11])}, ValueError, "vocab_size=11"),
    ],
)
def test_bad_ngram_arguments(kwargs, error, names):
    arguments = {"training": random_ids(50), "ids": random_ids(20), "vocab_size": VOCAB}
    with pytest.raises(error, match=names):
        ngram_perplexity(**{**arguments, **kwargs})


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
    # each loss in float32 (the logits' dtype), summed in float64
    assert math.isclose(value, VOCAB, rel_tol=1e-6)


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


def test_models_trained_side_by_side_match_models_trained_one_by_one():
    """train_lms stacks the models; each ends where train_lm alone takes it (up to rounding)."""
    ids = random_ids(600, seed=4)
    torch.manual_seed(1)
    pair = [small("rope"), small("rope")]
    alone = [small("rope"), small("rope")]
    for a, b in zip(alone, pair, strict=True):
        a.load_state_dict(b.state_dict())
    losses = train_lms(pair, ids, seeds=[3, 5], steps=6, seq_len=16, batch_size=4, lr=1e-2)
    assert losses.shape == (6, 2) and losses.dtype == torch.float64
    for i, (model, seed) in enumerate(zip(alone, (3, 5), strict=True)):
        own = train_lm(model, ids, steps=6, seq_len=16, batch_size=4, lr=1e-2, seed=seed)
        torch.testing.assert_close(losses[:, i], torch.tensor(own, dtype=torch.float64))
        for (name, p), q in zip(model.named_parameters(), pair[i].parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=name)
    assert not torch.equal(pair[0].read_out.weight, pair[1].read_out.weight)
    assert not any(m.training for m in pair)


def test_side_by_side_refuses_models_that_differ_and_diverging_training():
    ids = random_ids(200)
    one = small("alibi")
    with pytest.raises(ValueError, match=r"models\[1\] differs from models\[0\]"):
        train_lms([one, small("rope")], ids, seeds=[0, 1], seq_len=8)
    with pytest.raises(ValueError, match=r"models\[1\] is models\[0\]"):
        train_lms([one, one], ids, seeds=[0, 1], seq_len=8)
    with pytest.raises(ValueError, match="one seed per model"):
        train_lms([one, small("alibi")], ids, seeds=[0], seq_len=8)
    with pytest.raises(TypeError, match="non-empty sequence"):
        train_lms([], ids, seeds=[], seq_len=8)
    with pytest.raises(ValueError, match=r"lr=1000000.0.*smaller lr"):
        train_lm(small("none"), ids, seq_len=8, steps=20, lr=1e6)


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
