"""A toy task where order matters, and a one-layer causal Transformer to learn it.

The task is a *shifted copy*: at every position ``t >= lag`` the model must output the token it
saw ``lag`` positions earlier, ``target[t] = tokens[t - lag]``. Without position information a
causal attention layer cannot single out the token ``lag`` steps back, so the task separates
models by how they encode positions; trained on short sequences and tested on longer ones it
measures length generalisation.

The model's ``position`` argument picks how positions enter: ``"none"`` (no position
information, a baseline; the causal mask alone leaks a little) or the name of an entry of
:data:`pe_lib.encodings.ENCODINGS`, which says whether the encoding is added to the embeddings
(``"sinusoidal"``, ``"learned"``), rotates queries and keys (``"rope"``) or biases the attention
scores (``"alibi"``). A new registry entry is a new choice here, with no change to this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, overload

import torch
from torch import nn
from torch.nn import functional as F

from .._validation import (
    check_choice,
    check_ids_below,
    check_instance,
    check_int64_tensor,
    check_nonnegative_int,
    check_positive_int,
    check_real,
)
from ..encodings import ENCODINGS, ScoreBias
from ..models.attention import scaled_dot_product_attention

__all__ = [
    "IGNORE_INDEX",
    "POSITION_KINDS",
    "ShiftedCopyModel",
    "evaluate",
    "shifted_copy_batch",
    "train",
]

#: How :class:`ShiftedCopyModel` tells positions apart: ``"none"``, then every encoding of
#: :data:`pe_lib.encodings.ENCODINGS` (``"sinusoidal"``, ``"learned"``, ``"rope"``, ``"alibi"``).
POSITION_KINDS: tuple[str, ...] = ("none", *ENCODINGS)

#: Target value for positions that have no answer (the first ``lag`` ones); ignored by the loss.
IGNORE_INDEX = -100


def shifted_copy_batch(
    batch_size: int,
    seq_len: int,
    *,
    vocab_size: int = 16,
    lag: int = 1,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens and their shifted copy.

    Returns:
        ``tokens`` and ``targets``, both int64 of shape ``(batch_size, seq_len)``, with
        ``targets[:, t] = tokens[:, t - lag]`` for ``t >= lag`` and ``IGNORE_INDEX`` before.
    """
    batch_size = check_positive_int("batch_size", batch_size)
    seq_len = check_positive_int("seq_len", seq_len)
    vocab_size = check_positive_int("vocab_size", vocab_size)
    lag = check_positive_int("lag", lag)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {generator!r} of type "
            f"{type(generator).__name__}"
        )
    if lag >= seq_len:
        raise ValueError(f"lag must be smaller than seq_len={seq_len}, got {lag}")
    tokens = torch.randint(vocab_size, (batch_size, seq_len), generator=generator)
    targets = torch.full_like(tokens, IGNORE_INDEX)
    targets[:, lag:] = tokens[:, :-lag]
    return tokens, targets


class _EmbeddedPositions(nn.Module):
    """What both models start with: checked sizes, the token embedding and the encoding's parts
    (drawn from the global RNG in that order).

    Args:
        position: the encoding, one of ``kinds``.
        kinds: the encodings the model takes.
        vocab_size, d_model, num_heads, max_len: as :func:`_core_sizes` checks them.
    """

    position: str
    vocab_size: int
    d_model: int
    num_heads: int
    max_len: int
    embedding: nn.Embedding
    encoding: nn.Module
    rotation: nn.Module | None
    score_bias: ScoreBias | None

    def __init__(
        self,
        position: str,
        kinds: tuple[str, ...],
        vocab_size: int,
        d_model: int,
        num_heads: int,
        max_len: int,
    ) -> None:
        super().__init__()
        self.position = check_choice("position", position, kinds)
        self.vocab_size, self.d_model, self.num_heads, self.max_len = _core_sizes(
            vocab_size, d_model, num_heads, max_len
        )
        self.embedding = nn.Embedding(self.vocab_size, self.d_model)
        self.encoding, self.rotation, self.score_bias = _position_modules(
            self.position, self.d_model, self.num_heads, self.max_len
        )


