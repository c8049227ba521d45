"""Speed of ``pe_lib.rope.apply_rope`` against a plain rotate_half implementation, both layouts.

The reference is the formula as it is usually written: cosine and sine tables of shape
``(seq_len, head_dim)`` in float32, then ``x * cos + rotate(x) * sin``, where ``rotate`` is
``rotate_half`` (``(-x2, x1)`` for the halves ``x1, x2``; GPT-NeoX, Hugging Face) or, for the
interleaved layout, its pairwise analogue ``(-x_{2i+1}, x_{2i})``. Both sides build their
tables on every call (as a model's forward pass does), from ``seq_len`` positions. ``apply_rope``
forms its angles in float64, which costs little: the tables have ``seq_len * head_dim / 2``
entries, against ``batch * heads * seq_len * head_dim`` entries of ``x``.

Both are measured in one run, interleaved call by call and in alternating order, under
``torch.no_grad()`` with a fixed number of threads; medians of ``--repeats`` calls are compared.
The target is a ratio ``apply_rope / reference`` of at most 1.0 (not slower).

Run: ``make bench`` or ``.venv/bin/python benchmarks/rope_speed.py [--repeats N] [--threads T]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from pe_lib.rope import apply_rope

SHAPE = (8, 16, 1024, 64)  # (batch, heads, seq_len, head_dim)
BASE = 10000.0
TARGET = 1.0


def reference_tables(seq_len: int, head_dim: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 cos/sin tables of shape (seq_len, head_dim), each angle repeated for both channels of its pair."""
    inverse_frequency = 1.0 / (
        BASE ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    )
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inverse_frequency)
    if layout == "half":
        angles = torch.cat((angles, angles), dim=-1)  # channel c and c + d/2 share an angle
    else:
        angles = angles.repeat_interleave(2, dim=-1)  # channels 2i and 2i+1 share an angle
    return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """(x_{2i}, x_{2i+1}) -> (-x_{2i+1}, x_{2i}) for every pair."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


def reference_rope(x: torch.Tensor, layout: str) -> torch.Tensor:
    cos, sin = reference_tables(x.shape[-2], x.shape[-1], layout)
    rotate = rotate_half if layout == "half" else rotate_pairs
    return x * cos + rotate(x) * sin


def median_seconds(
    candidates: dict[str, Callable[[], torch.Tensor]], repeats: int
) -> dict[str, float]:
    """Median wall time of each callable, called in turn (order alternating) ``repeats`` times."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for function in candidates.values():  # warm-up: allocator, caches
        for _ in range(2):
            function()
    names = list(candidates)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            begin = time.perf_counter()
            out = candidates[name]()
            times[name].append(time.perf_counter() - begin)
            del out
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    x = torch.randn(SHAPE)

    print(
        f"RoPE on x of shape {SHAPE} float32, {torch.get_num_threads()} thread(s), "
        f"no_grad, median of {args.repeats} interleaved calls"
    )
    header = (
        f"{'layout':<12} {'apply_rope (ms)':>16} {'reference (ms)':>15} {'ratio':>7} {'target':>7}"
    )
    print(header)
    print("-" * len(header))
    with torch.no_grad():
        for layout in ("half", "interleaved"):
            # Same function, same result (up to the float32 angles of the reference).
            torch.testing.assert_close(
                apply_rope(x, layout=layout), reference_rope(x, layout), rtol=0, atol=2e-3
            )
            medians = median_seconds(
                {
                    "apply_rope": lambda layout=layout: apply_rope(x, layout=layout),
                    "reference": lambda layout=layout: reference_rope(x, layout),
                },
                args.repeats,
            )
            ratio = medians["apply_rope"] / medians["reference"]
            verdict = "ok" if ratio <= TARGET else "MISSED"
            print(
                f"{layout:<12} {medians['apply_rope'] * 1e3:>16.2f} {medians['reference'] * 1e3:>15.2f} "
                f"{ratio:>6.3f}x {TARGET:>6.2f}x  {verdict}"
            )


if __name__ == "__main__":
    main()
