"""The dtype pe_lib forms angles and tables in, per device."""

from __future__ import annotations

import torch

__all__ = ["compute_dtype_for"]


def compute_dtype_for(device: torch.device) -> torch.dtype:
    """The dtype angles and tables are formed in on ``device``: float64 wherever the device
    supports it (Apple's MPS does not, and gets float32)."""
    return torch.float32 if device.type == "mps" else torch.float64
