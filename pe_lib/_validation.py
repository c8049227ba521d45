"""Argument checks shared by every public function of pe_lib.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, value
not allowed) with a message that names the argument, repeats the value given and says what
is allowed.
"""

from __future__ import annotations

import math
import numbers
import reprlib

import torch

__all__ = [
    "check_base",
    "check_dropout",
    "check_features",
    "check_floating_dtype",
    "check_int",
    "check_layout",
    "check_positive_int",
    "check_nonnegative_int",
]


def check_int(name: str, value: object) -> int:
    """Return ``value`` as an ``int``; ``bool`` and non-integral numbers raise ``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    return int(value)


def check_positive_int(name: str, value: object) -> int:
    """An ``int`` >= 1 (sizes: ``d_model``, ``max_len``, ``num_positions``, ...)."""
    value = check_int(name, value)
    if value < 1:
        raise ValueError(f"{name} must be a positive int (>= 1), got {value}")
    return value


def check_nonnegative_int(name: str, value: object) -> int:
    """An ``int`` >= 0 (first positions: ``start``, ``offset``)."""
    value = check_int(name, value)
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int (>= 0), got {value}")
    return value


def check_base(value: object, name: str = "base") -> float:
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


def check_dropout(value: object, name: str = "dropout") -> float:
    """A dropout probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a float in [0, 1), got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


_LAYOUTS = ("interleaved", "concat")


def check_layout(value: object, allowed: tuple[str, ...] = _LAYOUTS, name: str = "layout") -> str:
    """One of the named channel layouts."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, "
            f"got {value!r} of type {type(value).__name__}"
        )
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def check_floating_dtype(value: object, name: str = "dtype") -> torch.dtype:
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


def check_features(x: object, d_model: int, name: str = "x", ndim: int = 3) -> torch.Tensor:
    """A floating tensor of shape (batch, seq_len, d_model) (``ndim`` dimensions in all)."""
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
    return x
