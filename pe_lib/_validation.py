"""Argument checks shared by every public function of pe_lib.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, value
not allowed) with a message that names the argument, repeats the value given and says what
is allowed.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import os
import reprlib
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TypeVar

import numpy as np
import torch

__all__ = [
    "LAYOUT_ALIASES",
    "LAYOUTS",
    "MAX_EXACT_INT",
    "check_base",
    "check_choice",
    "check_device",
    "check_disjoint_memory",
    "check_dropout",
    "check_features",
    "check_floating_dtype",
    "check_has_values",
    "check_indices",
    "check_int",
    "check_layout",
    "check_memory",
    "check_nonnegative_int",
    "check_positive_int",
    "check_position_entries",
    "check_position_span",
    "check_shift",
    "check_shift_entries",
    "check_table_size",
    "memory_limit",
    "naming_allocation",
    "renamed_keyword",
]

#: The largest integer ``n`` such that every integer in ``[0, n]`` is exact in float64
#: (IEEE 754 binary64 has a 53-bit significand). Positions, shifts and sizes are bounded by it,
#: because angles are formed as ``position * omega`` in float64: beyond it, neighbouring
#: positions round to the same float and their rows silently coincide.
MAX_EXACT_INT = 2**53 - 1

_T = TypeVar("_T")

_BOUND = "2**53 - 1 (float64 represents integers exactly only up to 2**53)"


def check_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int``; ``bool`` and non-integral numbers raise ``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    return int(value)


def check_int_in_range(name: str, value: object, low: int, high: int) -> int:
    """Return ``value`` as an ``int`` in ``[low, high]`` (both included)."""
    value = check_int(name, value)
    if not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value}")
    return value


def _exact_int_from(name: str, value: object, low: int, kind: str) -> int:
    """An ``int`` in ``[low, 2**53 - 1]``; messages call it a ``kind`` int."""
    value = check_int(name, value)
    if value < low:
        raise ValueError(f"{name} must be a {kind} int (>= {low}), got {value}")
    if value > MAX_EXACT_INT:
        raise ValueError(f"{name} must be a {kind} int at most {_BOUND}, got {value}")
    return value


def check_positive_int(name: str, value: object) -> int:
    """An ``int`` in ``[1, 2**53 - 1]`` (sizes: ``d_model``, ``max_len``, ``num_positions``, ...)."""
    return _exact_int_from(name, value, 1, "positive")


def check_nonnegative_int(name: str, value: object) -> int:
    """An ``int`` in ``[0, 2**53 - 1]`` (first positions: ``offset``)."""
    return _exact_int_from(name, value, 0, "non-negative")


def check_shift(name: str, value: object) -> int:
    """An ``int`` in ``[-(2**53 - 1), 2**53 - 1]`` (a relative shift ``k``)."""
    value = check_int(name, value)
    if abs(value) > MAX_EXACT_INT:
        raise ValueError(f"{name} must be an int of absolute value at most {_BOUND}, got {value}")
    return value


def check_position_span(offset_name: str, offset: int, count_name: str, count: int) -> None:
    """The last position ``offset + count - 1`` of a window is at most ``2**53 - 1``.

    ``offset`` and ``count`` are already checked ints; the names are the caller's arguments.
    """
    last = offset + count - 1
    if last > MAX_EXACT_INT:
        raise ValueError(
            f"{offset_name} + {count_name} - 1 (the last position) must be at most {_BOUND}, "
            f"got {offset_name}={offset} and {count_name}={count} (last position {last})"
        )


def renamed_keyword(
    new_name: str, new_value: object, old_name: str, old_value: object, default: object
) -> tuple[str, object]:
    """Resolve a keyword that was renamed (``start`` -> ``offset``): ``(name used, value)``.

    The old name still works but raises a ``DeprecationWarning`` that names the new one;
    passing both raises ``TypeError``. The name returned is the one the caller used, so that
    error messages repeat it.
    """
    if old_value is not None:
        if new_value is not None:
            raise TypeError(
                f"{new_name} and {old_name} are the same argument ({old_name} is the older name "
                f"of {new_name}); pass only {new_name}, got {new_name}={new_value!r} and "
                f"{old_name}={old_value!r}"
            )
        _warn_renamed(f"{old_name}=", f"{new_name}=")
        return old_name, old_value
    return new_name, default if new_value is None else new_value


def _warn_renamed(old: str, new: str) -> None:
    """Warn, at the first caller outside pe_lib, that ``old`` is deprecated for ``new``."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        package + os.sep
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        f"{old} is deprecated, use {new} instead (same meaning)", DeprecationWarning, level
    )


