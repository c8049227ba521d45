"""The one way the checker tests assert a diagnosis: the checker fails with the expected code,
and explains it in English and, after ``set_language("ko")``, with the same code in Korean."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pe_lib.checks import CheckFailed, get_language, set_language
from pe_lib.checks._core import FIX_LABEL, particle

HANGUL = re.compile(r"[\uac00-\ud7a3]")
#: Five words of English prose in a row: what a Korean message must not carry over.
ENGLISH_RUN = re.compile(r"\b[a-z]+(?: [a-z]+){4}\b")
#: A particle written both ways because the writer did not choose: 을(를), 이(가), (으)로 ...
FALLBACK_PARTICLE = re.compile(r"[을를이가은는와과]\([을를이가은는와과]\)|\(으\)로")
#: 배치 is a batch; a layout (interleaved, half) is 레이아웃. 배치 may only name the batch.
LAYOUT_AS_BATCH = re.compile(r"배치(?! (?:차원|축|항목|크기))")
#: A colon chained after a complete (declarative) sentence: "...있다: ...".
SENTENCE_COLON = re.compile(r"다: ")
#: Code or a number, then a particle that changes with it (then a space, a stop or the end).
CODE_PARTICLE = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_.=]*|[0-9][A-Za-z0-9_.=]*)"
    r"(으로|을|를|이|가|은|는|와|과|로)(?=[\s.,)]|$)"
)


def korean_style_problems(text: str) -> list[str]:
    """What a Korean message gets wrong of the book's style: fallback particles, 배치 for a
    layout, a colon after a complete sentence, a particle that does not fit the code or number
    before it (as :func:`pe_lib.checks._core.particle` reads it)."""
    problems = [f"fallback particle {m.group()!r}" for m in FALLBACK_PARTICLE.finditer(text)]
    problems += [f"배치 for a layout at {m.start()}" for m in LAYOUT_AS_BATCH.finditer(text)]
    problems += [f"colon after a sentence at {m.start()}" for m in SENTENCE_COLON.finditer(text)]
    for match in CODE_PARTICLE.finditer(text):
        word, written = match.groups()
        if particle(word, written) != word + written:
            problems.append(f"{word + written!r} should be {particle(word, written)!r}")
    return problems


def assert_korean(korean: CheckFailed, english: CheckFailed) -> None:
    """``korean`` explains the mistake ``english`` names, in Korean: the same code, Hangul
    before and after ``고치는 법:``, and no run of the English message's prose (but what the
    student's own exception said, which both quote)."""
    assert korean.mistake == english.mistake, str(korean)
    what, label, how = str(korean).partition(f" {FIX_LABEL['ko']} ")
    assert label and HANGUL.search(what) and HANGUL.search(how), str(korean)
    assert FIX_LABEL["en"] not in str(korean), str(korean)
    assert not korean_style_problems(str(korean)), (korean_style_problems(str(korean)), str(korean))
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
