"""Fetch KaTeX, which typesets the book's formulas when the book is built.

KaTeX (MIT, Khan Academy and contributors) is not kept in this repository: this script
downloads the pinned release from the npm registry, checks it against the registry's sha512
digest (``dist.integrity``), and writes into ``book/_ext/katex/``:

- ``katex.min.js``, which ``book/_ext/katex_math.py`` runs in Python (an embedded V8,
  ``mini-racer``) to turn each formula's TeX into HTML and MathML while the book is built;
- ``katex.min.css`` and the WOFF2 fonts under ``fonts/``, of which the build copies the
  stylesheet and the fonts the pages use into ``_static/katex``;
- the licence.
"""

from __future__ import annotations

import sys
from pathlib import Path

from npm_tarball import extract, verified_tarball

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "book" / "_ext" / "katex"

#: The release and the ``dist.integrity`` digest of its tarball in the npm registry.
KATEX = (
    "0.19.1",
    "sha512-jG8uKntjSEcm2EpQOh0XturpPuuC9r3Sq5HLHdsFdWZT27E672SF19QEi+of0/YeOy15lDgRhKvr5614uRrEfA==",
)


def main() -> int:
    version, integrity = KATEX
    archive = verified_tarball("katex", version, integrity)
    fonts = {
        name: "fonts/" + name.rsplit("/", 1)[-1]
        for name in archive.getnames()
        if name.startswith("package/dist/fonts/") and name.endswith(".woff2")
    }
    if not fonts:
        raise SystemExit(f"katex {version} has no WOFF2 fonts under package/dist/fonts")
    wanted = {
        "package/dist/katex.min.js": "katex.min.js",
        "package/dist/katex.min.css": "katex.min.css",
        "package/LICENSE": "LICENSE",
        **fonts,
    }
    extract(archive, f"katex {version}", wanted, TARGET)
    (TARGET / "VERSION").write_text(version + "\n", encoding="utf-8")
    print(f"katex {version}: {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
