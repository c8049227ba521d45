"""A passkey retrieval task at toy scale: is what lies far away still used?

Modelled on the passkey retrieval of Mohtashami and Jaggi (2023, arXiv:2305.16300), a random
pass key hidden in filler text that repeats, and on the single needle of RULER (Hsieh et al.,
2024, arXiv:2404.06654, section 3): one *passkey* is hidden in a haystack of *filler* tokens, and
a *query* token later in the sequence asks for it. Token ids: ``0 .. FILLERS - 1`` are fillers, the next :data:`PASSKEYS` ids are
passkeys and :data:`QUERY` is the query, :data:`VOCAB_SIZE` ids in all.

A training sequence of ``seq_len`` tokens holds one passkey at a random position; every later
position is a query with probability ``query_share`` (the last one always), and the target at
each query is the passkey (:data:`pe_lib.experiments.toy.IGNORE_INDEX` elsewhere), so one sequence teaches
the answer at several distances. A test sequence puts the passkey at position 0 and a query at
each distance of interest, so that the answer lies exactly that far back.

The passkey is the only token of its kind in a sequence: a rule that needs neither positions nor
learning (:func:`passkey_rule`, "the last passkey seen") answers every query, at every distance.
What a trained model loses with distance is lost to the way it encodes positions. The model is
the toy model's block (:class:`pe_lib.experiments.lm.CharTransformer` with one layer, whose attention runs in
torch's fused kernel, or :class:`pe_lib.experiments.toy.ShiftedCopyModel`) with :data:`VOCAB_SIZE` ids,
trained by the toy's Adam loop; :func:`pe_lib.experiments.lm.with_rope_scaling` stretches a RoPE one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._validation import (
    check_instance,
    check_nonnegative_int,
    check_positive_int,
    check_real,
)
from ..encodings.modules import LearnedPositionalEncoding
from .lm import CharTransformer
from .toy import IGNORE_INDEX, ShiftedCopyModel, _fit

#: The models the task takes, each one causal attention block of the toy model.
PasskeyModel = CharTransformer | ShiftedCopyModel

__all__ = [
    "FILLERS",
    "PASSKEYS",
    "PasskeyModel",
    "QUERY",
    "TEST_SEED",
    "VOCAB_SIZE",
    "passkey_accuracy",
    "passkey_batch",
    "passkey_rule",
    "passkey_test",
    "train_passkey",
]

#: Filler ids ``0 .. FILLERS - 1``, the haystack.
FILLERS = 8
#: Passkey ids ``FILLERS .. FILLERS + PASSKEYS - 1``, so chance is ``1 / PASSKEYS``.
PASSKEYS = 8
#: The id of the query, which asks "which passkey did you see?"
QUERY = FILLERS + PASSKEYS
#: Token ids in all.
VOCAB_SIZE = QUERY + 1
#: Seed of the test sequences' generator (training batches are drawn with the training seeds).
TEST_SEED = 1_000_003


def _check_generator(generator: object) -> torch.Generator | None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {generator!r} of type "
            f"{type(generator).__name__}"
        )
    return generator


def passkey_batch(
    batch_size: int,
    seq_len: int,
    *,
    query_share: float = 0.25,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Training sequences: a passkey at a random position, queries after it.

    Args:
        batch_size: sequences, >= 1.
        seq_len: tokens per sequence, >= 2.
        query_share: the chance that a position after the passkey is a query, in ``[0, 1]``
            (the last position always is).
        generator: the random generator, or ``None`` for torch's global one.

    Returns:
        ``tokens`` and ``targets``, int64 ``(batch_size, seq_len)``: ``targets`` holds the
        passkey at each query and ``IGNORE_INDEX`` elsewhere.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_positive_int("seq_len", seq_len)
    if seq_len < 2:
        raise ValueError(f"seq_len must be at least 2 (a passkey and a query), got {seq_len}")
    query_share = check_real("query_share", query_share)
    if not 0.0 <= query_share <= 1.0:
        raise ValueError(f"query_share must be in [0, 1], got {query_share}")
    generator = _check_generator(generator)
    tokens = torch.randint(FILLERS, (batch_size, seq_len), generator=generator)
    passkeys = FILLERS + torch.randint(PASSKEYS, (batch_size,), generator=generator)
    where = torch.randint(seq_len - 1, (batch_size,), generator=generator)
    tokens[torch.arange(batch_size), where] = passkeys
    after = torch.arange(seq_len) > where[:, None]  # (batch, seq_len)
    queries = after & (torch.rand(batch_size, seq_len, generator=generator) < query_share)
    queries[:, -1] = True
    tokens[queries] = QUERY
    targets = torch.where(queries, passkeys[:, None], torch.full_like(tokens, IGNORE_INDEX))
    return tokens, targets


def _check_distances(distances: object) -> tuple[int, ...]:
    if not isinstance(distances, Sequence) or isinstance(distances, str) or not distances:
        raise TypeError(f"distances must be a non-empty sequence of ints, got {distances!r}")
    checked = tuple(check_positive_int(f"distances[{i}]", d) for i, d in enumerate(distances))
    if len(set(checked)) != len(checked):
        raise ValueError(f"distances must be distinct, got {list(checked)}")
    return checked


def passkey_test(
    distances: Sequence[int], *, num_sequences: int = 128, seed: int = TEST_SEED
) -> tuple[torch.Tensor, torch.Tensor]:
    """Test sequences: the passkey at position 0 and a query at each of ``distances``.

    Args:
        distances: how far back the passkey lies from each query, distinct ints >= 1.
        num_sequences: sequences, >= 1.
        seed: seed of the sequences' generator, an int in ``[0, 2**53 - 1]``.

    Returns:
        ``tokens``, int64 ``(num_sequences, max(distances) + 1)``, and the passkeys,
        int64 ``(num_sequences,)``.
    """
    distances = _check_distances(distances)
    num_sequences = check_positive_int("num_sequences", num_sequences)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    tokens = torch.randint(FILLERS, (num_sequences, max(distances) + 1), generator=generator)
    passkeys = FILLERS + torch.randint(PASSKEYS, (num_sequences,), generator=generator)
    tokens[:, 0] = passkeys
    tokens[:, list(distances)] = QUERY
    return tokens, passkeys


def passkey_rule(tokens: torch.Tensor) -> torch.Tensor:
    """The answer of a rule that needs no learning and no positions: at each position, the
    last passkey seen so far (``-1`` before the first).

    ``tokens``: int64 ``(batch, seq_len)`` -> int64 ``(batch, seq_len)``.
    """
    check_instance("tokens", tokens, torch.Tensor)
    if tokens.dtype != torch.int64 or tokens.dim() != 2:
        raise TypeError(
            f"tokens must be an int64 tensor of shape (batch, seq_len), got dtype "
            f"{tokens.dtype} and shape {tuple(tokens.shape)}"
        )
    is_passkey = (tokens >= FILLERS) & (tokens < QUERY)
    index = torch.where(is_passkey, torch.arange(tokens.shape[1]), -1).cummax(dim=1).values
    seen = tokens.gather(1, index.clamp(min=0))
    return torch.where(index >= 0, seen, -1)


def train_passkey(
    model: PasskeyModel,
    *,
    steps: int = 60,
    seq_len: int = 32,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Trains ``model`` in place on :func:`passkey_batch` batches with the toy's Adam loop
    (:func:`pe_lib.experiments.toy.train`'s); returns the loss of each step.

    Args:
        model: a :data:`PasskeyModel` with ``vocab_size=VOCAB_SIZE`` (left in eval mode).
        steps: optimizer steps, >= 1.
        seq_len: length of the training sequences, >= 2.
        batch_size: sequences per step, >= 1.
        lr: Adam's learning rate, a finite float > 0.
        seed: seed of the batches' generator, an int in ``[0, 2**53 - 1]``.
    """
    _check_model(model)
    steps = check_positive_int("steps", steps)
    lr = check_real("lr", lr, above=0.0)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    passkey_batch(1, seq_len)  # checks seq_len before training starts

    def next_batch() -> tuple[torch.Tensor, torch.Tensor]:
        return passkey_batch(batch_size, seq_len, generator=generator)

    return _fit(model, next_batch, steps, lr)


