"""Accuracy of sinusoidal tables against an independent float64 reference.

Three tables of ``d_model = 512`` columns are compared, row by row, with a reference computed
here in NumPy float64 from the paper's formula, ``PE(pos, 2i) = sin(pos / 10000^(2i/d))``,
``PE(pos, 2i+1) = cos(pos / 10000^(2i/d))`` (Vaswani et al., 2017, section 3.5):

* ``pe_lib.sinusoidal_table(100_000, 512)`` in float32 (angles in float64, cast once);
* the same in float64 (how closely two independent float64 computations agree);
* the article's listing, rebuilt here: float32 positions times a float32 ``div_term``, so the
  angle ``pos * div`` is rounded to float32 (relative error ~6e-8, i.e. ~6e-3 radians at
  position 100,000) before ``sin``/``cos``.

The maximum absolute error is reported over the first 5,000 positions (the article's
``max_len``) and over all 100,000. The reference is built a block of rows at a time, so the
peak memory is the two float32 tables (200 MB each) plus one block.

Run: ``make bench`` or ``.venv/bin/python benchmarks/accuracy.py``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from pe_lib import sinusoidal_table

D_MODEL, BASE = 512, 10000.0
PREFIXES = (5_000, 100_000)
BLOCK = 5_000  # rows of the float64 reference held at once (20 MB)
REQUIRED_FLOAT32_ERROR = 1e-6


def reference_block(first: int, stop: int) -> np.ndarray:
    """Rows ``first .. stop - 1`` of the interleaved table, float64, from the paper's formula."""
    positions = np.arange(first, stop, dtype=np.float64)[:, None]
    denominators = BASE ** (np.arange(0, D_MODEL, 2, dtype=np.float64) / D_MODEL)
    angles = positions / denominators  # (rows, d/2), float64
    block = np.empty((stop - first, D_MODEL))
    block[:, 0::2] = np.sin(angles)
    block[:, 1::2] = np.cos(angles)
    return block


def article_table(num_positions: int) -> torch.Tensor:
    """The article's listing: ``pos * div_term`` formed in float32."""
    position = torch.arange(0, num_positions).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, D_MODEL, 2).float() * (-math.log(BASE) / D_MODEL))
    table = torch.zeros(num_positions, D_MODEL)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term)
    return table


def main() -> None:
    torch.set_num_threads(1)
    num_positions = max(PREFIXES)
    tables = {
        "pe_lib float32": sinusoidal_table(num_positions, D_MODEL),
        "article float32": article_table(num_positions),
    }
    names = ["pe_lib float32", "pe_lib float64", "article float32"]
    row_errors = {name: np.empty(num_positions) for name in names}  # max |error| per row
    for first in range(0, num_positions, BLOCK):
        stop = min(first + BLOCK, num_positions)
        reference = reference_block(first, stop)
        blocks = {name: table[first:stop].double().numpy() for name, table in tables.items()}
        blocks["pe_lib float64"] = sinusoidal_table(
            stop - first, D_MODEL, offset=first, dtype=torch.float64
        ).numpy()
        for name, block in blocks.items():
            row_errors[name][first:stop] = np.abs(block - reference).max(axis=1)
        del reference, blocks

    print(f"max |table - float64 reference| over positions 0 .. N-1, d_model = {D_MODEL}")
    header = f"{'N':>9} " + " ".join(f"{name:>16}" for name in names)
    print(header)
    print("-" * len(header))
    for prefix in PREFIXES:
        errors = " ".join(f"{row_errors[name][:prefix].max():>16.3e}" for name in names)
        print(f"{prefix:>9,} {errors}")

    worst = row_errors["pe_lib float32"].max()
    verdict = "ok" if worst <= REQUIRED_FLOAT32_ERROR else "MISSED"
    print(
        f"\npe_lib float32 at {num_positions:,} positions: {worst:.3e} "
        f"(required <= {REQUIRED_FLOAT32_ERROR:.0e}: {verdict})"
    )
    ratio = row_errors["article float32"].max() / worst
    print(f"the article's float32 angles are {ratio:,.0f}x less accurate at {num_positions:,}")


if __name__ == "__main__":
    main()
