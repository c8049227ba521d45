"""The medians of Lighthouse runs, per page: the four scores, LCP and TBT.

Usage: ``python benchmarks/lighthouse/summary.py OUT_PREFIX...``, each prefix given to ``run.sh``
(its runs are ``OUT_PREFIX-<page>-<run>.json``); a page's runs under all the prefixes given are
taken together; a run in which Lighthouse failed (no score, e.g. ``NO_FCP``) is left out and
named on standard error. Prints a Markdown table like the one in ``README.md``. For that record
only (no test reads it).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

CATEGORIES = ["performance", "accessibility", "best-practices", "seo"]


def name(page: str) -> str:
    """``07_rope_alibi`` is chapter 7; other pages keep their name."""
    number = page.split("_", 1)[0]
    return f"chapter {int(number)}" if number.isdigit() else page


def main() -> None:
    runs: dict[str, list[dict]] = defaultdict(list)
    for prefix in sys.argv[1:]:
        folder, stem = Path(prefix).parent, Path(prefix).name
        for path in sorted(folder.glob(f"{stem}-*-*.json")):
            page = path.stem[len(stem) + 1 :].rsplit("-", 1)[0]
            report = json.loads(path.read_text(encoding="utf-8"))
            if report["categories"]["performance"]["score"] is None:  # the page was not measured
                error = report.get("runtimeError", {}).get("code", "no score")
                print(f"{path.name}: left out, Lighthouse failed ({error})", file=sys.stderr)
                continue
            runs[page].append(report)
    print("| page | runs | performance | accessibility | best practices | SEO | LCP | TBT |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for page in sorted(runs, key=lambda p: (p[0].isdigit(), p)):
        reports = runs[page]
        scores = [
            statistics.median(round(r["categories"][c]["score"] * 100) for r in reports)
            for c in CATEGORIES
        ]
        lcp = statistics.median(
            r["audits"]["largest-contentful-paint"]["numericValue"] for r in reports
        )
        tbt = statistics.median(r["audits"]["total-blocking-time"]["numericValue"] for r in reports)
        performance = sorted(round(r["categories"]["performance"]["score"] * 100) for r in reports)
        cells = [f"{s:g}" for s in scores] + [f"{lcp / 1000:.1f} s", f"{tbt / 1000:.2f} s"]
        print(
            f"| {name(page)} | {len(reports)} ({', '.join(map(str, performance))}) | "
            + " | ".join(cells)
            + " |"
        )


if __name__ == "__main__":
    main()
