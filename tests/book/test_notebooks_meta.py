"""The chapters and the launch environments agree with the one repository URL in _config.yml.

- Colab: every chapter's first code cell installs pe_lib from exactly ``repository.url`` when it is
  missing, is hidden in the HTML (``remove-cell``) and prints nothing where pe_lib is installed.
- Binder: ``binder/`` pins Python 3.11 and the same versions as ``requirements.txt``, with the
  CPU-only torch index.
- Publishing: the GitHub Pages workflow builds with ``make book`` and deploys ``_build/html``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))
REPOSITORY_URL = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"][
    "url"
]

GUARD = re.compile(r'^if importlib\.util\.find_spec\("pe_lib"\) is None:\s*$')
INSTALL = re.compile(r'^(?P<indent>\s+)%pip install --quiet "pe_lib @ git\+(?P<url>[^"]+)"\s*$')
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)==(?P<version>\S+)")


def test_there_are_chapters() -> None:
    assert CHAPTERS, "no chapter notebooks book/NN_*.ipynb"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_cell_installs_pe_lib_for_colab(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells, f"{path.name} has no code cells"
    # The title (markdown) may come first; the install cell must run before any other code.
    cell = code_cells[0]
    assert "remove-cell" in cell.metadata.get("tags", []), (
        f"{path.name}: the install cell must carry the tag remove-cell (hidden in the HTML)"
    )

    lines = cell.source.splitlines()
    assert "import importlib.util" in lines, f"{path.name}: the guard needs importlib.util"
    guard_at = [i for i, line in enumerate(lines) if GUARD.match(line)]
    assert guard_at, f'{path.name}: no `if importlib.util.find_spec("pe_lib") is None:` guard'
    # The guarded block: the indented lines under the guard (after it, the cell may apply the
    # book's figure style, pe_lib.viz.plotting.use_book_figures()).
    body = []
    for line in lines[guard_at[0] + 1 :]:
        if line.strip() and not line[:1].isspace():
            break
        body.append(line)
    installs = [m for m in map(INSTALL.match, body) if m]
    assert installs, f'{path.name}: no indented `%pip install --quiet "pe_lib @ git+URL"` under it'
    assert len(installs) == 1 and all(line.strip() == "" or INSTALL.match(line) for line in body), (
        f"{path.name}: the guarded block should hold the one %pip install line and nothing else"
    )
    assert installs[0]["url"] == REPOSITORY_URL, (
        f"{path.name} installs pe_lib from {installs[0]['url']}, but _config.yml's "
        f"repository.url is {REPOSITORY_URL}: change both together"
    )

    # Silent where pe_lib is installed: the guard is false here, and the stored output is empty.
    assert importlib.util.find_spec("pe_lib") is not None
    assert cell.get("outputs", []) == [], f"{path.name}: the install cell printed {cell.outputs}"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[match["name"].lower().replace("_", "-")] = match["version"]
    return pins


def test_binder_pins_match_requirements() -> None:
    binder = _pins(ROOT / "binder" / "requirements.txt")
    main = _pins(ROOT / "requirements.txt")
    for package in ("torch", "numpy", "matplotlib", "ipywidgets"):
        assert package in binder, f"binder/requirements.txt does not pin {package}"
    differing = {name: (version, main.get(name)) for name, version in binder.items()}
    differing = {name: pair for name, pair in differing.items() if pair[0] != pair[1]}
    assert not differing, f"binder pins differ from requirements.txt (binder, main): {differing}"


def test_binder_uses_cpu_torch_python_311_and_installs_pe_lib() -> None:
    lines = [
        line.strip()
        for line in (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    ]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert "-e ." in lines, "binder/requirements.txt must install pe_lib from the checkout"
    runtime = (ROOT / "binder" / "runtime.txt").read_text(encoding="utf-8").strip()
    assert runtime == "python-3.11"


def test_pages_workflow_publishes_what_make_site_assembles() -> None:
    """GitHub Actions cannot run here: the workflow's structure is what can be checked. It runs
    `make site`, whose folder the editions test checks (tests/book/test_pdf.py), and uploads
    that folder."""
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text("utf-8"))
    steps = [step for job in workflow["jobs"].values() for step in job.get("steps", [])]
    runs = [step.get("run", "").strip() for step in steps]
    uses = {step.get("uses", "").split("@")[0]: step for step in steps}
    assert "make site" in runs, "no `make site` step"
    upload = uses.get("actions/upload-pages-artifact")
    assert upload and upload["with"]["path"] == "_build/site", "upload _build/site as the site"
    assert "actions/deploy-pages" in uses, "no deploy-pages step"


# The text column holds 80 characters of the code font at 1280 px (book/_static/page.css), and
# a phone scrolls a code box sideways: every line a reader sees in a chapter stays within this.
MAX_LINE = 76


def _long_lines(lines: list[str], where: str) -> list[str]:
    return [
        f"{where} line {number} ({len(line)} chars): {line[:60]}..."
        for number, line in enumerate(lines, start=1)
        if len(line) > MAX_LINE
    ]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_and_printed_lines_fit_the_column(path: Path) -> None:
    """Every code-cell line and every printed (stream or text/plain) line <= 76 characters,
    in the cells a reader sees (a ``remove-cell`` cell, such as the Colab install, is not on
    the page; a ``remove-input`` cell shows only its outputs)."""
    notebook = nbformat.read(path, as_version=4)
    long: list[str] = []
    for index, cell in enumerate(notebook.cells):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.cell_type != "code" or "remove-cell" in tags:
            continue
        if "remove-input" not in tags:
            long += _long_lines(cell.source.splitlines(), f"cell {index} code")
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                text = output.text
            elif output.output_type in {"execute_result", "display_data"}:
                if "text/html" in output.data or "image/png" in output.data:
                    continue  # shown as HTML or an image, not as this text
                text = output.data.get("text/plain", "")
            else:
                continue
            if "remove-output" not in tags:
                long += _long_lines(text.splitlines(), f"cell {index} output")
    assert not long, f"{path.name}: {len(long)} lines over {MAX_LINE} characters:\n  " + (
        "\n  ".join(long[:15])
    )
