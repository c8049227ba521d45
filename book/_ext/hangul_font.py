"""Serve the Hangul web font cut down to the syllables the built pages use.

``tools/fetch_hangul_font.py`` fetches Noto Sans KR as 86 WOFF2 files of about 130 syllables
each (1.2 MB), each declared with the ``unicode-range`` it covers, so that a page downloads only
the files whose range meets its text. A page of Korean prose meets most ranges, though it uses a
few of each file's syllables: the Korean edition uses about 620 of the 11,172 syllables, and the
English book a few dozen. After the build this subsets every file to the syllables that some
built page uses (the search page shows only text of the pages), narrows each ``unicode-range`` to
them, and drops the files none uses; every glyph a page draws is still the web font's (the
browser test asks Chromium which font drew each Hangul run).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

HANGUL = re.compile(r"[\uac00-\ud7a3]")
FONT_CSS = Path("_static") / "fonts" / "noto-sans-kr.css"
FACE = re.compile(r"@font-face \{[^}]*\}\n*")
SOURCE = re.compile(r"url\(\./([^)]+\.woff2)\)")
RANGE = re.compile(r"unicode-range: ([^;]+);")


def code_points(unicode_range: str) -> set[int]:
    """``U+AC00-AC0F,U+AC20`` as the set of code points it names."""
    points: set[int] = set()
    for part in unicode_range.split(","):
        low, _, high = part.strip().removeprefix("U+").partition("-")
        points.update(range(int(low, 16), int(high or low, 16) + 1))
    return points


def unicode_range(points: set[int]) -> str:
    """The shortest ``U+...`` list of ranges naming exactly ``points``."""
    ranges: list[list[int]] = []
    for point in sorted(points):
        if ranges and point == ranges[-1][1] + 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return ",".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in ranges)


def used_syllables(outdir: Path) -> set[int]:
    used: set[int] = set()
    for page in outdir.rglob("*.html"):
        if "_sources" not in page.parts:
            used.update(map(ord, HANGUL.findall(page.read_text(encoding="utf-8"))))
    return used


def subset_hangul_font(outdir: Path) -> None:
    from fontTools import subset

    css_path = outdir / FONT_CSS
    if not css_path.is_file():
        return
    used = used_syllables(outdir)
    css = css_path.read_text(encoding="utf-8")
    faces = []
    for face in FACE.findall(css):
        source, covered = SOURCE.search(face), RANGE.search(face)
        if source is None or covered is None:
            faces.append(face)
            continue
        font_path = css_path.parent / source.group(1)
        keep = code_points(covered.group(1)) & used
        if not keep:
            font_path.unlink(missing_ok=True)
            continue
        options = subset.Options()
        options.flavor = "woff2"
        options.layout_features = ["*"]
        font = subset.load_font(str(font_path), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=sorted(keep))
        subsetter.subset(font)
        subset.save_font(font, str(font_path), options)
        faces.append(RANGE.sub(f"unicode-range: {unicode_range(keep)};", face))
    header = css[: css.index("@font-face")] if "@font-face" in css else ""
    css_path.write_text(header + "".join(faces), encoding="utf-8")


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        subset_hangul_font(Path(app.outdir))


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
