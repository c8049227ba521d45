r"""Positions that depend on the content: CoPE, the forgetting transformer (FoX) and PaTH.

RoPE turns a key by an angle that depends on its position alone, and ALiBi subtracts a penalty
that depends on the distance alone. The three methods here let the tokens decide:

* **CoPE** (Golovneva et al., 2024, section 3) counts only the tokens a gate lets through:
  query :math:`i` gives key :math:`m` the gate :math:`g_{im} = \sigma(q_i^\top k_m / \sqrt d)`,
  key :math:`j` sits at :math:`p_{ij} = \sum_{m=j}^{i} g_{im}`, and the score adds
  :math:`q_i^\top e[p_{ij}]`, with :math:`e[p]` interpolated between the rows
  :math:`\lfloor p \rfloor` and :math:`\lceil p \rceil` of a learned table:

  .. math::

      s_{ij} = \frac{q_i^\top \big(k_j + e[p_{ij}]\big)}{\sqrt d}.

  The gates are divided by :math:`\sqrt d` and the sum by it too, as in the authors' code
  (``projects/cope/src/cope/context_position.py`` in facebookresearch/RAM).
* **FoX** (Lin et al., 2025) adds a learned decay to the scores: each token writes a
  forget gate :math:`f_t = \sigma(w^\top x_t + b) \in (0, 1)`, and

  .. math::

      s_{ij} = \frac{q_i^\top k_j}{\sqrt d} + \sum_{l = j + 1}^{i} \log f_l .

  With a constant gate the sum is :math:`(i - j) \log f`: ALiBi with the slope
  :math:`-\log f`.
* **PaTH** (Yang et al., 2025) puts a data-dependent Householder-like transform
  :math:`H_t = I - \beta_t w_t w_t^\top` at each token (``w_t`` a unit vector, :math:`\beta_t
  \in (0, 2)`) and multiplies those between key and query, where RoPE multiplies rotations:

  .. math::

      s_{ij} = \frac{q_i^\top H_i H_{i-1} \cdots H_{j+1}\, k_j}{\sqrt d}.

  A key cached at step :math:`t` must therefore be multiplied by :math:`H_{t+1}` when the next
  token arrives: :func:`path_cached_keys` gives the cache as a query reads it.

Shape legend: ``B`` batch, ``H`` heads, ``L`` length, ``D`` head size, ``P`` rows of CoPE's
table. Queries, keys and values are ``(B, H, L, D)``; scores and weights ``(B, H, L, L)``, row
``i`` a query, column ``j`` a key, causal (``-inf`` above the diagonal). The functions compute in
the inputs' dtype, the cumulative sums in float64 (cast once), and differentiate in every input.
:class:`ContentPositionModel` puts each in the toy model of :mod:`pe_lib.experiments.toy`.

The tests compare each function with a second implementation written from the paper's
equations (loops over ``i`` and ``j``), and FoX and PaTH with the naive PyTorch references of
flash-linear-attention (``fla/ops/forgetting_attn/naive.py``, ``fla/ops/path_attn/naive.py``)
where it is installed.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterator

import torch
from torch import nn
from torch.nn import functional as F

from .._validation import check_choice, check_int, check_positive_int
from .toy import ShiftedCopyModel

__all__ = [
    "CONTENT_KINDS",
    "ContentPositionModel",
    "cope_attention",
    "cope_positions",
    "cope_scores",
    "forgetting_attention",
    "forgetting_bias",
    "path_attention",
    "path_cached_keys",
    "path_scores",
]

#: The position methods :class:`ContentPositionModel` takes.
CONTENT_KINDS: tuple[str, ...] = ("cope", "fox", "path")


# --- validation ----------------------------------------------------------------------------------


def _check_heads(name: str, value: object, expected: str, ndim: int) -> torch.Tensor:
    """A floating tensor of ``ndim`` dimensions; ``expected`` names its shape."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a floating torch.Tensor of shape {expected}, got "
            f"{reprlib.repr(value)} of type {type(value).__name__}"
        )
    if not value.is_floating_point():
        raise TypeError(
            f"{name} must have a floating dtype (float16, bfloat16, float32, float64), got "
            f"{value.dtype}"
        )
    if value.dim() != ndim:
        raise ValueError(f"{name} must have shape {expected}, got shape {tuple(value.shape)}")
    return value


