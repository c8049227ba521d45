"""``torch.nn.Module`` wrappers: the fixed sinusoidal encoding and a learned one.

Both take token embeddings ``x`` of shape ``(batch, seq_len, d_model)`` and return
``dropout(x + P[offset : offset + seq_len])`` of the same shape, dtype and device, where ``P`` is
the position table (Vaswani et al., 2017, section 3.5; Devlin et al., 2019 for the learned one).
"""

from __future__ import annotations

import torch
from torch import nn

from ._validation import (
    check_base,
    check_dropout,
    check_features,
    check_nonnegative_int,
    check_positive_int,
)
from .sinusoidal import sinusoidal_table

__all__ = ["LearnedPositionalEncoding", "PositionalEncoding", "SinusoidalPositionalEncoding"]


def _table_dtype(device: torch.device) -> torch.dtype:
    """float64 wherever the device supports it (Apple's MPS does not)."""
    return torch.float32 if device.type == "mps" else torch.float64


class SinusoidalPositionalEncoding(nn.Module):
    r"""Adds the fixed sinusoidal encoding to token embeddings, then applies dropout.

    .. math::

        \mathrm{out} = \mathrm{dropout}\big(x + PE[\mathrm{offset} : \mathrm{offset}+L]\big),
        \quad PE(pos, 2i) = \sin(pos\,\omega_i),\ PE(pos, 2i+1) = \cos(pos\,\omega_i).

    The first ``max_len`` rows of the table are computed once, in float64, and kept in a
    *non-persistent* buffer named ``pe``: it moves with ``.to(device)``, never reaches an
    optimizer, and is absent from ``state_dict()`` (it is a function of ``d_model`` and
    ``base``, so a checkpoint need not carry it). Casting the module (``.half()``,
    ``.to(torch.bfloat16)``) leaves the buffer in float64; each forward call casts the rows
    it needs to the dtype of ``x`` and adds them in that dtype: bfloat16 in gives bfloat16
    out, ``x + PE.to(x.dtype)`` with ``PE`` the float64 values (never float32 angles).

    ``max_len`` is a cache size, not a limit: positions at or beyond ``max_len`` are computed
    from the formula on the fly (the same values, at the cost of recomputing that window).

    Args:
        d_model: embedding size, >= 1 (odd sizes follow the formula: the last column is a sine).
        max_len: number of positions computed ahead of time, >= 1.
        dropout: dropout probability applied to the sum, in [0, 1).
        base: frequency base, > 1.

    Shapes:
        ``x``: ``(batch, seq_len, d_model)``, any floating dtype; output: the same.

    A ``state_dict`` saved by the classic tutorial module, which stores the table under the
    key ``pe``, loads with ``strict=True``: the stored table is checked for shape and ignored.
    """

    pe: torch.Tensor

    def __init__(
        self, d_model: int, max_len: int = 5000, dropout: float = 0.1, *, base: float = 10000.0
    ) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)
        self.base = check_base(base)
        self.dropout = nn.Dropout(p=check_dropout(dropout))
        table = sinusoidal_table(self.max_len, self.d_model, base=self.base, dtype=torch.float64)
        self.register_buffer("pe", table, persistent=False)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base}"

    def encoding(self, seq_len: int, offset: int = 0) -> torch.Tensor:
        """Rows ``offset .. offset + seq_len - 1`` of the table, float64, shape ``(seq_len, d_model)``."""
        seq_len = check_positive_int("seq_len", seq_len)
        offset = check_nonnegative_int("offset", offset)
        if offset + seq_len <= self.max_len:
            return self.pe[offset : offset + seq_len]
        return sinusoidal_table(
            seq_len,
            self.d_model,
            base=self.base,
            start=offset,
            dtype=self.pe.dtype,
            device=self.pe.device,
        )

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(batch, seq_len, d_model)`` -> the same shape, dtype and device."""
        check_features(x, self.d_model)
        table = self.encoding(x.shape[1], offset)
        return self.dropout(x + table.to(dtype=x.dtype, device=x.device))

    def _apply(self, fn, recurse=True):  # type: ignore[override]
        # Follow device moves, but keep the table's float64 values through dtype casts.
        table = self.pe
        super()._apply(fn, recurse)
        self.pe = table.to(device=self.pe.device, dtype=_table_dtype(self.pe.device))
        return self

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):  # type: ignore[override]
        stored = state_dict.pop(prefix + "pe", None)
        if stored is not None and (
            not isinstance(stored, torch.Tensor)
            or stored.dim() != 2
            or stored.shape[-1] != self.d_model
        ):
            got = (
                f"shape {tuple(stored.shape)}"
                if isinstance(stored, torch.Tensor)
                else f"{type(stored).__name__}"
            )
            raise ValueError(
                f"state_dict[{prefix + 'pe'!r}] must be a table of shape (max_len, d_model) with "
                f"d_model={self.d_model}, got {got}"
            )
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class PositionalEncoding(SinusoidalPositionalEncoding):
    """The article's name and signature, ``PositionalEncoding(d_model, max_len=5000, dropout=0.1)``.

    Identical to :class:`SinusoidalPositionalEncoding`.
    """


class LearnedPositionalEncoding(nn.Module):
    r"""Adds a trainable position table (BERT, GPT-2), then applies dropout.

    .. math::

        \mathrm{out} = \mathrm{dropout}\big(x + P[\mathrm{offset} : \mathrm{offset}+L]\big),
        \qquad P \in \mathbb{R}^{\mathrm{max\_len} \times d_{\mathrm{model}}}\ \text{learned}.

    The table holds ``max_len * d_model`` parameters, initialised from
    :math:`\mathcal{N}(0, 0.02^2)` as in BERT and GPT-2. Unlike the sinusoidal encoding it
    has no row for a position it was not built with: asking for one raises ``ValueError``.

    Args:
        d_model: embedding size, >= 1.
        max_len: number of positions with a learned row, >= 1.
        dropout: dropout probability applied to the sum, in [0, 1).

    Shapes:
        ``x``: ``(batch, seq_len, d_model)``, any floating dtype; output: the same.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.1) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.max_len = check_positive_int("max_len", max_len)
        self.dropout = nn.Dropout(p=check_dropout(dropout))
        self.weight = nn.Parameter(torch.empty(self.max_len, self.d_model))
        nn.init.normal_(self.weight, std=0.02)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(batch, seq_len, d_model)`` -> the same shape, dtype and device."""
        check_features(x, self.d_model)
        offset = check_nonnegative_int("offset", offset)
        seq_len = x.shape[1]
        end = offset + seq_len
        if end > self.max_len:
            raise ValueError(
                f"LearnedPositionalEncoding has max_len={self.max_len} learned positions, but "
                f"positions {offset}..{end - 1} were asked for (offset={offset} + "
                f"seq_len={seq_len} = {end} > max_len): build it with max_len >= {end}, or "
                "split the input into windows of at most max_len positions"
            )
        table = self.weight[offset:end]
        return self.dropout(x + table.to(dtype=x.dtype, device=x.device))
