"""RoPE as a module: :class:`RotaryEmbedding` rotates the queries and keys of attention at a
position offset (the key-value cache's), from a cache of cos and sin tables (the formula is
:mod:`pe_lib.rope.formula`'s)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from .._precision import compute_dtype_for
from .._validation import (
    check_head_dim,
    check_layout,
    check_nonnegative_int,
    check_position_span,
    check_positive_int,
    check_rotary_input,
)
from . import fast
from .formula import _rotate, _rotation_dtype, _tables
from .scaling import ScalingConfig, resolve_scaling

__all__ = ["RotaryEmbedding"]


class RotaryEmbedding(nn.Module):
    r"""Rotates queries and keys for attention (RoFormer), with a position offset for decoding.

    ``forward(q, k, offset)`` rotates both ``q`` and ``k`` at positions
    ``offset .. offset + seq_len - 1``. That is the key-value-cache convention: at each decoding
    step, pass only the *new* tokens' queries and keys with ``offset`` = the number of tokens
    already cached, then append the rotated keys to the cache. Cached keys are stored already
    rotated and are never passed again, so ``q`` and ``k`` must have the same ``seq_len``
    (a mismatch raises ``ValueError``). Decoding token by token this way gives exactly the
    rotation of the full sequence.

    The cosines and sines of positions ``0 .. max_len - 1`` (times the attention factor) are
    computed once from float64 angles and kept in *non-persistent* float64 buffers (float32 on
    Apple's MPS): they follow ``.to(device)``, keep their float64 values through dtype casts
    of the module, and ``state_dict()`` stays empty. ``max_len`` is a cache size, not a limit:
    positions beyond it are computed on the fly, with the same values. Nothing is mutated in
    ``forward``. ``torch.compile(fullgraph=True)`` compiles it in one graph; ``torch.jit.script``
    is refused.

    Dynamic NTK and the key-value cache. ``"dynamic"`` scaling changes the frequencies with the
    current length once it exceeds ``original_max_position_embeddings`` (``L``). Keys cached at
    earlier steps were rotated with the frequencies of *their* step, the new query with those of
    this step, so the score of a query and a cached key no longer depends only on their distance
    and differs from what the full sequence gives. A decoding call (``offset > 0``) that would
    do this, ``offset + seq_len > L`` with no fixed ``seq_len``, raises ``ValueError``. Two ways
    avoid it: pass ``seq_len=`` the same length at every call (the length of the whole
    generation, say), so that every call uses one set of frequencies; or keep the keys
    *unrotated* and rotate all of them again at each step with :func:`apply_rope` and the new
    length.

    Args:
        head_dim: size of each head's queries and keys, even and >= 2.
        base: frequency base, > 1 (default ``DEFAULT_BASE`` = 10000, or ``scaling``'s
            ``rope_theta``).
        layout: ``"interleaved"`` or ``"half"`` (see :func:`apply_rope`).
        scaling: ``None`` or a ``config.json`` ``rope_scaling`` mapping
            (:mod:`pe_lib.rope.scaling`), checked here once.
        max_len: number of positions whose cos and sin are cached, >= 1.

    Shapes:
        ``q``: ``(..., seq_len, head_dim)``; ``k``: ``(..., seq_len, head_dim)`` (leading
        dimensions may differ from ``q``'s, e.g. fewer key heads); outputs: the same as the
        inputs, dtype included.
    """

    cos_table: torch.Tensor
    sin_table: torch.Tensor

    def __init__(
        self,
        head_dim: int,
        *,
        base: float | None = None,
        layout: str = "interleaved",
        scaling: Mapping[str, Any] | ScalingConfig | None = None,
        max_len: int = 2048,
    ) -> None:
        super().__init__()
        self.head_dim: int = check_head_dim("head_dim", head_dim)
        self.scaling: ScalingConfig = resolve_scaling(scaling, base)
        self.base: float = self.scaling.base
        self.layout: str = check_layout("layout", layout)
        self.max_len: int = check_positive_int("max_len", max_len)
        device = torch.device("cpu")
        cos, sin = self._tables(torch.arange(self.max_len), self._cache_length() or 1, device)
        self.register_buffer("cos_table", cos, persistent=False)
        self.register_buffer("sin_table", sin, persistent=False)

    def _cache_length(self) -> int | None:
        """For a scaling whose frequencies depend on the length (``needs_seq_len``): the length
        ``L`` up to which they do not change, its ``original_max_position_embeddings`` (0 when
        it has none: they may change at any length). ``None`` for the other scalings."""
        if self.scaling.entry.needs_seq_len:
            return int(self.scaling.params.get("original_max_position_embeddings", 0))
        return None

    def _tables(
        self, positions: torch.Tensor, seq_len: int | None, device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The tables ``(len(positions), 2n)`` in the angle dtype (:func:`_tables`)."""
        dtype = compute_dtype_for(device)
        return _tables(
            self.scaling, self.head_dim, seq_len, positions.to(device), dtype, self.layout
        )

    def extra_repr(self) -> str:
        scaling = (
            "" if self.scaling.rope_type == "default" else f", scaling={self.scaling.rope_type!r}"
        )
        return (
            f"head_dim={self.head_dim}, base={self.base}, layout={self.layout!r}, "
            f"max_len={self.max_len}{scaling}"
        )

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        offset: int = 0,
        seq_len: int | None = None,
        *,
        out: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns ``(q_rot, k_rot)``, both rotated at positions ``offset .. offset + seq_len - 1``.

        ``seq_len`` (optional) is the length whose frequencies a scaling that depends on it
        (``"dynamic"``) uses, at least ``offset + q.shape[-2]``; default
        ``offset + q.shape[-2]`` (see the class docstring for decoding). Other scalings ignore
        it. ``out`` (optional): two buffers ``(q_out, k_out)`` of the shapes, dtypes and devices
        of ``q`` and ``k``, written and returned as :func:`apply_rope`'s ``out``.
        """
        q, k = check_rotary_input("q", q), check_rotary_input("k", k)
        if out is not None:
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(
                    f"out must be a tuple (q_out, k_out) of two tensors, got {type(out).__name__}"
                )
            outs = (fast.check_out("out[0]", out[0], q), fast.check_out("out[1]", out[1], k))
        offset = check_nonnegative_int("offset", offset)
        for name, t in (("q", q), ("k", k)):
            if t.shape[-1] != self.head_dim:
                raise ValueError(
                    f"{name} must have head_dim={self.head_dim} as its last dimension, "
                    f"got shape {tuple(t.shape)}"
                )
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(
                f"q and k must have the same seq_len (the new tokens; cached keys are stored "
                f"already rotated and are not passed again), got q {tuple(q.shape)} and "
                f"k {tuple(k.shape)}"
            )
        end = offset + q.shape[-2]
        check_position_span("offset", offset, "q.shape[-2]", q.shape[-2])
        if seq_len is not None:
            seq_len = check_positive_int("seq_len", seq_len)
            if seq_len < end:
                raise ValueError(
                    f"seq_len must be at least offset + q.shape[-2] = {end} (the last position "
                    f"+ 1), got seq_len={seq_len}"
                )
        cos, sin = self._window(offset, end, seq_len)
        tables: dict[tuple[torch.device, torch.dtype], tuple[torch.Tensor, torch.Tensor]] = {}
        rotated = []
        for i, t in enumerate((q, k)):
            key = (t.device, _rotation_dtype(t))
            if key not in tables:  # q and k alike (the usual case) share one cast
                tables[key] = cos.to(*key), sin.to(*key)
            rotated.append(_rotate(t, *tables[key], self.layout, None if out is None else outs[i]))
        return rotated[0], rotated[1]

    def _window(
        self, offset: int, end: int, seq_len: int | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of positions ``offset .. end - 1``, from the cache where it holds them."""
        cache_length = self._cache_length()
        if cache_length is None:
            length = None
        else:
            length = end if seq_len is None else seq_len
            if seq_len is None and offset > 0 and end > cache_length:
                raise ValueError(
                    f"{self.scaling.rope_type!r} scaling with a key-value cache: its frequencies "
                    f"depend on the sequence length (as dynamic NTK's do), and at offset={offset} the "
                    f"sequence "
                    f"reaches length {end} > original_max_position_embeddings={cache_length}, so "
                    f"they differ from those the cached keys were rotated with, and "
                    f"scores would no longer depend only on distance. Pass seq_len= one length "
                    f"for every call (e.g. the final length), or keep keys unrotated and rotate "
                    f"them all again with apply_rope at each step"
                )
        if end <= self.max_len and (length is None or length <= (cache_length or 0)):
            return self.cos_table[offset:end], self.sin_table[offset:end]
        positions = torch.arange(offset, end, device=self.cos_table.device)
        return self._tables(positions, length, self.cos_table.device)

    def __prepare_scriptable__(self) -> nn.Module:
        raise TypeError(
            "RotaryEmbedding cannot be compiled with torch.jit.script (its scaling is a Python "
            "mapping); use torch.compile"
        )

    def _apply(
        self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True
    ) -> RotaryEmbedding:
        # Follow device moves, but keep the tables' float64 values through dtype casts.
        tables = self.cos_table, self.sin_table
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]
        dtype = compute_dtype_for(self.cos_table.device)
        self.cos_table = tables[0].to(device=self.cos_table.device, dtype=dtype)
        self.sin_table = tables[1].to(device=self.sin_table.device, dtype=dtype)
        return self
