"""RoPE's speed: ``pe_lib``'s rotation against its peers and against the memory limit.

On ``q`` of shape ``(8, 16, 1024, 64)`` (batch, heads, seq_len, head_dim), for float32 and
bfloat16 in both channel layouts, one run measures side by side:

* ``floor``: ``q * 2.0``, one elementwise pass over ``q`` into a new tensor, the least any
  allocating rotation must cost (a fresh 32 MB output is page-faulted in at every call);
* ``buffer``: ``torch.mul(q, 2.0, out=buf)``, the same pass into a preallocated buffer: the
  physical limit (memory traffic only), the floor of ``out=``;
* ``hf``: Hugging Face's formula ``q * cos + rotate_half(q) * sin`` with ``cos`` and ``sin`` of
  shape ``(seq_len, head_dim)`` cached in ``q``'s dtype (for the interleaved layout, the same
  formula with the pairwise ``rotate``: ``(x_{2i}, x_{2i+1}) -> (-x_{2i+1}, x_{2i})``);
* ``ret``: rotary-embedding-torch's ``RotaryEmbedding(dim=head_dim).rotate_queries_or_keys(q)``
  (interleaved pairs only; its angles cached after the first call). Skipped, with a message,
  when the package is not installed;
* ``apply``: :func:`pe_lib.rope.apply_rope`; ``out``: ``apply_rope(q, out=buf)``; ``rotary``:
  :class:`pe_lib.rope.RotaryEmbedding`'s forward with its cached cos and sin (the keys passed
  alongside are one head of one sequence, so the time is that of rotating ``q``).

With ``--compare PATH`` (another version of ``pe_lib/rope.py``, e.g. saved from
``git show main:pe_lib/rope.py``), that version's ``apply``, ``out`` and ``rotary`` are timed
in the same interleaved calls, as the rows ``before``; the installed one is ``after``.

Calls are interleaved, the order alternating, under ``torch.no_grad()`` with a fixed number of
threads; medians of ``--repeats`` calls are compared. The clock is the CPU time of this process
(``--clock cpu``, the default: the page faults of a fresh output count, time spent waiting for
other jobs does not); ``--clock wall`` is for ``--threads`` above 1. Targets: ``apply`` at most
0.5x ``hf`` and 0.5x ``ret``, keeping every bfloat16 output within one rounding of the float64
rotation (the accuracy column, in units of that bound). The ratios to ``floor`` and ``buffer``
are printed, not judged (``benchmarks/README.md`` says why).

Run: ``make bench`` or ``.venv/bin/python benchmarks/rope_speed.py [--repeats N] [--compare PATH]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

from pe_lib import rope

SHAPE = (8, 16, 1024, 64)  # (batch, heads, seq_len, head_dim)
BASE = 10000.0
PEER_TARGET = 0.5  # apply_rope: at most this many times each peer's time
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


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


def load_rope_version(path: Path) -> ModuleType:
    """``path`` (a version of ``pe_lib/rope.py``) imported inside ``pe_lib`` as
    ``pe_lib._rope_before``, so that its relative imports resolve."""
    name = "pe_lib._rope_before"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def peer_ret(head_dim: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """rotary-embedding-torch's rotation of ``(..., seq_len, head_dim)``, a fresh module (its
    angles are cached at the first call, in the dtype of that call's positions)."""
    from rotary_embedding_torch import RotaryEmbedding as PeerRotaryEmbedding

    return PeerRotaryEmbedding(dim=head_dim, theta=BASE).rotate_queries_or_keys  # type: ignore[no-any-return]


def median_seconds(
    candidates: dict[str, Callable[[], torch.Tensor]],
    repeats: int,
    clock: Callable[[], float] = time.process_time,
) -> dict[str, float]:
    """Median time of each callable, called in turn (order alternating) ``repeats`` times."""
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


