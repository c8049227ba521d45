"""The chapters in the Binder environment, under generic CPU kernels, outputs compared.

repo2docker builds a Python 3.11 image (``binder/runtime.txt``), runs
``pip install -r binder/requirements.txt`` from the repository root and opens the notebooks in
JupyterLab, whose kernel starts in the notebook's folder. This test does the same in a fresh
virtual environment: it installs ``binder/requirements.txt`` (without the PyTorch CPU index, which
this machine cannot reach; torch's pinned version still comes from the machine's package sources)
and ipykernel, the kernel Binder's base image provides, and registers that environment as a
Jupyter kernel. nbval then re-executes every chapter in that kernel, from a copy of ``book/``,
and compares its outputs with the stored ones.

The kernel runs under torch's and numpy's generic CPU kernels (``tools/generic_kernels.py``), so
one run checks two things: a chapter that needs a package Binder does not install, or that finds
pe_lib only through this checkout's own virtual environment, fails; and a stored output that
depends on the SIMD kernels of the machine that executed it fails too, not only on someone
else's CPU. Run it with ``make binder-test``.
"""

from __future__ import annotations

import json
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
KERNEL_NAME = "pe-book-binder"

# Run by the Binder environment's Python under the generic-kernel variables: what its kernels
# inherit. Prints the torch capability and the numpy SIMD extensions still dispatched to.
KERNELS_PROBE = """
import json, numpy, torch
umath = numpy._core._multiarray_umath
active = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
print(json.dumps({"torch": torch.backends.cpu.get_cpu_capability(), "numpy": active}))
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


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, (
        f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout[-5000:]}\n"
        f"{result.stderr[-3000:]}"
    )
    return result.stdout


def _generic_kernels(python: Path, env: dict[str, str]) -> dict[str, str]:
    """tools/generic_kernels.py's variables, as the Binder environment's numpy reads them."""
    printed = _run([str(python), str(ROOT / "tools" / "generic_kernels.py")], ROOT, env)
    return dict(pair.split("=", 1) for pair in printed.split())


def test_chapters_reproduce_their_outputs_in_binder_under_generic_kernels() -> None:
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
        venv_python = venv / "bin" / "python"
        env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
        env["MPLBACKEND"] = "Agg"
        # Copy the notebooks' folder: execution must not touch the checkout's stored outputs.
        book = tmp_path / "book"
        shutil.copytree(ROOT / "book", book, ignore=shutil.ignore_patterns("_build", ".*"))
        reachable_file = tmp_path / "requirements.txt"
        reachable_file.write_text("\n".join(reachable) + "\n", encoding="utf-8")

        _run([python, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
        pip = [str(venv_python), "-m", "pip", "install", "--quiet"]
        # From the repository root, as repo2docker does: `-e .` resolves to this checkout.
        _run([*pip, "-r", str(reachable_file)], cwd=ROOT, env=env)
        _run([*pip, _pin("ipykernel")], cwd=ROOT, env=env)
        # The environment as a kernel that nbval (in this checkout's environment) starts by name.
        jupyter = tmp_path / "jupyter"
        _run(
            [str(venv_python), "-m", "ipykernel", "install", "--prefix", str(jupyter)]
            + ["--name", KERNEL_NAME],
            cwd=tmp_path,
            env=env,
        )
        env["JUPYTER_PATH"] = str(jupyter / "share" / "jupyter")
        env.update(_generic_kernels(venv_python, env))

        # pe_lib is this checkout's, imported from the fresh environment; the variables take
        # effect there (a renamed variable would silently repeat the native kernels' run).
        probe = "import pe_lib, pathlib; print(pathlib.Path(pe_lib.__file__).resolve().parent)"
        assert Path(_run([str(venv_python), "-c", probe], book, env).strip()) == ROOT / "pe_lib"
        kernels = json.loads(_run([str(venv_python), "-c", KERNELS_PROBE], book, env))
        assert kernels == {"torch": "DEFAULT", "numpy": []}, kernels

        # nbval starts each chapter's kernel in the chapter's folder, as JupyterLab on Binder does.
        _run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval"]
            + ["--nbval-kernel-name", KERNEL_NAME]
            + ["--nbval-sanitize-with", str(ROOT / "book" / "sanitize.cfg")]
            + ["--rootdir", str(tmp_path), "-q", *(str(book / c.name) for c in chapters)],
            cwd=tmp_path,
            env=env,
        )
