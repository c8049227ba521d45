"""Fetch the Korean web font that draws the book's Hangul on machines without a CJK font.

The chapters quote the article's Korean sentences. A reader whose system has no Korean font (a
fresh Linux install, many e-readers) would see missing-glyph boxes, so the book serves its own:
Noto Sans KR (SIL Open Font License 1.1, Google), from the npm package
``@fontsource/noto-sans-kr``. This script downloads the pinned release from the npm registry,
checks it against the registry's sha512 digest, and writes into ``book/_static/fonts/``:

- the regular (400) WOFF2 files whose ``unicode-range`` covers Hangul, and
- ``noto-sans-kr.css``, their ``@font-face`` rules with each range cut down to the Hangul
  blocks, so that the browser never uses this font for Latin, digits or punctuation (the
  book's build merges the syllables its pages use into one file: ``book/_ext/hangul_font.py``);
- the font's licence.

``book/_static/hangul.css`` puts the family first in the theme's font stacks. ``make book`` runs
this script when the files are missing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from npm_tarball import verified_tarball

PACKAGE = "@fontsource/noto-sans-kr"
VERSION = "5.3.0"
# `dist.integrity` of the release in the npm registry's metadata.
INTEGRITY = "sha512-/JnpTjaCOXW7xUoqOyCVYSr05VOkDy5Yla9O+WAEiS7u+yYLsmHoqj6v1W0bf91G8G3XA2+NnRS3CX2Tf/FVZg=="
TARGET = Path(__file__).resolve().parents[1] / "book" / "_static" / "fonts"
STYLESHEET = "noto-sans-kr.css"
FAMILY = "Noto Sans KR"
WEIGHT = "400"

# Unicode's Hangul blocks: Jamo, Compatibility Jamo, Jamo Extended-A, Syllables, Jamo Extended-B.
HANGUL_BLOCKS = (
    (0x1100, 0x11FF),
    (0x3130, 0x318F),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7AF),
    (0xD7B0, 0xD7FF),
)

FONT_FACE = re.compile(r"@font-face\s*{(?P<body>[^}]*)}")
WOFF2_URL = re.compile(r"url\(\./files/(?P<name>[^)]+\.woff2)\)")
RANGE = re.compile(r"unicode-range:\s*(?P<ranges>[^;]+);")


def parse_ranges(text: str) -> list[tuple[int, int]]:
    """``U+AC00-AC0F,U+AC11`` as inclusive code-point intervals."""
    intervals = []
    for item in text.split(","):
        low, _, high = item.strip().removeprefix("U+").partition("-")
        intervals.append((int(low, 16), int(high or low, 16)))
    return intervals


def hangul_part(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``intervals`` inside the Hangul blocks."""
    kept = []
    for low, high in intervals:
        for block_low, block_high in HANGUL_BLOCKS:
            start, stop = max(low, block_low), min(high, block_high)
            if start <= stop:
                kept.append((start, stop))
    return kept


def format_ranges(intervals: list[tuple[int, int]]) -> str:
    return ",".join(
        f"U+{low:04X}" if low == high else f"U+{low:04X}-{high:04X}" for low, high in intervals
    )


def main() -> int:
    archive = verified_tarball(PACKAGE, VERSION, INTEGRITY)
    members = {member.name: member for member in archive.getmembers() if member.isfile()}
    css = archive.extractfile(members[f"package/{WEIGHT}.css"]).read().decode()
    TARGET.mkdir(parents=True, exist_ok=True)
    rules = []
    for face in FONT_FACE.finditer(css):
        body = face.group("body")
        woff2, ranges = WOFF2_URL.search(body), RANGE.search(body)
        if woff2 is None or ranges is None:
            continue
        hangul = hangul_part(parse_ranges(ranges.group("ranges")))
        if not hangul:
            continue
        name = woff2.group("name")
        (TARGET / name).write_bytes(archive.extractfile(members[f"package/files/{name}"]).read())
        rules.append(
            "@font-face {\n"
            f"  font-family: '{FAMILY}';\n"
            "  font-style: normal;\n"
            f"  font-weight: {WEIGHT};\n"
            "  font-display: swap;\n"
            f"  src: url(./{name}) format('woff2');\n"
            f"  unicode-range: {format_ranges(hangul)};\n"
            "}\n"
        )
    if not rules:
        raise SystemExit(f"{PACKAGE} {VERSION}: no @font-face rule covers Hangul")
    header = f"/* {FAMILY} {WEIGHT} from {PACKAGE} {VERSION} (OFL-1.1), Hangul blocks only. */\n"
    (TARGET / STYLESHEET).write_text(header + "\n".join(rules), encoding="utf-8")
    (TARGET / "LICENSE-noto-sans-kr.txt").write_bytes(
        archive.extractfile(members["package/LICENSE"]).read()
    )
    print(f"{PACKAGE} {VERSION}: {len(rules)} Hangul font files in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
