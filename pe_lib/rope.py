r"""Rotary position embedding (RoPE) of Su et al. (2021), RoFormer, section 3.2.

Each query or key vector :math:`x \in \mathbb{R}^{d}` (``d = head_dim``, even) is split into
``d/2`` channel pairs, and pair ``i`` at position ``m`` is rotated by the angle
:math:`m\,\theta_i`, with the frequencies of the sinusoidal encoding:

.. math::

    \theta_i = \mathrm{base}^{-2i/d},\qquad i = 0, \dots, d/2 - 1,

    \begin{pmatrix} y_a \\ y_b \end{pmatrix}
    = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
      \begin{pmatrix} x_a \\ x_b \end{pmatrix}.

Written as :math:`R_m x`, rotations compose, :math:`R_m^{\top} R_n = R_{n-m}`, so the attention
score :math:`(R_m q)^{\top} (R_n k) = q^{\top} R_{n-m}\, k` depends on the positions only
through their difference ``n - m``: the score is relative *after* the projections
:math:`W_q, W_k`, which the additive sinusoidal encoding does not achieve.

Two channel layouts pair the coordinates differently (the rotation is the same up to a fixed
permutation of channels):

* ``"interleaved"``: pair ``i`` is channels ``(2i, 2i+1)``, as in RoFormer and Meta's Llama
  code (``apply_rotary_emb`` in ``llama/model.py`` of github.com/meta-llama/llama);
* ``"half"``: pair ``i`` is channels ``(i, i + d/2)``, the ``rotate_half`` convention of the
  GPT-NeoX library (``megatron/model/positional_embeddings.py`` of
  github.com/EleutherAI/gpt-neox) and Hugging Face Transformers.

Partial rotation: when the frequencies cover ``n < d/2`` pairs (a scaling that gives fewer,
as ``partial_rotary_factor`` does in GPT-NeoX, Phi and Gemma 4), the first ``2n`` channels are
rotated, paired within them in the chosen layout, and the others pass unchanged, as
Transformers' ``modeling_gpt_neox.py`` (``rotary_ndims``) and ``modeling_gptj.py``
(``rotary_dim``, interleaved) do.

Context extension: every function takes ``scaling``, a ``config.json`` ``rope_scaling`` mapping
(position interpolation, NTK, dynamic NTK, YaRN, Llama 3.1), which replaces the
:math:`\theta_i` by the scaled :math:`\theta'_i` of :func:`pe_lib.rope_scaling.rope_frequencies`
and multiplies cos and sin by its attention factor (YaRN's :math:`\sqrt{1/t}`, so that the
logits :math:`q^{\top}k` are multiplied by :math:`1/t`).

Precision: angles :math:`m\,\theta_i` are formed in float64 from the positions (as in
:mod:`pe_lib.sinusoidal`) and their cosines and sines are cast once to float32 (float64 for
float64 inputs). The rotation of a float16 or bfloat16 input is computed in float32 and the
result is rounded once to the input dtype. This also holds under ``torch.autocast``: every
operation used is elementwise, on no autocast list, and the dtypes are set explicitly. Forming
angles in bfloat16 instead is badly wrong beyond a few hundred positions: bfloat16 keeps 8
significant bits, so between 8,192 and 16,384 only multiples of 64 exist. Position 10,001
becomes 9,984, and the angle of the fastest pair (:math:`\theta_0 = 1` radian per position) is
off by 17 radians.

The rotation is one formula, ``x * [cos, cos] + swap(x) * [-sin, sin]`` (``_rotate_formula``:
three out-of-place operations, each pair's channels exchanged by ``swap``), whose tables are
the cos and sin of signed float64 angles (``-m theta_i`` for the first channel of each pair,
exact: cos is even and sin odd to the last bit), so no table is assembled afterwards. It runs
with autograd, under ``torch.compile`` (one graph, fused into one kernel), under
``torch.jit.trace``, on GPUs and for small inputs on the CPU. Only on the CPU, without
autograd, from ``2**16`` elements, the result is written into its output (``_rotate_into``)
over blocks that stay in a core's cache: the interleaved float32 pairs as complex numbers times
``cos + i sin``, one pass; the half layout in three passes; a float16 or bfloat16 input copied
block by block into float32 scratch, rotated there and rounded once. On a GPU those passes would
only launch more kernels. The cos and sin are computed at every call; the frequencies
``theta_i`` of a scaling, head size and length are kept after the first call, on the CPU and
on each device asked for (they depend on nothing else), so a call on a GPU copies nothing from
the host and waits for nothing. Their costs against transformers' own path, Hugging Face's formula,
rotary-embedding-torch and one elementwise pass over ``x`` are measured by
``benchmarks/rope_speed.py`` and recorded in ``benchmarks/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import is_in_torch_dispatch_mode

from ._precision import compute_dtype_for
from ._tracing import is_tracing, static_size
from ._tracing import quiet_while_tracing as _quiet_while_tracing
from ._validation import (
    check_disjoint_memory,
    check_head_dim,
    check_instance,
    check_layout,
    check_nonnegative_int,
    check_position_span,
    check_positions,
    check_positions_match,
    check_positive_int,
    check_rotary_input,
)
from .rope_scaling import ScalingConfig, frequencies_at, resolve_scaling, rope_frequencies

__all__ = ["RotaryEmbedding", "apply_rope", "rope_angles", "rope_frequencies", "rotate"]

#: Elements of ``x`` per block of the half layout's passes and of a staged (float16 or bfloat16)
#: input: 1 MiB of float32, so that a block and its tables stay in a per-core cache.
_BLOCK_ELEMENTS = 1 << 18

#: Elements of ``x`` from which, on the CPU without autograd, the rotation is written into its
#: output block by block (:func:`_blocked`): below it, the formula's three operations cost less.
_BLOCKED_FROM = 1 << 16


def _frequencies_on(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    device: torch.device,
    layout: str | None = None,
) -> tuple[torch.Tensor, float]:
    """The scaled theta_i on ``device`` in the angle dtype (float64 but on MPS), and the
    attention factor. With a ``layout``, each theta_i is given once per channel of its pair,
    negated for the first channel and in the layout's order (:func:`_signed`), ``(2n,)``.

    Without a ``layout`` (:func:`rope_angles`) they are formed on the CPU and sent in one copy;
    with one, they come from :func:`_signed_frequencies`, which keeps them per device."""
    if layout is not None:
        return _signed_frequencies(config, head_dim, seq_len, layout, device)
    theta, attention_factor = frequencies_at(config, head_dim, seq_len)
    return _moved(theta, device), attention_factor


def _moved(theta: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``theta`` on ``device`` in its angle dtype, in one copy that does not wait for the
    device's queue (a copy from pageable memory is staged at once, so the source may go)."""
    dtype = compute_dtype_for(device)
    if theta.device != device or theta.dtype != dtype:
        theta = theta.to(device=device, dtype=dtype, non_blocking=True)
    return theta


