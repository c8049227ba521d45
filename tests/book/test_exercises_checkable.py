"""Every exercise with a computable answer gives the student something to check against.

An exercise is the text of a ``{exercise}`` directive; its solution is everything between
``{solution-start} <label>`` and ``{solution-end}``. The exercise *has something to check
against*, without opening the solution, when its text does one of these:

- **checker**: it names a checker of :mod:`pe_lib.checks` (``check_...``), which passes correct
  work silently and explains a mistake;
- **reference**: it says ``assert_close`` or ``torch.equal``, comparing the student's result
  with a reference the text names (a ``pe_lib`` function or PyTorch's own);
- **expected value**: it says "should print" followed, in the same sentence, by the values in
  backticks that the student's code should print. Each of those values must occur in the stored
  output of the solution's code cells, which nbval recomputes, so that the number the exercise
  states is one a cell computes and cannot drift from it.

An exercise whose question has no single computable answer says "(open question)" in its text
and keeps a model answer in its solution. Every other exercise must have something to check
against; the test fails on one that has none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

import pe_lib.checks

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))
OPEN_QUESTION = "(open question)"
CHECKERS = sorted(name for name in pe_lib.checks.__all__ if name.startswith("check_"))
REFERENCES = ("assert_close", "torch.equal")
EXERCISE = re.compile(r"```\{exercise\}(.*?)\n```", re.DOTALL)
MARKER = re.compile(r"```\{solution-start\}\s+(\S+)|```\{solution-end\}")
LABEL = re.compile(r":label:\s*(\S+)")
# "should print" and the rest of its clause (up to the full stop, question mark, semicolon or
# closing parenthesis that ends it)
SHOULD_PRINT = re.compile(r"should\s+print(.*?)(?:[.?;](?:\s|$)|\)|$)", re.DOTALL)
CODE = re.compile(r"`([^`]+)`")


@dataclass
class Exercise:
    label: str
    text: str
    outputs: str = ""  # text outputs of the solution's code cells
    expected: list[str] = field(default_factory=list)

    def kinds(self) -> list[str]:
        found = []
        if any(name in self.text for name in CHECKERS):
            found.append("checker")
        if any(word in self.text for word in REFERENCES):
            found.append("reference")
        if self.expected:
            found.append("expected value")
        return found


def _output_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        elif "data" in output and "text/plain" in output["data"]:
            parts.append(output["data"]["text/plain"])
    return "".join(parts)


def exercises(path: Path) -> list[Exercise]:
    notebook = nbformat.read(path, as_version=4)
    found: dict[str, Exercise] = {}
    open_solution: str | None = None
    for cell in notebook.cells:
        source = cell.source
        if cell.cell_type == "markdown":
            for match in EXERCISE.finditer(source):
                label = LABEL.search(match.group(1))
                assert label, f"{path.name}: an exercise without :label:"
                found[label.group(1)] = Exercise(label.group(1), match.group(1))
            # markers in the order they appear: a cell may end one solution and start the next
            for marker in MARKER.finditer(source):
                open_solution = marker.group(1)  # None at a solution-end
        elif open_solution is not None:
            found[open_solution].outputs += _output_text(cell)
    for exercise in found.values():
        for sentence in SHOULD_PRINT.findall(exercise.text):
            exercise.expected += CODE.findall(sentence)
    return list(found.values())


ALL = {path.stem: exercises(path) for path in CHAPTERS}


@pytest.mark.parametrize("stem", sorted(ALL))
def test_expected_values_come_from_the_solution(stem: str) -> None:
    for exercise in ALL[stem]:
        assert not SHOULD_PRINT.search(exercise.text) or exercise.expected, (
            f"{stem} {exercise.label}: 'should print' without a value in backticks"
        )
        for value in exercise.expected:
            assert value in exercise.outputs, (
                f"{stem} {exercise.label}: the exercise says it should print {value!r}, which "
                "no output of its solution's code cells shows"
            )


@pytest.mark.parametrize("stem", sorted(ALL))
def test_every_computable_exercise_has_something_to_check_against(stem: str) -> None:
    missing = [
        exercise.label
        for exercise in ALL[stem]
        if OPEN_QUESTION not in exercise.text and not exercise.kinds()
    ]
    assert not missing, (
        f"{stem}: exercises with a computable answer and nothing to check it against: "
        f"{missing}; name a pe_lib.checks checker, an assert_close against a reference, or "
        "the value it should print (or mark an open question with "
        f"{OPEN_QUESTION!r})"
    )


def test_the_count() -> None:
    """The closing count: exercises, and those with something to check against."""
    lines, total, checkable = [], 0, 0
    for stem, found in ALL.items():
        with_check = [e for e in found if e.kinds()]
        total += len(found)
        checkable += len(with_check)
        lines.append(f"{stem}: {len(with_check)} of {len(found)}")
    print("\n".join(lines), f"\nall chapters: {checkable} of {total}", sep="")
    assert total >= len(CHAPTERS)  # every chapter has an exercise
