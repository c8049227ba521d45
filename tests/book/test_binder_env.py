"""The Binder environment, emulated as far as this machine allows.

repo2docker builds a Python 3.11 image (``binder/runtime.txt``), runs
``pip install -r binder/requirements.txt`` from the repository root and opens the notebooks in
JupyterLab, whose kernel starts in the notebook's folder. This test does the same in a fresh
virtual environment: it installs ``binder/requirements.txt`` (without the PyTorch CPU index, which
this machine cannot reach; torch's pinned version still comes from the machine's package sources),
adds the kernel that Binder's base image provides (ipykernel, nbclient), then executes every
chapter with ``book/`` as the working directory. A chapter that needs a package Binder does not
install, or that finds pe_lib only through this checkout's own virtual environment, fails here.

It takes a minute or two (creating the environment dominates). Run it with ``make binder-test``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.binder

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
UNREACHABLE_INDEX = re.compile(r"^\s*--extra-index-url\s+https://download\.pytorch\.org/")
# What Binder's base image adds to the kernel environment, at the versions of requirements.txt.
KERNEL_PACKAGES = ("ipykernel", "nbclient", "nbformat")

EXECUTE_CHAPTERS = r"""
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

book = Path(sys.argv[1])
for path in sorted(book.glob("[0-9]*.ipynb")):
    notebook = nbformat.read(path, as_version=4)
    # The kernel starts in the notebook's own folder, as in JupyterLab on Binder.
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(book)}}).execute()
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    printed = first.get("outputs", [])
    if printed:
        sys.exit(f"{path.name}: the install cell printed {printed}")
    print(f"executed {path.name}")
"""


def _python_for(runtime: str) -> str | None:
    """An interpreter of the version runtime.txt names ("python-3.11")."""
    version = runtime.removeprefix("python-")
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    return shutil.which(f"python{version}")


def _pin(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.lower().startswith(f"{name.lower()}=="):
            return line.strip()
    raise AssertionError(f"requirements.txt does not pin {name}")


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, (
        f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
        f"{result.stderr[-3000:]}"
    )


def test_chapters_run_in_the_binder_environment() -> None:
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    python = _python_for(runtime)
    if python is None:
        message = f"no interpreter for {runtime} (binder/runtime.txt) on this machine"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    chapters = sorted((ROOT / "book").glob("[0-9]*.ipynb"))
    assert chapters, "no chapters to execute"

    requirements = (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines()
    reachable = [line for line in requirements if not UNREACHABLE_INDEX.match(line)]
    assert len(reachable) == len(requirements) - 1, "expected exactly one PyTorch index line"

    with tempfile.TemporaryDirectory(prefix="binder-env-") as tmp:
        tmp_path = Path(tmp)
        venv = tmp_path / "venv"
        env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["MPLBACKEND"] = "Agg"
        # Copy the notebooks' folder: execution must not touch the checkout's stored outputs.
        book = tmp_path / "book"
        shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build", ".*"))
        reachable_file = tmp_path / "requirements.txt"
        reachable_file.write_text("\n".join(reachable) + "\n", encoding="utf-8")

        _run([python, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        # From the repository root, as repo2docker does: `-e .` resolves to this checkout.
        _run([*pip, "-r", str(reachable_file)], cwd=ROOT, env=env)
        _run([*pip, *map(_pin, KERNEL_PACKAGES)], cwd=ROOT, env=env)

        # pe_lib is this checkout's, imported from the fresh environment.
        probe = "import pe_lib, pathlib; print(pathlib.Path(pe_lib.__file__).resolve().parent)"
        found = subprocess.run(
            [str(venv / "bin" / "python"), "-c", probe],
            cwd=book,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert Path(found) == ROOT / "pe_lib"

        script = tmp_path / "execute_chapters.py"
        script.write_text(EXECUTE_CHAPTERS, encoding="utf-8")
        result = subprocess.run(
            [str(venv / "bin" / "python"), str(script), str(book)],
            cwd=book,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
        executed = re.findall(r"^executed (\S+)$", result.stdout, re.M)
        assert executed == [path.name for path in chapters]
