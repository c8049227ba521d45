"""The Makefile: the execution cache sees every library file, `make help` lists every command,
the browser test builds the book first."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _database() -> str:
    """``make -p``: the rules after expansion, without running anything."""
    result = subprocess.run(
        ["make", "-pnq", "-C", str(ROOT), "help"], capture_output=True, text=True, check=False
    )
    return result.stdout


def _prerequisites(target: str) -> set[str]:
    match = re.search(rf"^{re.escape(target)}:(.*)$", _database(), re.M)
    assert match, f"no rule for {target}"
    return set(match[1].split())


def test_execution_cache_is_cleared_by_any_library_file_subpackages_included() -> None:
    stamp = re.search(r"^CACHE_STAMP := (\S+)", MAKEFILE, re.M)
    assert stamp
    library = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pe_lib").rglob("*.py")}
    assert any("/" in name.removeprefix("pe_lib/") for name in library), "no subpackage to test"
    missing = library - _prerequisites(stamp[1])
    assert not missing, f"changing these does not clear the execution cache: {sorted(missing)}"


def test_html_test_builds_the_book_first() -> None:
    assert "book" in _prerequisites("html-test")


def test_help_lists_every_documented_command() -> None:
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    documented = re.findall(r"^## ([a-z-]+):", MAKEFILE, re.M)
    listed = re.findall(r"^  ([a-z-]+):", result.stdout, re.M)
    assert listed == documented and {"book", "test", "lint", "help"} <= set(listed)


def test_lint_runs_strict_typing() -> None:
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert lint and "mypy --strict pe_lib" in lint[1]
