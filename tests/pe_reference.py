"""Reference implementations for the pe_lib tests, written independently of pe_lib."""

from __future__ import annotations

import math

import numpy as np
import torch


def reference_table(
    num_positions: int,
    d_model: int,
    *,
    base: float = 10000.0,
    offset: int = 0,
    layout: str = "interleaved",
) -> np.ndarray:
    """The sinusoidal table, entry by entry, in float64 with Python's ``math`` (no pe_lib).

    Vaswani et al. (2017), section 3.5: PE(pos, 2i) = sin(pos / base^(2i/d)),
    PE(pos, 2i+1) = cos(pos / base^(2i/d)). The ``"half"`` layout lists the ceil(d/2) sines
    first, then the floor(d/2) cosines.
    """
    num_sines = (d_model + 1) // 2
    table = np.empty((num_positions, d_model), dtype=np.float64)
    for row in range(num_positions):
        pos = offset + row
        for col in range(d_model):
            if layout == "interleaved":
                pair, is_sine = col // 2, col % 2 == 0
            else:
                is_sine = col < num_sines
                pair = col if is_sine else col - num_sines
            angle = pos / base ** (2 * pair / d_model)
            table[row, col] = math.sin(angle) if is_sine else math.cos(angle)
    return table


def article_table_float32(num_positions: int, d_model: int) -> torch.Tensor:
    """The article's listing: positions and ``div_term`` in float32, so ``pos * div`` is float32."""
    position = torch.arange(0, num_positions, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(num_positions, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


def rope_theta(head_dim: int, base: float = 10000.0) -> np.ndarray:
    """RoFormer's frequencies theta_i = base ** (-2i / d), i = 0 .. d/2 - 1, float64."""
    return base ** (-2.0 * np.arange(head_dim // 2) / head_dim)


def llama3_theta(
    head_dim: int, base: float, factor: float, low: float, high: float, original: int
) -> np.ndarray:
    """Meta's Llama 3.1 ``apply_scaling``, retyped as a loop over the frequencies: pairs whose
    wavelength is below ``original / high`` are kept, those above ``original / low`` divided by
    ``factor``, and those between blended. float64."""
    low_wavelength, high_wavelength = original / low, original / high
    theta = []
    for freq in rope_theta(head_dim, base):
        wavelength = 2 * math.pi / freq
        if wavelength < high_wavelength:
            theta.append(freq)
        elif wavelength > low_wavelength:
            theta.append(freq / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            theta.append((1 - smooth) * freq / factor + smooth * freq)
    return np.array(theta)


def rotate_pairs(x: np.ndarray, angles: np.ndarray, layout: str, scale: float = 1.0) -> np.ndarray:
    """RoPE by complex numbers: each channel pair (a, b) as a + ib, times ``scale * e^{i angle}``.

    ``x``: (seq_len, d) float64; ``angles``: (seq_len, d/2); ``layout``: ``"interleaved"`` (pairs
    (2i, 2i+1)) or ``"half"`` (pairs (i, i + d/2)). Returns (seq_len, d).
    """
    half = x.shape[-1] // 2
    z = x[:, 0::2] + 1j * x[:, 1::2] if layout == "interleaved" else x[:, :half] + 1j * x[:, half:]
    rotated = scale * z * np.exp(1j * angles)
    out = np.empty_like(x)
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = rotated.real, rotated.imag
    else:
        out[:, :half], out[:, half:] = rotated.real, rotated.imag
    return out
