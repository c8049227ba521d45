"""tools/student_edition.py: the solution gate, on small notebooks made here."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from student_edition import GateError, strip_solutions


def _notebook(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return new_notebook(cells=list(cells))


def test_everything_between_the_gates_goes_and_the_rest_stays() -> None:
    notebook = _notebook(
        new_markdown_cell("Exercise one.\n\n```{solution-start} ex1\n```\nThe answer is 4."),
        new_code_cell("answer = 2 + 2"),
        new_markdown_cell("```{solution-end}\n```\nExercise two."),
        new_code_cell("kept = True"),
    )
    assert strip_solutions(notebook, "ch.ipynb") == 1
    sources = [cell.source for cell in notebook.cells]
    assert sources == ["Exercise one.", "Exercise two.", "kept = True"]


def test_a_colon_fence_and_a_one_line_end_gate() -> None:
    notebook = _notebook(
        new_markdown_cell(":::{solution-start} ex1\n:::\nsecret\n:::{solution-end}:::\nafter"),
    )
    assert strip_solutions(notebook, "ch.ipynb") == 1
    assert [cell.source for cell in notebook.cells] == ["after"]


def test_a_cell_left_empty_is_dropped() -> None:
    notebook = _notebook(
        new_markdown_cell("```{solution-start} ex1\n```\nall of it\n```{solution-end}\n```"),
        new_markdown_cell("next"),
    )
    strip_solutions(notebook, "ch.ipynb")
    assert [cell.source for cell in notebook.cells] == ["next"]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (["```{solution-end}\n```"], r"ch\.ipynb, cell 0, line 1: solution-end without"),
        (
            ["```{solution-start} a\n```", "```{solution-start} b\n```"],
            r"ch\.ipynb, cell 1, line 1: solution-start inside a solution",
        ),
        (["```{solution-start} a\n```\nno end"], r"ch\.ipynb: a solution-start has no"),
        (
            ["```{solution-start} a\n```\n```{solution-end}\nnever closed"],
            r"ch\.ipynb, cell 0: the solution-end directive is not closed",
        ),
    ],
)
def test_gates_that_do_not_pair_up_name_the_cell(cells: list[str], message: str) -> None:
    notebook = _notebook(*(new_markdown_cell(source) for source in cells))
    with pytest.raises(GateError, match=message):
        strip_solutions(notebook, "ch.ipynb")


def test_gate_error_is_a_value_error() -> None:
    assert issubclass(GateError, ValueError)
