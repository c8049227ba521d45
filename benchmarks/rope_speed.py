"""RoPE at the memory floor: ``pe_lib``'s rotation against one elementwise pass and Hugging Face's formula.

On ``q`` of shape ``(8, 16, 1024, 64)`` (batch, heads, seq_len, head_dim), for float32 and
bfloat16 in both channel layouts, one run measures side by side:

* ``floor``: ``q * 2.0``, one elementwise pass over ``q`` into a new tensor, the least any
  allocating rotation must cost (read ``q`` once, allocate and write the result once; a fresh
  32 MB output is page-faulted in at every call);
* ``buffer``: ``torch.mul(q, 2.0, out=buf)``, the same pass into a preallocated buffer: the
  physical limit (memory traffic only), the floor of ``out=``;
* ``hf``: Hugging Face's formula ``q * cos + rotate_half(q) * sin`` with ``cos`` and ``sin`` of
  shape ``(seq_len, head_dim)`` cached in ``q``'s dtype (for the interleaved layout, the same
  formula with the pairwise ``rotate``: ``(x_{2i}, x_{2i+1}) -> (-x_{2i+1}, x_{2i})``). In
  bfloat16 every operation rounds to bfloat16, and the cached cos and sin are bfloat16 too;
* ``apply_rope``: :func:`pe_lib.rope.apply_rope`, its cos and sin (from float64 angles) kept
  from the previous call with the same arguments;
* ``out``: ``apply_rope(q, out=buf)``, the same rotation written into a preallocated buffer;
* ``rotary``: :class:`pe_lib.rope.RotaryEmbedding`'s forward with its cached cos and sin (the
  keys passed alongside are one head of one sequence, so the time is that of rotating ``q``).

Calls are interleaved, the order alternating, under ``torch.no_grad()`` with a fixed number of
threads; medians of ``--repeats`` calls are compared, and every ratio is printed. The clock is
the CPU time of this process (``--clock cpu``, the default: user and system time, so the page
faults of a fresh output count, while time the process spends waiting for other work on a
shared machine does not); ``--clock wall`` measures wall time instead, which is what to use
with ``--threads`` above 1 (CPU time then sums the threads). Targets: ``out=`` at most 2.0x
the buffer pass in float32 (both layouts) and 3.0x in bfloat16; the allocating float32 half
layout at most 1.3x the floor; bfloat16 at most 1.0x Hugging Face's formula,
keeping the accuracy ``pe_lib`` promises: every bfloat16 output within one rounding of the
float64 rotation. The accuracy column shows the largest error of each bfloat16 result in units
of that bound (``<= 1`` is one rounding; Hugging Face's formula, rounding after each operation
and with bfloat16 cos and sin, exceeds it).

Run: ``make bench`` or ``.venv/bin/python benchmarks/rope_speed.py [--repeats N] [--threads T]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from pe_lib.rope import RotaryEmbedding, apply_rope

SHAPE = (8, 16, 1024, 64)  # (batch, heads, seq_len, head_dim)
BASE = 10000.0
FLOOR_TARGET = 1.3  # float32 half, allocating: at most this many times the elementwise floor
HF_TARGET = 1.0  # bfloat16: at most this many times Hugging Face's formula
#: out=: at most this many times the pass into a preallocated buffer, by dtype
BUFFER_TARGETS = {torch.float32: 2.0, torch.bfloat16: 3.0}


def hf_tables(
    seq_len: int, head_dim: int, layout: str, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (seq_len, head_dim), each angle repeated for both channels of its pair, in ``dtype``."""
    inverse_frequency = 1.0 / (
        BASE ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim)
    )
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inverse_frequency)
    if layout == "half":
        angles = torch.cat((angles, angles), dim=-1)  # channel c and c + d/2 share an angle
    else:
        angles = angles.repeat_interleave(2, dim=-1)  # channels 2i and 2i+1 share an angle
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """(x_{2i}, x_{2i+1}) -> (-x_{2i+1}, x_{2i}) for every pair."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def median_seconds(
    candidates: dict[str, Callable[[], torch.Tensor]],
    repeats: int,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, float]:
    """Median wall time of each callable, called in turn (order alternating) ``repeats`` times."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for function in candidates.values():  # warm-up: allocator, caches
        for _ in range(3):
            function()
    names = list(candidates)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            begin = clock()
            out = candidates[name]()
            times[name].append(clock() - begin)
            del out
    return {name: statistics.median(values) for name, values in times.items()}


