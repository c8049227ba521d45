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

With ``--compare PATH`` (another version of ``pe_lib/rope/formula.py``, e.g. saved from
``git show main:pe_lib/rope/formula.py``, with that version's ``pe_lib/rope/module.py`` saved
beside it where it has one), that version's ``apply``, ``out`` and ``rotary`` are timed in the
same interleaved calls, as the rows ``before``; the installed one is ``after``.

Calls are interleaved, the order alternating, under ``torch.no_grad()`` with a fixed number of
threads; medians of ``--repeats`` calls are compared. The clock is the CPU time of this process
(``--clock cpu``, the default: the page faults of a fresh output count, time spent waiting for
other jobs does not); ``--clock wall`` is for ``--threads`` above 1. Targets: ``apply`` at most
0.5x ``hf`` and 0.5x ``ret``, keeping every bfloat16 output within one rounding of the float64
rotation (the accuracy column, in units of that bound). The ratios to ``floor`` and ``buffer``
are printed, not judged (``benchmarks/README.md`` says why).

Second, against what a user would otherwise call: transformers' own path
(``LlamaRotaryEmbedding``'s forward, which forms cos and sin from ``position_ids`` at every call,
then ``apply_rotary_pos_emb``) on queries and keys of 32 heads of 128, the half layout, at decode
(shape ``(1, 32, 1, 128)``, position 700) and prefill (``(1, 32, 2048, 128)``, positions
``0 .. 2047``), float32 and bfloat16. Rows: ``hf`` (transformers' path on ``q`` and ``k``),
``apply`` (``apply_rope`` on ``q`` and on ``k``, two calls), ``rotary``
(``RotaryEmbedding(q, k, offset)``) and ``copy`` (``q * 2`` and ``k * 2``: one pass over both, the
floor). With ``--compile``, each of the three also compiled with ``torch.compile(fullgraph=True)``
(inductor). ``--device cuda`` times each call between two CUDA events (median of ``--repeats``
calls, each waited for) and counts the kernels one call launches (``torch.profiler``; copies
between host and device counted apart); on the CPU the clock is the process's CPU time and the
count is of the operators called. Targets: ``apply`` and ``rotary`` at most 1.0x ``hf``, and the
compiled ones at most 1.5x compiled ``hf``.

Run: ``make bench`` or ``.venv/bin/python benchmarks/rope_speed.py [--repeats N] [--compare PATH]
[--device cuda] [--compile] [--peers-only]``.
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


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_rope_version(path: Path) -> ModuleType:
    """``path`` (a version of ``pe_lib/rope/formula.py``) imported inside ``pe_lib.rope`` as
    ``pe_lib.rope._formula_before``, so that its relative imports resolve. A version without
    ``RotaryEmbedding`` (which moved to ``rope/module.py``) takes it from the ``module.py``
    beside ``path``, imported against that version's formula."""
    formula = _load("pe_lib.rope._formula_before", path)
    if hasattr(formula, "RotaryEmbedding"):
        return formula
    beside = path.with_name("module.py")
    if not beside.is_file():
        raise SystemExit(
            f"{path} has no RotaryEmbedding and no module.py beside it: save that version's "
            f"pe_lib/rope/formula.py and pe_lib/rope/module.py in one folder"
        )
    current = sys.modules["pe_lib.rope.formula"]
    sys.modules["pe_lib.rope.formula"] = formula  # module.py's `from .formula import ...`
    try:
        module = _load("pe_lib.rope._module_before", beside)
    finally:
        sys.modules["pe_lib.rope.formula"] = current
    formula.RotaryEmbedding = module.RotaryEmbedding
    return formula


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
    # Not torch.utils.benchmark: its Timer runs one statement's calls back to back on the wall
    # clock, where these rows interleave their calls and read the process's CPU time, so that
    # the other jobs of a shared machine change each row alike.
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


PEER_CASES = {  # name: (shape of q and k, first position)
    "decode": ((1, 32, 1, 128), 700),
    "prefill": ((1, 32, 2048, 128), 0),
}
PEER_LIMIT = 1.0  # apply and rotary: at most this many times transformers' path
COMPILED_LIMIT = 1.5  # compiled apply and rotary: at most this many times compiled hf


def cuda_medians(candidates: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each callable between two CUDA events, each call waited for, the
    callables interleaved (order alternating)."""
    for function in candidates.values():  # warm-up: allocator, compiled graphs
        for _ in range(3):
            function()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times: dict[str, list[float]] = {name: [] for name in candidates}
    names = list(candidates)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            start.record()
            candidates[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def launches(function: Callable[[], object], device: torch.device) -> str:
    """What one call launches: on CUDA, its kernels (and copies between host and device,
    ``+N copies``); on the CPU, the operators it calls (top-level ``aten::`` events)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    try:
        function()
        with profile(activities=activities) as prof:
            function()
            if device.type == "cuda":
                torch.cuda.synchronize()
        events = prof.events()
        if device.type == "cuda":
            on_device = [e for e in events if e.device_type == DeviceType.CUDA]
            copies = sum(
                ("memcpy" in e.name.lower() or "memset" in e.name.lower()) for e in on_device
            )
            return f"{len(on_device) - copies}" + (f" +{copies} copies" if copies else "")
        return str(sum(e.cpu_parent is None and e.name.startswith("aten::") for e in events))
    except Exception as error:  # noqa: BLE001 - a count is a figure, not worth the run
        return f"n/a ({type(error).__name__})"


def peer_section(args: argparse.Namespace, device: torch.device) -> list[str]:
    """The table against transformers' own path; returns the targets missed."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import (
        LlamaRotaryEmbedding,
        apply_rotary_pos_emb,
        rotate_half,
    )

    head_dim = PEER_CASES["decode"][0][-1]
    config = LlamaConfig(
        hidden_size=32 * head_dim,
        num_attention_heads=32,
        num_key_value_heads=32,
        head_dim=head_dim,
        max_position_embeddings=4096,
        rope_theta=BASE,
    )
    hf_rotary = LlamaRotaryEmbedding(config).to(device)
    rotary = rope.RotaryEmbedding(head_dim, base=BASE, layout="half", max_len=4096).to(device)

    def hf(q: torch.Tensor, k: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return apply_rotary_pos_emb(q, k, *hf_rotary(q, ids))  # type: ignore[no-any-return]

    def hf_one(x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """transformers' path for one tensor: apply_rotary_pos_emb's line for q."""
        cos, sin = hf_rotary(x, ids)
        return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1)  # type: ignore[no-any-return]

    def apply(q: torch.Tensor, k: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            rope.apply_rope(q, pos, base=BASE, layout="half"),
            rope.apply_rope(k, pos, base=BASE, layout="half"),
        )

    def module(q: torch.Tensor, k: torch.Tensor, offset: int) -> tuple[torch.Tensor, ...]:
        return rotary(q, k, offset)  # type: ignore[no-any-return]

    clock = "CUDA events" if device.type == "cuda" else f"{args.clock} time"
    what = "kernels" if device.type == "cuda" else "operators"
    print(
        f"\nAgainst transformers {__import__('transformers').__version__} "
        f"(LlamaRotaryEmbedding + apply_rotary_pos_emb), q and k of 32 heads of {head_dim}, "
        f"half layout, on {device_name(device)}, torch {torch.__version__}, no_grad, median "
        f"{clock} of {args.repeats} interleaved calls\n"
    )
    print(f"| case | dtype | call | ms | / hf (q) | / compiled hf | {what} per call |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    missed = []
    begin = time.perf_counter()
    for case, (shape, start) in PEER_CASES.items():
        for dtype in (torch.float32, torch.bfloat16):
            q = torch.randn(shape, device=device).to(dtype)
            k = torch.randn(shape, device=device).to(dtype)
            ids = torch.arange(start, start + shape[-2], device=device)[None]
            pos = ids[0]
            calls: dict[str, Callable[[], object]] = {
                "copy": lambda q=q, k=k: (q * 2.0, k * 2.0),
                "hf": lambda q=q, k=k, ids=ids: hf(q, k, ids),
                "apply": lambda q=q, k=k, pos=pos: apply(q, k, pos),
                "hf q": lambda q=q, ids=ids: (hf_one(q, ids),),
                "apply q": lambda q=q, pos=pos: (
                    rope.apply_rope(q, pos, base=BASE, layout="half"),
                ),
                "rotary": lambda q=q, k=k, start=start: module(q, k, start),
            }
            compiled = args.compile and time.perf_counter() - begin < args.budget
            if compiled:
                torch._dynamo.reset()
                for name, function in (("hf", hf), ("apply", apply), ("rotary", module)):
                    fast = torch.compile(function, fullgraph=True, dynamic=False)
                    argument = {"hf": ids, "apply": pos, "rotary": start}[name]
                    calls[f"compiled {name}"] = lambda fast=fast, q=q, k=k, a=argument: fast(
                        q, k, a
                    )
            with torch.no_grad():
                results = {}
                for name in [name for name in calls if name != "copy"]:
                    try:
                        results[name] = calls[name]()
                    except Exception as error:  # noqa: BLE001 - a compiler's failure is a result
                        if not name.startswith("compiled"):
                            raise
                        print(f"| {case} | {dtype} | {name} | failed: {type(error).__name__} |")
                        missed.append(f"{case} {dtype} {name}: failed")
                        del calls[name]
                truth = rope.apply_rope(q.double().cpu(), pos.cpu(), base=BASE, layout="half")
                for pair in results.values():
                    assert isinstance(pair, tuple)
                    tolerance = 2e-2 if dtype == torch.bfloat16 else 2e-3  # hf: float32 angles
                    torch.testing.assert_close(
                        pair[0].double().cpu(), truth, rtol=tolerance, atol=tolerance
                    )
                if device.type == "cuda":
                    t = cuda_medians(calls, args.repeats)
                else:
                    t = median_seconds(calls, args.repeats, CLOCKS[args.clock])  # type: ignore[arg-type]
                counts = {name: launches(call, device) for name, call in calls.items()}
            for name in calls:
                limit, yardstick = PEER_LIMIT, "hf q" if name.endswith(" q") else "hf"
                if name.startswith("compiled"):
                    limit, yardstick = COMPILED_LIMIT, "compiled hf"
                if yardstick not in t:
                    continue
                ratio = t[name] / t[yardstick]
                to_compiled = f"{t[name] / t['compiled hf']:.2f}x" if "compiled hf" in t else "–"
                judged = name in ("apply q", "rotary", "compiled apply", "compiled rotary")
                if judged and t[name] / t[yardstick] > limit:
                    missed.append(
                        f"{case} {dtype} {name}: {t[name] / t[yardstick]:.2f}x {yardstick}"
                    )
                print(
                    f"| {case} {tuple(shape)} | {str(dtype).removeprefix('torch.')} | {name} | "
                    f"{t[name] * 1e3:.3f} | {ratio:.2f}x | {to_compiled} | {counts[name]} |",
                    flush=True,
                )
    print(
        f"\nRows: hf, transformers' path on q and k; apply, apply_rope on q and on k (two calls, "
        f"each forming its tables); rotary, RotaryEmbedding(q, k, offset); 'q' rows, one tensor "
        f"(transformers: its forward and apply_rotary_pos_emb's line for q), compared with hf q. "
        f"copy: q * 2 and k * 2, one pass over both (the floor).\nTargets: apply q at most "
        f"{PEER_LIMIT}x hf q, rotary at most {PEER_LIMIT}x hf; compiled apply and rotary at most "
        f"{COMPILED_LIMIT}x compiled hf."
    )
    return missed


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return (
        f"the CPU ({torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} thread(s))"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    parser.add_argument(
        "--compare", type=Path, help="another pe_lib/rope/formula.py, timed as 'before'"
    )
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also time the torch.compile(fullgraph=True) variants (default: on CUDA only)",
    )
    parser.add_argument(
        "--budget", type=float, default=240.0, help="seconds after which no new compile starts"
    )
    parser.add_argument(
        "--peers-only", action="store_true", help="only the table against transformers' path"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    if args.compile is None:
        args.compile = device.type == "cuda"

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    missed = peer_section(args, device)
    if args.peers_only or device.type != "cpu":
        print("all targets met" if not missed else f"targets missed: {', '.join(missed)}")
        return
    versions = {"after": rope}
    if args.compare is not None:
        versions = {"before": load_rope_version(args.compare), "after": rope}
    has_ret = importlib.util.find_spec("rotary_embedding_torch") is not None
    if not has_ret:
        print(
            "rotary-embedding-torch is not installed: its column is skipped (install it with "
            "`.venv/bin/pip install --no-deps rotary-embedding-torch==0.9.1 einops==0.8.2`)"
        )
    torch.manual_seed(0)  # the same q whether or not the first table ran
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
