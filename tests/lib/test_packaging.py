"""pe_lib installs as a package: from a path (a built wheel) and from a git URL."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import pe_lib

ROOT = Path(__file__).resolve().parents[2]


def _pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_version_and_public_names() -> None:
    assert isinstance(pe_lib.__version__, str) and pe_lib.__version__.count(".") == 2
    for name in pe_lib.__all__:
        assert getattr(pe_lib, name) is not None, name


@pytest.mark.integration
def test_wheel_holds_only_pe_lib_with_its_type_marker(tmp_path: Path) -> None:
    result = _pip(
        "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("pe_lib-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.split("/")[0] for n in names if not n.startswith("pe_lib-")}
    assert packages == {"pe_lib"}, packages
    assert "pe_lib/py.typed" in names
    # Every module is shipped, those of subpackages (pe_lib/checks/...) included.
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pe_lib").rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))
    # the checkers' Korean messages, read at run time by set_language("ko")
    assert "pe_lib/checks/locale/ko/LC_MESSAGES/pe_lib_checks.po" in names
    assert f"pe_lib-{pe_lib.__version__}.dist-info/METADATA" in names


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_installs_from_a_git_url(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    target = tmp_path / "site"
    url = f"pe_lib @ git+file://{ROOT}"
    result = _pip(
        "install", "--no-deps", "--no-build-isolation", "-q", "--target", str(target), url
    )
    assert result.returncode == 0, result.stderr
    assert (target / "pe_lib" / "__init__.py").is_file()
    assert (target / "pe_lib" / "py.typed").is_file()


# torch is imported first: its import records stack traces (torch.cuda's queued calls), which read
# the source lines of whatever imports it; that is torch's doing, not pe_lib's.
_COUNT_SOURCE_OPENS = """
import builtins, io, pathlib, sys
import numpy, torch
package = pathlib.Path(sys.argv[1]).resolve()
opened = []
real_open = io.open


def counting_open(file, *args, **kwargs):
    path = pathlib.Path(str(file)) if isinstance(file, (str, pathlib.Path)) else None
    if path is not None and path.suffix == ".py" and package in path.resolve().parents:
        opened.append(path.name)
    return real_open(file, *args, **kwargs)


builtins.open = io.open = counting_open
import pe_lib

at_import = len(opened)
doc = pe_lib.__doc__
print(at_import, len(opened), "    rope/ " in doc)
"""


@pytest.mark.integration
def test_import_opens_no_source_file_and_help_shows_the_tree() -> None:
    """Neither the import nor the docstring (``help(pe_lib)``) reads a source file (the import
    system reads compiled files through io.open_code, which is not counted)."""
    result = subprocess.run(
        [sys.executable, "-c", _COUNT_SOURCE_OPENS, str(ROOT / "pe_lib")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    at_import, after_doc, has_map = result.stdout.split()
    assert at_import == after_doc == "0"
    assert has_map == "True"