#: :func:`_signed_frequencies` by scaling, head size, length, layout and device: float64 tensors
#: (float32 on MPS) that nothing writes to (each call reads them into new tensors: products).
_FREQUENCY_VALUES: dict[tuple[object, ...], tuple[torch.Tensor, float]] = {}
_FREQUENCY_VALUES_KEPT = 256  # entries before the dictionary starts over


def _signed_frequencies(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    layout: str,
    device: torch.device,
) -> tuple[torch.Tensor, float]:
    """:func:`_signed` of the scaled theta_i on ``device`` in its angle dtype, and the
    attention factor.

    The values depend only on the arguments, so they are computed once and kept, on the CPU
    and on the device they were asked for (at one token a step, forming them took a fifth of
    :func:`apply_rope`'s time on the CPU, and sending them to a GPU one copy per call); what is
    kept never requires grad and is only read, at most ``_FREQUENCY_VALUES_KEPT`` entries.
    Under ``torch.compile``, inside a dispatch mode (fake tensors' shape propagation) and under
    ``torch.jit.trace`` (whose check runs a call twice: both must record the same operations)
    they are formed where the call runs, on ``device`` itself where it holds float64 (so a graph
    compiled for a GPU holds no copy from the host), neither read from nor added to what is
    kept; nor is a tensor subclass or one formed in inference mode kept."""
    if torch.compiler.is_compiling() or is_in_torch_dispatch_mode() or is_tracing():
        on = device if compute_dtype_for(device) == torch.float64 else None
        theta, attention_factor = frequencies_at(config, head_dim, seq_len, on)
        return _moved(_signed(theta, layout), device), attention_factor
    params = repr(sorted(config.params.items()))
    key = (config.rope_type, config.base, params, head_dim, seq_len, layout)
    kept = _FREQUENCY_VALUES.get(key)
    if kept is None:
        theta, attention_factor = frequencies_at(config, head_dim, seq_len)
        theta = _signed(theta, layout)
        if not _keepable(theta):
            return _moved(theta, device), attention_factor
        kept = _keep(key, (theta, attention_factor))
    if device.type == "cpu" and kept[0].dtype == compute_dtype_for(device):
        return kept
    on_device = _FREQUENCY_VALUES.get((*key, device))
    if on_device is None:
        moved = _moved(kept[0], device), kept[1]
        if not _keepable(moved[0]):
            return moved
        on_device = _keep((*key, device), moved)
    return on_device


