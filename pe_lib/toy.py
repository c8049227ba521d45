"""A toy task where order matters, and a one-layer causal Transformer to learn it.

The task is a *shifted copy*: at every position ``t >= lag`` the model must output the token it
saw ``lag`` positions earlier, ``target[t] = tokens[t - lag]``. Without position information a
causal attention layer cannot single out the token ``lag`` steps back, so the task separates
models by how they encode positions; trained on short sequences and tested on longer ones it
measures length generalisation.

The model's ``position`` argument picks how positions enter:

* ``"none"``: no position information (a baseline; the causal mask alone leaks a little);
* ``"sinusoidal"``: :class:`pe_lib.modules.SinusoidalPositionalEncoding` added to the embeddings;
* ``"learned"``: :class:`pe_lib.modules.LearnedPositionalEncoding` added to the embeddings;
* ``"rope"``: queries and keys rotated by :func:`pe_lib.rope.apply_rope` (Su et al., 2021);
* ``"alibi"``: the linear distance penalty :func:`pe_lib.alibi.alibi_bias` added to the scores
  (Press et al., 2022).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn
from torch.nn import functional as F

from ._validation import check_int, check_layout, check_positive_int
from .modules import LearnedPositionalEncoding, SinusoidalPositionalEncoding

__all__ = ["POSITION_KINDS", "ShiftedCopyModel", "evaluate", "shifted_copy_batch", "train"]

#: How :class:`ShiftedCopyModel` tells positions apart: no encoding, an added sinusoidal or
#: learned table, rotary embeddings on queries and keys, or ALiBi distance biases.
POSITION_KINDS = ("none", "sinusoidal", "learned", "rope", "alibi")

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
    if lag >= seq_len:
        raise ValueError(f"lag must be smaller than seq_len={seq_len}, got {lag}")
    tokens = torch.randint(vocab_size, (batch_size, seq_len), generator=generator)
    targets = torch.full_like(tokens, IGNORE_INDEX)
    targets[:, lag:] = tokens[:, :-lag]
    return tokens, targets


class ShiftedCopyModel(nn.Module):
    """Embedding, one causal multi-head attention block with an MLP, and a linear read-out.

    Args:
        position: one of :data:`POSITION_KINDS`.
        vocab_size: number of token ids.
        d_model: embedding size (divisible by ``num_heads``; ``d_model // num_heads`` even
            for ``"rope"``).
        num_heads: attention heads.
        max_len: table size of the additive encodings; for ``"learned"`` the longest
            sequence the model accepts.

    Shapes:
        ``tokens``: ``(batch, seq_len)`` int64 -> logits ``(batch, seq_len, vocab_size)``.
    """

    def __init__(
        self,
        position: str,
        *,
        vocab_size: int = 16,
        d_model: int = 32,
        num_heads: int = 4,
        max_len: int = 512,
    ) -> None:
        super().__init__()
        self.position = check_layout(position, POSITION_KINDS, name="position")
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        self.num_heads = check_positive_int("num_heads", num_heads)
        self.max_len = check_positive_int("max_len", max_len)
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={d_model} must be divisible by num_heads, got num_heads={num_heads}"
            )
        self.head_dim = self.d_model // self.num_heads
        self.embedding = nn.Embedding(self.vocab_size, self.d_model)
        if self.position == "sinusoidal":
            self.encoding: nn.Module = SinusoidalPositionalEncoding(self.d_model, self.max_len, 0.0)
        elif self.position == "learned":
            self.encoding = LearnedPositionalEncoding(self.d_model, self.max_len, 0.0)
        else:
            self.encoding = nn.Identity()
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

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq_len, _ = x.shape
        q, k, v = (
            t.view(batch, seq_len, self.num_heads, self.head_dim).transpose(1, 2)
            for t in self.qkv(x).chunk(3, dim=-1)
        )  # each (batch, heads, seq_len, head_dim)
        if self.position == "rope":
            from .rope import apply_rope

            q, k = apply_rope(q), apply_rope(k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (batch, heads, L, L)
        if self.position == "alibi":
            from .alibi import alibi_bias

            scores = scores + alibi_bias(self.num_heads, seq_len, seq_len).to(scores.dtype)
        causal = torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device).tril()
        weights = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, seq_len, self.d_model)
        return self.attention_out(mixed)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.int64 or tokens.dim() != 2:
            raise TypeError(
                "tokens must be an int64 tensor of shape (batch, seq_len), got "
                + (
                    f"{tokens.dtype} {tuple(tokens.shape)}"
                    if isinstance(tokens, torch.Tensor)
                    else type(tokens).__name__
                )
            )
        if tokens.numel() == 0:
            raise ValueError(
                f"tokens must hold at least one token per sequence, got shape {tuple(tokens.shape)}"
            )
        lowest, highest = int(tokens.min()), int(tokens.max())
        if lowest < 0 or highest >= self.vocab_size:
            raise ValueError(
                f"tokens must be ids in [0, vocab_size={self.vocab_size}), got values from "
                f"{lowest} to {highest}"
            )
        x = self.encoding(self.embedding(tokens))
        x = x + self._attention(self.norm_attention(x))
        x = x + self.mlp(self.norm_mlp(x))
        return self.read_out(self.norm_out(x))


def _check_model(model: object) -> None:
    if not isinstance(model, ShiftedCopyModel):
        raise TypeError(f"model must be a ShiftedCopyModel, got {type(model).__name__}")


def _check_learning_rate(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"lr must be a positive float, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"lr must be a finite float > 0, got {value!r}")
    return value


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
    """Trains ``model`` in place with Adam on fresh random batches; returns the loss per step."""
    _check_model(model)
    steps = check_positive_int("steps", steps)
    lr = _check_learning_rate(lr)
    generator = torch.Generator().manual_seed(check_int("seed", seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        tokens, targets = shifted_copy_batch(
            batch_size, seq_len, vocab_size=model.vocab_size, lag=lag, generator=generator
        )
        logits = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def evaluate(
    model: ShiftedCopyModel,
    seq_len: int,
    *,
    num_sequences: int = 256,
    lag: int = 1,
    seed: int = 1,
) -> float:
    """Fraction of positions ``t >= lag`` where the model's top token is ``tokens[t - lag]``."""
    _check_model(model)
    num_sequences = check_positive_int("num_sequences", num_sequences)
    generator = torch.Generator().manual_seed(check_int("seed", seed))
    tokens, targets = shifted_copy_batch(
        num_sequences, seq_len, vocab_size=model.vocab_size, lag=lag, generator=generator
    )
    was_training = model.training
    model.eval()
    predictions = model(tokens).argmax(dim=-1)
    model.train(was_training)
    answered = targets != IGNORE_INDEX
    return (predictions[answered] == targets[answered]).double().mean().item()
