"""RoPE on a device against the CPU's float64 rotation: every scaling, both layouts, float32 and
bfloat16, ``apply_rope``, ``RotaryEmbedding`` moved with ``.to(device)``, and both compiled with
``torch.compile(fullgraph=True)`` (inductor, the default backend).

The reference is ``apply_rope`` on the CPU in float64 (its angles, cos and sin and rotation all
float64), which ``tests/lib`` checks against transformers and NumPy. A float32 result passes
within ``8 eps |x|max`` (cos and sin rounded once to float32, a few float32 operations); a
bfloat16 result within one rounding of the reference (``u |truth|``) plus ``1e-5 |x|max`` (the
float32 work before the rounding). Also checked once per layout: per-row positions, autocast
(nothing changes), backward (the gradient is the inverse rotation of the upstream gradient), and
positions on the CPU for an input on the device (a clear ``ValueError``); the gradient is
compared with the CPU's float64 gradient.

Prints a markdown table and ``N of N checks passed``; exits 1 if any failed. Run on a GPU with
``python benchmarks/rope_device_check.py --device cuda``; ``--device cpu`` runs the same checks
on the CPU (``--no-compile`` skips the compiled ones, which need a C++ compiler there).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from pe_lib.rope import RotaryEmbedding, apply_rope

HEAD_DIM = 64
SHAPE = (2, 4, 37, HEAD_DIM)  # (batch, heads, seq_len, head_dim)
START = 1000  # first position: the angles are far from small
MAX_POSITIONS = 4096  # the model's max_position_embeddings, for "dynamic"
LAYOUTS = ("interleaved", "half")
DTYPES = (torch.float32, torch.bfloat16)
COMPILED = ("default", "yarn", "llama3")  # the paths whose compiled graphs are checked

SCALINGS: dict[str, Mapping[str, Any] | None] = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
    "ntk": {"rope_type": "ntk", "factor": 4.0, "rope_theta": 10000.0},
    "dynamic": {
        "rope_type": "dynamic",
        "factor": 4.0,
        "rope_theta": 10000.0,
        "max_position_embeddings": 512,
    },
    "yarn": {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 512,
        "rope_theta": 10000.0,
    },
    "longrope": {
        "rope_type": "longrope",
        "factor": 4.0,
        "original_max_position_embeddings": 512,
        "rope_theta": 10000.0,
        "short_factor": [1.0 + i / (HEAD_DIM // 2) for i in range(HEAD_DIM // 2)],
        "long_factor": [1.0 + 8.0 * i / (HEAD_DIM // 2) for i in range(HEAD_DIM // 2)],
    },
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 512,
        "rope_theta": 500000.0,
    },
    "proportional": {
        "rope_type": "proportional",
        "partial_rotary_factor": 0.5,
        "factor": 2.0,
        "rope_theta": 10000.0,
    },
}


def resolved(name: str) -> Any:
    """The scaling entry checked, with ``max_position_embeddings`` where it needs one."""
    from pe_lib.rope.scaling import resolve_scaling

    entry = SCALINGS[name]
    if entry is None:
        return None
    entry = dict(entry)
    max_positions = entry.pop("max_position_embeddings", MAX_POSITIONS)
    return resolve_scaling(entry, max_position_embeddings=max_positions)


def excess(result: torch.Tensor, truth: torch.Tensor, x: torch.Tensor) -> float:
    """Largest error of ``result`` in units of the bound its dtype is held to (<= 1 passes)."""
    scale = float(x.double().abs().max())
    if result.dtype == torch.float32:
        bound = 8 * torch.finfo(torch.float32).eps * scale + 0 * truth
    else:
        bound = torch.finfo(result.dtype).eps / 2 * truth.abs() + 1e-5 * scale
    return float(((result.detach().double().cpu() - truth).abs() / bound).max())


class Tally:
    """Counts checks; a failed one is printed at once."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
        else:
            self.failed.append(name)
            print(f"FAILED: {name} {detail}", flush=True)
        return ok

    def run(self, name: str, body: Callable[[], bool]) -> bool:
        """``body`` as one check; an exception fails it, printed, and the checks go on."""
        try:
            return self.check(name, body())
        except Exception as error:  # noqa: BLE001 - every failure is reported, none stops the run
            return self.check(name, False, f"{type(error).__name__}: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--no-compile", action="store_true", help="skip the compiled checks")
    parser.add_argument(
        "--budget", type=float, default=150.0, help="seconds after which no new compile starts"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    begin = time.perf_counter()
    torch.manual_seed(0)
    tally = Tally()
    x64 = torch.randn(SHAPE, dtype=torch.float64)
    positions = torch.arange(START, START + SHAPE[-2])
    seq_len = START + SHAPE[-2]
    print(
        f"RoPE on {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}), "
        f"torch {torch.__version__}, x {SHAPE} at positions {START}..{seq_len - 1}"
    )
    print()
    print(
        "| scaling | layout | dtype | apply_rope | RotaryEmbedding | compiled apply | compiled module |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in SCALINGS:
        scaling = resolved(name)
        for layout in LAYOUTS:
            module = RotaryEmbedding(HEAD_DIM, layout=layout, scaling=scaling, max_len=2048)
            module = module.to(device)
            for dtype in DTYPES:
                x = x64.to(dtype)  # the reference rotates the same (rounded) values
                truth = apply_rope(
                    x.double(), positions, layout=layout, scaling=scaling, seq_len=seq_len
                )
                xd, pd = x.to(device), positions.to(device)
                cells = []

                def eager(xd=xd, pd=pd, layout=layout, scaling=scaling) -> torch.Tensor:
                    return apply_rope(xd, pd, layout=layout, scaling=scaling, seq_len=seq_len)

                def rotary(xd=xd, module=module) -> torch.Tensor:
                    return module(xd, xd[:, :1], offset=START, seq_len=seq_len)[0]

                candidates = {"apply_rope": eager, "RotaryEmbedding": rotary}
                in_time = time.perf_counter() - begin < args.budget
                if name in COMPILED and not args.no_compile and in_time:
                    torch._dynamo.reset()
                    compiled_apply = torch.compile(eager, fullgraph=True)
                    compiled_module = torch.compile(module, fullgraph=True)
                    candidates["compiled apply"] = compiled_apply
                    candidates["compiled module"] = lambda m=compiled_module, xd=xd: m(
                        xd, xd[:, :1], offset=START, seq_len=seq_len
                    )[0]
                for label in ("apply_rope", "RotaryEmbedding", "compiled apply", "compiled module"):
                    if label not in candidates:
                        cells.append("–")
                        continue
                    units: list[float] = []

                    def one(call=candidates[label], units=units, x=x, truth=truth) -> bool:
                        with torch.no_grad():
                            result = call()
                        if result.dtype != x.dtype or result.device.type != device.type:
                            return False
                        units.append(excess(result, truth, x))
                        return units[-1] <= 1.0

                    ok = tally.run(f"{name} {layout} {dtype} {label}", one)
                    cells.append(("ok" if ok else "FAILED") + (f" {units[0]:.2f}" if units else ""))
                print(
                    f"| {name} | {layout} | {str(dtype).removeprefix('torch.')} | "
                    + " | ".join(cells)
                    + " |",
                    flush=True,
                )
    print()
    print(
        "Cells: ok or FAILED, and the largest error in units of the bound (<= 1 passes); "
        f"compiled: {', '.join(COMPILED)} (– where not compiled: other scalings, --no-compile, "
        f"or past the {args.budget:.0f} s budget)."
    )
    print()
    for layout in LAYOUTS:
        others(tally, device, layout)
    total = tally.passed + len(tally.failed)
    print(
        f"\n{tally.passed} of {total} checks passed on {device} "
        f"in {time.perf_counter() - begin:.0f} s"
    )
    if tally.failed:
        print("failed: " + ", ".join(tally.failed))
        sys.exit(1)


def others(tally: Tally, device: torch.device, layout: str) -> None:
    """Per-row positions, autocast, backward and CPU positions for one layout."""
    x64 = torch.randn(2, 3, 9, 16, dtype=torch.float64)
    rows = torch.stack((torch.arange(9), torch.arange(100, 109)))[:, None, :]  # (2, 1, 9)

    def per_row() -> bool:
        truth = apply_rope(x64, rows, layout=layout)
        got = apply_rope(x64.float().to(device), rows.to(device), layout=layout)
        return excess(got, truth, x64) <= 1.0

    def autocast() -> bool:
        x = x64.float().to(device)
        plain = apply_rope(x, rows.to(device), layout=layout)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            inside = apply_rope(x, rows.to(device), layout=layout)
        return inside.dtype == torch.float32 and torch.equal(inside, plain)

    def backward() -> bool:
        upstream = torch.randn_like(x64)
        reference = x64.clone().requires_grad_()
        apply_rope(reference, rows, layout=layout).backward(upstream)
        x = x64.float().to(device).requires_grad_()
        apply_rope(x, rows.to(device), layout=layout).backward(upstream.float().to(device))
        assert x.grad is not None and reference.grad is not None
        return excess(x.grad, reference.grad, upstream) <= 1.0

    def cpu_positions() -> bool:
        try:
            apply_rope(x64.float().to(device), torch.arange(9), layout=layout)
        except ValueError as error:
            return "positions" in str(error)
        return device.type == "cpu"  # on the CPU itself there is nothing to refuse

    for name, body in (
        ("per-row positions", per_row),
        ("autocast", autocast),
        ("backward", backward),
        ("positions on the CPU", cpu_positions),
    ):
        ok = tally.run(f"{layout} {name}", body)
        print(f"- {layout}, {name}: {'ok' if ok else 'FAILED'}", flush=True)


if __name__ == "__main__":
    main()
