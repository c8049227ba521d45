"""Fetch Vega and vega-embed, which draw the book's kernel-free figures in the browser.

The explorable figures are Vega-Lite specifications (data plus expressions, written by
``pe_lib.viz.charts`` through Altair); the browser evaluates their formulas whenever a control moves.
The two JavaScript libraries (BSD-3-Clause, the Vega project) are not kept in this repository:
this script downloads each pinned release from the npm registry, checks it against the registry's
sha512 digest, and writes its minified browser bundle and licence into ``book/_static/vega/``
(Sphinx copies them into ``_build/html/_static``). ``make book`` runs it when the files are
missing. Vega-Lite, which compiles the figures to Vega, runs at build time inside the pinned
``vl-convert-python`` (``book/_ext/vega_charts.py``) and is never sent to a reader.

The releases and their digests are ``VEGA_RELEASES`` in ``pe_lib/viz/charts.py``. Keep ``vega-lite``
at the schema version of the pinned ``altair`` in ``requirements.txt`` (``alt.SCHEMA_VERSION``)
and among the versions the pinned ``vl-convert-python`` bundles; Vega and vega-embed follow the
majors that Altair names (``alt.VEGA_VERSION``, ``alt.VEGAEMBED_VERSION``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from npm_tarball import verified_tarball

ROOT = Path(__file__).resolve().parents[1]


def releases() -> dict[str, tuple[str, str]]:
    """``pe_lib.viz.charts.VEGA_RELEASES``, the one place the versions are named: package ->
    (version, ``dist.integrity`` of the release in the npm registry's metadata).

    Read from the module's source, so that this script runs without pe_lib's dependencies.
    """
    tree = ast.parse((ROOT / "pe_lib" / "viz" / "charts.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "VEGA_RELEASES" for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise SystemExit("pe_lib/viz/charts.py defines no VEGA_RELEASES")


# The packages the pages load, and where their bundles go.
PAGES = ROOT / "book" / "_static" / "vega"
FETCHED = ("vega", "vega-embed")


def main() -> int:
    for package, (version, integrity) in releases().items():
        if package not in FETCHED:
            continue
        target = PAGES
        target.mkdir(parents=True, exist_ok=True)
        archive = verified_tarball(package, version, integrity)
        members = {member.name: member for member in archive.getmembers() if member.isfile()}
        bundle = f"package/build/{package}.min.js"
        if bundle not in members:
            raise SystemExit(f"{package} {version} has no {bundle}")
        (target / f"{package}.min.js").write_bytes(archive.extractfile(members[bundle]).read())
        licence = archive.extractfile(members["package/LICENSE"]).read()
        (target / f"LICENSE-{package}.txt").write_bytes(licence)
        print(f"{package} {version}: {target / f'{package}.min.js'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
