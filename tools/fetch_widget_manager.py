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

import base64
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "1.0.15"
TARBALL = f"https://registry.npmjs.org/@jupyter-widgets/html-manager/-/html-manager-{VERSION}.tgz"
# `dist.integrity` of the release in the npm registry's metadata.
INTEGRITY = "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA=="
TARGET = Path(__file__).resolve().parents[1] / "book" / "_static" / "jupyter-widgets"
WANTED_SUFFIXES = (".woff", ".woff2")
WANTED_NAMES = ("embed.js", "embed.js.LICENSE.txt")


def verified_tarball(data: bytes) -> tarfile.TarFile:
    algorithm, _, expected = INTEGRITY.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise SystemExit(f"{TARBALL}: {algorithm} digest {actual} does not match {expected}")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def main() -> int:
    with urllib.request.urlopen(TARBALL, timeout=60) as response:
        archive = verified_tarball(response.read())
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
        raise SystemExit(f"{TARBALL} has no package/dist/embed.js")
    print(f"@jupyter-widgets/html-manager {VERSION}: {len(written)} files in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