def check_base(name: str, value: object) -> float:
    """The base of the geometric frequency progression: a finite real number > 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number > 1, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value) or value <= 1.0:
        raise ValueError(
            f"{name} must be a finite number > 1 (the paper uses 10000.0), got {value!r}"
        )
    return value


def check_dropout(name: str, value: object) -> float:
    """A dropout probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a float in [0, 1), got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


#: The two channel orders of sine/cosine (or rotation) pairs: ``"interleaved"``, pair ``i`` in
#: channels ``(2i, 2i+1)``; ``"half"``, pair ``i`` in channels ``(i, i + ceil(d/2))``.
LAYOUTS = ("interleaved", "half")
#: Deprecated names of a layout, each with the name to use (a ``DeprecationWarning`` says it):
#: tables called the split-halves order ``"concat"``.
LAYOUT_ALIASES = {"concat": "half"}


def check_choice(
    name: str,
    value: object,
    allowed: tuple[str, ...],
    aliases: dict[str, str] | None = None,
) -> str:
    """One of the strings ``allowed`` (or an alias of one, returned as the name it stands for)."""
    aliases = aliases or {}
    choices = ", ".join(map(repr, allowed))
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be one of {choices}, got {value!r} of type {type(value).__name__}"
        )
    if value in aliases:
        _warn_renamed(f"{name}={value!r}", f"{name}={aliases[value]!r}")
        return aliases[value]
    if value not in allowed:
        also = f" (or the deprecated {', '.join(map(repr, aliases))})" if aliases else ""
        raise ValueError(f"{name} must be one of {choices}{also}, got {value!r}")
    return value


def check_layout(
    name: str,
    value: object,
    allowed: tuple[str, ...] = LAYOUTS,
    aliases: dict[str, str] | None = None,
) -> str:
    """One of the channel layouts ``allowed`` (:data:`LAYOUTS` unless given)."""
    return check_choice(name, value, allowed, aliases)


