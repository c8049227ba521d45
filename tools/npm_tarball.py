"""Download a pinned npm package tarball and check it against the registry's integrity digest.

The tools that serve third-party browser files from ``book/_static`` (the widget manager, the
Hangul web font) share this: a release is named by its version and by the ``dist.integrity``
string of the npm registry's metadata, so a changed or corrupted download stops the build.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path


def tarball_url(package: str, version: str) -> str:
    """The registry address of ``package`` at ``version`` (scoped names included)."""
    basename = package.rpartition("/")[2]
    return f"https://registry.npmjs.org/{package}/-/{basename}-{version}.tgz"


def verified_tarball(package: str, version: str, integrity: str) -> tarfile.TarFile:
    """The release as an open tar archive, after its digest matched ``integrity``."""
    url = tarball_url(package, version)
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise SystemExit(f"{url}: {algorithm} digest {actual} does not match {expected}")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:gz")


def extract(
    archive: tarfile.TarFile, release: str, wanted: Mapping[str, str], target: Path
) -> None:
    """Write each file of ``wanted`` (its path in the archive -> its path under ``target``); a
    file the release lacks stops before anything is written, naming it."""
    members = {member.name: member for member in archive.getmembers() if member.isfile()}
    missing = sorted(source for source in wanted if source not in members)
    if missing:
        raise SystemExit(f"{release} has no {', '.join(missing)}")
    for source, name in wanted.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(archive.extractfile(members[source]).read())