def version_candidates(
    version: ModuleType, q: torch.Tensor, layout: str, buf: torch.Tensor
) -> dict[str, Callable[[], torch.Tensor]]:
    """``apply``, ``out`` and ``rotary`` of one version of ``pe_lib.rope`` on ``q``."""
    rotary = version.RotaryEmbedding(SHAPE[-1], base=BASE, layout=layout, max_len=SHAPE[-2])
    k = q[:1, :1]
    return {
        "apply": lambda: version.apply_rope(q, base=BASE, layout=layout),
        "out": lambda: version.apply_rope(q, base=BASE, layout=layout, out=buf),
        "rotary": lambda: rotary(q, k)[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument("--compare", type=Path, help="another pe_lib/rope.py, timed as 'before'")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    versions = {"after": rope}
    if args.compare is not None:
        versions = {"before": load_rope_version(args.compare), "after": rope}
    has_ret = importlib.util.find_spec("rotary_embedding_torch") is not None
    if not has_ret:
        print(
            "rotary-embedding-torch is not installed: its column is skipped (install it with "
            "`.venv/bin/pip install --no-deps rotary-embedding-torch==0.9.1 einops==0.8.2`)"
        )
    q32 = torch.randn(SHAPE)
    print(
        f"RoPE on q of shape {SHAPE}, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} thread(s), "
        f"no_grad, median {args.clock} time of {args.repeats} interleaved calls"
    )
    header = (
        f"{'dtype':<9} {'layout':<12} {'version':<7} {'floor ms':>8} {'buffer ms':>9} "
        f"{'apply/hf':>9} {'apply/ret':>10} {'apply/floor':>12} {'out/buffer':>11} "
        f"{'rotary/floor':>13} {'verdict':>8} {'accuracy':>10}"
    )
    print(header)
    print("-" * len(header))
    missed = []
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16):
            q = q32.to(dtype)
            ret = peer_ret(SHAPE[-1]) if has_ret else None
            for layout in ("interleaved", "half"):
                cos, sin = hf_tables(SHAPE[-2], SHAPE[-1], layout, dtype)
                rotate = rotate_half if layout == "half" else rotate_pairs
                buf = torch.empty_like(q)
                candidates: dict[str, Callable[[], torch.Tensor]] = {
                    "floor": lambda q=q: q * 2.0,
                    "buffer": lambda q=q, buf=buf: torch.mul(q, 2.0, out=buf),
                    "hf": lambda q=q, c=cos, s=sin, r=rotate: q * c + r(q) * s,
                }
                if ret is not None and layout == "interleaved":
                    candidates["ret"] = lambda q=q, ret=ret: ret(q)
                for name, version in versions.items():
                    for key, call in version_candidates(version, q, layout, buf).items():
                        candidates[f"{name} {key}"] = call
                truth = rope.apply_rope(q.double(), base=BASE, layout=layout)
                results = {name: candidates[f"{name} apply"]() for name in versions}
                for name in versions:  # every version, and the module, give one rotation
                    torch.testing.assert_close(results[name], results["after"], rtol=0, atol=0)
                    torch.testing.assert_close(
                        candidates[f"{name} rotary"](), results["after"], rtol=0, atol=0
                    )
                torch.testing.assert_close(candidates["hf"]().double(), truth, rtol=2e-2, atol=2e-2)
                if "ret" in candidates and dtype == torch.float32:
                    torch.testing.assert_close(
                        candidates["ret"](), results["after"], rtol=0, atol=1e-3
                    )
                t = median_seconds(candidates, args.repeats, CLOCKS[args.clock])
                for name in versions:
                    apply = t[f"{name} apply"]
                    checks = {f"apply <= {PEER_TARGET}x hf": apply / t["hf"] <= PEER_TARGET}
                    if "ret" in t:
                        checks[f"apply <= {PEER_TARGET}x ret"] = apply / t["ret"] <= PEER_TARGET
                    accuracy = ""
                    if dtype != torch.float32:
                        accuracy = f"{rounding_excess(results[name], truth, dtype):.2f}"
                    row = f"{str(dtype).removeprefix('torch.')} {layout} {name}"
                    missed += [f"{row}: {c}" for c, ok in checks.items() if not ok]
                    apply_ret = f"{apply / t['ret']:.2f}x" if "ret" in t else "-"
                    print(
                        f"{str(dtype).removeprefix('torch.'):<9} {layout:<12} {name:<7} "
                        f"{t['floor'] * 1e3:>8.2f} {t['buffer'] * 1e3:>9.2f} "
                        f"{apply / t['hf']:>8.2f}x {apply_ret:>10} {apply / t['floor']:>11.2f}x "
                        f"{t[f'{name} out'] / t['buffer']:>10.2f}x "
                        f"{t[f'{name} rotary'] / t['floor']:>12.2f}x "
                        f"{'ok' if all(checks.values()) else 'MISSED':>8}{accuracy:>11}"
                    )
                if dtype != torch.float32:
                    peers = f"hf {rounding_excess(candidates['hf'](), truth, dtype):.0f}"
                    if "ret" in candidates:
                        peers += f", ret {rounding_excess(candidates['ret'](), truth, dtype):.0f}"
                    print(f"{'':<31}accuracy of the peers, same units: {peers}")
    print(
        "limits: 'buffer' (one pass into a preallocated buffer) is the physical limit, the "
        "memory traffic of reading q and writing the result; 'floor' adds the page faults of "
        "a fresh output at every call. Ratios to them are recorded, not targets."
    )
    print(
        "accuracy: largest bfloat16 error in units of one rounding of the float64 rotation "
        "(<= 1: one rounding)"
    )
    print("all targets met" if not missed else f"targets missed: {', '.join(missed)}")


if __name__ == "__main__":
    main()
