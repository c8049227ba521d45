"""Chapter 9's experiment on many seeds: the numbers its claims were picked on.

The chapter (``book/09_train_short_test_long.ipynb``) trains each encoding once per seed of its
``SEEDS`` and asserts its claims on every one of them. A claim that holds on five seeds may fail
on the sixth, so the claims were picked here first, on many seeds at once (``--seeds``, by
default 0 to 47), keeping only those that hold on every seed with a margin; then the chapter
asserts them on its own seeds and ``make other-seeds`` on a set never used here
(``tests/book/test_other_seeds.py``).

The settings are the chapter's (one block, ``d_model`` 32, 4 heads; 150 steps of Adam at 0.02 on
batches of 32 windows of L = 32 characters; scored on 16,384 held-out predictions at 1, 2, 4
and 8 L; RoPE stretched by 4 and fine-tuned for 15 steps on batches of 8 windows of 4 L; the
exercise's ALiBi trained on 16 characters). ``train_lms`` trains every seed's model of one
encoding side by side, as the chapter does with its five, so each seed's model is the one the
chapter trains for that seed (up to floating-point rounding).

It prints, for every seed, each quantity a claim bounds, then the least and largest value over
the seeds beside the chapter's bound. It takes several minutes on two cores.

Run: ``.venv/bin/python benchmarks/ch9_seeds.py [--seeds 0-47]``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from pe_lib.experiments.lm import (
    POSITION_KINDS,
    CharTransformer,
    bigram_perplexity,
    corpus_splits,
    ngram_perplexity,
    perplexity,
    train_lms,
    with_rope_scaling,
)

L = 32
LENGTHS = (L, 2 * L, 4 * L, 8 * L)
TRAINING = {"steps": 150, "seq_len": L, "batch_size": 32, "lr": 2e-2}
FINE_TUNING = {"steps": 15, "seq_len": 4 * L, "batch_size": 8, "lr": 3e-3}
FACTOR = 4.0
ORIGINAL = {"original_max_position_embeddings": L}
SCALINGS = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": FACTOR},
    "yarn": {"rope_type": "yarn", "factor": FACTOR, **ORIGINAL},
    "llama3": {
        "rope_type": "llama3",
        "factor": FACTOR,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        **ORIGINAL,
    },
}
TUNED = ("default", "yarn", "llama3")
#: The seeds the chapter's claims were picked on; ``make other-seeds`` uses none of them.
PICKED_ON = tuple(range(48))


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"0-47"`` or ``"0,1,5"``."""
    if "-" in text:
        first, last = (int(part) for part in text.split("-"))
        return tuple(range(first, last + 1))
    return tuple(int(part) for part in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", help="e.g. 0-47 or 0,1,2 (default: PICKED_ON, 0-47)")
    parser.add_argument("--save", help="a new file to keep every table in (torch.save)")
    arguments = parser.parse_args()
    seeds = parse_seeds(arguments.seeds) if arguments.seeds else PICKED_ON
    torch.set_num_threads(1)
    train_ids, held_out, vocab = corpus_splits()
    test_ids = held_out[: 8 * L * 64 + 1]

    def build(position: str, seed: int, length: int = L) -> CharTransformer:
        torch.manual_seed(seed)
        max_len = length if position == "learned" else 8 * length
        return CharTransformer(
            position,
            vocab_size=len(vocab),
            d_model=32,
            num_heads=4,
            num_layers=1,
            max_len=max_len,
        )

    def scores(models: list[CharTransformer], ids: torch.Tensor, lengths: tuple[int, ...]):
        table = torch.full((len(models), len(lengths)), math.nan, dtype=torch.float64)
        for i, model in enumerate(models):
            for j, n in enumerate(lengths):
                if model.max_seq_len is None or n <= model.max_seq_len:
                    table[i, j] = perplexity(model, ids, n)
        return table

    models = {p: [build(p, seed) for seed in seeds] for p in POSITION_KINDS}

    def train_and_score(position: str) -> torch.Tensor:
        train_lms(models[position], train_ids, seeds=seeds, **TRAINING)
        return scores(models[position], test_ids, LENGTHS)

    with ThreadPoolExecutor(max_workers=2) as pool:
        ppl = dict(zip(POSITION_KINDS, pool.map(train_and_score, POSITION_KINDS), strict=True))

    def stretch(name: str) -> tuple[torch.Tensor, torch.Tensor | None]:
        stretched = [with_rope_scaling(m, SCALINGS[name]) for m in models["rope"]]
        zero = scores(stretched, test_ids, LENGTHS) if name != "default" else ppl["rope"]
        if name not in TUNED:
            return zero, None
        train_lms(stretched, train_ids, seeds=seeds, **FINE_TUNING)
        return zero, scores(stretched, test_ids, LENGTHS)

    def exercise() -> torch.Tensor:
        group = [build("alibi", seed, 16) for seed in seeds]
        train_lms(group, train_ids, seeds=seeds, **{**TRAINING, "seq_len": 16})
        return scores(group, held_out[: 8 * 16 * 64 + 1], (16, 32, 64, 128))

    with ThreadPoolExecutor(max_workers=2) as pool:
        stretching = pool.map(stretch, SCALINGS)
        alibi_16_job = pool.submit(exercise)
        results = dict(zip(SCALINGS, stretching, strict=True))
        alibi_16 = alibi_16_job.result()
    zs = {name: zero for name, (zero, _) in results.items()}
    ft = {name: tuned for name, (_, tuned) in results.items() if tuned is not None}
    bigram = bigram_perplexity(train_ids, test_ids, len(vocab))
    ngrams = {n: ngram_perplexity(train_ids, test_ids, len(vocab), order=n) for n in range(1, 8)}
    print("counted baselines (no learning), same 16,384 predictions:")
    print(f"  bigram, add-one: {bigram:.4f}")
    for n, value in ngrams.items():
        print(f"  interpolated {n}-gram: {value:.4f}")

    def col(table: dict[str, torch.Tensor], name: str, n: int) -> torch.Tensor:
        return table[name][:, LENGTHS.index(n)]

    def ratio(name: str) -> torch.Tensor:
        return col(ppl, name, 8 * L) / col(ppl, name, L)

    trigram, best = ngrams[3], min(ngrams.values())
    everything = torch.cat(
        [t for t in ppl.values()] + [t for t in zs.values()] + [t for t in ft.values()], dim=1
    )
    quantities: dict[str, tuple[str, Callable[[], torch.Tensor]]] = {
        # the table
        "pos@L/bigram": (
            "< 0.98",
            lambda: (
                torch.stack(
                    [col(ppl, p, L) for p in ("sinusoidal", "learned", "rope", "alibi")]
                ).amax(0)
                / bigram
            ),
        ),
        "pos@L/trigram": (
            "",
            lambda: (
                torch.stack(
                    [col(ppl, p, L) for p in ("sinusoidal", "learned", "rope", "alibi")]
                ).amin(0)
                / trigram
            ),
        ),
        "any/best-gram": ("> 1.5", lambda: everything.nan_to_num(math.inf).amin(1) / best),
        "any/trigram": ("> 1.1", lambda: everything.nan_to_num(math.inf).amin(1) / trigram),
        "alibi max/min": ("< 1.02", lambda: ppl["alibi"].amax(1) / ppl["alibi"].amin(1)),
        "alibi/rivals@8L": (
            "< 0.9",
            lambda: (
                col(ppl, "alibi", 8 * L)
                / torch.stack([col(ppl, p, 8 * L) for p in ("none", "sinusoidal", "rope")]).amin(0)
            ),
        ),
        "sin 8L/L": ("> 1.25", lambda: ratio("sinusoidal")),
        "sin/none@8L": ("> 1.05", lambda: col(ppl, "sinusoidal", 8 * L) / col(ppl, "none", 8 * L)),
        "rope/others@L": (
            "< 1",
            lambda: (
                col(ppl, "rope", L)
                / torch.stack([col(ppl, p, L) for p in POSITION_KINDS if p != "rope"]).amin(0)
            ),
        ),
        "rope-sin ratio": ("> 0", lambda: ratio("rope") - ratio("sinusoidal")),
        "none@L/bigram": ("0.92-1.08", lambda: col(ppl, "none", L) / bigram),
        "none@8L/bigram": ("> 1", lambda: col(ppl, "none", 8 * L) / bigram),
        "none 8L/L": ("> 1.02", lambda: ratio("none")),
        # stretching, zero-shot
        "lin/def@L": ("> 1.3", lambda: col(zs, "linear", L) / col(zs, "default", L)),
        "lin/def@2L": ("", lambda: col(zs, "linear", 2 * L) / col(zs, "default", 2 * L)),
        "lin/def@4L": ("", lambda: col(zs, "linear", 4 * L) / col(zs, "default", 4 * L)),
        "lin/def@8L": ("", lambda: col(zs, "linear", 8 * L) / col(zs, "default", 8 * L)),
        "lin/yl min": (
            "> 1.05",
            lambda: (zs["linear"] / torch.minimum(zs["yarn"], zs["llama3"])).amin(1),
        ),
        "yl@L/def@L min": (
            "> 1.1",
            lambda: torch.minimum(col(zs, "yarn", L), col(zs, "llama3", L)) / col(zs, "default", L),
        ),
        "yl@4L/def@4L max": (
            "< 0.9",
            lambda: (
                torch.maximum(col(zs, "yarn", 4 * L), col(zs, "llama3", 4 * L))
                / col(zs, "default", 4 * L)
            ),
        ),
        "yl upto4L/L max": (
            "< 1.08",
            lambda: torch.stack(
                [zs[n][:, :3].amax(1) / zs[n][:, 0] for n in ("yarn", "llama3")]
            ).amax(0),
        ),
        "yarn/llama3 |-1|": ("< 0.06", lambda: (zs["yarn"] / zs["llama3"] - 1).abs().amax(1)),
        # stretching, fine-tuned
        "ft yl@4L/def@L": (
            "0.94-1.06",
            lambda: (
                torch.stack([col(ft, n, 4 * L) for n in ("yarn", "llama3")]).amax(0)
                / col(zs, "default", L)
            ),
        ),
        "ft yl@4L/def@L min": (
            "",
            lambda: (
                torch.stack([col(ft, n, 4 * L) for n in ("yarn", "llama3")]).amin(0)
                / col(zs, "default", L)
            ),
        ),
        "ft yl/def@4L": (
            "< 0.9",
            lambda: (
                torch.stack([col(ft, n, 4 * L) for n in ("yarn", "llama3")]).amax(0)
                / col(ft, "default", 4 * L)
            ),
        ),
        "ft yl 8L/4L": (
            "> 1.15",
            lambda: torch.stack(
                [col(ft, n, 8 * L) / col(ft, n, 4 * L) for n in ("yarn", "llama3")]
            ).amin(0),
        ),
        # the exercise
        "alibi16 max/first": ("<= 1.1", lambda: alibi_16.amax(1) / alibi_16[:, 0]),
        "sin 2L/L": ("> 1.1", lambda: col(ppl, "sinusoidal", 2 * L) / col(ppl, "sinusoidal", L)),
    }
    values = {name: compute() for name, (_, compute) in quantities.items()}
    names = list(values)
    print("\nper seed:")
    for i, seed in enumerate(seeds):
        print(f"seed {seed}")
        for name in names:
            print(f"  {name:<20}{float(values[name][i]):.4f}")
    print(f"\nover {len(seeds)} seeds: least, largest (the chapter's bound)")
    for name in names:
        v = values[name]
        print(f"  {name:<20}{float(v.min()):.4f} {float(v.max()):.4f}   {quantities[name][0]}")
    print("\nmean over seeds of each table:")
    for title, tables in (("trained", ppl), ("zero-shot", zs), ("fine-tuned", ft)):
        print(title)
        for name, table in tables.items():
            print(f"  {name:<11}" + "".join(f"{float(x):9.3f}" for x in table.mean(0)))
    if arguments.save:
        with open(arguments.save, "xb") as file:  # never overwrites
            torch.save(
                {"seeds": seeds, "ppl": ppl, "zs": zs, "ft": ft, "alibi_16": alibi_16,
                 "bigram": bigram, "ngrams": ngrams},
                file,
            )  # fmt: skip


if __name__ == "__main__":
    main()
