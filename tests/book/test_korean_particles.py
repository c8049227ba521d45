"""Particles in the Korean catalogues: after an equation's number, and after what the checkers'
particle helper reads (names with digits, cos, sin, tan, fractions, powers), the book writes the
particle the reader says.

An equation reference renders as its number, "(11.1)": the catalogue writes "식 {eq}`label`" (a
list after one 식: "식 {eq}`a`과 {eq}`b`") and the particle that number takes as it is read, 일
("식 (11.1)을"), 삼 ("식 (2.3)과"). The numbers are counted here from the chapters' labelled
equations, in order, as the built pages number them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from pe_lib.checks._messages import particle
from tests.book_sources import ROOT

LOCALE = ROOT / "locale" / "ko" / "LC_MESSAGES"
CATALOGUES = sorted((LOCALE / "book").glob("*.po"))
CHECKS = ROOT / "pe_lib" / "checks" / "locale" / "ko" / "LC_MESSAGES" / "pe_lib_checks.po"
#: A particle that changes with the word before it, alone or at the head of a longer one
#: ("(2.3)으로부터", "(1.2)와는").
PARTICLE = (
    r"((?:으로|로|와|과)(?=부터|서|써|는|도|의|만)"
    r"|(?:으로|이라|이나|을|를|이|가|은|는|와|과|로)(?![\uac00-\ud7a3]))"
)
EQ_REF = re.compile(r"\{eq\}`([^`]+)`" + PARTICLE + "?")
#: What may come before an equation reference: 식 (공식, 항등식 ...), or the one before it in a
#: list ("식 (1.2)와 (1.3)", "식 (2.1), (2.2)").
NAMED = re.compile(r"(?:식 |`(?:[와과] |, |이나 |나 ))$")
EQUATION_LABEL = re.compile(r"\$\$\s*\((eq-[\w-]+)\)")


def equation_numbers() -> dict[str, str]:
    """Each labelled equation's number as its page shows it: ``(chapter.n)``."""
    numbers = {}
    for notebook in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb")):
        chapter, count = int(notebook.name[:2]), 0
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                for label in EQUATION_LABEL.findall("".join(cell["source"])):
                    count += 1
                    numbers[label] = f"({chapter}.{count})"
    return numbers


def translations(path: Path) -> list[str]:
    with path.open("rb") as f:
        return [m.string for m in read_po(f, locale="ko") if m.id and isinstance(m.string, str)]


def reference_problems(korean: str, numbers: dict[str, str]) -> list[str]:
    """The equation references of ``korean`` not named 식 or with a particle that does not fit."""
    problems = []
    for ref in EQ_REF.finditer(korean):
        label, written = ref.groups()
        number = numbers.get(label)
        if number is None:
            problems.append(f"{label}: no such labelled equation")
            continue
        if not NAMED.search(korean[: ref.start()]):
            problems.append(f"write 식 before {number} ({label})")
        if written and particle(number, written) != number + written:
            problems.append(f"{number}{written} should be {particle(number, written)} ({label})")
    return problems


def test_the_numbers_are_counted_as_the_pages_number_them() -> None:
    numbers = equation_numbers()
    assert numbers["eq-attention"] == "(1.1)" and numbers["eq-omega-lambda"] == "(2.3)"
    assert numbers["eq-llama4-temperature"] == "(11.1)"


def test_the_reference_check_sees_each_fault() -> None:
    numbers = {"eq-a": "(11.1)", "eq-b": "(2.3)"}
    assert reference_problems("쿼리에 {eq}`eq-a`를 곱한다.", numbers) == [
        "write 식 before (11.1) (eq-a)",
        "(11.1)를 should be (11.1)을 (eq-a)",
    ]
    assert reference_problems("간격도 식 {eq}`eq-b`와 다르다.", numbers) == [
        "(2.3)와 should be (2.3)과 (eq-b)"
    ]
    assert not reference_problems("식 {eq}`eq-b`과 {eq}`eq-a`을 쓴다.", numbers)
    assert not reference_problems("파동 하나(식 {eq}`eq-b`)이다.", numbers)
    assert reference_problems("{eq}`eq-c`", numbers)
    assert reference_problems("식 {eq}`eq-b`로부터 푼다.", numbers) == [
        "(2.3)로 should be (2.3)으로 (eq-b)"
    ]


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.stem)
def test_every_equation_reference_is_named_with_the_particle_its_number_takes(path: Path) -> None:
    numbers = equation_numbers()
    problems = [
        (problem, korean[:80])
        for korean in translations(path)
        for problem in reference_problems(korean, numbers)
    ]
    assert not problems, problems


# The particle helper and the prose read the same way -----------------------------------------

#: What the helper reads otherwise than letter by letter or digit by digit: a name with its number
#: read in English (Gemma 3, DeepSeek-V3, GPT-2, Llama 3.1, Qwen2.5), cos, sin, tan, ViT, a
#: fraction, a power. Code spans, math and roles are read as the prose around them.
READ = re.compile(
    r"(?<![\w.$\\])(?:"
    r"[A-Z][A-Za-z]*(?:-[A-Za-z]+)*[- ]?[0-9]+(?:\.[0-9]+)?"
    r"|cos|sin|tan|ViT"
    r"|[0-9]+/[0-9]+"
    r"|[0-9A-Za-z]+(?:\^|\*\*)(?:[0-9]+|\{[^{}$]*\})"
    r")" + PARTICLE
)


ARTICLE_ROLE = re.compile(r"\{article\}`[^`]*`")


def reading_problems(korean: str) -> list[str]:
    """What ``korean`` reads otherwise than the helper (the article's own words left as they
    are: "왜 sin/cos를 쓰는가")."""
    problems = []
    for found in READ.finditer(ARTICLE_ROLE.sub(" ", korean)):
        written = found.group(1)
        value = found.group()[: -len(written)]
        if particle(value, written) != value + written:
            problems.append(f"{value + written!r} should be {particle(value, written)!r}")
    return problems


def test_the_reading_check_sees_each_fault() -> None:
    assert reading_problems("Gemma 3은 창을 둔다.") == ["'Gemma 3은' should be 'Gemma 3는'"]
    assert reading_problems("cos와 sin") == ["'cos와' should be 'cos과'"]
    assert reading_problems("찍기는 1/16를 맞힌다.") == ["'1/16를' should be '1/16을'"]
    assert reading_problems("10^4가 된다.") == ["'10^4가' should be '10^4이'"]
    assert not reading_problems("DeepSeek-V3는 cos과 sin을 둔다. Llama 3.1과 ViT가 있다.")
    assert not reading_problems("float16으로, slopes 8이")  # read in Korean, not checked here
    assert reading_problems("Llama 3.1와는 다르다.") == ["'Llama 3.1와' should be 'Llama 3.1과'"]


@pytest.mark.parametrize("path", [*CATALOGUES, CHECKS], ids=lambda p: p.stem)
def test_the_prose_reads_names_functions_fractions_and_powers_as_the_helper_does(
    path: Path,
) -> None:
    problems = [
        (problem, korean[:80])
        for korean in translations(path)
        for problem in reading_problems(korean)
    ]
    assert not problems, problems
