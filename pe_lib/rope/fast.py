"""RoPE's speed: the rotation written block by block on the CPU, ``out=`` buffers, kept frequencies.

Nothing here changes a value: every function computes what :mod:`pe_lib.rope.formula` computes,
with the same operations in the same dtypes, only with fewer passes over memory or fewer
repeated steps. What runs where is decided in one place, :func:`dispatch`:

* **kept frequencies** (``keep``): the signed ``theta_i`` of a scaling, head size, length and
  layout are formed once and kept (:func:`kept_frequencies`, a ``functools.lru_cache`` of
  256 entries), on the CPU and on each device asked for, so that a call on a GPU copies nothing
  from the host. At one token a step, forming them took a fifth of :func:`~pe_lib.rope.apply_rope`'s
  time on the CPU. Not under ``torch.compile``, in a dispatch mode (fake tensors), in a
  function mode or in inference mode: there they are formed where the call runs, and not kept.
* **blocked passes** (``blocked``): on the CPU, eagerly and without autograd, for inputs of at
  least ``BLOCKED_FROM`` (``2**16``) elements, the rotation is written into its output
  (:func:`rotate_into`) over blocks that stay in a core's cache: the interleaved float32 pairs as
  complex numbers times ``cos + i sin``, one pass; the half layout in three passes; a float16 or
  bfloat16 input copied block by block into float32 scratch, rotated there and rounded once.
  Below that size the formula's three operations cost less; on a GPU the passes would only
  launch more kernels, and autograd and compilers need the formula.

Their costs against transformers' own path are measured by ``benchmarks/rope_speed.py`` and
recorded in ``benchmarks/README.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch.utils._python_dispatch import is_in_torch_dispatch_mode

from .._precision import compute_dtype_for
from .._validation import check_disjoint_memory, check_instance
from .scaling import ScalingConfig

__all__ = [
    "BLOCKED_FROM",
    "BLOCK_ELEMENTS",
    "Dispatch",
    "check_out",
    "dispatch",
    "kept_frequencies",
    "moved",
    "rotate_into",
]

#: Elements of ``x`` from which, on the CPU without autograd, the rotation is written into its
#: output block by block: below it, the formula's three operations cost less.
BLOCKED_FROM = 1 << 16

#: Elements of ``x`` per block of the half layout's passes and of a staged (float16 or bfloat16)
#: input: 1 MiB of float32, so that a block and its tables stay in a per-core cache.
BLOCK_ELEMENTS = 1 << 18

#: Entries of :func:`kept_frequencies` before the least recently used is dropped.
KEPT_ENTRIES = 256


class Dispatch(NamedTuple):
    """Which of this module's pieces a call uses (see the module docstring)."""

    keep: bool  # the frequencies come from kept_frequencies
    blocked: bool  # the rotation is written by rotate_into


def dispatch(x: torch.Tensor | None = None) -> Dispatch:
    """The one dispatch between the formula and this module, for a call rotating ``x``
    (``None``: a call that forms tables only)."""
    eager = not (torch.compiler.is_compiling() or is_in_torch_dispatch_mode())
    keep = eager and not (
        torch.is_inference_mode_enabled() or torch._C._is_torch_function_mode_enabled()
    )
    blocked = (
        eager
        and x is not None
        and not torch.is_grad_enabled()
        and x.device.type == "cpu"
        and x.numel() >= BLOCKED_FROM
    )
    return Dispatch(keep, blocked)


# --- kept frequencies -------------------------------------------------------------------------