class ShiftedCopyModel(_EmbeddedPositions):
    """Embedding, one causal multi-head attention block with an MLP, and a linear read-out.

    Pre-norm residual blocks: ``x = E(tokens)`` plus the additive encoding if any, then
    ``x + Attention(LayerNorm(x))``, then ``x + MLP(LayerNorm(x))``, a final ``LayerNorm`` and
    the read-out. Attention is :func:`pe_lib.models.attention.scaled_dot_product_attention` with a
    causal mask, after the encoding's rotation of queries and keys and with its score bias, if
    it has them.

    Args:
        position: one of :data:`POSITION_KINDS`.
        vocab_size: number of token ids, >= 1.
        d_model: embedding size (divisible by ``num_heads``; ``d_model // num_heads`` even
            for ``"rope"``).
        num_heads: attention heads, >= 1.
        max_len: table size of the additive encodings; for ``"learned"`` the longest
            sequence the model accepts.

    Attributes:
        encoding: the module adding positions to the embeddings (``nn.Identity`` if none).
        rotation: the module rotating queries and keys, or ``None``.
        score_bias: the function giving the attention-score bias, or ``None``.

    Shapes:
        ``tokens``: ``(batch, seq_len)`` int64 -> logits ``(batch, seq_len, vocab_size)``;
        with ``return_weights=True`` also the attention weights
        ``(batch, num_heads, seq_len, seq_len)``, whose row ``i`` is query ``i``'s weights on
        keys ``0 .. seq_len - 1`` (zero after ``i``).
    """

    head_dim: int
    norm_attention: nn.LayerNorm
    qkv: nn.Linear
    attention_out: nn.Linear
    norm_mlp: nn.LayerNorm
    mlp: nn.Sequential
    norm_out: nn.LayerNorm
    read_out: nn.Linear

    def __init__(
        self,
        position: str,
        *,
        vocab_size: int = 16,
        d_model: int = 32,
        num_heads: int = 4,
        max_len: int = 512,
    ) -> None:
        # Parameters are created (and drawn from the global RNG) in this order: embedding,
        # encoding, attention, MLP, read-out. Encodings without parameters draw nothing.
        kinds = ("none", *ENCODINGS)
        super().__init__(position, kinds, vocab_size, d_model, num_heads, max_len)
        self.head_dim = self.d_model // self.num_heads
        self.norm_attention = nn.LayerNorm(self.d_model)
        self.qkv = nn.Linear(self.d_model, 3 * self.d_model)
        self.attention_out = nn.Linear(self.d_model, self.d_model)
        self.norm_mlp = nn.LayerNorm(self.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(self.d_model, 4 * self.d_model),
            nn.GELU(),
            nn.Linear(4 * self.d_model, self.d_model),
        )
        self.norm_out = nn.LayerNorm(self.d_model)
        self.read_out = nn.Linear(self.d_model, self.vocab_size)

    def extra_repr(self) -> str:
        """The position choice, shown in ``repr(model)``."""
        return f"position={self.position!r}"

    def _attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x``: ``(batch, L, d_model)`` -> output ``(batch, L, d_model)``, weights ``(batch, heads, L, L)``."""
        out, weights = _causal_attention(
            x, self.qkv, self.attention_out, self.num_heads, self.rotation, self.score_bias
        )
        assert weights is not None  # with_weights=True returns them
        return out, weights

    @overload
    def forward(
        self, tokens: torch.Tensor, *, return_weights: Literal[False] = False
    ) -> torch.Tensor: ...

    @overload
    def forward(
        self, tokens: torch.Tensor, *, return_weights: Literal[True]
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def forward(
        self, tokens: torch.Tensor, *, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits for ``tokens``; with ``return_weights=True``, ``(logits, attention weights)``.

        Args:
            tokens: int64 ids in ``[0, vocab_size)``, shape ``(batch, seq_len)``, ``seq_len >= 1``.
            return_weights: also return the attention weights,
                ``(batch, num_heads, seq_len, seq_len)``.
        """
        _check_tokens(tokens, self.vocab_size)
        if not isinstance(return_weights, bool):
            raise TypeError(
                f"return_weights must be a bool, got {return_weights!r} of type "
                f"{type(return_weights).__name__}"
            )
        x = self.encoding(self.embedding(tokens))
        mixed, weights = self._attention(self.norm_attention(x))
        x = x + mixed
        x = x + self.mlp(self.norm_mlp(x))
        logits: torch.Tensor = self.read_out(self.norm_out(x))
        return (logits, weights) if return_weights else logits


