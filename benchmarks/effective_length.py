"""SmolLM2-135M's effective length: a pass key retrieved at distances up to its window and past it.

Chapter 10 (``book/10_inside_trained_models.ipynb``) asks SmolLM2-135M (a window of 8,192
tokens) for a pass key put before the chapter's text, after up to 1,024 tokens: what fits its
30 seconds. This script asks at the lengths the chapter does not run: up to the window, with the
needle at the start of the text and in its middle, and past the window, with the model's own
RoPE and with YaRN stretching it by 2 (``rope_scaling`` ``{"rope_type": "yarn", "factor": 2,
"original_max_position_embeddings": 8192}``, applied as transformers applies it).

The task follows RULER's single-needle retrieval (Hsieh et al., 2024, arXiv:2404.06654, section
3.1, S-NIAH), with the chapter's text (Python's help topics, ``pe_lib.experiments.lm.load_corpus``) as the
haystack, and the pass key of Mohtashami and Jaggi (2023, arXiv:2305.16300): a sentence giving
a five-digit key, then the text, then the question; the key counts as retrieved when greedy
decoding writes its five digits (each digit the model's top choice, the earlier ones in place).
``pe_lib.experiments.far_context.rotary_kv_passes`` runs each text once and every question on its cached
keys and values, so one pass serves every distance.

Each (setting, key) prints one line: the distances from the needle to the question, and whether
the key was retrieved at each. The numbers go into no page (no cell computes them); chapter 10
names the lengths it did not run.

Run: ``.venv/bin/python benchmarks/effective_length.py [--keys 3] [--threads 2]``. Each pass
over 8,192 tokens takes a minute or more on two cores; past the window, 10,240 tokens, more.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from pe_lib.experiments.far_context import retrieved, rotary_kv_passes
from pe_lib.experiments.lm import load_corpus
from pe_lib.pretrained import load_smollm2, smollm2_tokenizer

WINDOW = 8192
YARN = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": WINDOW}
#: (name, scaling, where the needle goes in the text, text length, distances asked)
SETTINGS = (
    ("start, own RoPE", None, 0, WINDOW - 64, (256, 1024, 2048, 4096, 6144, WINDOW - 64)),
    ("middle, own RoPE", None, 4096, WINDOW - 64, (256, 1024, 2048, WINDOW - 64 - 4096)),
    ("start, own RoPE, past the window", None, 0, 10_240, (4096, WINDOW - 64, 10_240)),
    ("start, YaRN x2, past the window", YARN, 0, 10_240, (4096, WINDOW - 64, 10_240)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=2, help="pass keys per setting (default 2)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settings", default="all", help="e.g. 0,1 (default: all)")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    model = load_smollm2()
    tokenizer = smollm2_tokenizer()
    text = tokenizer.encode(load_corpus()).ids  # the chapter's text, about 60,000 tokens
    question = (
        tokenizer.encode("\nWhat is the pass key? The pass key is").ids + tokenizer.encode(" ").ids
    )
    rng = np.random.default_rng(2024)
    keys = [str(k) for k in rng.integers(10_000, 100_000, arguments.keys)]
    chosen = (
        range(len(SETTINGS))
        if arguments.settings == "all"
        else [int(i) for i in arguments.settings.split(",")]
    )
    for index in chosen:
        name, scaling, at, length, distances = SETTINGS[index]
        for key in keys:
            needle = tokenizer.encode(
                f"The pass key is {key}. Remember it: {key} is the pass key.\n"
            ).ids
            digits = tokenizer.encode(key).ids
            assert tokenizer.encode(f" {key}").ids == tokenizer.encode(" ").ids + digits
            prefix = torch.tensor(text[:at] + needle + text[at:length])
            asks = [
                (at + len(needle) + d, torch.tensor(question + digits[:-1]))
                for d in distances
                if at + len(needle) + d <= prefix.numel()
            ]
            start = time.time()
            with torch.inference_mode():
                answers = rotary_kv_passes(model, prefix, asks, scaling=scaling)
            found = [retrieved(a[len(question) - 1 :], digits) for a in answers]
            shown = ", ".join(
                f"{n - at - len(needle)}: {'yes' if ok else 'no'}"
                for (n, _), ok in zip(asks, found, strict=True)
            )
            print(
                f"{name:<34} key {key}, needle at {at}, "
                f"text {prefix.numel()} tokens ({time.time() - start:.0f} s): {shown}",
                flush=True,
            )


if __name__ == "__main__":
    main()
