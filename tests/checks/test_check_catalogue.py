"""The checkers' messages live in a gettext catalogue: English in the code, Korean in the .po.

Every text the checkers declare has a translation with the same fields, none is stale, the
catalogue is what ``python -m pe_lib.checks`` writes, no Korean is left in the code,
and every translation reads right in the book's Korean whatever fills its fields.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import string
from pathlib import Path

import pytest
from checker_failures import english_prose, korean_style_problems

import pe_lib.checks
from pe_lib.checks import CheckFailed, _messages, check_kv_cache, check_rope, set_language
from pe_lib.checks._messages import (
    PARTICLES,
    declared,
    fields_of,
    particle,
    read_po,
    translation,
    update,
)
from pe_lib.checks.rope import reference_text
from pe_lib.rope.scaling import ROPE_SCALINGS

HANGUL = re.compile(r"[\uac00-\ud7a3]")
PACKAGE = Path(pe_lib.checks.__file__).parent
CATALOGUE = PACKAGE / "locale" / "ko" / "LC_MESSAGES" / "pe_lib_checks.po"
TEXTS = declared()
KOREAN = translation("ko")
#: Values of every kind a field takes: code, numbers, shapes, a Korean phrase, a drawn case.
VALUES = ("dropout=0.1", "RuntimeError", "x", "10", "3", "float16", "'half'", "모듈", "(2, 3)")
#: The particle forms a Korean template may use as a field's format spec.
FORMS = {form for pair in PARTICLES.values() for form in pair}


def _all_msgids(text: str) -> list[str]:
    """Every msgid of a catalogue, translated or not (the header left out)."""
    marked = re.sub(r'^msgstr "(.*)"$', 'msgstr "x\\1"', text, flags=re.MULTILINE)
    return [msgid for msgid in read_po(marked) if msgid]


def test_the_catalogue_is_inside_the_package() -> None:
    assert CATALOGUE.is_file()


def test_every_declared_text_has_a_translation() -> None:
    missing = [english for english in TEXTS if not KOREAN.get(english, "").strip()]
    shown = "\n".join(f"msgid {english!r}" for english in missing)
    assert not missing, f"run python -m pe_lib.checks and translate:\n{shown}"


def test_no_translation_is_stale() -> None:
    stale = [msgid for msgid in _all_msgids(CATALOGUE.read_text("utf-8")) if msgid not in TEXTS]
    assert not stale, f"no checker declares these any more: {stale}"


def test_the_catalogue_is_what_the_update_writes() -> None:
    """The order and form python -m pe_lib.checks gives it, fuzzy entries none."""
    text = CATALOGUE.read_text("utf-8")
    assert "#, fuzzy" not in text
    assert update("ko") == text, "run python -m pe_lib.checks"


@pytest.mark.parametrize("english", sorted(TEXTS))
def test_a_translation_has_the_fields_of_its_english(english: str) -> None:
    korean = KOREAN[english]
    assert fields_of(korean) == fields_of(english), (english, korean)
    for _, name, spec, _ in string.Formatter().parse(korean):
        if name is not None and spec:
            assert spec in FORMS, f"{{{name}:{spec}}} is not a particle of PARTICLES: {korean}"
    assert HANGUL.search(korean) or not re.sub(r"\{[^{}]*\}", "", korean).strip(), korean


@pytest.mark.parametrize("english", sorted(TEXTS))
def test_a_translation_reads_right_whatever_fills_it(english: str) -> None:
    korean = KOREAN[english]
    names = fields_of(korean)
    for value in VALUES:
        message = _messages.render(korean, **dict.fromkeys(names, value))
        assert not korean_style_problems(message), (korean_style_problems(message), message)
        left = [run for run in english_prose(message) if run not in english_prose(value)]
        assert not left, (left, message)


def test_the_catalogue_reader_reads_what_gettext_writes() -> None:
    text = (
        'msgid ""\nmsgstr ""\n"Language: ko\\n"\n\n'
        '#: a\nmsgid ""\n"two "\n"lines \\"quoted\\""\nmsgstr "두 줄"\n\n'
        '#, fuzzy\nmsgid "old"\nmsgstr "옛것"\n\n'
        'msgid "empty"\nmsgstr ""\n\n'
        '#~ msgid "gone"\n#~ msgstr "없음"\n'
    )
    assert read_po(text) == {'two lines "quoted"': "두 줄"}
    with pytest.raises(ValueError, match="line 2"):
        read_po('msgid "a"\nnot a catalogue line\n')


def _string_constants(tree: ast.Module) -> list[ast.Constant]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


@pytest.mark.parametrize("module", [m.name for m in pkgutil.iter_modules(pe_lib.checks.__path__)])
def test_no_korean_is_left_in_the_code(module: str) -> None:
    """A translator edits the catalogue: the code's strings are English (the particles of the
    Korean grammar in _messages.py aside)."""
    if module == "_messages":
        pytest.skip("the Korean particles and their rule")
    tree = ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))
    korean = [node.value for node in _string_constants(tree) if HANGUL.search(node.value)]
    assert not korean, korean


@pytest.mark.parametrize("module", [m.name for m in pkgutil.iter_modules(pe_lib.checks.__path__)])
def test_every_text_is_declared_where_the_catalogue_can_see_it(module: str) -> None:
    """text(...), Text.declare(...) and .declare(...) at module level only: importing the
    modules declares every text, so the tests above see them all."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))]
    for function in functions:
        if function is not None and getattr(function, "name", "") in {"text", "declare", "_shared"}:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                assert name not in {"text", "declare"}, (module, ast.unparse(node))


