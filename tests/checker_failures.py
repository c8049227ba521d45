"""The one way the checker tests assert a diagnosis: the checker fails with the expected code,
and explains it in English and, after ``set_language("ko")``, with the same code in Korean."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pe_lib.checks import CheckFailed, get_language, set_language
from pe_lib.checks._core import FIX_LABEL
from pe_lib.checks._messages import particle

HANGUL = re.compile(r"[\uac00-\ud7a3]")
#: Five words of English prose in a row: what a Korean message must not carry over.
ENGLISH_RUN = re.compile(r"\b[a-z]+(?: [a-z]+){4}\b")
#: Words only prose has: a run of three English words holding one is English prose ("the
#: numbers of transformers"), not code.
FUNCTION_WORDS = frozenset(
    "the of a an is are to in for with not and or by from at its it that this".split()
)
WORD_RUN = re.compile(r"\b[A-Za-z']+(?: [A-Za-z']+){2,}\b")
#: A particle written both ways because the writer did not choose: 을(를), 이(가), (으)로 ...
FALLBACK_PARTICLE = re.compile(r"[을를이가은는와과]\([을를이가은는와과]\)|\(으\)로")
#: 배치 is a batch; a layout (interleaved, half) is 레이아웃. 배치 may only name the batch.
LAYOUT_AS_BATCH = re.compile(r"배치(?! (?:차원|축|항목|크기))")
#: A colon chained after a complete (declarative) sentence: "...있다: ...".
SENTENCE_COLON = re.compile(r"다: ")
_PARTICLE = r"(으로|을|를|이|가|은|는|와|과|로)"
#: Code or a number, then a particle that changes with it (then a space, a stop or the end).
CODE_PARTICLE = re.compile(
    r"(?<![\w.])([A-Za-z_][A-Za-z0-9_.=]*|[0-9][A-Za-z0-9_.=]*)" + _PARTICLE + r"(?=[\s.,)]|$)"
)
#: A particle right after a closing bracket or an ellipsis: it must fit what is read before.
AFTER_BRACKET = re.compile(r"(\)|\]|\.\.\.|…)" + _PARTICLE + r"(?=[\s.,)]|$)")
#: Words the book does not use: 일으키다 for raising an exception (a calque of "raise"; an
#: exception 발생하다), 네 for "your" (it reads as "four"), 층 for a layer (the book's 레이어).
UNIDIOMATIC = {
    "일으켰": re.compile("일으[켰키]"),
    "네 (your)": re.compile(r"(?:^|\s)네 (?=[A-Za-z가-힣])"),
    "층 (a layer)": re.compile(r"(?:^|[\s(])층(?=[\s이을은의에과도만,.)]|$)"),
}


def korean_style_problems(text: str) -> list[str]:
    """What a Korean message gets wrong of the book's style: fallback particles, 배치 for a
    layout, a colon after a complete sentence, a particle that does not fit the code, number,
    bracket or ellipsis before it (as :func:`pe_lib.checks._messages.particle` reads it), and
    words the book does not use."""
    problems = [f"fallback particle {m.group()!r}" for m in FALLBACK_PARTICLE.finditer(text)]
    problems += [f"배치 for a layout at {m.start()}" for m in LAYOUT_AS_BATCH.finditer(text)]
    problems += [f"colon after a sentence at {m.start()}" for m in SENTENCE_COLON.finditer(text)]
    for match in CODE_PARTICLE.finditer(text):
        word, written = match.groups()
        if particle(word, written) != word + written:
            problems.append(f"{word + written!r} should be {particle(word, written)!r}")
    for match in AFTER_BRACKET.finditer(text):
        before, written = _read_before(text, match.start(2)), match.group(2)
        if particle(before, written) != before + written:
            shown = before[-20:] + written
            problems.append(
                f"{shown!r} should end {particle(before, written)[-len(written) - 1 :]!r}"
            )
    for name, pattern in UNIDIOMATIC.items():
        problems += [f"{name} at {m.start()}" for m in pattern.finditer(text)]
    return problems


def _read_before(text: str, end: str | int) -> str:
    """What a particle at ``end`` follows: a gloss in brackets, "시드(행)와", "퍼플렉서티(9.0)가",
    "n(캐시된 토큰 수)이" (Korean inside, or right after a Korean word), is skipped, the particle
    fitting the word before it; code or a number in brackets, "slopes(8)이", is read."""
    end = int(end)
    if text[end - 1] in ")]":
        depth, opening = 0, None
        for i in range(end - 1, -1, -1):
            depth += {")": 1, "]": 1, "(": -1, "[": -1}.get(text[i], 0)
            if depth == 0:
                opening = i
                break
        if opening is not None and (
            HANGUL.search(text[opening:end]) or HANGUL.match(text[opening - 1 : opening])
        ):
            return text[:opening]
    return text[:end]


def english_prose(text: str) -> list[str]:
    """Runs of English prose in ``text`` (three words or more, one of them a function word)."""
    runs = (m.group() for m in WORD_RUN.finditer(text))
    return [run for run in runs if FUNCTION_WORDS & set(run.lower().split())]


def assert_korean(korean: CheckFailed, english: CheckFailed) -> None:
    """``korean`` explains the mistake ``english`` names, in Korean: the same code, Hangul
    before and after ``고치는 법:``, no English prose (but what the student's own exception
    said, which both quote)."""
    assert korean.mistake == english.mistake, str(korean)
    label_ko, label_en = FIX_LABEL.template("ko"), FIX_LABEL.template("en")
    what, label, how = str(korean).partition(f" {label_ko} ")
    assert label and HANGUL.search(what) and HANGUL.search(how), str(korean)
    assert label_en not in str(korean), str(korean)
    assert not korean_style_problems(str(korean)), (korean_style_problems(str(korean)), str(korean))
    quoted = str(english.__cause__ or "")
    left = [run for run in ENGLISH_RUN.findall(str(english)) if run not in quoted]
    assert not [run for run in left if run in str(korean)], str(korean)
    prose = [run for run in english_prose(str(korean).replace(quoted, "")) if run not in quoted]
    assert not prose, (prose, str(korean))


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