def check_indices(name: str, values: object, stop: int, *, distinct: bool = False) -> list[int]:
    """A non-empty sequence of ints in ``[0, stop)`` (column or row indices); ``bool`` raises."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(
            f"{name} must be a sequence of ints (indices in [0, {stop})), "
            f"got {reprlib.repr(values)} of type {type(values).__name__}"
        )
    indices = list(values)
    if not indices:
        raise ValueError(f"{name} must hold at least one index in [0, {stop}), got {values!r}")
    not_ints = [i for i in indices if isinstance(i, bool) or not isinstance(i, numbers.Integral)]
    if not_ints:
        raise TypeError(
            f"{name} must hold ints only (not bool or float), got {indices!r} with "
            f"non-int entries {not_ints!r}"
        )
    indices = [int(i) for i in indices]
    outside = [i for i in indices if not 0 <= i < stop]
    if outside:
        raise ValueError(
            f"{name} must be indices in [0, {stop}), got {indices} (out of range: {outside})"
        )
    if distinct and len(set(indices)) != len(indices):
        raise ValueError(f"{name} must not repeat an index, got {indices}")
    return indices


def check_floating_dtype(name: str, value: object) -> torch.dtype:
    """A floating-point ``torch.dtype``."""
    if not isinstance(value, torch.dtype):
        raise TypeError(
            f"{name} must be a floating torch.dtype such as torch.float32, "
            f"got {value!r} of type {type(value).__name__}"
        )
    if not value.is_floating_point:
        raise TypeError(
            f"{name} must be a floating torch.dtype (float16, bfloat16, float32, float64), "
            f"got {value}"
        )
    return value


def check_device(name: str, value: object) -> torch.device | None:
    """``None``, a ``torch.device`` or a device string such as ``"cpu"`` or ``"cuda:0"``."""
    if value is None:
        return None
    if isinstance(value, torch.device):
        return _check_available(name, value)
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a torch.device, a str such as 'cpu', or None, "
            f"got {reprlib.repr(value)} of type {type(value).__name__}"
        )
    try:
        device = torch.device(value)
    except RuntimeError:
        raise ValueError(
            f"{name} must name a device such as 'cpu' or 'cuda:0', got {value!r}"
        ) from None
    return _check_available(name, device)


def _check_available(name: str, device: torch.device) -> torch.device:
    """``device`` if a tensor can be placed on it (torch raises deep inside otherwise)."""
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:
        raise ValueError(
            f"{name} must be a device available here, got {str(device)!r}: {error}"
        ) from None
    return device


def check_table_size(rows_name: str, num_rows: int, columns_name: str, num_columns: int) -> None:
    """A ``(num_rows, num_columns)`` tensor has at most ``2**63 - 1`` elements (torch's limit)."""
    if num_rows * num_columns > 2**63 - 1:
        raise ValueError(
            f"{rows_name} * {columns_name} must be at most 2**63 - 1 elements (the most a torch "
            f"tensor holds), got {rows_name}={num_rows} and {columns_name}={num_columns}"
        )


@functools.cache
def memory_limit() -> int | None:
    """The most bytes this process could ever allocate: the machine's physical memory, or a
    container's smaller limit (cgroup v2 ``memory.max`` or v1 ``memory.limit_in_bytes``);
    ``None`` where neither can be read. Read once per process."""
    known = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        known.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(ValueError, OSError):
            with open(path, encoding="ascii") as stream:
                known.append(int(stream.read().strip()))  # "max" (no limit) raises ValueError
    positive = [n for n in known if n > 0]
    return min(positive) if positive else None


def format_bytes(count: int) -> str:
    """``count`` bytes in the largest binary unit below it, e.g. ``"1.5 GiB"``."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    size, unit = float(count), 0
    while size >= 1024 and unit < len(units) - 1:
        size, unit = size / 1024, unit + 1
    return f"{count} bytes" if unit == 0 else f"{size:.1f} {units[unit]}"


def check_memory(what: str, nbytes: int) -> None:
    """Refuse up front a computation that needs more memory than this process could ever have
    (:func:`memory_limit`), before the operating system kills it or torch's allocator fails.

    ``what`` names the sizes and what is made of them, e.g. ``"num_positions=2147483648 rows
    of d_model=2147483648 float32 values"``; ``nbytes`` is the peak the computation needs.
    """
    limit = memory_limit()
    if limit is not None and nbytes > limit:
        raise ValueError(
            f"{what} would need {format_bytes(nbytes)} of memory, more than this machine has "
            f"({format_bytes(limit)}); ask for fewer positions or a smaller size"
        )


@contextlib.contextmanager
def naming_allocation(what: str, nbytes: int) -> Iterator[None]:
    """Within the block, an allocation that fails (torch's allocator, a device out of memory)
    is raised again as a ``MemoryError`` naming ``what`` and the ``nbytes`` it needs (see
    :func:`check_memory`), rather than as the allocator's own message alone."""
    try:
        yield
    except (RuntimeError, MemoryError) as error:
        message = str(error).lower()
        failed = isinstance(error, (MemoryError, torch.OutOfMemoryError)) or (
            "alloc" in message or "storage size calculation overflowed" in message
        )
        if not failed:
            raise
        raise MemoryError(
            f"{what} needs {format_bytes(nbytes)} of memory, which could not be allocated "
            f"here; ask for fewer positions or a smaller size ({type(error).__name__}: "
            f"{str(error).strip().splitlines()[0] if str(error).strip() else ''})"
        ) from None


def check_features(name: str, x: object, d_model: int, ndim: int = 3) -> torch.Tensor:
    """A floating tensor of shape (batch, seq_len, d_model) (``ndim`` dimensions in all).

    With ``ndim == 3`` the sequence must hold at least one position (``seq_len >= 1``).
    """
    return _check_features(name, x, d_model, ndim)


def _check_features(name: str, x: object, d_model: int, ndim: int) -> torch.Tensor:
    expected = "(batch, seq_len, d_model)" if ndim == 3 else f"{ndim} dimensions"
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape {expected}, "
            f"got {reprlib.repr(x)} of type {type(x).__name__}"
        )
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must have a floating dtype (float16, bfloat16, float32, float64), "
            f"got {x.dtype}; convert token ids to embeddings first"
        )
    if x.dim() != ndim or x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape {expected} with d_model={d_model}, got shape {tuple(x.shape)}"
        )
    if ndim == 3 and x.shape[1] == 0:
        raise ValueError(
            f"{name} must hold at least one position, shape (batch, seq_len, d_model) with "
            f"seq_len >= 1, got shape {tuple(x.shape)}"
        )
    return x