def _check_qk(q: object, k: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys of one shape ``(B, H, L, D)``, one dtype, ``L >= 1``."""
    q = _check_heads("q", q, "(batch, heads, length, head_dim)", 4)
    k = _check_heads("k", k, "(batch, heads, length, head_dim)", 4)
    if q.shape != k.shape:
        raise ValueError(
            f"q and k must have one shape (batch, heads, length, head_dim), got q "
            f"{tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must share one dtype, got q {q.dtype} and k {k.dtype}")
    if q.shape[2] == 0 or q.shape[3] == 0:
        raise ValueError(
            f"q and k must hold at least one token and one channel, got shape {tuple(q.shape)}"
        )
    return q, k


def _check_like(name: str, value: object, q: torch.Tensor, last: int | None) -> torch.Tensor:
    """A tensor of ``q``'s dtype shaped ``(B, H, L, last)``, or ``(B, H, L)`` when ``last`` is
    ``None``."""
    shape: tuple[int, ...] = tuple(q.shape[:3]) if last is None else (*q.shape[:3], last)
    expected = "(batch, heads, length)" if last is None else f"(batch, heads, length, {last})"
    value = _check_heads(name, value, expected, len(shape))
    if tuple(value.shape) != shape:
        raise ValueError(
            f"{name} must have shape {expected} = {shape} to match q {tuple(q.shape)}, got "
            f"shape {tuple(value.shape)}"
        )
    if value.dtype != q.dtype:
        raise TypeError(f"{name} must have q's dtype {q.dtype}, got {value.dtype}")
    return value


def _check_finite(name: str, value: torch.Tensor) -> None:
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must hold finite values only, got a NaN or an infinity")


def _causal(length: int, device: torch.device) -> torch.Tensor:
    """``(L, L)`` bool, ``True`` where key ``j <= i``."""
    return torch.ones(length, length, dtype=torch.bool, device=device).tril()


def _softmax_values(scores: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(softmax(scores) v, weights)`` for causal ``scores`` (``-inf`` above the diagonal)."""
    weights = torch.softmax(scores, dim=-1)  # (B, H, L, L)
    return weights @ v, weights  # (B, H, L, D), (B, H, L, L)


# --- CoPE ----------------------------------------------------------------------------------------


def cope_positions(
    q: torch.Tensor, k: torch.Tensor, *, max_position: float | None = None
) -> torch.Tensor:
    r"""CoPE's contextual positions :math:`p_{ij} = \sum_{m=j}^{i} \sigma(q_i^\top k_m/\sqrt d)`.

    Args:
        q: queries ``(B, H, L, D)``.
        k: keys, the same shape and dtype.
        max_position: if given, a real number >= 0 at which the positions are clipped (the
            table's last row, ``P - 1``).

    Returns:
        ``(B, H, L, L)`` in ``q``'s dtype: ``p[..., i, j]`` for ``j <= i``, 0 above the
        diagonal. Each gate is in (0, 1), so ``p[..., i, j]`` lies between 0 and ``i - j + 1``
        and grows as ``j`` moves back; with every gate 1 it is ``i - j + 1``.
    """
    q, k = _check_qk(q, k)
    if max_position is not None and (
        isinstance(max_position, bool)
        or not isinstance(max_position, (int, float))
        or not math.isfinite(max_position)
        or max_position < 0
    ):
        raise ValueError(
            f"max_position must be None or a finite real number >= 0, got {max_position!r}"
        )
    length = q.shape[2]
    causal = _causal(length, q.device)
    gates = torch.sigmoid(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]))  # (B, H, L, L)
    gates = gates.masked_fill(~causal, 0.0)
    # p[i, j] = sum over m >= j of gates[i, m]: a cumulative sum from the right, in float64
    positions = gates.double().flip(-1).cumsum(-1).flip(-1).to(q.dtype)
    if max_position is not None:
        positions = positions.clamp(max=float(max_position))
    return positions


