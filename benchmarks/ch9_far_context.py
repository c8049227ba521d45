"""Chapter 9's far-context measures on many seeds: the numbers their claims were picked on.

Chapter 9 (``book/09_train_short_test_long.ipynb``) asks of every model of its table whether a
longer window *helps*, not only whether it does not hurt: the far-context gain (the last L
characters of each 8 L window scored after 7 L to 8 L characters of context, and again after 0
to L - 1, as one window of L: the ratio of the two perplexities, and likewise at 2 L and 4 L), a
cache n-gram that needs no learning and does read far back (``pe_lib.experiments.far_context``), and the
share of attention each model puts on keys L or more positions back (distances it never saw in
training). The models are ``benchmarks/ch9_seeds.py``'s, trained the chapter's way (one block,
150 steps at L = 32; RoPE stretched by 4, and fine-tuned for 15 steps at 4 L), one per seed.

Every claim the chapter makes about these measures bounds a quantity printed here for every
seed, with the least and largest over the seeds; the chapter asserts the bounds on its own
seeds, and ``make other-seeds`` on seeds never used here (``tests/book/test_other_seeds.py``).

Run: ``.venv/bin/python benchmarks/ch9_far_context.py [--seeds 0-47]`` (several minutes on two
cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from pe_lib.experiments.far_context import attention_beyond, cache_ngram_losses, window_losses
from pe_lib.experiments.lm import (
    POSITION_KINDS,
    CharTransformer,
    corpus_splits,
    ngram_probabilities,
    train_lms,
    with_rope_scaling,
)

_SPEC = importlib.util.spec_from_file_location(
    "ch9_seeds", Path(__file__).resolve().parent / "ch9_seeds.py"
)
assert _SPEC is not None and _SPEC.loader is not None
ch9 = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ch9)

L = ch9.L
LENGTHS = ch9.LENGTHS
#: windows of 8 L whose attention is read (the first of the test text)
ATTENTION_WINDOWS = 16


def last_block(losses: torch.Tensor, n: int) -> torch.Tensor:
    """The losses of the last L characters of each 8 L window, read in windows of n:
    (8 L windows, L) from window_losses' (windows of n, n)."""
    return losses.reshape(-1, 8 * L)[:, -L:]


def gains(losses: dict[int, torch.Tensor]) -> dict[int, float]:
    """Perplexity of the last L characters of each 8 L window after 0 to L - 1 characters of
    context over their perplexity after n - L to n - 1: {n: ratio} for n = 2 L, 4 L, 8 L."""
    short = last_block(losses[L], L).mean()
    return {n: math.exp(float(short - last_block(losses[n], n).mean())) for n in LENGTHS[1:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", help="e.g. 0-47 or 0,1,2 (default: ch9_seeds.PICKED_ON)")
    arguments = parser.parse_args()
    seeds = ch9.parse_seeds(arguments.seeds) if arguments.seeds else ch9.PICKED_ON
    torch.set_num_threads(1)
    train_ids, held_out, vocab = corpus_splits()
    test_ids = held_out[: 8 * L * 64 + 1]
    seen = test_ids[: 8 * L * ATTENTION_WINDOWS + 1]

    def build(position: str, seed: int) -> CharTransformer:
        torch.manual_seed(seed)
        return CharTransformer(
            position,
            vocab_size=len(vocab),
            d_model=32,
            num_heads=4,
            num_layers=1,
            max_len=L if position == "learned" else 8 * L,
        )

    def measure(models: list[CharTransformer]) -> list[dict[str, object]]:
        out = []
        for model in models:
            if model.max_seq_len is not None:
                out.append({})
                continue
            losses = {n: window_losses(model, test_ids, n) for n in LENGTHS}
            share = attention_beyond(model, seen, 8 * L, L)[0, :, -L:].mean(-1)  # (heads,)
            out.append({"gain": gains(losses), "share": share, "losses": losses})
        return out

    models = {p: [build(p, seed) for seed in seeds] for p in POSITION_KINDS}

    def train_and_measure(position: str) -> list[dict[str, object]]:
        train_lms(models[position], train_ids, seeds=seeds, **ch9.TRAINING)
        return measure(models[position])

    order = ("alibi", "rope", "learned", "sinusoidal", "none")
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = dict(zip(order, pool.map(train_and_measure, order), strict=True))

    def stretch(name: str) -> tuple[list[dict[str, object]], list[dict[str, object]] | None]:
        stretched = [with_rope_scaling(m, ch9.SCALINGS[name]) for m in models["rope"]]
        zero = measure(stretched) if name != "default" else measured["rope"]
        if name not in ch9.TUNED:
            return zero, None
        train_lms(stretched, train_ids, seeds=seeds, **ch9.FINE_TUNING)
        return zero, measure(stretched)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(ch9.SCALINGS, pool.map(stretch, ch9.SCALINGS), strict=True))
    rows: dict[str, list[dict[str, object]]] = {
        p: measured[p] for p in POSITION_KINDS if p != "learned"
    }
    for name, (zero, tuned) in results.items():
        if name != "default":
            rows[f"{name} zero-shot"] = zero
        if tuned is not None:
            rows[f"{name} tuned"] = tuned
    best = 5
    p5 = ngram_probabilities(train_ids, test_ids, len(vocab), order=best)
    cache = {n: cache_ngram_losses(p5, test_ids, n, order=best) for n in LENGTHS}
    cache_gain = gains(cache)
    print(f"cache {best}-gram (no learning), far-context gain at 2 L, 4 L, 8 L:",
          " ".join(f"{cache_gain[n]:.4f}" for n in LENGTHS[1:]))  # fmt: skip

    def per_seed(name: str, n: int) -> torch.Tensor:
        return torch.tensor([float(r["gain"][n]) for r in rows[name]])  # type: ignore[index]

    def share(name: str) -> torch.Tensor:
        return torch.stack([r["share"] for r in rows[name]])  # type: ignore[misc]

    print("\nfar-context gain (perplexity of the last L after L over after n), per method:")
    print("least, mean, largest over seeds, for n = 2 L, 4 L, 8 L")
    for name in rows:
        cells = []
        for n in LENGTHS[1:]:
            g = per_seed(name, n)
            cells.append(f"{float(g.min()):.3f} {float(g.mean()):.3f} {float(g.max()):.3f}")
        print(f"  {name:<18}" + " | ".join(cells))
    print("\nattention share on keys L or more back, queries of the last L of 8 L windows:")
    print("mean over heads (least, mean, largest over seeds); largest head (least, largest)")
    for name in rows:
        s = share(name)
        mean, top = s.mean(1), s.amax(1)
        print(f"  {name:<18}{float(mean.min()):.3f} {float(mean.mean()):.3f} "
              f"{float(mean.max()):.3f}   {float(top.min()):.3f} {float(top.max()):.3f}")  # fmt: skip
    alibi = share("alibi")  # (seeds, heads), steepest slope first
    print("ALiBi head by head, steepest slope first (least, largest over seeds):",
          "; ".join(f"{float(h.min()):.3f} {float(h.max()):.3f}" for h in alibi.T))  # fmt: skip
    print("\nper seed: gain at 8 L, at 4 L; mean share")
    for i, seed in enumerate(seeds):
        print(f"seed {seed}")
        for name in rows:
            g8, g4 = float(per_seed(name, 8 * L)[i]), float(per_seed(name, 4 * L)[i])
            print(f"  {name:<18}{g8:.4f} {g4:.4f} {float(share(name)[i].mean()):.4f}")


if __name__ == "__main__":
    main()