# --- rotary embeddings (pe_lib.rope, pe_lib.rope.scaling) --------------------------------------


def check_real(
    name: str, value: object, *, at_least: float | None = None, above: float | None = None
) -> float:
    """A finite real number, optionally ``>= at_least`` or ``> above``; ``bool`` raises."""
    bound = (
        f" >= {at_least:g}"
        if at_least is not None
        else f" > {above:g}"
        if above is not None
        else ""
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number{bound}, got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if (
        not math.isfinite(value)
        or (at_least is not None and value < at_least)
        or (above is not None and value <= above)
    ):
        raise ValueError(f"{name} must be a finite real number{bound}, got {value!r}")
    return value


def check_instance(name: str, value: object, kind: type[_T]) -> _T:
    """An instance of ``kind`` (subclasses included); torch's classes are named ``torch.X``."""
    if not isinstance(value, kind):
        prefix = "torch." if kind.__module__ == "torch" else ""
        raise TypeError(f"{name} must be a {prefix}{kind.__name__}, got {type(value).__name__}")
    return value


def check_int64_tensor(name: str, value: object, ndim: int, expected: str) -> torch.Tensor:
    """An int64 tensor of ``ndim`` dimensions (token ids); ``expected`` describes it, e.g.
    ``"an int64 tensor of shape (batch, seq_len)"``."""
    if not isinstance(value, torch.Tensor) or value.dtype != torch.int64 or value.dim() != ndim:
        got = (
            f"{value.dtype} {tuple(value.shape)}"
            if isinstance(value, torch.Tensor)
            else type(value).__name__
        )
        raise TypeError(f"{name} must be {expected}, got {got}")
    return value


def check_ids_below(name: str, ids: torch.Tensor, vocab_size: int) -> None:
    """Every entry of the non-empty ``ids`` is in ``[0, vocab_size)``."""
    lowest, highest = int(ids.min()), int(ids.max())
    if lowest < 0 or highest >= vocab_size:
        raise ValueError(
            f"{name} must be ids in [0, vocab_size={vocab_size}), got values from {lowest} "
            f"to {highest}"
        )


def check_callable(name: str, value: object, what: str) -> None:
    """A callable; ``what`` says what it must be, e.g. ``"a function f(n) -> (n,) values"``."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")


def check_bool(name: str, value: object) -> bool:
    """A ``bool`` (not an int standing for one)."""
    if not isinstance(value, bool):
        raise TypeError(
            f"{name} must be True or False, got {value!r} of type {type(value).__name__}"
        )
    return value


def check_head_dim(name: str, value: object) -> int:
    """The size of the vectors RoPE rotates: a positive even int (channels turn in pairs)."""
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(
            f"{name} must be even for RoPE (channels are rotated in pairs), got {value}"
        )
    return value


def check_positions(name: str, positions: object) -> torch.Tensor:
    """Rotation positions: an int64 (or float64, for fractional positions) tensor of shape
    ``(..., seq_len)``, at least one dimension, entries finite, in ``[0, 2**53 - 1]``.

    The dtype and shape are checked everywhere; the entries only on the CPU, outside
    ``torch.compile``. Reading values held by a GPU makes the host wait for the device at every
    call (at one token a step, longer than the rotation itself), and a compiled graph cannot
    branch on them; a meta tensor has none. There, out-of-range entries are not refused: a
    negative position rotates backwards, a NaN gives NaN outputs."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(
            f"{name} must be an int64 torch.Tensor of positions, got {type(positions).__name__}"
        )
    if positions.dtype not in (torch.int64, torch.float64):
        raise TypeError(
            f"{name} must have dtype torch.int64 (integer positions; angles are formed in "
            f"float64 from them) or torch.float64 (fractional positions), got {positions.dtype}"
        )
    if positions.dim() == 0:
        raise ValueError(
            f"{name} must have shape (..., seq_len) with at least one dimension, got a 0-d tensor"
        )
    check_position_entries(name, positions)
    return positions


