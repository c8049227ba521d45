"""tools/compare_outputs.py: the build's executed chapters against the stored ones, as nbval
compares them. Each difference nbval reports is planted here, and each thing nbval forgives."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tools.compare_outputs import differences, main, sanitizers

ROOT = Path(__file__).resolve().parents[2]
RULES = sanitizers(ROOT / "book" / "sanitize.cfg")


def _notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _cell(source: str, outputs: list[dict], tags: list[str] | None = None) -> dict:
    metadata = {"tags": tags} if tags else {}
    return {"cell_type": "code", "source": source, "metadata": metadata, "outputs": outputs}


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def _result(data: dict, count: int = 1) -> dict:
    return {"output_type": "execute_result", "execution_count": count, "data": data, "metadata": {}}


STORED = _notebook(
    {"cell_type": "markdown", "source": "# A chapter", "metadata": {}},
    _cell("print(loss)", [_stream("loss 0.1234\n")]),
    _cell("table", [_result({"text/plain": "tensor([1., 2.])", "image/png": "AAAA"})]),
    _cell("model", [_result({"text/plain": "<Model at 0x7f3a2b1c9d80>"})]),
)


def _executed(change) -> dict:
    notebook = copy.deepcopy(STORED)
    change(notebook["cells"])
    return notebook


def test_the_book_s_sanitizers_are_read() -> None:
    assert [(p.pattern, r) for p, r in RULES] == [("0x[0-9a-f]{6,16}", "0xADDRESS")]


def test_the_same_outputs_agree() -> None:
    assert differences(STORED, copy.deepcopy(STORED), RULES) == []


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda cells: cells[1]["outputs"][0].update(text="loss 0.1235\n"), "stdout"),
        (lambda cells: cells[1]["outputs"].append(_stream("a warning\n", "stderr")), "stderr"),
        (
            lambda cells: cells[2]["outputs"][0]["data"].update({"text/plain": "tensor([1., 3.])"}),
            "text/plain",
        ),
        (lambda cells: cells[2]["outputs"][0]["data"].pop("text/plain"), "text/plain"),
        (
            lambda cells: cells[2]["outputs"][0]["data"].update({"text/html": "<b>1</b>"}),
            "text/html",
        ),
        (lambda cells: cells[1]["outputs"].clear(), "stdout"),
    ],
    ids=["a digit", "a new stream", "a value", "a missing field", "a new field", "no output"],
)
def test_each_difference_nbval_reports_is_reported(change, field: str) -> None:
    found = differences(STORED, _executed(change), RULES, "chapter")
    assert len(found) == 1 and found[0].startswith("chapter, code cell ") and field in found[0], (
        found
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda cells: cells[3]["outputs"][0]["data"].update(
            {"text/plain": "<Model at 0x55d0c0ffee00>"}
        ),
        lambda cells: cells[2]["outputs"][0]["data"].update({"image/png": "BBBB"}),
        lambda cells: cells[2]["outputs"][0].update(execution_count=7),
        lambda cells: cells[1]["outputs"].__setitem__(
            slice(None), [_stream("loss "), _stream("0.1234\n")]
        ),
        lambda cells: cells[1]["outputs"].__setitem__(
            slice(None), [_stream("step 1\rloss 0.1234\n")]
        ),
    ],
    ids=["an address", "an image", "a count", "a stream in two parts", "a line started again"],
)
def test_what_nbval_forgives_is_forgiven(change) -> None:
    assert differences(STORED, _executed(change), RULES) == []


def test_a_cell_tagged_to_ignore_its_output_is_not_compared_and_other_markers_are_refused() -> None:
    def ignore(cells) -> None:
        cells[1]["metadata"]["tags"] = ["nbval-ignore-output"]
        cells[1]["outputs"][0]["text"] = "loss 9\n"

    stored = _executed(lambda cells: cells[1]["metadata"].update(tags=["nbval-ignore-output"]))
    assert differences(stored, _executed(ignore), RULES) == []
    for marked in (
        _executed(lambda cells: cells[1]["metadata"].update(tags=["nbval-check-output"])),
        _executed(lambda cells: cells[1].update(source="# NBVAL_IGNORE_OUTPUT\nprint(loss)")),
    ):
        found = differences(marked, copy.deepcopy(marked), RULES)
        assert len(found) == 1 and "nbval markers" in found[0], found


def test_a_notebook_whose_code_changed_is_not_compared() -> None:
    found = differences(STORED, _executed(lambda cells: cells[1].update(source="print(2)")), RULES)
    assert found == ["notebook: the executed notebook's code is not the stored notebook's"]


def test_the_command_fails_on_a_difference_and_on_a_missing_run(tmp_path, capsys) -> None:
    stored, executed = tmp_path / "01_a.ipynb", tmp_path / "run" / "01_a.ipynb"
    executed.parent.mkdir()
    stored.write_text(json.dumps(STORED), encoding="utf-8")
    executed.write_text(json.dumps(STORED), encoding="utf-8")
    cfg = str(ROOT / "book" / "sanitize.cfg")
    assert main([cfg, str(executed.parent), str(stored)]) == 0
    changed = _executed(lambda cells: cells[1]["outputs"][0].update(text="loss 1\n"))
    executed.write_text(json.dumps(changed), encoding="utf-8")
    assert main([cfg, str(executed.parent), str(stored)]) == 1
    executed.unlink()
    assert main([cfg, str(executed.parent), str(stored)]) == 1
    assert "no executed notebook" in capsys.readouterr().out
