"""Fetch the ipywidgets HTML manager that renders the book's saved widgets without a CDN.

myst-nb loads ``jupyter-widgets/embed.js`` on pages whose notebook stored widget state
(``nb_ipywidgets_js`` in ``_config.yml``). The bundle is the npm package
``@jupyter-widgets/html-manager`` (BSD-3-Clause, Project Jupyter), the manager of ipywidgets 8.
It is not kept in this repository: this script downloads the pinned release from the npm
registry, checks it against the registry's sha512 digest, and writes ``dist/embed.js``, its
licence file and the icon fonts it references into ``book/_static/jupyter-widgets/``, from where
Sphinx copies them into ``_build/html/_static``. ``make book`` runs it when the files are missing.

Keep ``VERSION`` in step with ``ipywidgets`` in ``requirements.txt`` (8.1.x pairs with 1.0.x).
"""

from __future__ import annotations

import sys
from pathlib import Path

from npm_tarball import tarball_url, verified_tarball

PACKAGE = "@jupyter-widgets/html-manager"
VERSION = "1.0.15"
# `dist.integrity` of the release in the npm registry's metadata.
INTEGRITY = "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA=="
TARGET = Path(__file__).resolve().parents[1] / "book" / "_static" / "jupyter-widgets"
WANTED_SUFFIXES = (".woff", ".woff2")
WANTED_NAMES = ("embed.js", "embed.js.LICENSE.txt")


def main() -> int:
    archive = verified_tarball(PACKAGE, VERSION, INTEGRITY)
    TARGET.mkdir(parents=True, exist_ok=True)
    written = []
    for member in archive.getmembers():
        folder, _, name = member.name.rpartition("/")
        if folder != "package/dist" or not member.isfile():
            continue
        if name in WANTED_NAMES or name.endswith(WANTED_SUFFIXES):
            (TARGET / name).write_bytes(archive.extractfile(member).read())
            written.append(name)
    if "embed.js" not in written:
        raise SystemExit(f"{tarball_url(PACKAGE, VERSION)} has no package/dist/embed.js")
    print(f"{PACKAGE} {VERSION}: {len(written)} files in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
