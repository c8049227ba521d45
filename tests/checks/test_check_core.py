"""The shared core of the checkers: the failure type, declared mistakes, safe calls."""

from __future__ import annotations

import copy
import importlib
import pickle
import pkgutil

import numpy as np
import pytest
import torch

import pe_lib.checks
from pe_lib.checks import Catalogue, CheckFailed, Mistake
from pe_lib.checks._core import NotAnArray, as_float64, call_student

#: The checker modules of the package and their catalogues, found by walking it: a new
#: checker is covered here without editing this file.
CHECKER_MODULES = [
    importlib.import_module(f"pe_lib.checks.{info.name}")
    for info in pkgutil.iter_modules(pe_lib.checks.__path__)
    if not info.name.startswith("_")
]
CATALOGUES = [
    value
    for checker in CHECKER_MODULES
    for value in vars(checker).values()
    if isinstance(value, Catalogue)
]


def test_check_failed_is_an_assertion_error_with_a_mistake() -> None:
    error = CheckFailed("layout", "sin | cos is concatenated")
    assert isinstance(error, AssertionError)
    assert (error.mistake, str(error), error.message) == (
        "layout",
        "sin | cos is concatenated",
        "sin | cos is concatenated",
    )
    for copied in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert (copied.mistake, str(copied)) == ("layout", "sin | cos is concatenated")


def test_a_mistake_says_what_is_wrong_then_how_to_fix_it() -> None:
    mistake = Mistake(
        "base", "The table uses base {used}.", "use base {base}.", ko=("{used}.", "{base}.")
    )
    assert mistake.fields() == {"used", "base"}
    error = mistake.fail("For a table: ", "Evidence.", used=100, base=10000)
    assert (error.mistake, str(error)) == (
        "base",
        "For a table: The table uses base 100. Evidence. Fix: use base 10000.",
    )
    assert mistake.note(used=1, base=2).message == "The table uses base 1. Fix: use base 2."
    with pytest.raises(ValueError, match="identifier"):
        Mistake("not a code", "", "")


def test_a_catalogue_lists_each_code_once_in_declaration_order() -> None:
    catalogue = Catalogue("check_example")
    first = catalogue.declare("a", "A.", "fix a.", ko=("가.", "가를 고쳐라."))
    catalogue.declare("b", "B.", "fix b.", ko=("나.", "나를 고쳐라."))
    catalogue.declare("a", "A again.", "fix a.", ko=("다시 가.", "가를 고쳐라."))
    assert catalogue.codes == ("a", "b")
    assert list(catalogue)[0] is first and "b" in catalogue and "c" not in catalogue


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda c: c.checker)
def test_every_declared_mistake_formats_and_says_how_to_fix(catalogue: Catalogue) -> None:
    for mistake in catalogue:
        message = mistake.explain(**{name: "<x>" for name in mistake.fields()})
        assert " Fix: " in message and mistake.how.strip(), mistake


def test_every_checker_reads_its_mistakes_one_way() -> None:
    """Each public checker carries its codes as ``.mistakes``: those of one catalogue its
    module declares; every declared catalogue belongs to one public checker, none is empty."""
    checkers = [getattr(pe_lib.checks, n) for n in pe_lib.checks.__all__ if n.startswith("check_")]
    assert checkers
    by_checker = {c.checker: c.codes for c in CATALOGUES}
    assert CATALOGUES and sorted(by_checker) == sorted(c.__name__ for c in checkers)
    for checker in checkers:
        assert checker.mistakes == by_checker[checker.__name__], checker
    assert all(c.codes for c in CATALOGUES)


def test_attach_makes_a_catalogue_the_mistakes_of_a_new_checker() -> None:
    catalogue = Catalogue("check_example")
    wrong = catalogue.declare("wrong", "It is wrong.", "make it right.", ko=("틀렸다.", "고쳐라."))

    @catalogue.attach
    def check_example(value: int) -> None:
        if value != 1:
            raise wrong.fail()

    check_example(1)
    assert check_example.mistakes == ("wrong",)
    with pytest.raises(CheckFailed) as info:
        check_example(2)
    assert info.value.mistake == "wrong"


def test_call_student_names_the_call_and_chains_the_error() -> None:
    mistake = Mistake(
        "exception",
        "{call} raised {error_type}: {error}.",
        "fix it.",
        ko=("{call}에서 {error_type:이} 발생했다: {error}.", "고쳐라."),
    )

    def broken(k: int) -> None:
        raise KeyError(k)

    with pytest.raises(CheckFailed) as info:
        call_student(mistake, "build(3)", broken, 3)
    assert str(info.value) == "build(3) raised KeyError: 3. Fix: fix it."
    assert isinstance(info.value.__cause__, KeyError)
    assert call_student(mistake, "abs(-2)", abs, -2) == 2


def test_as_float64_copies_and_reports_what_it_cannot_read() -> None:
    array = np.ones((2, 2), dtype=np.float16)
    values, name, eps = as_float64(array)
    assert (
        values.dtype == torch.float64
        and name == "float16"
        and eps == float(np.finfo(np.float16).eps)
    )
    values[0, 0] = 5.0
    assert array[0, 0] == 1.0
    tensor = torch.ones(2, requires_grad=True)
    assert as_float64(tensor)[0].requires_grad is False
    assert as_float64(np.arange(3), integers=True)[1] == "int64"
    for bad, words in [
        (np.arange(3), "int64"),
        ([1.0], "list"),
        (torch.ones(1, dtype=torch.bool), "bool"),
        (torch.empty(2, 3, device="meta"), "float32 tensor on the meta device"),
    ]:
        with pytest.raises(NotAnArray, match=words):
            as_float64(bad)