def moved(theta: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``theta`` on ``device`` in its angle dtype, in one copy that does not wait for the
    device's queue (a copy from pageable memory is staged at once, so the source may go)."""
    dtype = compute_dtype_for(device)
    if theta.device != device or theta.dtype != dtype:
        theta = theta.to(device=device, dtype=dtype, non_blocking=True)
    return theta


class _Key:
    """A :class:`ScalingConfig` as a cache key: its method, base and parameters (a dict, which
    does not hash, compared by its sorted items)."""

    def __init__(self, config: ScalingConfig) -> None:
        self.config = config
        self._id = (config.rope_type, config.base, repr(sorted(config.params.items())))

    def __hash__(self) -> int:
        return hash(self._id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self._id == other._id


#: ``form(config, head_dim, seq_len, layout, device)``: the signed theta_i and the attention
#: factor, as :mod:`pe_lib.rope.formula` forms them.
Form = Callable[
    [ScalingConfig, int, "float | None", str, "torch.device | None"], tuple[torch.Tensor, float]
]


@functools.lru_cache(maxsize=KEPT_ENTRIES)
def _kept(
    form: Form, key: _Key, head_dim: int, seq_len: float | None, layout: str, device: torch.device
) -> tuple[torch.Tensor, float]:
    if device.type == "cpu":
        theta, factor = form(key.config, head_dim, seq_len, layout, None)
        if theta.dtype == compute_dtype_for(device):
            return theta, factor
    else:
        theta, factor = _kept(form, key, head_dim, seq_len, layout, torch.device("cpu"))
    return moved(theta, device), factor


def kept_frequencies(
    form: Form,
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    layout: str,
    device: torch.device,
) -> tuple[torch.Tensor, float]:
    """``form(config, head_dim, seq_len, layout)`` on ``device``, formed once on the CPU and
    kept there and on ``device`` (at most ``KEPT_ENTRIES`` entries; the tensors kept never
    require grad and are only read: each call multiplies them into new tensors)."""
    return _kept(form, _Key(config), head_dim, seq_len, layout, device)


# --- out= buffers -----------------------------------------------------------------------------


def check_out(name: str, out: object, x: torch.Tensor) -> torch.Tensor:
    """A buffer for the rotation of ``x``: its shape, dtype and device, sharing no memory with it."""
    out = check_instance(name, out, torch.Tensor)
    if (out.shape, out.dtype, out.device) != (x.shape, x.dtype, x.device):
        raise ValueError(
            f"{name} must have the shape, dtype and device of the input {tuple(x.shape)}, "
            f"{x.dtype}, {x.device}; got {tuple(out.shape)}, {out.dtype}, {out.device}"
        )
    if out.device.type != "meta" and out.numel() and x.numel():
        check_disjoint_memory(name, out, "the tensor it rotates", x)
    if torch.is_grad_enabled() and (x.requires_grad or out.requires_grad):
        raise ValueError(
            f"{name}= does not support automatic differentiation (as PyTorch's own out= "
            f"operations), but an input requires grad; call without {name}= to differentiate, "
            f"or under torch.no_grad()"
        )
    return out


# --- the blocked passes -----------------------------------------------------------------------


def _as_pairs(x: torch.Tensor) -> torch.Tensor:
    """``(..., d)`` -> ``(..., d/2, 2)``, a view (splitting one dimension never copies)."""
    return x.view(*x.shape[:-1], x.shape[-1] // 2, 2)


def _pairs_viewable(x: torch.Tensor) -> bool:
    """Whether ``x``'s channel pairs can be viewed as complex numbers without a copy."""
    pairs = _as_pairs(x)
    return not (
        pairs.storage_offset() % 2
        or any(s % 2 for s in pairs.stride()[:-1])
        or pairs.stride(-1) != 1
    )


def _blocks(tensors: list[torch.Tensor], size: int) -> list[list[torch.Tensor]]:
    """``tensors`` cut alike along their leading dimensions into blocks of whole vectors.

    ``tensors[0]`` is ``x``, ``(..., seq_len, head_dim)``; the others have as many dimensions,
    with leading sizes 1 (shared) or those of ``x``. A block holds at most ``size`` elements of
    ``x`` (or one vector): the leading dimensions are cut first, then the sequence.
    """
    x = tensors[0]
    if x.numel() <= size or x.dim() < 2:
        return [tensors]
    row = x[0].numel()
    if row > size and x.dim() > 2:
        return [
            block
            for i in range(x.shape[0])
            for block in _blocks([t[0] if t.shape[0] == 1 else t[i] for t in tensors], size)
        ]
    step = max(1, size // row)
    count = -(-x.shape[0] // step)
    parts = [torch.split(t, step) if t.shape[0] > 1 else (t,) * count for t in tensors]
    return [list(block) for block in zip(*parts, strict=True)]


def _pass_tables(cos: torch.Tensor, sin: torch.Tensor, layout: str) -> list[torch.Tensor]:
    """The tables :func:`_rotate_pass` reads, from the full-width tables ``[cos, cos]`` and
    ``[-sin, sin]`` ``(..., seq_len, 2n)``: interleaved, ``[cos + i sin]`` ``(..., seq_len, n)``
    complex; half, ``[cos repeated for both halves (..., seq_len, 2n), sin (..., seq_len, n)]``."""
    if layout == "interleaved":
        return [torch.complex(cos[..., 0::2], sin[..., 1::2])]
    return [cos, sin[..., sin.shape[-1] // 2 :]]


def _operands(x: torch.Tensor, layout: str) -> tuple[torch.Tensor, ...]:
    """The views of ``x`` ``(..., 2n)`` that :func:`_rotate_pass` reads or writes: interleaved,
    its pairs as complex numbers ``(..., n)``; half, ``x`` and its two halves ``(..., n)``."""
    if layout == "interleaved":
        return (torch.view_as_complex(_as_pairs(x)),)
    return x, x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]


def _rotate_pass(
    x: tuple[torch.Tensor, ...], out: tuple[torch.Tensor, ...], tables: list[torch.Tensor]
) -> None:
    """The rotation of ``x`` written into ``out``, both given as :func:`_operands` in the
    tables' dtype. Interleaved: one complex multiplication, one pass (``out`` may be ``x``).
    Half: ``x cos`` over whole rows, then the half-rows' products with sin added."""
    torch.mul(x[0], tables[0], out=out[0])  # interleaved: the whole rotation
    if len(x) == 3:  # half: the half-rows' products with sin
        out[1].addcmul_(x[2], tables[1], value=-1.0)
        out[2].addcmul_(x[1], tables[1])


def _rotate_all(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, out: torch.Tensor
) -> None:
    """The rotation of all of ``x``'s channels written into ``out``, without autograd.

    When ``x`` and ``out`` are in ``cos.dtype``: interleaved (pairs that view as complex
    numbers), one pass over the whole tensor; half, its three passes block by block
    (``BLOCK_ELEMENTS``), each block small enough to stay in a per-core cache. Otherwise
    staged: each block of ``x`` is copied into contiguous scratch in ``cos.dtype``, rotated
    there, and rounded once into ``out``; so a bfloat16 input costs no full-size float32 copy.
    """
    lead = (1,) * (x.dim() - cos.dim())
    tables = _pass_tables(cos.reshape(*lead, *cos.shape), sin.reshape(*lead, *sin.shape), layout)
    same_dtype = x.dtype == out.dtype == cos.dtype
    if same_dtype and layout == "interleaved" and _pairs_viewable(x) and _pairs_viewable(out):
        _rotate_pass(_operands(x, layout), _operands(out, layout), tables)
        return
    blocks = _blocks([x, out, *tables], BLOCK_ELEMENTS)
    if same_dtype and layout == "half":
        for xb, ob, *table in blocks:
            _rotate_pass(_operands(xb, layout), _operands(ob, layout), table)
        return
    size = max(block[0].numel() for block in blocks)
    # interleaved rotates its copy in place (an elementwise out= may be its input)
    scratch = torch.empty(
        (1 if layout == "interleaved" else 2) * size, dtype=cos.dtype, device=x.device
    )
    Operands = tuple[torch.Tensor, ...]
    views: dict[torch.Size, tuple[torch.Tensor, torch.Tensor, Operands, Operands]] = {}
    for xb, ob, *table in blocks:
        if xb.shape not in views:
            n = xb.numel()
            staged = scratch[:n].view(xb.shape)
            rotated = staged if layout == "interleaved" else scratch[n : 2 * n].view(xb.shape)
            views[xb.shape] = (
                staged,
                rotated,
                _operands(staged, layout),
                _operands(rotated, layout),
            )
        staged, rotated, staged_operands, rotated_operands = views[xb.shape]
        staged.copy_(xb)
        _rotate_pass(staged_operands, rotated_operands, table)
        ob.copy_(rotated)  # the one rounding to out's dtype


def rotate_into(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """The formula's rotation (full-width tables ``[cos, cos]`` and ``[-sin, sin]``
    ``(..., seq_len, 2n)`` in the rotation dtype) written into ``out`` (a new tensor if
    ``None``) block by block; with ``2n < head_dim``, the other channels copied unchanged."""
    rotary = cos.shape[-1]
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _rotate_all(x[..., :rotary], cos, sin, layout, out[..., :rotary])
    if rotary < x.shape[-1]:  # partial rotation: the rest pass unchanged
        out[..., rotary:].copy_(x[..., rotary:])
    return out
