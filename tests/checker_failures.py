"""The one way the checker tests assert a diagnosis: the checker fails with the expected code,
and explains it in English and, after ``set_language("ko")``, with the same code in Korean."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pe_lib.checks import CheckFailed, get_language, set_language
from pe_lib.checks._core import FIX_LABEL

HANGUL = re.compile(r"[\uac00-\ud7a3]")
#: Five words of English prose in a row: what a Korean message must not carry over.
ENGLISH_RUN = re.compile(r"\b[a-z]+(?: [a-z]+){4}\b")


def assert_korean(korean: CheckFailed, english: CheckFailed) -> None:
    """``korean`` explains the mistake ``english`` names, in Korean: the same code, Hangul
    before and after ``고치는 법:``, and no run of the English message's prose (but what the
    student's own exception said, which both quote)."""
    assert korean.mistake == english.mistake, str(korean)
    what, label, how = str(korean).partition(f" {FIX_LABEL['ko']} ")
    assert label and HANGUL.search(what) and HANGUL.search(how), str(korean)
    assert FIX_LABEL["en"] not in str(korean), str(korean)
    quoted = str(english.__cause__ or "")
    left = [run for run in ENGLISH_RUN.findall(str(english)) if run not in quoted]
    assert not [run for run in left if run in str(korean)], str(korean)


def failing_with(checker: Callable[..., object]) -> Callable[..., CheckFailed]:
    """``fails_with(mistake, *args, **kwargs)``: ``checker(*args, **kwargs)`` must fail with
    the declared code ``mistake`` and a message that says how to fix it; run again in Korean,
    it must fail with the same code and say both in Korean (:func:`assert_korean`). Returns
    the (English) failure."""

    def fails_with(mistake: str, *args: object, **kwargs: object) -> CheckFailed:
        assert mistake in checker.mistakes, f"{mistake!r} is not a code of the checker"  # type: ignore[attr-defined]
        assert get_language() == "en", "each test starts in English"
        with pytest.raises(CheckFailed) as info:
            checker(*args, **kwargs)
        assert info.value.mistake == mistake, str(info.value)
        assert "Fix: " in str(info.value), "every message says how to fix the mistake"
        assert not HANGUL.search(str(info.value)), str(info.value)
        set_language("ko")
        try:
            with pytest.raises(CheckFailed) as korean:
                checker(*args, **kwargs)
        finally:
            set_language("en")
        assert_korean(korean.value, info.value)
        return info.value

    return fails_with
