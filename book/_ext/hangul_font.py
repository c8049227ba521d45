"""Serve the Hangul web font as one file of the syllables the built pages use, asked for early.

``tools/fetch_hangul_font.py`` fetches Noto Sans KR as 86 WOFF2 files of about 130 syllables
each (1.2 MB), each declared with the ``unicode-range`` it covers. A page of Korean prose meets
most of those ranges, though it uses a few of each file's syllables: the Korean edition uses
about 620 of the 11,172 syllables, and the English book a few dozen. After the build this cuts
every file down to the syllables that some built page uses (the search page shows only text of
the pages), merges what is left into one file (``fonts/noto-sans-kr.woff2``) and declares it
with one ``@font-face`` whose ``unicode-range`` names exactly those syllables. Every glyph a
page draws is still the web font's (the browser test asks Chromium which font drew each Hangul
run).

One file lets a page ask for the font before it is laid out: a page that shows Hangul preloads
it (as ``katex_math.py`` preloads the KaTeX fonts its formulas draw with), an English page too,
for the label of its switch to the Korean edition. Asked for only once the text was laid out,
the font arrived after the page was first drawn in a fallback font, and its wider or narrower
glyphs rewrapped every paragraph below (``font-display: swap``); on an English page, where only
the switch's label draws with it, it arrived after the page was laid out, and the browser styled
the page again.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from font_preloads import add_font_preloads

HANGUL = re.compile(r"[\uac00-\ud7a3]")
FONTS = Path("_static") / "fonts"
FONT_CSS = FONTS / "noto-sans-kr.css"
# The one file the build writes in place of the fetched ones.
FONT_FILE = FONTS / "noto-sans-kr.woff2"
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
    """The fetched files under ``outdir`` cut down to the syllables its pages use and merged
    into FONT_FILE; the stylesheet declares that file alone."""
    from fontTools import merge, subset

    css_path = outdir / FONT_CSS
    if not css_path.is_file():
        return
    css = css_path.read_text(encoding="utf-8")
    faces = FACE.findall(css)
    files = [
        (css_path.parent / source.group(1), code_points(covered.group(1)))
        for face in faces
        if (source := SOURCE.search(face)) and (covered := RANGE.search(face))
    ]
    if not files:
        raise RuntimeError(f"{css_path} declares no font files: is it the fetched stylesheet?")
    if [path.name for path, _ in files] == [FONT_FILE.name]:
        return  # merged by an earlier build, and no page written since: Sphinx copied nothing
    used = used_syllables(outdir)
    options = subset.Options()
    options.layout_features = ["*"]
    kept: set[int] = set()
    with tempfile.TemporaryDirectory() as scratch:
        parts = []
        for path, covered in files:
            if keep := covered & used:
                font = subset.load_font(str(path), options)
                subsetter = subset.Subsetter(options)
                subsetter.populate(unicodes=sorted(keep))
                subsetter.subset(font)
                parts.append(str(Path(scratch, f"{len(parts)}.ttf")))
                font.save(parts[-1])
                kept |= keep
        if parts:
            merged = merge.Merger().merge(parts)
            merged.flavor = "woff2"
            merged.save(str(outdir / FONT_FILE))
    for path, _ in files:
        path.unlink()
    header = css[: css.index("@font-face")]
    if not kept:
        (outdir / FONT_FILE).unlink(missing_ok=True)  # an earlier build's
        css_path.write_text(header, encoding="utf-8")
        return
    face = SOURCE.sub(f"url(./{FONT_FILE.name})", faces[0])
    face = RANGE.sub(f"unicode-range: {unicode_range(kept)};", face)
    css_path.write_text(header + face, encoding="utf-8")


def preload_font(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """A page whose words (its text, its title, the book's title, the label of its switch to the
    other edition) hold a Hangul syllable asks for the font in its head."""
    switch = context.get("edition_switch") or {}
    words = " ".join(str(context.get(key) or "") for key in ("body", "title", "docstitle"))
    words += " " + str(switch.get("label") or "")
    if HANGUL.search(words):
        add_font_preloads(context, [FONT_FILE.as_posix()])


def _finished(app: Any, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        subset_hangul_font(Path(app.outdir))


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", preload_font)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
