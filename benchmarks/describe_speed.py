"""How long ``pe_lib.describe`` takes on each of chapter 11's models (target: under a second).

The configs are the ones ``tests/lib/test_describe.py`` checks layer by layer against
transformers (chapter 11's rows as published, keys left to the model type's defaults, and its
hybrids from their classes' defaults). The first call imports transformers' configuration
classes and is timed apart; then each model is described ``--repeats`` times and the median
wall-clock time is printed with a verdict against the target.

Run: ``make bench`` or ``.venv/bin/python benchmarks/describe_speed.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from pe_lib import describe

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.0


def _chapter_11_configs() -> tuple[list[str], object]:
    """The test module's model names and its ``_published`` (the row's keys, completed)."""
    path = ROOT / "tests" / "lib" / "test_describe.py"
    spec = importlib.util.spec_from_file_location("chapter_11_configs", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot read the chapter 11 configs from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "tests"))  # the test module's own helpers
    spec.loader.exec_module(module)
    return list(module.MODELS), module._published


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    models, published = _chapter_11_configs()
    start = time.perf_counter()
    describe(published(models[0]))
    print(f"first call (imports transformers' classes): {time.perf_counter() - start:.2f} s")
    worst = 0.0
    for model in models:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            describe(published(model))
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{model:<34} {median * 1000:8.1f} ms")
    verdict = "meets" if worst < TARGET_S else "MISSES"
    print(f"slowest median {worst * 1000:.1f} ms: {verdict} the target of {TARGET_S:.0f} s")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