def test_a_particle_after_a_postposition_is_refused_where_the_tests_run() -> None:
    """ "프리필(호출 1)에서가": the tests turn the refusal on (conftest.py)."""
    assert _messages.REFUSE_POSTPOSITIONS
    with pytest.raises(ValueError, match="already ends in the postposition '에서'"):
        particle("step(q, k, v, None) 프리필(호출 1)에서", "이")
    assert particle("프리필(호출 1)의 step(q, k, v, None)", "이") == (
        "프리필(호출 1)의 step(q, k, v, None)이"
    )
    assert particle("길이", "가") == "길이가"  # a noun ending in 이 is not refused


def test_a_crashing_step_is_named_without_a_double_particle() -> None:
    def step(q, k, v, cache):
        return cache["k"], cache

    set_language("ko")
    with pytest.raises(CheckFailed) as info:
        check_kv_cache(step)
    message = str(info.value)
    assert "프리필(호출 1)의 step(q, k, v, None)에서 TypeError가 발생했다" in message, message
    assert "에서가" not in message and "일으켰" not in message


@pytest.mark.parametrize("rope_type", sorted(ROPE_SCALINGS))
def test_every_scaling_reference_has_its_korean(rope_type: str) -> None:
    """transformers' function names stay as they are; the sentence around them is Korean."""
    english = ROPE_SCALINGS[rope_type].reference
    set_language("ko")
    korean = reference_text(english)
    assert HANGUL.search(korean) and not english_prose(korean), korean


def test_a_pair_that_is_a_single_tensor_is_not_called_a_tensor_that_is_not_one() -> None:
    """rotate(q, k, offset) returning q alone once read "returned a Tensor ..., not a torch
    tensor" ("torch 텐서가 아니라 Tensor 객체")."""

    def rotate(q, k, offset):
        return q

    for language, contradiction in (("en", "not a torch tensor"), ("ko", "torch 텐서가 아니라")):
        set_language(language)
        with pytest.raises(CheckFailed) as info:
            check_rope(rotate, convention="qk")
        assert info.value.mistake == "wrong_type"
        assert contradiction not in str(info.value), str(info.value)
        assert "(q_rotated, k_rotated)" in str(info.value)
