"""``torch.nn.Module`` wrappers that *add* a position table to token embeddings.

Both take token embeddings ``x`` of shape ``(batch, seq_len, d_model)`` and return
``dropout(x + P[offset : offset + seq_len])`` of the same shape, dtype and device, where ``P`` is
the position table: the fixed sinusoidal one of Vaswani et al. (2017), section 3.5, or a learned
one, which the same section reports trying ("learned positional embeddings", citing Gehring et
al., 2017) with nearly identical results (its Table 3, row E).

Compilation: both modules compile with ``torch.compile(fullgraph=True)`` (one graph, no
break) and export with ``torch.export.export``. ``torch.jit.trace`` and ``torch.jit.script``,
which torch deprecates in favour of those two, are not supported: ``torch.jit.script`` raises
``TypeError`` naming the alternatives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from .._precision import compute_dtype_for
from .._validation import (
    check_base,
    check_dropout,
    check_features,
    check_memory,
    check_nonnegative_int,
    check_position_span,
    check_positive_int,
    check_table_size,
    naming_allocation,
)
from .sinusoidal import DEFAULT_BASE, sinusoidal_table

__all__ = ["LearnedPositionalEncoding", "PositionalEncoding", "SinusoidalPositionalEncoding"]


def _refuse_scripting(module: nn.Module) -> None:
    raise TypeError(
        f"{type(module).__name__} cannot be compiled with torch.jit.script (its argument checks "
        "are Python); use torch.compile(module) or torch.export.export instead"
    )


def _check_offset(offset: object, x: torch.Tensor) -> int:
    """``offset`` for the positions of ``x``: the last one at most ``2**53 - 1``."""
    offset = check_nonnegative_int("offset", offset)
    check_position_span("offset", offset, "x.shape[1]", x.shape[1])
    return offset


class SinusoidalPositionalEncoding(nn.Module):
    r"""Adds the fixed sinusoidal encoding to token embeddings, then applies dropout.

    .. math::

        \mathrm{out} = \mathrm{dropout}\big(x + PE[\mathrm{offset} : \mathrm{offset}+L]\big),

        PE(pos, 2i) = \sin(pos\,\omega_i),\ PE(pos, 2i+1) = \cos(pos\,\omega_i).

    The first ``max_len`` rows of the table are computed once, in float64, and kept in a
    *non-persistent* buffer named ``pe``: it moves with ``.to(device)``, never reaches an
    optimizer, and is absent from ``state_dict()`` (it is a function of ``d_model`` and
    ``base``, so a checkpoint need not carry it). Casting the module (``.half()``,
    ``.to(torch.bfloat16)``) leaves the buffer in float64; each forward call casts the rows
    it needs to the dtype of ``x`` and adds them in that dtype: bfloat16 in gives bfloat16
    out, ``x + PE.to(x.dtype)`` with ``PE`` the float64 values (never float32 angles).

    ``max_len`` is a cache size, not a limit: positions at or beyond ``max_len`` are computed
    from the formula on the fly (the same values, at the cost of recomputing that window), up
    to position ``2**53 - 1``, the last one float64 holds exactly.

    Args:
        d_model: embedding size, >= 1 (odd sizes follow the formula: the last column is a sine).
        max_len: number of positions computed ahead of time, >= 1.
        dropout: dropout probability applied to the sum, in [0, 1).
        base: frequency base, a finite float > 1.

    Shapes:
        ``x``: ``(batch, seq_len, d_model)`` with ``seq_len >= 1``, any floating dtype;
        output: the same.

    A ``state_dict`` saved by the classic tutorial module, which stores the table under the
    key ``pe``, loads with ``strict=True``: the stored table is checked for shape, one of
    ``(max_len, d_model)``, ``(1, max_len, d_model)`` (a leading batch axis) or ``(max_len, 1,
    d_model)`` (the PyTorch tutorial's), any ``max_len``, and ignored.

    Compilation: see :mod:`pe_lib.encodings.modules`. A traced module reads the cached table only, so its
    trace holds for ``offset + seq_len <= max_len``.
    """

    pe: torch.Tensor
    d_model: int
    max_len: int
    base: float
    dropout: nn.Dropout

    def __init__(
        self, d_model: int, max_len: int = 5000, dropout: float = 0.1, *, base: float = DEFAULT_BASE
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)
        self.base = check_base("base", base)
        self.dropout = nn.Dropout(p=check_dropout("dropout", dropout))
        table = sinusoidal_table(self.max_len, self.d_model, base=self.base, dtype=torch.float64)
        self.register_buffer("pe", table, persistent=False)

    def extra_repr(self) -> str:
        """The constructor's arguments, shown in ``repr(module)``."""
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"

    def encoding(self, seq_len: int, offset: int = 0) -> torch.Tensor:
        """Rows ``offset .. offset + seq_len - 1`` of the table, float64, shape ``(seq_len, d_model)``.

        Args:
            seq_len: number of rows, >= 1.
            offset: first position, >= 0; the last, ``offset + seq_len - 1``, at most
                ``2**53 - 1``.
        """
        seq_len = check_positive_int("seq_len", seq_len)
        offset = check_nonnegative_int("offset", offset)
        check_position_span("offset", offset, "seq_len", seq_len)
        return self._rows(seq_len, offset)

    def _rows(self, seq_len: int, offset: int) -> torch.Tensor:
        if offset + seq_len <= self.max_len:
            return self.pe[offset : offset + seq_len]
        return sinusoidal_table(
            seq_len,
            self.d_model,
            base=self.base,
            offset=offset,
            dtype=self.pe.dtype,
            device=self.pe.device,
        )

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(batch, seq_len, d_model)`` -> the same shape, dtype and device.

        Args:
            x: token embeddings, ``seq_len >= 1``.
            offset: position of the first token, >= 0 (e.g. the number of tokens already
                decoded); ``offset + seq_len - 1`` must be at most ``2**53 - 1``.
        """
        check_features("x", x, self.d_model)
        offset = _check_offset(offset, x)
        table = self._rows(x.shape[1], offset)
        out: torch.Tensor = self.dropout(x + table.to(dtype=x.dtype, device=x.device))
        return out

    def __prepare_scriptable__(self) -> nn.Module:
        _refuse_scripting(self)
        return self

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> nn.Module:
        # Follow device moves, but keep the table's float64 values through dtype casts.
        table = self.pe
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]
        self.pe = table.to(device=self.pe.device, dtype=compute_dtype_for(self.pe.device))
        return self

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        stored = state_dict.pop(prefix + "pe", None)  # type: ignore[attr-defined]
        if stored is not None and not _is_stored_table(stored, self.d_model):
            got = (
                f"shape {tuple(stored.shape)}"
                if isinstance(stored, torch.Tensor)
                else f"{type(stored).__name__}"
            )
            raise ValueError(
                f"state_dict[{prefix + 'pe'!r}] must be a table of shape (max_len, d_model), "
                f"(1, max_len, d_model) or (max_len, 1, d_model) with d_model={self.d_model} "
                f"(any max_len: it is checked and ignored), got {got}"
            )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


def _is_stored_table(stored: object, d_model: int) -> bool:
    """Whether ``stored`` is a position table as the tutorials keep it: ``(max_len, d_model)``,
    ``(1, max_len, d_model)`` (a leading batch axis) or ``(max_len, 1, d_model)`` (the PyTorch
    tutorial's, sequence first)."""
    if not isinstance(stored, torch.Tensor) or stored.shape[-1:] != (d_model,):
        return False
    return stored.dim() == 2 or (stored.dim() == 3 and 1 in stored.shape[:2])


class PositionalEncoding(SinusoidalPositionalEncoding):
    """The article's name and signature, ``PositionalEncoding(d_model, max_len=5000, dropout=0.1)``.

    Identical to :class:`SinusoidalPositionalEncoding`.
    """


class LearnedPositionalEncoding(nn.Module):
    r"""Adds a trainable position table, then applies dropout (as BERT and GPT-2 do).

    .. math::

        \mathrm{out} = \mathrm{dropout}\big(x + P[\mathrm{offset} : \mathrm{offset}+L]\big),

        P \in \mathbb{R}^{\mathrm{max\_len} \times d_{\mathrm{model}}}\ \text{learned}.

    The table holds ``max_len * d_model`` parameters, initialised as BERT initialises its
    position table: google-research/bert's ``modeling.py`` draws it (in
    ``embedding_postprocessor``) with ``create_initializer(initializer_range)``, a
    ``tf.truncated_normal_initializer(stddev=0.02)``, which re-draws every value more than two
    standard deviations from the mean. Here that is ``torch.nn.init.trunc_normal_`` with
    ``std=0.02`` and bounds ``a=-0.04``, ``b=0.04``: a normal of standard deviation 0.02 cut
    at two standard deviations, whose own standard deviation is therefore smaller, about
    0.0176. GPT-2's reference code differs: it initialises the position table ``wpe`` from an
    untruncated normal of standard deviation 0.01 and the token table ``wte`` with 0.02
    (openai/gpt-2, ``src/model.py``, function ``model``).

    Unlike the sinusoidal encoding it has no row for a position it was not built with: asking
    for one raises ``ValueError``.

    Args:
        d_model: embedding size, >= 1.
        max_len: number of positions with a learned row, >= 1.
        dropout: dropout probability applied to the sum, in [0, 1).

    Shapes:
        ``x``: ``(batch, seq_len, d_model)`` with ``seq_len >= 1``, any floating dtype;
        output: the same.

    Compilation: see :mod:`pe_lib.encodings.modules`.
    """

    #: standard deviation of the normal the table is drawn from, before truncation at
    #: two of them (BERT's ``initializer_range``)
    INIT_STD = 0.02

    d_model: int
    max_len: int
    dropout: nn.Dropout
    weight: nn.Parameter

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.1) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)
        self.dropout = nn.Dropout(p=check_dropout("dropout", dropout))
        check_table_size("max_len", self.max_len, "d_model", self.d_model)
        entries, dtype = self.max_len * self.d_model, torch.get_default_dtype()
        what = (
            f"LearnedPositionalEncoding(d_model={self.d_model}, max_len={self.max_len}): "
            f"{entries} {str(dtype).removeprefix('torch.')} parameters"
        )
        check_memory(what, entries * dtype.itemsize)
        with naming_allocation(what, entries * dtype.itemsize):
            self.weight = nn.Parameter(torch.empty(self.max_len, self.d_model))
        std = self.INIT_STD
        nn.init.trunc_normal_(self.weight, std=std, a=-2 * std, b=2 * std)

    def extra_repr(self) -> str:
        """The constructor's arguments, shown in ``repr(module)``."""
        return f"d_model={self.d_model}, max_len={self.max_len}"

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(batch, seq_len, d_model)`` -> the same shape, dtype and device.

        Args:
            x: token embeddings, ``seq_len >= 1``.
            offset: position of the first token, >= 0, with ``offset + seq_len <= max_len``.
        """
        check_features("x", x, self.d_model)
        offset = _check_offset(offset, x)
        seq_len = x.shape[1]
        end = offset + seq_len
        if end > self.max_len:
            raise ValueError(
                f"LearnedPositionalEncoding has max_len={self.max_len} learned positions, but "
                f"positions {offset}..{end - 1} were asked for (offset={offset} + "
                f"seq_len={seq_len} = {end} > max_len): build it with max_len >= {end}, or "
                "split the input into windows of at most max_len positions"
            )
        table = self.weight[offset : offset + x.shape[1]]  # by x's size, traced or not
        out: torch.Tensor = self.dropout(x + table.to(dtype=x.dtype, device=x.device))
        return out

    def __prepare_scriptable__(self) -> nn.Module:
        _refuse_scripting(self)
        return self