def train(
    model: ShiftedCopyModel,
    *,
    steps: int = 300,
    seq_len: int = 32,
    batch_size: int = 32,
    lag: int = 1,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Trains ``model`` in place with Adam on fresh random batches; returns the loss per step.

    Args:
        model: the model to train (left in eval mode afterwards).
        steps: number of optimizer steps, >= 1.
        seq_len: length of the training sequences, > ``lag``.
        batch_size: sequences per step, >= 1.
        lag: the shift of the copy task, >= 1.
        lr: Adam's learning rate, a finite float > 0.
        seed: seed of the batches' generator, an int in ``[0, 2**53 - 1]``.

    Returns:
        the cross-entropy loss of each step, ``steps`` floats.
    """
    check_instance("model", model, ShiftedCopyModel)
    steps = check_positive_int("steps", steps)
    lr = check_real("lr", lr, above=0.0)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))

    def next_batch() -> tuple[torch.Tensor, torch.Tensor]:
        return shifted_copy_batch(
            batch_size, seq_len, vocab_size=model.vocab_size, lag=lag, generator=generator
        )

    return _fit(model, next_batch, steps, lr)


@torch.no_grad()
def evaluate(
    model: ShiftedCopyModel,
    seq_len: int,
    *,
    num_sequences: int = 256,
    lag: int = 1,
    seed: int = 1,
) -> float:
    """Fraction of positions ``t >= lag`` where the model's top token is ``tokens[t - lag]``.

    Args:
        model: the model to score (its training mode is restored afterwards).
        seq_len: length of the test sequences, > ``lag``.
        num_sequences: number of random test sequences, >= 1.
        lag: the shift of the copy task, >= 1.
        seed: seed of the sequences' generator, an int in ``[0, 2**53 - 1]``.
    """
    check_instance("model", model, ShiftedCopyModel)
    num_sequences = check_positive_int("num_sequences", num_sequences)
    generator = torch.Generator().manual_seed(check_nonnegative_int("seed", seed))
    tokens, targets = shifted_copy_batch(
        num_sequences, seq_len, vocab_size=model.vocab_size, lag=lag, generator=generator
    )
    was_training = model.training
    model.eval()
    predictions = model(tokens).argmax(dim=-1)
    model.train(was_training)
    answered = targets != IGNORE_INDEX
    return float((predictions[answered] == targets[answered]).double().mean().item())


# --- the model core, shared with pe_lib.experiments.lm ------------------------------------------------------


def _core_sizes(
    vocab_size: object, d_model: object, num_heads: object, max_len: object
) -> tuple[int, int, int, int]:
    """The checked sizes ``(vocab_size, d_model, num_heads, max_len)``: positive ints, with
    ``num_heads`` dividing ``d_model``."""
    vocab_size = check_positive_int("vocab_size", vocab_size)
    d_model = check_positive_int("d_model", d_model)
    num_heads = check_positive_int("num_heads", num_heads)
    max_len = check_positive_int("max_len", max_len)
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} must be divisible by num_heads, got num_heads={num_heads}"
        )
    return vocab_size, d_model, num_heads, max_len


def _position_modules(
    position: str, d_model: int, num_heads: int, max_len: int
) -> tuple[nn.Module, nn.Module | None, ScoreBias | None]:
    """The encoding's three parts, from :data:`ENCODINGS` (``"none"``: none of them).

    Returns ``(additive module or nn.Identity, rotation module or None, score bias or None)``;
    a ``ValueError`` names the sizes the encoding cannot be built with.
    """
    head_dim = d_model // num_heads
    spec = ENCODINGS.get(position)
    try:
        additive = spec.additive if spec is not None else None
        encoding = nn.Identity() if additive is None else additive(d_model, max_len, 0.0)
        rotation = spec.rotation if spec is not None else None
        rotary = None if rotation is None else rotation(head_dim)
    except ValueError as error:
        raise ValueError(
            f"position={position!r} cannot be built with d_model={d_model}, "
            f"num_heads={num_heads} (head_dim={head_dim}), max_len={max_len}: {error}"
        ) from error
    return encoding, rotary, spec.score_bias if spec is not None else None


def _causal_attention(
    x: torch.Tensor,
    qkv: nn.Linear,
    attention_out: nn.Linear,
    num_heads: int,
    rotation: nn.Module | None,
    score_bias: ScoreBias | None,
    *,
    with_weights: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Causal multi-head self-attention of ``x``, ``(batch, L, d_model)``.

    Returns the output ``(batch, L, d_model)`` and the weights ``(batch, heads, L, L)``, from
    :func:`pe_lib.models.attention.scaled_dot_product_attention`; with ``with_weights=False``, the
    output alone (and ``None``) from ``torch.nn.functional.scaled_dot_product_attention``, the
    same formula in a fused kernel that never stores the weights (the language model's).
    """
    batch, seq_len, d_model = x.shape
    head_dim = d_model // num_heads
    q, k, v = (
        t.view(batch, seq_len, num_heads, head_dim).transpose(1, 2) for t in qkv(x).chunk(3, dim=-1)
    )  # each (batch, heads, seq_len, head_dim)
    if rotation is not None:
        q, k = rotation(q, k)
    bias = (
        None
        if score_bias is None
        else score_bias(num_heads, seq_len, seq_len, dtype=q.dtype, device=q.device)
    )  # (heads, L, L)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device).tril()
    weights: torch.Tensor | None = None
    if with_weights:
        mixed, weights = scaled_dot_product_attention(q, k, v, mask=causal, bias=bias)
    elif bias is None:
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        mixed = F.scaled_dot_product_attention(
            q, k, v, attn_mask=bias.masked_fill(~causal, -math.inf)
        )
    mixed = mixed.transpose(1, 2).reshape(batch, seq_len, d_model)
    out: torch.Tensor = attention_out(mixed)
    return out, weights


def _check_id_tensor(
    name: str, ids: object, vocab_size: int, *, ndim: int, expected: str, shortest: int, why: str
) -> torch.Tensor:
    """``ids``: an int64 tensor of ``ndim`` dimensions (``expected`` describes it) holding at
    least ``shortest`` ids (``why`` says what that is), each in ``[0, vocab_size)``."""
    ids = check_int64_tensor(name, ids, ndim, expected)
    if ids.numel() < shortest:
        raise ValueError(f"{name} must hold at least {why}, got shape {tuple(ids.shape)}")
    check_ids_below(name, ids, vocab_size)
    return ids


def _check_tokens(tokens: object, vocab_size: int) -> None:
    """``tokens`` must be int64 ids in ``[0, vocab_size)`` of shape ``(batch, seq_len >= 1)``."""
    _check_id_tensor(
        "tokens",
        tokens,
        vocab_size,
        ndim=2,
        expected="an int64 tensor of shape (batch, seq_len)",
        shortest=1,
        why="one token per sequence",
    )


def _fit(
    model: nn.Module,
    next_batch: Callable[[], tuple[torch.Tensor, torch.Tensor]],
    steps: int,
    lr: float,
) -> list[float]:
    """Adam (``torch.optim.Adam``'s defaults) on ``steps`` batches of ``(tokens, targets)``; the
    model is left in eval mode.

    The loss is the cross-entropy of ``model(tokens)``, ``(batch, L, vocab)``, against
    ``targets``, ``(batch, L)``, with ``IGNORE_INDEX`` entries left out. Returns each step's loss.
    """
    step = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses: list[float] = []
    for _ in range(steps):
        tokens, targets = next_batch()
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)
        step.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        step.step()
        losses.append(float(loss.item()))
    model.eval()
    return losses
