"""Fetch axe-core, the accessibility engine the browser test runs on every built page.

axe-core (MPL-2.0, Deque Systems) is not kept in this repository: this script downloads the
pinned release from the npm registry, checks it against the registry's sha512 digest
(``dist.integrity``), and writes its browser bundle ``axe.min.js`` and licence into
``tests/book/axe-core/``. The test (``tests/book/html/test_accessibility.py``, ``test_no_serious_accessibility
_violation``) injects the bundle into each page and calls ``axe.run``, its documented API.
``make html-test`` runs this script when the file is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from npm_tarball import extract, verified_tarball

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "book" / "axe-core"

#: The release and the ``dist.integrity`` digest of its tarball in the npm registry.
AXE_CORE = (
    "4.14.1",
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
)


def main() -> int:
    version, integrity = AXE_CORE
    archive = verified_tarball("axe-core", version, integrity)
    wanted = {"package/axe.min.js": "axe.min.js", "package/LICENSE": "LICENSE"}
    extract(archive, f"axe-core {version}", wanted, TARGET)
    print(f"axe-core {version}: {TARGET / 'axe.min.js'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
