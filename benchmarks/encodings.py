"""Cost of each registered encoding in the toy model, against the model without one.

For every entry of :data:`pe_lib.encodings.ENCODINGS` (so a new encoding is measured as soon as
it is registered) this builds :class:`pe_lib.experiments.toy.ShiftedCopyModel` with that encoding and with
``position="none"``, and times one forward pass of each on the same batch of token ids, side by
side in one run, alternating which goes first. Medians of the calling thread's CPU time
(``time.thread_time``) are compared; with one intra-op thread all the work runs on that thread,
so the ratio is the encoding's own cost, whatever else the machine is doing. It also prints the
parameters each encoding adds.

Run: ``make bench`` or ``.venv/bin/python benchmarks/encodings.py [--repeats N] [--threads T]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pe_lib.encodings import ENCODINGS
from pe_lib.experiments.toy import ShiftedCopyModel

BATCH, SEQ_LEN, D_MODEL, NUM_HEADS = 16, 256, 64, 4


def median_seconds(
    models: dict[str, torch.nn.Module], tokens: torch.Tensor, repeats: int
) -> dict[str, float]:
    """Median CPU time of one forward pass of each model, timed alternately."""
    samples: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    with torch.no_grad():
        for model in models.values():  # warm-up
            model(tokens)
        for repeat in range(repeats):
            order = names if repeat % 2 == 0 else names[::-1]
            for name in order:
                begin = time.thread_time()
                models[name](tokens)
                samples[name].append(time.thread_time() - begin)
    return {name: statistics.median(values) for name, values in samples.items()}


def measure(name: str, repeats: int) -> dict[str, float]:
    """One row of the table for the registered encoding ``name``: its model's and the
    baseline's median CPU time (seconds), their ratio and the parameters it adds."""
    tokens = torch.randint(16, (BATCH, SEQ_LEN), generator=torch.Generator().manual_seed(0))
    size = {"d_model": D_MODEL, "num_heads": NUM_HEADS, "max_len": SEQ_LEN}
    torch.manual_seed(0)
    baseline = ShiftedCopyModel("none", **size).eval()
    model = ShiftedCopyModel(name, **size).eval()
    seconds = median_seconds({name: model, "none": baseline}, tokens, repeats)
    return {
        "seconds": seconds[name],
        "baseline_seconds": seconds["none"],
        "ratio": seconds[name] / seconds["none"],
        "parameters_added": sum(p.numel() for p in model.parameters())
        - sum(p.numel() for p in baseline.parameters()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"toy model forward pass, tokens ({BATCH}, {SEQ_LEN}), d_model={D_MODEL}, "
        f"{NUM_HEADS} heads, {args.threads} thread(s), median of {args.repeats}"
    )
    print(f"{'encoding':<12}{'CPU ms':>9}{'none ms':>9}{'ratio':>8}{'parameters added':>18}")
    for name, entry in ENCODINGS.items():
        row = measure(name, args.repeats)
        print(
            f"{name:<12}{1e3 * row['seconds']:>9.2f}{1e3 * row['baseline_seconds']:>9.2f}"
            f"{row['ratio']:>8.2f}{int(row['parameters_added']):>18,}"
            f"   ({entry.summary})"
        )


if __name__ == "__main__":
    main()