def cope_scores(q: torch.Tensor, k: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    r"""CoPE's attention scores :math:`q_i^\top (k_j + e[p_{ij}]) / \sqrt d`, causal.

    The positions of :func:`cope_positions` are clipped at the table's last row ``P - 1``, and
    :math:`q_i^\top e[p]` is interpolated between :math:`q_i^\top e[\lfloor p \rfloor]` and
    :math:`q_i^\top e[\lceil p \rceil]` with the weights :math:`1 - (p - \lfloor p \rfloor)` and
    :math:`p - \lfloor p \rfloor` (which is the same as interpolating the rows, since the
    product is linear in :math:`e`).

    Args:
        q: queries ``(B, H, L, D)``.
        k: keys, the same shape and dtype.
        table: the position embeddings :math:`e[0], \dots, e[P - 1]`, ``(P, D)`` shared by the
            heads or ``(H, P, D)`` one per head, in ``q``'s dtype.

    Returns:
        scores ``(B, H, L, L)``, ``-inf`` above the diagonal.
    """
    q, k = _check_qk(q, k)
    batch, heads, length, head_dim = q.shape
    expected = "(positions, head_dim) or (heads, positions, head_dim)"
    if isinstance(table, torch.Tensor) and table.dim() == 3:
        table = _check_heads("table", table, expected, 3)
    else:
        table = _check_heads("table", table, expected, 2)
    if (
        table.shape[-1] != head_dim
        or table.shape[-2] == 0
        or (table.dim() == 3 and table.shape[0] != heads)
    ):
        raise ValueError(
            "table must have shape (positions, head_dim) or (heads, positions, head_dim) with "
            f"head_dim={head_dim}, heads={heads} and positions >= 1, got shape "
            f"{tuple(table.shape)}"
        )
    if table.dtype != q.dtype:
        raise TypeError(f"table must have q's dtype {q.dtype}, got {table.dtype}")
    last = table.shape[-2] - 1
    positions = cope_positions(q, k, max_position=last)  # (B, H, L, L)
    rows = table.transpose(-1, -2)  # (D, P) or (H, D, P)
    at_rows = q @ (rows if table.dim() == 2 else rows[None])  # (B, H, L, P): q_i . e[p]
    floor = positions.detach().floor().long()  # (B, H, L, L); no gradient through floor/ceil
    ceil = positions.detach().ceil().long()
    weight = positions - floor  # differentiable in the gates
    interpolated = at_rows.gather(-1, ceil) * weight + at_rows.gather(-1, floor) * (1 - weight)
    scores = (q @ k.transpose(-1, -2) + interpolated) / math.sqrt(head_dim)
    return scores.masked_fill(~_causal(length, q.device), float("-inf"))


def cope_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, table: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal attention with CoPE: ``(softmax(cope_scores(q, k, table)) v, weights)``.

    Args:
        q, k: ``(B, H, L, D)``; v: ``(B, H, L, D_v)`` of their dtype; table: see
            :func:`cope_scores`.

    Returns:
        output ``(B, H, L, D_v)`` and weights ``(B, H, L, L)``.
    """
    scores = cope_scores(q, k, table)
    return _softmax_values(scores, _check_values(v, q))


def _check_values(v: object, q: torch.Tensor) -> torch.Tensor:
    v = _check_heads("v", v, "(batch, heads, length, value_dim)", 4)
    if tuple(v.shape[:3]) != tuple(q.shape[:3]):
        raise ValueError(
            f"v must have shape (batch, heads, length, value_dim) with the (batch, heads, "
            f"length) of q {tuple(q.shape[:3])}, got shape {tuple(v.shape)}"
        )
    if v.dtype != q.dtype:
        raise TypeError(f"v must have q's dtype {q.dtype}, got {v.dtype}")
    return v


# --- FoX -----------------------------------------------------------------------------------------


def forgetting_bias(log_forget: torch.Tensor) -> torch.Tensor:
    r"""FoX's decay :math:`D_{ij} = \sum_{l=j+1}^{i} \log f_l` for ``j <= i``, ``-inf`` above.

    Args:
        log_forget: :math:`\log f_t`, ``(B, H, L)``, every entry <= 0 and finite (a gate
            :math:`f_t \in (0, 1]`; ``F.logsigmoid`` of the gate's logit gives it).

    Returns:
        ``(B, H, L, L)`` in ``log_forget``'s dtype: 0 on the diagonal, the cumulative sums'
        difference :math:`c_i - c_j` (:math:`c_t = \sum_{l \le t} \log f_l`, in float64) below.
    """
    log_forget = _check_heads("log_forget", log_forget, "(batch, heads, length)", 3)
    _check_finite("log_forget", log_forget)
    if bool((log_forget > 0).any()):
        raise ValueError(
            "log_forget must be <= 0 everywhere (the log of a forget gate in (0, 1]), got a "
            f"largest entry of {float(log_forget.max()):g}"
        )
    length = log_forget.shape[-1]
    if length == 0:
        raise ValueError(
            f"log_forget must hold at least one token, got shape {tuple(log_forget.shape)}"
        )
    total = log_forget.double().cumsum(-1)  # (B, H, L): c_t
    bias = total[..., :, None] - total[..., None, :]  # (B, H, L, L): c_i - c_j
    bias = bias.masked_fill(~_causal(length, log_forget.device), float("-inf"))
    return bias.to(log_forget.dtype)


def forgetting_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_forget: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Causal attention with FoX's decay: ``softmax(q k^T / sqrt(d) + forgetting_bias)``.

    Args:
        q, k: ``(B, H, L, D)``; v: ``(B, H, L, D_v)``; log_forget: ``(B, H, L)``, all of one
            dtype (see :func:`forgetting_bias`).

    Returns:
        output ``(B, H, L, D_v)`` and weights ``(B, H, L, L)``.
    """
    q, k = _check_qk(q, k)
    v = _check_values(v, q)
    log_forget = _check_like("log_forget", log_forget, q, None)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + forgetting_bias(log_forget)
    return _softmax_values(scores, v)


# --- PaTH ----------------------------------------------------------------------------------------


def _check_path(k: torch.Tensor, w: object, beta: object) -> tuple[torch.Tensor, torch.Tensor]:
    w = _check_like("w", w, k, k.shape[-1])
    beta = _check_like("beta", beta, k, None)
    _check_finite("w", w)
    _check_finite("beta", beta)
    return w, beta


def _path_steps(k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor) -> Iterator[torch.Tensor]:
    r"""The keys as the query at each step ``t = 0, 1, ...`` reads them, ``(B, H, L, D)``.

    Row ``j < t`` holds :math:`H_t \cdots H_{j+1} k_j`; rows ``j >= t`` are the keys as given
    (row ``t`` is read untransformed, the later rows are not read at all).
    """
    length = k.shape[2]
    before = torch.arange(length, device=k.device)  # (L,)
    scaled = beta[..., None] * w  # (B, H, L, D): beta_t w_t
    keys = k
    for t in range(length):
        if t > 0:
            along = keys @ w[:, :, t, :, None]  # (B, H, L, 1): w_t . key
            along = along * (before < t)[:, None].to(keys.dtype)  # rows j < t only
            keys = keys - along * scaled[:, :, t, None, :]  # H_t key = key - beta_t (w_t . key) w_t
        yield keys


def path_scores(
    q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    r"""PaTH's scores :math:`q_i^\top H_i \cdots H_{j+1} k_j / \sqrt d`, causal.

    With :math:`H_t = I - \beta_t w_t w_t^\top`. The products are not formed one by one: a
    product of such transforms is the identity minus a low-rank term,
    :math:`H_i \cdots H_{j+1} = I - \sum_{j < r \le s \le i} w_s\, U_{sr}\, w_r^\top` with
    :math:`U = (I + \Lambda)^{-1} \operatorname{diag}(\beta)`, :math:`\Lambda` the strictly
    lower triangle of :math:`\operatorname{diag}(\beta) W W^\top`; and since :math:`I +
    \Lambda` is unit lower triangular, the :math:`U` of the tokens :math:`(j, i]` is the block of
    the whole sequence's. So every score comes from one triangular solve and three matrix
    products:

    .. math::

        s = \big(Q K^\top - \operatorname{tril}(Q W^\top)\,(I + \Lambda)^{-1}\,
        \operatorname{tril}_{-1}(\operatorname{diag}(\beta) W K^\top)\big) / \sqrt d,

    the compact form the PaTH paper derives for its blockwise algorithm (here in one block:
    ``O(L^3)`` per head, for the short sequences of the book's toy task).
    :func:`path_cached_keys` forms the products step by step instead, as a cache would.

    Args:
        q: queries ``(B, H, L, D)``.
        k: keys, the same shape and dtype.
        w: the transforms' directions ``(B, H, L, D)``, unit vectors in the paper (the layer
            L2-normalises a projection of the token); any values are accepted.
        beta: their strengths ``(B, H, L)``, in (0, 2) in the paper (``2 * sigmoid(...)``); with
            a unit ``w_t`` and :math:`\beta_t = 2`, :math:`H_t` is a reflection. Entry ``t = 0``
            is never used (no key precedes the first token).

    Returns:
        scores ``(B, H, L, L)``, ``-inf`` above the diagonal.
    """
    q, k = _check_qk(q, k)
    w, beta = _check_path(k, w, beta)
    length = q.shape[2]
    lower = _causal(length, q.device)  # (L, L): s <= i
    strictly = lower.tril(-1)  # (L, L): r > j, read as (r, j)
    scaled = beta[..., None] * w  # (B, H, L, D): beta_r w_r
    mixing = (scaled @ w.transpose(-1, -2)).masked_fill(~strictly, 0.0)  # Lambda
    identity = torch.eye(length, dtype=q.dtype, device=q.device)
    from_keys = (scaled @ k.transpose(-1, -2)).masked_fill(~strictly, 0.0)  # (B, H, L, L)
    through: torch.Tensor = torch.linalg.solve_triangular(
        identity + mixing, from_keys, upper=False, unitriangular=True
    )  # (I + Lambda)^-1 tril_-1(diag(beta) W K^T)
    to_queries = (q @ w.transpose(-1, -2)).masked_fill(~lower, 0.0)  # (B, H, L, L): q_i . w_s
    scores = (q @ k.transpose(-1, -2) - to_queries @ through) / math.sqrt(q.shape[-1])
    return scores.masked_fill(~lower, float("-inf"))


def path_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Causal attention with PaTH: ``(softmax(path_scores(q, k, w, beta)) v, weights)``.

    Args:
        q, k, w: ``(B, H, L, D)``; v: ``(B, H, L, D_v)``; beta: ``(B, H, L)``, all of one dtype
            (see :func:`path_scores`).

    Returns:
        output ``(B, H, L, D_v)`` and weights ``(B, H, L, L)``.
    """
    scores = path_scores(q, k, w, beta)
    return _softmax_values(scores, _check_values(v, q))


def path_cached_keys(
    k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor, step: int
) -> torch.Tensor:
    r"""The keys ``0 .. step`` as the query at ``step`` reads them: :math:`H_{step} \cdots
    H_{j+1} k_j`.

    A cache of PaTH's keys holds exactly these after ``step``; when token ``step + 1``
    arrives, every one of them is multiplied by :math:`H_{step+1}` (flash-linear-attention's
    ``PaTHAttention`` does that rank-one update on its whole cache at each decoding step,
    ``fla/layers/path_attn.py``). RoPE's cached keys, rotated once at their own positions, are
    never touched again.

    Args:
        k: keys ``(B, H, L, D)``; w: ``(B, H, L, D)``; beta: ``(B, H, L)`` (see
            :func:`path_scores`).
        step: the query's position, an int in ``[0, L)``.

    Returns:
        ``(B, H, step + 1, D)``.
    """
    k = _check_heads("k", k, "(batch, heads, length, head_dim)", 4)
    w, beta = _check_path(k, w, beta)
    length = k.shape[2]
    step = check_int("step", step)
    if not 0 <= step < length:
        raise ValueError(f"step must be an int in [0, {length}) (a token of k), got {step}")
    *_, keys = _path_steps(  # the last step's keys
        k[:, :, : step + 1], w[:, :, : step + 1], beta[:, :, : step + 1]
    )
    return keys


# --- the toy model -------------------------------------------------------------------------------


class ContentPositionModel(ShiftedCopyModel):
    """:class:`pe_lib.experiments.toy.ShiftedCopyModel` with CoPE, FoX or PaTH in its attention.

    The model of :mod:`pe_lib.experiments.toy` with no position information (``position="none"``), whose
    attention uses one of :data:`CONTENT_KINDS` instead of plain causal attention; everything
    else (embedding, MLP, read-out, :func:`pe_lib.experiments.toy.train`, :func:`pe_lib.experiments.toy.evaluate`) is
    the toy's. The method's parameters are drawn after the toy's, in this order:

    * ``"cope"``: a table of ``cope_rows`` position embeddings of size ``head_dim``, shared by
      the heads and starting at zero, as in the authors' code;
    * ``"fox"``: a forget gate per head, ``log f_t = logsigmoid(Linear(d_model, heads)(x_t))``;
    * ``"path"``: ``w_t``, a projection of the token L2-normalised per head
      (``Linear(d_model, d_model)`` without bias), and ``beta_t = 2 sigmoid(Linear(d_model,
      heads)(x_t))``. The paper's layer also passes ``w`` through a short convolution; this
      minimal form does not.

    Args:
        kind: one of :data:`CONTENT_KINDS`.
        vocab_size, d_model, num_heads: as for :class:`pe_lib.experiments.toy.ShiftedCopyModel`.
        cope_rows: rows of CoPE's table, >= 1 (positions are clipped at ``cope_rows - 1``);
            used by ``"cope"`` only.

    Shapes:
        as :class:`pe_lib.experiments.toy.ShiftedCopyModel`.
    """

    kind: str
    extra: nn.ModuleDict
    cope_table: nn.Parameter

    def __init__(
        self,
        kind: str,
        *,
        vocab_size: int = 16,
        d_model: int = 32,
        num_heads: int = 4,
        cope_rows: int = 33,
    ) -> None:
        kind = check_choice("kind", kind, CONTENT_KINDS)
        cope_rows = check_positive_int("cope_rows", cope_rows)
        super().__init__("none", vocab_size=vocab_size, d_model=d_model, num_heads=num_heads)
        self.kind = kind
        heads, width = self.num_heads, self.d_model
        self.extra = nn.ModuleDict()
        if kind == "cope":
            self.cope_table = nn.Parameter(torch.zeros(cope_rows, self.head_dim))
        elif kind == "fox":
            self.extra["forget"] = nn.Linear(width, heads)
        else:
            self.extra["direction"] = nn.Linear(width, width, bias=False)
            self.extra["strength"] = nn.Linear(width, heads)

    def extra_repr(self) -> str:
        """The method, shown in ``repr(model)``."""
        return f"kind={self.kind!r}"

    def _attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``x``: ``(B, L, d_model)`` -> output ``(B, L, d_model)``, weights ``(B, H, L, L)``."""
        batch, length, width = x.shape
        heads = self.num_heads

        def by_head(t: torch.Tensor) -> torch.Tensor:  # (B, L, H * n) -> (B, H, L, n)
            return t.view(batch, length, heads, -1).transpose(1, 2)

        q, k, v = (by_head(t) for t in self.qkv(x).chunk(3, dim=-1))  # each (B, H, L, D)
        if self.kind == "cope":
            mixed, weights = cope_attention(q, k, v, self.cope_table)
        elif self.kind == "fox":
            log_forget = F.logsigmoid(self.extra["forget"](x)).transpose(1, 2)  # (B, H, L)
            mixed, weights = forgetting_attention(q, k, v, log_forget)
        else:
            w = F.normalize(by_head(self.extra["direction"](x)), dim=-1)  # (B, H, L, D)
            beta = 2 * torch.sigmoid(self.extra["strength"](x)).transpose(1, 2)  # (B, H, L)
            mixed, weights = path_attention(q, k, v, w, beta)
        out: torch.Tensor = self.attention_out(mixed.transpose(1, 2).reshape(batch, length, width))
        return out, weights