@torch.no_grad()
def passkey_accuracy(
    model: PasskeyModel,
    distances: Sequence[int],
    *,
    num_sequences: int = 128,
    seed: int = TEST_SEED,
) -> dict[int, float]:
    """The share of :func:`passkey_test` sequences whose passkey the model's top token names,
    at each distance, from one pass over sequences of ``max(distances) + 1`` tokens.

    The model has one layer, so the answer at one query does not depend on the others (with
    two, a query could read the answer off an earlier query).

    Raises:
        ValueError: the model has more than one layer, or the sequences are longer than a
            learned table (it has no row there).
    """
    _check_model(model)
    if isinstance(model, CharTransformer) and model.num_layers != 1:
        raise ValueError(
            f"model must have one layer (num_layers=1): the test puts several queries in one "
            f"sequence, and with num_layers={model.num_layers} a query could read another's answer"
        )
    distances = _check_distances(distances)
    encoding = model.encoding
    if isinstance(encoding, LearnedPositionalEncoding) and max(distances) >= encoding.max_len:
        raise ValueError(
            f"distances reach {max(distances)}, which needs {max(distances) + 1} positions, "
            f"but the learned table has {encoding.max_len} rows and none beyond: use "
            f"distances below {encoding.max_len}"
        )
    tokens, passkeys = passkey_test(distances, num_sequences=num_sequences, seed=seed)
    was_training = model.training
    model.eval()
    answers = model(tokens)[:, list(distances)].argmax(dim=-1)  # (num_sequences, distances)
    model.train(was_training)
    right = (answers == passkeys[:, None]).double().mean(dim=0)
    return {d: float(right[i]) for i, d in enumerate(distances)}


def _check_model(model: object) -> PasskeyModel:
    if not isinstance(model, (CharTransformer, ShiftedCopyModel)):
        raise TypeError(
            f"model must be a pe_lib.experiments.lm.CharTransformer or a pe_lib.experiments.toy.ShiftedCopyModel, got "
            f"{type(model).__name__}"
        )
    if model.vocab_size != VOCAB_SIZE:
        raise ValueError(
            f"model must read the task's {VOCAB_SIZE} token ids (vocab_size={VOCAB_SIZE}), "
            f"got vocab_size={model.vocab_size}"
        )
    return model
