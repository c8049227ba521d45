"""README's Python examples run as written, and print what their comments say they print."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
PRINT_WITH_EXPECTATION = re.compile(r"^\s*print\(.*\)\s*#\s*(?P<expected>.+?)\s*$")


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2, "README should show pe_lib in use and a checker in use"


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(source: str) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, str(README), "exec"), {"__name__": "readme_example"})
    expected = [m["expected"] for m in map(PRINT_WITH_EXPECTATION.match, source.splitlines()) if m]
    assert printed.getvalue().split("\n")[: len(expected)] == expected
