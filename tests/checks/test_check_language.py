"""The checkers' two languages: every mistake explained in English and in Korean, one setting."""

from __future__ import annotations

import re

import pytest
from checker_failures import HANGUL, assert_korean
from test_check_core import CATALOGUES

import pe_lib.checks
from pe_lib.checks import (
    LANGUAGES,
    Catalogue,
    CheckFailed,
    Mistake,
    check_relative_shift,
    get_language,
    set_language,
)
from pe_lib.checks._core import FIX_LABEL, say

MISTAKES = [
    pytest.param(mistake, id=f"{catalogue.checker}-{mistake.code}-{index}")
    for catalogue in CATALOGUES
    for index, mistake in enumerate(catalogue)
]
FIELD = re.compile(r"\{([^{}!:]*)(?:![rsa])?(?::[^{}]*)?\}")


def test_the_languages_are_english_and_korean_and_english_by_default() -> None:
    assert LANGUAGES == ("en", "ko") and set(FIX_LABEL) == set(LANGUAGES)
    assert get_language() == "en"


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_has_both_texts_with_the_same_fields(mistake: Mistake) -> None:
    assert mistake.ko is not None, f"{mistake.code} has no Korean"
    what_ko, how_ko = mistake.ko
    for english, korean in ((mistake.what, what_ko), (mistake.how, how_ko)):
        assert sorted(FIELD.findall(korean)) == sorted(FIELD.findall(english)), mistake
    # Korean prose (a how that is only a field, "{how}", is filled in Korean where it is found)
    for korean in mistake.ko:
        assert HANGUL.search(korean) or FIELD.fullmatch(korean.strip()), korean


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_renders_in_korean_with_its_fields(mistake: Mistake) -> None:
    fields = {name: f"<{name}>" for name in mistake.fields()}
    english = mistake.explain(**fields)
    set_language("ko")
    korean = mistake.fail("", "", **fields)
    assert korean.mistake == mistake.code
    what, label, how = korean.message.partition(f" {FIX_LABEL['ko']} ")
    assert label and how, korean.message
    assert korean.message != english and "Fix:" not in korean.message
    for name, value in fields.items():  # each field lands in the Korean message too
        assert (value in korean.message) == (value in english), name
    assert mistake.texts("en") == (mistake.what, mistake.how)
    assert mistake.texts("ko") == mistake.ko


def test_set_language_switches_every_message_and_back() -> None:
    def wrong_sign(k: int, d_model: int) -> object:
        import pe_lib

        return -pe_lib.relative_shift_matrix(k, d_model)

    messages = {}
    for language in ("ko", "en", "ko"):
        set_language(language)
        assert get_language() == language
        with pytest.raises(CheckFailed) as info:
            check_relative_shift(wrong_sign)
        messages.setdefault(language, info.value)
        assert info.value.mistake == "sign"
        assert str(info.value) == str(messages[language]), "the same message each time"
    assert_korean(messages["ko"], messages["en"])
    assert "고치는 법:" in str(messages["ko"]) and "Fix:" in str(messages["en"])


def test_say_picks_the_current_language() -> None:
    assert say("case", "경우") == "case"
    set_language("ko")
    assert say("case", "경우") == "경우"


def test_the_setting_is_english_again_in_the_next_test_part_one() -> None:
    set_language("ko")  # not reset here: the fixture in conftest.py resets it


def test_the_setting_is_english_again_in_the_next_test_part_two() -> None:
    assert get_language() == "en"


@pytest.mark.parametrize("bad", ["fr", "KO", "korean", "", " en"])
def test_an_unknown_language_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        set_language(bad)
    message = str(info.value)
    assert message.startswith("language must be one of 'en', 'ko'"), message
    assert repr(bad) in message
    assert get_language() == "en"


@pytest.mark.parametrize("bad", [None, 1, b"ko", ("ko",)])
def test_a_language_that_is_not_a_string_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match=r"language must be a string, one of 'en', 'ko', got"):
        set_language(bad)  # type: ignore[arg-type]
    assert get_language() == "en"


def test_a_declaration_needs_korean_with_the_same_fields() -> None:
    catalogue = Catalogue("check_example")
    with pytest.raises(TypeError, match="ko"):
        catalogue.declare("a", "A {x}.", "fix {x}.")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"English fields \['x'\], got \['y'\]"):
        catalogue.declare("a", "A {x}.", "fix {x}.", ko=("가 {y}.", "고쳐라."))
    with pytest.raises(TypeError, match="pair of non-empty strings"):
        catalogue.declare("a", "A.", "fix.", ko=("가.", ""))
    with pytest.raises(ValueError, match="language must be one of"):
        Mistake("a", "A.", "fix.", ("가.", "고쳐라.")).texts("fr")


def test_the_package_exports_the_setting() -> None:
    assert {"set_language", "get_language", "LANGUAGES"} <= set(pe_lib.checks.__all__)


def test_what_the_student_handed_in_is_named_in_the_language_but_argument_errors_stay_english() -> (
    None
):
    from pe_lib.checks import check_sinusoidal_table
    from pe_lib.checks._core import NotAnArray, as_float64

    set_language("ko")
    with pytest.raises(NotAnArray) as info:
        as_float64([1.0])
    assert str(info.value) == "list 객체" and info.value.english == "a list"
    with pytest.raises(TypeError, match=r"got a list; wrap a list with np\.asarray"):
        check_sinusoidal_table([[0.0, 1.0]])