def _keepable(theta: torch.Tensor) -> bool:
    return type(theta) is torch.Tensor and not theta.is_inference() and not theta.requires_grad


def _keep(key: tuple[object, ...], value: tuple[torch.Tensor, float]) -> tuple[torch.Tensor, float]:
    if len(_FREQUENCY_VALUES) >= _FREQUENCY_VALUES_KEPT:
        _FREQUENCY_VALUES.clear()
    _FREQUENCY_VALUES[key] = value
    return value


def _signed(theta: torch.Tensor, layout: str) -> torch.Tensor:
    """``(..., n)`` -> ``(..., 2n)``: each value once per channel of its pair in ``layout``'s
    order, negated for the first channel (half: ``[-t, t]``; interleaved: ``[-t_0, t_0, -t_1,
    t_1, ...]``). Negation is exact, and cos and sin are even and odd to the last bit, so the
    cos and sin of these angles are :func:`_rotate_formula`'s tables ``[cos, cos]`` and
    ``[-sin, sin]`` with the values of the ``n`` angles, formed once."""
    if layout == "half":
        return torch.cat((-theta, theta), dim=-1)
    return torch.stack((-theta, theta), dim=-1).flatten(-2)


def _angles(positions: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """positions (..., seq_len) times theta (n,) -> (..., seq_len, n), formed in theta's dtype
    (int64 positions are converted exactly in the product itself; no autocast list holds an
    elementwise product: it changes nothing here)."""
    if positions.is_floating_point() and positions.dtype != theta.dtype:
        positions = positions.to(theta.dtype)
    return positions[..., None] * theta


def _length_for(
    config: ScalingConfig, positions: torch.Tensor, seq_len: object, caller: str
) -> float | None:
    """The sequence length a scaling whose frequencies depend on it uses (else ``None``).

    A given ``seq_len`` is checked whatever the scaling (as :class:`RotaryEmbedding` checks its
    own): an int >= 1, at least the last position + 1. Default: the last position + 1, as
    transformers' ``max(position_ids) + 1`` (``dynamic_rope_update``, ``modeling_rope_utils.py``):
    fractional for fractional positions (``[0.0, 511.5]`` gives 512.5, beyond a LongRoPE ``L``
    of 512), 1 when there are none. Both read the positions' values, which neither a trace, a
    compiled graph nor a ``meta`` tensor holds: there, these scalings are refused (trace) or
    need ``seq_len`` (compile, ``meta``), and a given ``seq_len`` is trusted.
    """
    needs = config.entry.needs_seq_len
    if seq_len is None and not needs:
        return None
    if seq_len is not None:
        seq_len = check_positive_int("seq_len", seq_len)
    pitfall = f"{config.rope_type!r} scaling's frequencies depend on the sequence length"
    if needs and is_tracing():
        raise ValueError(
            f"{caller} cannot be traced with torch.jit.trace: {pitfall}, which a trace fixes "
            f"at the example's; use torch.compile, or call it without tracing"
        )
    if is_tracing() or torch.compiler.is_compiling() or positions.device.type == "meta":
        if needs and seq_len is None:
            where = (
                "on the meta device" if positions.device.type == "meta" else "under torch.compile"
            )
            raise ValueError(
                f"{caller} {where} needs seq_len=: {pitfall}, and the default (the last "
                f"position + 1) reads the positions' values, which are not there"
            )
        return seq_len if needs else None
    if seq_len is None and not needs:
        return None
    last: float = positions.max().item() + 1 if positions.numel() else 1
    if float(last).is_integer():
        last = int(last)
    if seq_len is not None and seq_len < last:
        raise ValueError(
            f"seq_len must be at least the last position + 1 = {last} (the length the positions "
            f"span; {pitfall} where a scaling reads it), got seq_len={seq_len}"
        )
    if not needs:
        return None
    return last if seq_len is None else seq_len


def rope_angles(
    positions: torch.Tensor,
    head_dim: int,
    *,
    base: float | None = None,
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
) -> torch.Tensor:
    r"""The rotation angles :math:`m\,\theta_i` with :math:`\theta_i = \mathrm{base}^{-2i/d}`.

    Args:
        positions: tensor of shape ``(..., seq_len)``, non-negative positions ``m``: int64, or
            float64 for fractional positions (position interpolation rotates by ``m / factor``).
        head_dim: size ``d`` of the vectors to be rotated, even and >= 2.
        base: frequency base, > 1 (10000 in RoFormer, the default, unless ``scaling`` holds a
            ``rope_theta``).
        scaling: ``None`` or a ``config.json`` ``rope_scaling`` mapping: the angles use its
            :math:`\theta'_i` (:func:`rope_frequencies`; its attention factor is not an angle and
            is not applied here).
        seq_len: the current sequence length, for scalings whose frequencies depend on it
            (``"dynamic"``, ``"longrope"``): an int, at least the last position + 1, checked
            whatever the scaling. Default: the last position + 1, fractional for fractional
            positions as transformers' ``max(position_ids) + 1`` (``modeling_rope_utils.py``):
            positions ``[0.0, 511.5]`` give 512.5, beyond a LongRoPE ``L`` of 512.

    Returns:
        tensor of shape ``(..., seq_len, head_dim // 2)`` on the device of ``positions``,
        entry ``[..., j, i] = positions[..., j] * theta_i``. Its dtype is float64 whatever
        dtype the caller works in (float32 on Apple's MPS, which has no float64): integer
        positions up to :math:`2^{53}` are exact in float64, and the product is rounded once.
    """
    positions = check_positions("positions", positions)
    head_dim = check_head_dim("head_dim", head_dim)
    config = resolve_scaling(scaling, base)
    length = _length_for(config, positions, seq_len, "rope_angles")
    theta, _ = _frequencies_on(config, head_dim, length, positions.device)
    return _angles(positions, theta)


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


def _swap(x: torch.Tensor, layout: str) -> torch.Tensor:
    """Each channel pair's two channels exchanged: half, ``(x1, x2) -> (x2, x1)``; interleaved,
    ``(x_{2i}, x_{2i+1}) -> (x_{2i+1}, x_{2i})``. One pass."""
    if layout == "half":
        return x.roll(x.shape[-1] // 2, dims=-1)
    return _as_pairs(x).flip(-1).flatten(-2)


def _rotate_formula(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str
) -> torch.Tensor:
    """Formula 1, the rotation as three out-of-place operations, computed in ``cos.dtype``:
    ``x * cos + swap(x) * sin`` with the full-width tables ``cos`` ``[cos, cos]`` and ``sin``
    ``[-sin, sin]`` (:func:`_tables`; interleaved, pair by pair). ``x``: ``(..., seq_len, 2n)``.

    A float16 or bfloat16 ``x`` is not copied first: type promotion reads it as float32 (exactly)
    in the products, and its channels are exchanged in its own dtype, half the bytes.

    Differentiable, traced and compiled as it is (a compiler fuses it into one kernel); on a
    GPU, and for small inputs on the CPU, it is also the fastest way without autograd.
    """
    return torch.addcmul(x * cos, _swap(x, layout), sin)


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


def _as_complex(x: torch.Tensor) -> torch.Tensor:
    """``(..., d)`` real -> ``(..., d/2)`` complex view of its channel pairs."""
    return torch.view_as_complex(_as_pairs(x))


def _pass_tables(cos: torch.Tensor, sin: torch.Tensor, layout: str) -> list[torch.Tensor]:
    """The tables :func:`_rotate_pass` reads, from the full-width tables ``[cos, cos]`` and
    ``[-sin, sin]`` ``(..., seq_len, 2n)`` (:func:`_tables`): interleaved, ``[cos + i sin]``
    ``(..., seq_len, n)`` complex; half, ``[cos repeated for both halves (..., seq_len, 2n),
    sin (..., seq_len, n)]``."""
    if layout == "interleaved":
        return [torch.complex(cos[..., 0::2], sin[..., 1::2])]
    return [cos, sin[..., sin.shape[-1] // 2 :]]


def _operands(x: torch.Tensor, layout: str) -> tuple[torch.Tensor, ...]:
    """The views of ``x`` ``(..., 2n)`` that :func:`_rotate_pass` reads or writes: interleaved,
    its pairs as complex numbers ``(..., n)``; half, ``x`` and its two halves ``(..., n)``."""
    if layout == "interleaved":
        return (_as_complex(x),)
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


def _rotate_into(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, out: torch.Tensor
) -> None:
    """Formula 2, the rotation written into ``out``, without autograd.

    When ``x`` and ``out`` are in ``cos.dtype``: interleaved (pairs that view as complex
    numbers), one pass over the whole tensor; half, its three passes block by block
    (``_BLOCK_ELEMENTS``), each block small enough to stay in a per-core cache. Otherwise
    staged: each block of ``x`` is copied into contiguous scratch in ``cos.dtype``, rotated
    there, and rounded once into ``out``; so a bfloat16 input costs no full-size float32 copy.
    """
    lead = (1,) * (x.dim() - cos.dim())
    tables = _pass_tables(cos.reshape(*lead, *cos.shape), sin.reshape(*lead, *sin.shape), layout)
    same_dtype = x.dtype == out.dtype == cos.dtype
    if same_dtype and layout == "interleaved" and _pairs_viewable(x) and _pairs_viewable(out):
        _rotate_pass(_operands(x, layout), _operands(out, layout), tables)
        return
    blocks = _blocks([x, out, *tables], _BLOCK_ELEMENTS)
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


def _check_tables(x: torch.Tensor, cos: object, sin: object) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin: floating tensors of one shape ``(..., seq_len, n)``, ``1 <= n <= d/2``,
    their leading sizes (aligned from the right) 1 or those of ``x``, on ``x``'s device."""
    for name, t in (("cos", cos), ("sin", sin)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            kind = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"{name} must be a floating torch.Tensor, got {kind}")
    assert isinstance(cos, torch.Tensor) and isinstance(sin, torch.Tensor)
    shape, lead = tuple(cos.shape), tuple(x.shape[:-1])
    if (
        tuple(sin.shape) != shape
        or not 1 <= len(shape) <= x.dim()
        or not 1 <= shape[-1] <= x.shape[-1] // 2
        or any(c not in (1, s) for c, s in zip(reversed(shape[:-1]), reversed(lead), strict=False))
    ):
        raise ValueError(
            f"cos and sin must have one shape (..., seq_len, n) with 1 <= n <= head_dim / 2 = "
            f"{x.shape[-1] // 2} and leading sizes 1 or those of x {tuple(x.shape)}, got cos "
            f"{shape} and sin {tuple(sin.shape)}"
        )
    for name, t in (("cos", cos), ("sin", sin)):
        if t.device != x.device:
            raise ValueError(f"{name} must be on the device of x ({x.device}), got {t.device}")
    return cos, sin


def _check_out(name: str, out: object, x: torch.Tensor) -> torch.Tensor:
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


def _blocked(x: torch.Tensor) -> bool:
    """Whether the rotation of ``x`` is written into its output block by block
    (:func:`_rotate_into`): on the CPU, without autograd, compiler or trace, for inputs of at
    least ``_BLOCKED_FROM`` elements, where blocks that stay in a core's cache save passes over
    memory. Elsewhere the formula's three operations run: a GPU has no such cache to reuse, and
    there more operations mean more kernel launches."""
    return not (torch.compiler.is_compiling() or is_tracing() or torch.is_grad_enabled()) and (
        x.device.type == "cpu" and x.numel() >= _BLOCKED_FROM
    )


def _rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`rotate` for checked arguments, ``cos`` and ``sin`` the full-width tables
    ``[cos, cos]`` and ``[-sin, sin]`` (:func:`_tables`) in the rotation dtype."""
    rotary = cos.shape[-1]
    if _blocked(x):
        if out is None:
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        _rotate_into(x[..., :rotary], cos, sin, layout, out[..., :rotary])
        if rotary < x.shape[-1]:  # partial rotation: the rest pass unchanged
            out[..., rotary:].copy_(x[..., rotary:])
        return out
    if rotary == x.shape[-1]:
        result = _rotate_formula(x, cos, sin, layout)
        result = result if result.dtype == x.dtype else result.to(x.dtype)
    else:  # partial rotation: the channels beyond the first 2n pass unchanged
        turned = _rotate_formula(x[..., :rotary], cos, sin, layout).to(x.dtype)
        result = torch.cat((turned, x[..., rotary:]), dim=-1)
    return result if out is None else out.copy_(result)


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str = "interleaved",
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotates the channel pairs of ``x`` by given cosines and sines: the RoPE rotation alone.

    Pair ``i`` of vector ``j`` becomes
    :math:`(x_a \cos_{j,i} - x_b \sin_{j,i},\; x_b \cos_{j,i} + x_a \sin_{j,i})`. The tables
    may carry a common scale (an attention factor, or xPos's per-position scale), so a new
    rotary encoding builds its tables and calls this.

    Shapes:
        ``x``: ``(..., seq_len, head_dim)``; ``cos``, ``sin``: ``(..., seq_len, n)`` with
        ``n <= head_dim / 2`` pairs, leading sizes 1 (shared) or those of ``x``; output: as ``x``.

    Args:
        x: floating tensor, ``head_dim`` even.
        cos, sin: floating tensors of one shape. With ``n < head_dim / 2`` (partial rotation,
            GPT-NeoX's and Phi's ``partial_rotary_factor``), the first ``2n`` channels are
            rotated in ``layout`` and the others pass unchanged.
        layout: ``"interleaved"`` (pair ``i`` is channels ``(2i, 2i+1)``) or ``"half"`` (pair
            ``i`` is ``(i, i + n)``).
        out: optional buffer of ``x``'s shape, dtype and device, sharing no memory with ``x``,
            into which the result is written and returned. Not differentiable.

    Returns:
        the rotated ``x``, in ``x``'s dtype. It is computed in float64 for float64 ``x`` and in
        float32 otherwise (``cos`` and ``sin`` are cast to that dtype) and rounded once,
        also inside ``torch.autocast``. Differentiable in ``x``, ``cos`` and ``sin``.
    """
    x = check_rotary_input("x", x)
    layout = check_layout("layout", layout)
    cos, sin = _check_tables(x, cos, sin)
    if out is not None:
        out = _check_out("out", out, x)
    dtype = _rotation_dtype(x)
    return _rotate(x, *_full_width(cos.to(dtype), sin.to(dtype), layout), layout, out)


def _full_width(
    cos: torch.Tensor, sin: torch.Tensor, layout: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin ``(..., n)`` -> the formula's tables ``[cos, cos]`` and ``[-sin, sin]``
    ``(..., 2n)``, each value once per channel of its pair in ``layout``'s order."""
    if layout == "half":
        return torch.cat((cos, cos), dim=-1), _signed(sin, layout)
    return torch.stack((cos, cos), dim=-1).flatten(-2), _signed(sin, layout)


def _rotation_tables(
    angles: torch.Tensor, attention_factor: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of float64 ``angles`` times the attention factor, each rounded once to ``dtype``."""
    cos, sin = torch.cos(angles), torch.sin(angles)
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


def _tables(
    config: ScalingConfig,
    head_dim: int,
    seq_len: float | None,
    positions: torch.Tensor,
    dtype: torch.dtype,
    layout: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention-scaled full-width tables ``[cos, cos]`` and ``[-sin, sin]``
    ``(..., len(positions), 2n)`` in ``layout``'s channel order, on the positions' device:
    the cos and sin of the ``n`` float64 angles, each rounded once to ``dtype``."""
    theta, attention_factor = _frequencies_on(config, head_dim, seq_len, positions.device, layout)
    return _rotation_tables(_angles(positions, theta), attention_factor, dtype)


def _rotation_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float | None = None,
    layout: str = "interleaved",
    scaling: Mapping[str, Any] | ScalingConfig | None = None,
    seq_len: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""Rotates each channel pair of ``x`` at position ``m`` by :math:`m\,\theta_i` (RoFormer, eq. 34).

    Args:
        x: queries or keys, shape ``(..., seq_len, head_dim)`` with ``head_dim`` even, e.g.
            ``(batch, heads, seq_len, head_dim)``; float16, bfloat16, float32 or float64.
        positions: int64 (or float64, for fractional positions), non-negative, at most
            ``2**53 - 1``: entries checked on the CPU only (on a GPU, reading them would make
            every call wait for the device; there a negative entry rotates backwards and a NaN
            gives NaN). ``None`` (default) means ``0 .. seq_len - 1``. Shape
            ``(seq_len,)``: the same positions for every leading index of ``x``. Or one
            position per vector: shape ``x.shape[:-1]``, where a leading size may be 1 to be
            shared, e.g. ``(batch, 1, seq_len)`` for ``x`` of shape
            ``(batch, heads, seq_len, head_dim)`` (left-padded batches). No other shape is
            accepted: in particular ``(batch, seq_len)`` for a 4-d ``x`` is rejected rather
            than aligned with the wrong axis; write ``positions[:, None, :]``.
        base: frequency base, > 1 (default ``DEFAULT_BASE`` = 10000, or ``scaling``'s
            ``rope_theta``).
        layout: ``"interleaved"`` (pairs ``(2i, 2i+1)``, RoFormer and Llama) or ``"half"``
            (pairs ``(i, i + head_dim/2)``, GPT-NeoX and Hugging Face ``rotate_half``).
        scaling: ``None`` (plain RoPE) or a ``config.json`` ``rope_scaling`` mapping (see
            :mod:`pe_lib.rope_scaling`): the angles use its :math:`\theta'_i` and cos and sin are
            multiplied by its attention factor.
        seq_len: the current sequence length, for scalings whose frequencies depend on it
            (``"dynamic"``, ``"longrope"``): an int, at least the last position + 1, checked
            whatever the scaling. Default: the last position + 1, fractional for fractional
            positions as transformers' ``max(position_ids) + 1`` (``modeling_rope_utils.py``):
            positions ``[0.0, 511.5]`` give 512.5, beyond a LongRoPE ``L`` of 512. Queries and
            keys compared with each other must use the same one.
        out: optional buffer of ``x``'s shape, dtype and device, sharing no memory with ``x``:
            the rotation is written into it (same values, one rounding) and it is returned.
            Saves allocating a fresh output at every call; not differentiable (an input that
            requires grad raises ``ValueError``).

    Returns:
        a new tensor (or ``out``) of the shape, dtype and device of ``x``. Angles are float64; the rotation
        runs in float32 for float16, bfloat16 and float32 inputs (float64 for float64) and is
        rounded once to ``x.dtype``, also inside ``torch.autocast``. Differentiable in ``x``.
    """
    with _quiet_while_tracing():
        x = check_rotary_input("x", x)
        config = resolve_scaling(scaling, base)
        layout = check_layout("layout", layout)
        if out is not None:
            out = _check_out("out", out, x)
        head_dim = static_size(x, -1)  # a Python int also while tracing: theta is fixed
        if positions is None:
            # under tracing, x.shape[-2] is a traced size, so the trace holds for every length
            positions = torch.arange(x.shape[-2], device=x.device)
        else:
            positions = check_positions("positions", positions)
            check_positions_match("positions", positions, x)
        length = _length_for(config, positions, seq_len, "apply_rope")
        cos, sin = _tables(config, head_dim, length, positions, _rotation_dtype(x), layout)
        return _rotate(x, cos, sin, layout, out)


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
    ``forward``. ``torch.compile(fullgraph=True)`` compiles it in one graph; a
    ``torch.jit.trace`` holds for every length with ``offset + seq_len <= max_len`` (a trace
    keeps no Python checks, so it cannot tell a longer input); ``torch.jit.script`` is refused.

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
            (:mod:`pe_lib.rope_scaling`), checked here once.
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
        """Attention-scaled full-width tables ``(len(positions), rotary channels)`` in the angle
        dtype (:func:`_tables`)."""
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
        with _quiet_while_tracing():
            return self._forward(q, k, offset, seq_len, out)

    def _forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        offset: int,
        seq_len: int | None,
        out: tuple[torch.Tensor, torch.Tensor] | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        q, k = check_rotary_input("q", q), check_rotary_input("k", k)
        if self.scaling.entry.needs_seq_len and is_tracing():
            raise ValueError(
                f"RotaryEmbedding with {self.scaling.rope_type!r} scaling cannot be traced with "
                f"torch.jit.trace: its frequencies depend on the sequence length, which a "
                f"trace fixes at the example's; use torch.compile, or call it without tracing"
            )
        if out is not None:
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(
                    f"out must be a tuple (q_out, k_out) of two tensors, got {type(out).__name__}"
                )
            outs = (_check_out("out[0]", out[0], q), _check_out("out[1]", out[1], k))
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
        cached = end <= self.max_len and (length is None or length <= (cache_length or 0))
        if is_tracing() and not cached:
            limit = self.max_len if cache_length is None else min(self.max_len, cache_length)
            raise ValueError(
                f"a trace of RotaryEmbedding reads its cached tables, which hold positions up to "
                f"max_len - 1 = {self.max_len - 1} (dynamic scaling: lengths up to "
                f"original_max_position_embeddings); trace with offset + seq_len <= {limit}, "
                f"got offset={offset} and seq_len {end - offset}"
            )
        if cached:
            return self.cos_table[offset:end], self.sin_table[offset:end]
        positions = torch.arange(offset, end, device=self.cos_table.device)
        return self._tables(positions, length, self.cos_table.device)

    def __prepare_scriptable__(self) -> nn.Module:
        raise TypeError(
            "RotaryEmbedding cannot be compiled with torch.jit.script (its scaling is a Python "
            "mapping); use torch.compile, or torch.jit.trace within max_len"
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