def _readable_here(values: torch.Tensor) -> bool:
    """Whether the entries of ``values`` are read for checks: a non-empty CPU tensor, outside
    ``torch.compile`` (see :func:`check_positions` for why not elsewhere)."""
    return (
        bool(values.numel()) and values.device.type == "cpu" and not torch.compiler.is_compiling()
    )


def _extremes(values: torch.Tensor) -> tuple[int | float, int | float]:
    """The smallest and largest entry of the non-empty real tensor ``values``."""
    if values.numel() <= 64:  # decoding: a few
        flat = values.flatten().tolist()
        return min(flat), max(flat)
    low, high = torch.stack(torch.aminmax(values)).tolist()  # one read of both ends
    return low, high


def check_position_entries(name: str, positions: torch.Tensor) -> None:
    """The entries of an int64 or float64 tensor of positions (or of coordinates, one axis per
    last index) are finite and in ``[0, 2**53 - 1]``; read on the CPU only, outside
    ``torch.compile``, as :func:`check_positions` says."""
    if not _readable_here(positions):
        return
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError(f"{name} must be finite positions, got a NaN or infinite entry")
    low, high = _extremes(positions)
    if low < 0:
        raise ValueError(f"{name} must be non-negative positions, got a minimum of {low}")
    if high > MAX_EXACT_INT:
        raise ValueError(f"{name} must be at most {_BOUND}, got a maximum of {high}")


def check_shift_entries(name: str, shifts: torch.Tensor, what: str) -> None:
    """The entries of the integer tensor ``shifts`` (relative positions ``j - i``) have absolute
    value at most ``2**53 - 1``, the distance between two positions of the library; read on the
    CPU only, outside ``torch.compile``, as :func:`check_positions` says. ``what`` names the
    entries in the message, e.g. ``"relative positions j - i"``."""
    if not _readable_here(shifts):
        return
    low, high = _extremes(shifts)
    if low < -MAX_EXACT_INT or high > MAX_EXACT_INT:
        raise ValueError(
            f"{name} must be {what} of absolute value at most {_BOUND}, got values from {low} "
            f"to {high}"
        )


def check_has_values(name: str, tensor: torch.Tensor, expected: str) -> None:
    """``tensor`` holds values to read: not a meta tensor (a shape without data). ``expected``
    says what the argument must be, e.g. ``"a 1-D bool tensor of flags"``."""
    if tensor.is_meta:
        raise ValueError(
            f"{name} must be {expected}, on a device that holds its values (the CPU or a GPU), "
            f"got a meta tensor {tensor.dtype} {tuple(tensor.shape)}, which has a shape but no "
            f"values"
        )


