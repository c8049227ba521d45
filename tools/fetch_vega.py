"""Fetch Vega, Vega-Lite and vega-embed, which draw the book's kernel-free figures in the browser.

The explorable figures are Vega-Lite specifications (data plus expressions, written by
``pe_lib.charts`` through Altair); the browser evaluates their formulas whenever a control moves.
The three JavaScript libraries (BSD-3-Clause, the Vega project) are not kept in this repository:
this script downloads each pinned release from the npm registry, checks it against the registry's
sha512 digest, and writes its minified browser bundle and licence into ``book/_static/vega/``,
from where Sphinx copies them into ``_build/html/_static``. ``make book`` runs it when the files
are missing.

Keep ``vega-lite`` at the schema version of the pinned ``altair`` in ``requirements.txt``
(``alt.SCHEMA_VERSION``); Vega and vega-embed follow the majors that Altair names
(``alt.VEGA_VERSION``, ``alt.VEGAEMBED_VERSION``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from npm_tarball import verified_tarball

# package: (version, `dist.integrity` of the release in the npm registry's metadata)
RELEASES = {
    "vega": (
        "6.4.0",
        "sha512-rHXCq2LpEWCLMjXBEj7hocY9G0/i5TGYRayGGSj06VTF4+l2IG2Z7oeZKCjWbUh/7hTE/mVhbaOPB72wCElh6g==",
    ),
    "vega-lite": (
        "6.4.1",
        "sha512-KO3ybHNouRK4A0al/+2fN9UqgTEfxrd/ntGLY933Hg5UOYotDVQdshR3zn7OfXwQ7uj0W96Vfa5R+QxO8am3IQ==",
    ),
    "vega-embed": (
        "7.3.0",
        "sha512-wQ8s5GaSzqoKgmRfbRolgBrjE2CP7ZKHXqH7NijxMqPjpdWxSs4Dn8tvp9g0giQvh2cK+3p56sxjWWM0wNngGw==",
    ),
}
TARGET = Path(__file__).resolve().parents[1] / "book" / "_static" / "vega"


def main() -> int:
    TARGET.mkdir(parents=True, exist_ok=True)
    for package, (version, integrity) in RELEASES.items():
        archive = verified_tarball(package, version, integrity)
        members = {member.name: member for member in archive.getmembers() if member.isfile()}
        bundle = f"package/build/{package}.min.js"
        if bundle not in members:
            raise SystemExit(f"{package} {version} has no {bundle}")
        (TARGET / f"{package}.min.js").write_bytes(archive.extractfile(members[bundle]).read())
        licence = archive.extractfile(members["package/LICENSE"]).read()
        (TARGET / f"LICENSE-{package}.txt").write_bytes(licence)
        print(f"{package} {version}: {TARGET / f'{package}.min.js'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
