"""What ``torch.jit.trace`` changes for pe_lib: whether a trace is recording, sizes read as
Python ints, and the tracer warnings that reading them raises.

While a trace records a call, tensor sizes are traced values; pe_lib's Python checks run on the
example input's sizes (a trace holds no Python checks), so the warnings torch raises about
reading them are expected and silenced here, in one place.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch

__all__ = ["is_tracing", "quiet_while_tracing", "static_size"]


def is_tracing() -> bool:
    """Whether ``torch.jit.trace`` is recording the current call."""
    return bool(torch.jit.is_tracing())  # type: ignore[attr-defined, no-untyped-call]


def quiet_while_tracing() -> contextlib.AbstractContextManager[None]:
    """Silence ``torch.jit.TracerWarning`` inside the block while a trace records the call
    (outside a trace, warnings are left as they are, and the block costs nothing)."""
    return _quiet() if is_tracing() else contextlib.nullcontext()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)  # type: ignore[attr-defined]
        yield


def static_size(x: torch.Tensor, dim: int) -> int:
    """``x.shape[dim]`` as an ``int``, also while ``torch.jit.trace`` records a call (when the
    size is a traced tensor, this reads its value for the example input, without a warning)."""
    with quiet_while_tracing():
        return int(x.shape[dim])