def rounding_excess(result: torch.Tensor, truth: torch.Tensor, dtype: torch.dtype) -> float:
    """Largest |result - truth| in units of one rounding to ``dtype`` (u |truth| + 1e-6 max |truth|)."""
    unit_roundoff = torch.finfo(dtype).eps / 2
    bound = unit_roundoff * truth.abs() + 1e-6 * truth.abs().max()
    return float(((result.double() - truth).abs() / bound).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    q32 = torch.randn(SHAPE)
    print(
        f"RoPE on q of shape {SHAPE}, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} thread(s), "
        f"no_grad, median {args.clock} time of {args.repeats} interleaved calls"
    )
    header = (
        f"{'dtype':<9} {'layout':<12} {'floor ms':>8} {'buffer ms':>9} {'hf/floor':>9} "
        f"{'apply/floor':>12} {'apply/hf':>9} {'out/buffer':>11} {'rotary/floor':>13} "
        f"{'verdict':>8} {'accuracy':>16}"
    )
    print(header)
    print("-" * len(header))
    missed = []
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16):
            q = q32.to(dtype)
            for layout in ("interleaved", "half"):
                cos, sin = hf_tables(SHAPE[-2], SHAPE[-1], layout, dtype)
                rotate = rotate_half if layout == "half" else rotate_pairs
                rotary = RotaryEmbedding(SHAPE[-1], base=BASE, layout=layout, max_len=SHAPE[-2])
                k = q[:1, :1]
                buf = torch.empty_like(q)

                def hf(
                    q: torch.Tensor = q,
                    cos: torch.Tensor = cos,
                    sin: torch.Tensor = sin,
                    rotate: Callable[[torch.Tensor], torch.Tensor] = rotate,
                ) -> torch.Tensor:
                    return q * cos + rotate(q) * sin

                candidates: dict[str, Callable[[], torch.Tensor]] = {
                    "floor": lambda q=q: q * 2.0,
                    "buffer": lambda q=q, buf=buf: torch.mul(q, 2.0, out=buf),
                    "out": lambda q=q, buf=buf, layout=layout: apply_rope(
                        q, base=BASE, layout=layout, out=buf
                    ),
                    "hf": hf,
                    "apply": lambda q=q, layout=layout: apply_rope(q, base=BASE, layout=layout),
                    "rotary": lambda q=q, k=k, rotary=rotary: rotary(q, k)[0],
                }
                # The same rotation (apply_rope and the cached module agree exactly).
                result = apply_rope(q, base=BASE, layout=layout)
                torch.testing.assert_close(rotary(q, k)[0], result, rtol=0, atol=0)
                truth = apply_rope(q.double(), base=BASE, layout=layout)
                torch.testing.assert_close(hf().double(), truth, rtol=2e-2, atol=2e-2)
                accuracy = ""
                if dtype != torch.float32:
                    accuracy = (
                        f"{rounding_excess(result, truth, dtype):.2f} vs "
                        f"hf {rounding_excess(hf(), truth, dtype):.0f}"
                    )
                t = median_seconds(candidates, args.repeats, CLOCKS[args.clock])
                checks = {
                    f"out <= {BUFFER_TARGETS[dtype]}x buffer": t["out"] / t["buffer"]
                    <= BUFFER_TARGETS[dtype]
                }
                if dtype == torch.float32 and layout == "half":
                    checks[f"apply <= {FLOOR_TARGET}x floor"] = (
                        t["apply"] / t["floor"] <= FLOOR_TARGET
                    )
                if dtype != torch.float32:
                    checks[f"apply <= {HF_TARGET}x hf"] = t["apply"] / t["hf"] <= HF_TARGET
                name = f"{str(dtype).removeprefix('torch.')} {layout}"
                missed += [f"{name}: {c}" for c, ok in checks.items() if not ok]
                print(
                    f"{str(dtype).removeprefix('torch.'):<9} {layout:<12} {t['floor'] * 1e3:>8.2f} "
                    f"{t['buffer'] * 1e3:>9.2f} {t['hf'] / t['floor']:>8.2f}x "
                    f"{t['apply'] / t['floor']:>11.2f}x {t['apply'] / t['hf']:>8.2f}x "
                    f"{t['out'] / t['buffer']:>10.2f}x {t['rotary'] / t['floor']:>12.2f}x "
                    f"{'ok' if all(checks.values()) else 'MISSED':>8}{accuracy:>17}"
                )
    print(
        "floors: 'buffer' (one pass into a preallocated buffer) is the physical limit, the "
        "memory traffic of reading q and writing the result; 'floor' adds the page faults of "
        "a fresh output at every call, which out= avoids"
    )
    print(
        "accuracy: largest bfloat16 error in units of one rounding of the float64 rotation "
        "(<= 1: one rounding)"
    )
    print(
        "trade-off: accuracy first. A bfloat16 rotation is computed in float32 and rounded once; "
        "blocks that stay in a per-core cache pay for the passes beyond the one 'buffer' makes."
    )
    passes = {
        "float32 half": "x cos over whole rows, then two products of half-rows (runs of "
        "head_dim / 2 channels) with sin: eager PyTorch has no operation for the pair "
        "(i, i + head_dim / 2)",
        "bfloat16 interleaved": "a float32 copy of each block, one complex multiplication, "
        "one rounding back",
        "bfloat16 half": "a float32 copy of each block, the float32 half layout's three "
        "passes, one rounding back",
    }
    for name, how in passes.items():
        if any(m.startswith(name) for m in missed):
            print(f"{name}: {how}; each pass in cache costs a fraction of a memory pass")
    print("all targets met" if not missed else f"targets missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
