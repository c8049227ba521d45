"""The registry of positional encodings: one entry per encoding, one contract for all.

An encoding tells a Transformer where each token sits in one (or both) of two places:

* **added to the token embeddings** before the first layer (*absolute* encodings: the
  sinusoidal table, a learned table). The entry's ``additive`` factory builds a module
  ``x -> x + P[offset : offset + seq_len]``;
* **inside attention**, acting on relative distances (RoPE rotates queries and keys, ALiBi adds
  a distance penalty to the scores). The entry's ``rotation`` factory builds a module
  ``(q, k) -> (q_rotated, k_rotated)``; its ``score_bias`` function returns a bias to add to the
  scaled scores, which :func:`pe_lib.models.attention.scaled_dot_product_attention` takes as ``bias``.

The toy model (:class:`pe_lib.experiments.toy.ShiftedCopyModel`), the benchmarks (``benchmarks/``) and the
API page read this registry, so a new encoding (say xPos) is one module that implements it plus
one entry in :data:`ENCODINGS` (or a :func:`register` call, from outside the package); nothing
else branches on encoding names. Each entry declares what it guarantees (:data:`PROPERTIES`),
and the contract tests in ``tests/lib/test_encodings.py`` check exactly that, on every entry.

The encodings other than RoPE (:mod:`pe_lib.rope`) are this package's modules:
:mod:`~pe_lib.encodings.sinusoidal` (the fixed table), :mod:`~pe_lib.encodings.modules` (the
``torch.nn.Module`` wrappers that add a table), :mod:`~pe_lib.encodings.relative` (the shift
matrix), :mod:`~pe_lib.encodings.relative_bias` (Shaw's and T5's learned biases) and
:mod:`~pe_lib.encodings.alibi`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from ..rope import RotaryEmbedding
from .alibi import alibi_bias
from .modules import LearnedPositionalEncoding, SinusoidalPositionalEncoding

__all__ = [
    "ENCODINGS",
    "PROPERTIES",
    "AdditiveFactory",
    "Encoding",
    "RotationFactory",
    "ScoreBias",
    "register",
]

#: What an entry may guarantee beyond the contract of its parts; the contract tests check each
#: property an entry declares, on that entry.
PROPERTIES: Mapping[str, str] = {
    "preserves_norms": "the rotation keeps the norm of every query and key (a pure rotation)",
    "relative_scores": "rotated scores q_m . k_n depend on the distance n - m only",
}


class AdditiveFactory(Protocol):
    """Builds the module that adds positions to embeddings: ``(d_model, max_len, dropout)``.

    The module maps ``x`` of shape ``(batch, seq_len, d_model)`` (and an optional ``offset``) to
    ``dropout(x + P[offset : offset + seq_len])`` of the same shape; ``max_len`` is the number of
    positions it is built for (a cache size for fixed tables, the table size for learned ones).
    """

    def __call__(self, d_model: int, max_len: int, dropout: float) -> nn.Module: ...


class RotationFactory(Protocol):
    """Builds the module that rotates queries and keys: ``(head_dim) -> module``.

    The module maps ``(q, k)``, each ``(..., seq_len, head_dim)``, to the rotated pair at
    positions ``0 .. seq_len - 1`` (``offset`` as an optional third argument), same shapes.
    """

    def __call__(self, head_dim: int) -> nn.Module: ...


class ScoreBias(Protocol):
    """The bias added to the scaled attention scores: shape ``(num_heads, q_len, k_len)``.

    Queries are the last ``q_len`` of the ``k_len`` key positions; ``-inf`` marks keys a query
    must not see.
    """

    def __call__(
        self,
        num_heads: int,
        q_len: int,
        k_len: int,
        *,
        dtype: torch.dtype,
        device: torch.device | str | None,
    ) -> torch.Tensor: ...


@dataclass(frozen=True)
class Encoding:
    """One positional encoding, as the toy model, the benchmarks and the API page use it.

    Attributes:
        name: the registry key, also the toy model's ``position`` argument.
        summary: one line saying what the encoding does.
        reference: the primary source (paper, section or equation).
        api: the qualified names of its public functions and classes, e.g.
            ``"pe_lib.rope.apply_rope"``; the API page documents each one's module and the
            tests cover each one.
        additive: factory of the module adding positions to the embeddings, or ``None``.
        rotation: factory of the module rotating queries and keys, or ``None``.
        score_bias: the bias added to attention scores, or ``None``.
        properties: the names of :data:`PROPERTIES` it guarantees (RoPE: both; xPos, which
            scales queries and keys, only ``"relative_scores"``).
    """

    name: str
    summary: str
    reference: str
    api: tuple[str, ...]
    additive: AdditiveFactory | None = None
    rotation: RotationFactory | None = None
    score_bias: ScoreBias | None = None
    properties: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not (self.additive or self.rotation or self.score_bias):
            raise ValueError(
                f"Encoding {self.name!r} must act somewhere: give additive, rotation or score_bias"
            )
        unknown = sorted(set(self.properties) - set(PROPERTIES))
        if unknown:
            raise ValueError(
                f"Encoding {self.name!r}: properties must be among {sorted(PROPERTIES)}, "
                f"got {unknown}"
            )
        if self.properties and self.rotation is None:
            raise ValueError(
                f"Encoding {self.name!r}: properties {sorted(self.properties)} are about a "
                "rotation, but it has none"
            )


def _entries(*encodings: Encoding) -> dict[str, Encoding]:
    return {encoding.name: encoding for encoding in encodings}


# pe_lib's own encodings, in the order the book introduces them.
_REGISTRY: dict[str, Encoding] = _entries(
    Encoding(
        name="sinusoidal",
        summary="fixed sines and cosines of geometric wavelengths, added to the embeddings",
        reference="Vaswani et al. (2017), Attention Is All You Need (arXiv:1706.03762), section 3.5",
        api=(
            "pe_lib.encodings.sinusoidal.sinusoidal_table",
            "pe_lib.encodings.sinusoidal.angular_frequencies",
            "pe_lib.encodings.modules.SinusoidalPositionalEncoding",
        ),
        additive=SinusoidalPositionalEncoding,
    ),
    Encoding(
        name="learned",
        summary="a trainable table with one row per position, added to the embeddings",
        reference="Gehring et al. (2017), Convolutional Sequence to Sequence Learning (arXiv:1705.03122), section 3.1",
        api=("pe_lib.encodings.modules.LearnedPositionalEncoding",),
        additive=LearnedPositionalEncoding,
    ),
    Encoding(
        name="rope",
        summary="queries and keys rotated pair by pair by position times frequency",
        reference="Su et al. (2021), RoFormer (arXiv:2104.09864)",
        api=("pe_lib.rope.apply_rope", "pe_lib.rope.rope_angles", "pe_lib.rope.RotaryEmbedding"),
        rotation=RotaryEmbedding,
        properties=frozenset({"preserves_norms", "relative_scores"}),
    ),
    Encoding(
        name="alibi",
        summary="a head-specific linear distance penalty added to the attention scores",
        reference="Press et al. (2022), Train Short, Test Long (arXiv:2108.12409), section 3",
        api=("pe_lib.encodings.alibi.alibi_bias", "pe_lib.encodings.alibi.alibi_slopes"),
        score_bias=alibi_bias,
    ),
)
#: Every encoding pe_lib implements (and any added with :func:`register`), by name.
#:
#: :meta hide-value:
ENCODINGS: Mapping[str, Encoding] = _REGISTRY


def register(encoding: Encoding) -> Encoding:
    """Add ``encoding`` to :data:`ENCODINGS` (and so to the toy model, the benchmarks and the
    contract tests); a name already registered raises ``ValueError``. Returns ``encoding``."""
    if not isinstance(encoding, Encoding):
        raise TypeError(
            f"encoding must be an Encoding, got {encoding!r} of type {type(encoding).__name__}"
        )
    if encoding.name in ENCODINGS or encoding.name == "none":
        raise ValueError(
            f"encoding.name must be a new name, got {encoding.name!r}, which is taken "
            f"(registered: {', '.join(map(repr, ENCODINGS))}; 'none' means no encoding)"
        )
    _REGISTRY[encoding.name] = encoding
    return encoding


def _registry_table() -> str:
    rows = [
        f"* ``{e.name}``: {e.summary} ({e.reference}); "
        + ", ".join(f":obj:`{name}`" for name in e.api)
        for e in ENCODINGS.values()
    ]
    return "\n\nThe registry holds:\n\n" + "\n".join(rows) + "\n"


__doc__ = (__doc__ or "") + _registry_table()
