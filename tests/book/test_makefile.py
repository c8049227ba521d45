"""The Makefile, by what make would run (dry runs, ``make -n``), not by its text: the execution
cache sees every library file, ``make help`` lists commands that exist, the browser test builds
the book first, lint types strictly, and the set-up installs torch's CPU build on Linux."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _make(*args: str) -> str:
    """``make -C ROOT args``' standard output; it must succeed."""
    result = subprocess.run(["make", "-C", str(ROOT), *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _variable(name: str) -> str:
    """The value make gives a variable of the Makefile."""
    return _make("-s", "--eval", f"print-variable: ; @echo $({name})", "print-variable").strip()


def _dry_run(*targets: str, newer: str | None = None) -> list[str]:
    """The commands ``make -n`` would run (``-W newer``: as if ``newer`` had just changed)."""
    flags = ["-n", "-s", "--no-print-directory"] + (["-W", newer] if newer else [])
    return _make(*flags, *targets).splitlines()


def test_any_library_file_clears_the_execution_cache_subpackages_included(tmp_path) -> None:
    """With a fresh cache stamp, make plans to clear the cache exactly when a library file (or
    the pins) changed."""
    stamp = tmp_path / "built-with-current-pe_lib"
    stamp.touch()
    override = f"CACHE_STAMP={stamp}"

    def clears(changed: str | None) -> bool:
        return any("rm -rf" in c for c in _dry_run(override, str(stamp), newer=changed))

    library = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pe_lib").rglob("*.py"))
    assert any("/" in name.removeprefix("pe_lib/") for name in library), "no subpackage to test"
    stale = [name for name in library + ["requirements.txt"] if not clears(name)]
    assert not stale, f"changing these does not clear the execution cache: {stale}"
    assert not clears(None) and not clears("README.md")


def test_help_lists_commands_that_make_knows() -> None:
    listed = re.findall(r"^  ([a-z-]+):", _make("-s", "help"), re.M)
    assert {"book", "test", "lint", "help"} <= set(listed)
    for command in listed:
        _dry_run(command)  # fails if make has no rule for it


def test_html_test_builds_a_changed_book_first_then_the_korean_edition() -> None:
    commands = _dry_run("html-test", newer="book/intro.md")
    builds = [i for i, c in enumerate(commands) if "jupyter-book build" in c]
    browser = next(i for i, c in enumerate(commands) if "pytest" in c and "-m html" in c)
    assert len(builds) == 2 and builds[-1] < browser
    assert "--config _build/ko/_config.yml" in commands[builds[1]]


def test_a_changed_catalogue_rebuilds_only_the_korean_edition() -> None:
    catalogue = next((ROOT / "locale" / "ko").rglob("*.po")).relative_to(ROOT).as_posix()
    everything = [c for c in _dry_run("book", newer=catalogue) if "jupyter-book build" in c]
    if len(everything) == 2:  # no book built yet: both are planned anyway
        pytest.skip("the English book is not current here")
    assert len(everything) == 1 and "--config _build/ko/_config.yml" in everything[0]


def test_lint_runs_ruff_and_strict_typing() -> None:
    commands = "\n".join(_dry_run("lint"))
    assert "mypy --strict pe_lib" in commands and "ruff check" in commands


def test_setup_installs_the_pinned_torch_cpu_build_first_on_linux() -> None:
    """On Linux, the pin from requirements.txt is installed from PyTorch's CPU index (with a
    short timeout, so an unreachable index cannot stall the set-up), then the requirements."""
    commands = _dry_run(_variable("STAMP"), newer="requirements.txt")
    requirements = next(i for i, c in enumerate(commands) if "-r requirements.txt" in c)
    pin = re.search(r"^torch==\S+", (ROOT / "requirements.txt").read_text(), re.M)
    assert pin
    torch_first = [i for i, c in enumerate(commands) if pin[0] in c and "pip install" in c]
    if platform.system() != "Linux":
        assert not torch_first
        return
    assert torch_first and torch_first[0] < requirements
    command = commands[torch_first[0]]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in command
    assert "--timeout" in command and "--retries" in command


def test_a_dry_run_of_a_test_stage_records_no_time() -> None:
    """``make test`` keeps each stage's time in _build/test-times.txt; the unit tests dry-run
    every command (``make -n``, which still runs the lines that call make), and a dry run must not
    add a time there."""
    times = ROOT / "_build" / "test-times.txt"
    before = times.read_bytes() if times.exists() else None
    commands = _dry_run("stage-lint")
    assert any("ruff check" in c for c in commands)
    assert (times.read_bytes() if times.exists() else None) == before


def test_make_test_checks_what_make_check_does_on_the_build_s_own_execution() -> None:
    """Every part of ``make check`` is a stage of ``make test`` but nbval, whose comparison
    ``make outputs`` makes on the chapters as the build executed them (the same sanitizers), after
    the build; nbval still re-executes every chapter there, in the Binder stage."""
    stages = _variable("TEST_STAGES").split()
    parts = _variable("CHECK_PARTS").split()
    assert set(parts) - {"nbval"} <= set(stages) and {"book", "outputs", "binder-test"} <= set(
        stages
    )
    sanitize = re.search(r"--nbval-sanitize-with (\S+)", "\n".join(_dry_run("nbval")))
    assert sanitize
    compare = next(c for c in _dry_run("outputs") if "compare_outputs.py" in c)
    assert f"compare_outputs.py {sanitize[1]} _build/jupyter_execute/book" in compare
    assert all(chapter in compare for chapter in _variable("CHAPTERS").split())


def test_make_test_runs_every_browser_test_in_its_two_parts() -> None:
    """``make test`` runs ``make html-test`` as two stages, which together select what it selects
    (the html tests with the korean_browser marker, and those without), beside the Korean one."""
    stages = _variable("TEST_STAGES").split()
    assert {"html-test-shared", "html-test-rest", "korean-html-test"} <= set(stages)
    assert "html-test" not in stages
    whole = next(c for c in _dry_run("html-test") if "pytest" in c)
    shared = next(c for c in _dry_run("html-test-shared") if "pytest" in c)
    rest = next(c for c in _dry_run("html-test-rest") if "pytest" in c)
    assert whole.endswith("-m html")
    assert shared.endswith('-m "html and korean_browser"')
    assert rest.endswith('-m "html and not korean_browser"')