def check_rotary_input(name: str, x: object) -> torch.Tensor:
    """Queries or keys to rotate: a floating tensor ``(..., seq_len, head_dim)``, ``head_dim`` even."""
    x = check_instance(name, x, torch.Tensor)
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must have a floating dtype (float16, bfloat16, float32, float64), got {x.dtype}"
        )
    if x.dim() < 2:
        raise ValueError(
            f"{name} must have shape (..., seq_len, head_dim) with at least 2 dimensions, "
            f"got shape {tuple(x.shape)}"
        )
    if x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(
            f"{name} must have an even head_dim (last dimension) of at least 2 for RoPE, channels "
            f"are rotated in pairs; got head_dim={x.shape[-1]} (shape {tuple(x.shape)})"
        )
    return x


def check_rotary_tables(
    x: torch.Tensor, cos: object, sin: object
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin for rotating ``x``: floating tensors of one shape ``(..., seq_len, n)``,
    ``1 <= n <= d/2``, their leading sizes (aligned from the right) 1 or those of ``x``, on
    ``x``'s device."""
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


def _memory_span(t: torch.Tensor) -> tuple[int, int]:
    """The bytes ``[first, last + 1)`` that the (non-empty) ``t``'s elements lie within."""
    extent = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))
    start = t.data_ptr()
    return start, start + (extent + 1) * t.element_size()


def _may_self_overlap(t: torch.Tensor) -> bool:
    """Whether two elements of ``t`` may share memory: its dimensions, by increasing stride,
    do not each step past all the smaller ones (``expand()`` gives stride 0)."""
    reach = 0  # the largest offset, in elements, the dimensions so far reach
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride(), strict=True)):
        if size == 1:
            continue
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def check_disjoint_memory(
    name: str, out: torch.Tensor, other_name: str, other: torch.Tensor
) -> None:
    """``out``, a non-empty buffer to write into, has no two elements in one memory location
    and lies in memory apart from ``other`` (views of one storage that do not meet pass)."""
    if _may_self_overlap(out):
        raise ValueError(
            f"{name} must not hold two elements in one memory location (as an expand()ed "
            f"tensor does), got shape {tuple(out.shape)} with strides {out.stride()}; pass a "
            f"fresh buffer such as torch.empty_like(x)"
        )
    (a_start, a_end), (b_start, b_end) = _memory_span(out), _memory_span(other)
    if a_start < b_end and b_start < a_end:
        raise ValueError(
            f"{name} must not share memory with {other_name}, got buffers whose memory overlaps "
            f"(bytes {a_start:#x}-{a_end:#x} and {b_start:#x}-{b_end:#x})"
        )


def check_positions_match(name: str, positions: torch.Tensor, x: torch.Tensor) -> None:
    """``positions`` is ``(seq_len,)`` or ``x.shape[:-1]`` with leading sizes possibly 1."""
    lead = tuple(x.shape[:-2])
    seq_len = x.shape[-2]
    shape = tuple(positions.shape)
    shared = shape == (seq_len,)
    per_vector = (
        len(shape) == len(lead) + 1
        and shape[-1] == seq_len
        and all(p in (1, s) for p, s in zip(shape[:-1], lead, strict=True))
    )
    if not (shared or per_vector):
        example = "(seq_len,)" if not lead else f"({seq_len},) or {(*lead, seq_len)}"
        raise ValueError(
            f"{name} must have shape {example} for x of shape {tuple(x.shape)} (leading "
            f"sizes may be 1, e.g. (batch, 1, seq_len) for (batch, heads, seq_len, head_dim)), "
            f"got shape {shape}"
        )
    if positions.device != x.device:
        raise ValueError(f"{name} must be on the device of x ({x.device}), got {positions.device}")
