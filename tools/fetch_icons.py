"""Fetch Font Awesome's icons as SVG files, from which the book's pages draw the few they use.

pydata-sphinx-theme ships Font Awesome Free as one minified script (``scripts/fontawesome.js``,
1.5 MB) that turns every ``<i class="fa-...">`` into an inline SVG. ``book/_ext/site_assets.py``
replaces it after the build with a script holding just the icons the pages name, read from the
SVG files Font Awesome publishes for each icon (``svgs/solid/bars.svg``, ...), and cuts its
TrueType fonts (``webfonts/fa-solid-900.ttf``, ...) down to the glyphs ``book/_static/
icon-font.css`` names: this script downloads the pinned release of ``@fortawesome/fontawesome-free``
from the npm registry, checks it against the registry's sha512 digest and writes those files and
the licence into ``book/_ext/fontawesome/`` (used at build time only). ``make book`` runs it when
they are missing.

Keep ``VERSION`` at the Font Awesome release the pinned pydata-sphinx-theme bundles (the first
line of its ``fontawesome.js.LICENSE.txt``); ``tests/tools/test_site_assets.py`` checks that.
"""

from __future__ import annotations

import sys
from pathlib import Path

from npm_tarball import verified_tarball

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "book" / "_ext" / "fontawesome"
PACKAGE = "@fortawesome/fontawesome-free"
VERSION = "6.5.2"
# `dist.integrity` of the release in the npm registry's metadata.
INTEGRITY = "sha512-hRILoInAx8GNT5IMkrtIt9blOdrqHOnPBH+k70aWUAqPZPgopb9G5EQJFpaBx/S8zp2fC+mPW349Bziuk1o28Q=="
STYLES = ("solid", "regular", "brands")
FONTS = ("fa-solid-900.ttf", "fa-regular-400.ttf", "fa-brands-400.ttf")


def main() -> int:
    archive = verified_tarball(PACKAGE, VERSION, INTEGRITY)
    written = 0
    for member in archive.getmembers():
        parts = member.name.split("/")
        if member.isfile() and parts[:2] == ["package", "svgs"] and parts[2] in STYLES:
            path = TARGET / parts[2] / parts[3]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.extractfile(member).read())
            written += 1
        elif member.isfile() and parts[:2] == ["package", "webfonts"] and parts[2] in FONTS:
            path = TARGET / "webfonts" / parts[2]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(archive.extractfile(member).read())
    missing = [name for name in FONTS if not (TARGET / "webfonts" / name).is_file()]
    if missing:
        raise SystemExit(f"{PACKAGE} {VERSION} has no webfonts/{missing}")
    if written == 0:
        raise SystemExit(f"{PACKAGE} {VERSION} has no svgs/{{{','.join(STYLES)}}}/*.svg")
    (TARGET / "LICENSE.txt").write_bytes(archive.extractfile("package/LICENSE.txt").read())
    (TARGET / "VERSION").write_text(VERSION + "\n", encoding="utf-8")
    print(f"{PACKAGE} {VERSION}: {written} icons in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
