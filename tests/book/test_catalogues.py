"""The Korean edition's catalogues (``locale/ko/LC_MESSAGES``), read as files: no build needed.

Every message is translated and none is fuzzy; each translation keeps the markup of its English
(math, code, roles: the shared parts of the page); the glossary's terms are used every time; and
every passage marked as the article's own words (``{article}`...```) is the article's text,
character for character. That the catalogues hold every message the English book has now (none
missing, none stale) needs the book's messages extracted: ``tests/book/test_korean.py`` checks it
after ``make book-ko``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po

from tests.book_sources import ROOT, markdown_of, titles

LOCALE = ROOT / "locale" / "ko" / "LC_MESSAGES"
GLOSSARY = ROOT / "locale" / "ko" / "glossary.tsv"
ARTICLE = ROOT / "locale" / "ko" / "article-ko.txt"
CATALOGUES = sorted((LOCALE / "book").rglob("*.po"))
#: The themes' words the Korean edition translates (tools and domains other than the pages).
THEME_CATALOGUES = {"sphinx": "Color mode", "booktheme": "Live Code"}

ARTICLE_ROLE = re.compile(r"\{article\}`([^`]*)`")
# What a translation must carry over from its English unchanged: roles with their targets,
# inline math, code spans, link targets.
ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)[^$]+?(?<!\\)\$")
CODE = re.compile(r"(?<![`}])`[^`]+`")
LINK_TARGET = re.compile(r"\]\(([^)]+)\)")
LINK_TEXT = re.compile(r"`[^`<]*<")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
# A quotation in the English ("…" or “…”): in a message that quotes the article, these are the
# article's words, which the translation quotes as they are.
QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
# A cross-reference, `{ref}`target`` or `{ref}`link text <target>``.
XREF = re.compile(r"\{(?P<kind>ref|numref)\}`(?:[^`<]*<(?P<t1>[^`>]+)>|(?P<t2>[^`<]+))`")
# A cross-reference to a chapter written bare renders the chapter's title, and a Korean particle
# glued to it reads badly ("RoPE와 ALiBi의 RoPE 모델"): such a link is written `{ref}`7장 <ch-…>``.
GLUED_CHAPTER = re.compile(r"\{ref\}`ch-[^`<]*`(?=[\uac00-\ud7a3])")
# A table in the text that the English names by its chapter ("{ref}`ch-todays-models`'s table",
# chapter 11's table of models): the glossary reads it as "the table in the text" (표). Only the
# chapters whose table is one in the text are listed: a chapter's position table stays a 테이블
# ("the table of {ref}`ch-formula`", and "`pe_lib`'s table", which looks the same once the roles
# and code are left out).
TEXT_TABLE_CHAPTERS = ("ch-todays-models",)
TEXT_TABLE_REF = re.compile(
    rf"\{{ref\}}`(?:[^`<]*<)?(?:{'|'.join(TEXT_TABLE_CHAPTERS)})>?`'s table\b"
)


def page(path: Path) -> str:
    return path.relative_to(LOCALE).with_suffix("").as_posix()


def read(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f, locale="ko")


def messages(path: Path) -> list[Message]:
    return [m for m in read(path) if m.id]


def whitespace(text: str) -> str:
    return " ".join(text.split())


def role_target(role: str) -> str:
    """A role as it must be shared: a cross-reference by its target alone, with or without link
    text (`{ref}`ch-x`` and `{ref}`7장 <ch-x>`` are the same link); another role without its link
    text."""
    ref = XREF.fullmatch(role)
    if ref:
        return f"{{{ref['kind']}}}`{(ref['t1'] or ref['t2']).strip()}`"
    return LINK_TEXT.sub("`<", role)


def shared_parts(text: str, *, quoting: bool = False) -> Counter[str]:
    """The roles, inline math, code spans and link targets of a message.

    ``quoting``: the translation quotes the article, whose plain text stands in for the math and
    code of the English translation of it; only roles and link targets must stay then.
    """
    # A role's target is shared; its link text, when it has one (`text <target>`), is prose.
    roles = [role_target(r) for r in ROLE.findall(text) if not r.startswith("{article}")]
    rest = ROLE.sub(" ", text)
    parts = roles + LINK_TARGET.findall(text)
    if not quoting:
        parts += INLINE_MATH.findall(rest) + CODE.findall(INLINE_MATH.sub(" ", rest))
    return Counter(parts)


def prose(text: str) -> str:
    """The English of a message without what is not prose (roles, math, code)."""
    text = TEXT_TABLE_REF.sub(" table in the text ", text)
    for pattern in (ROLE, INLINE_MATH, CODE):
        text = pattern.sub(" ", text)
    return text


def glossary() -> list[tuple[re.Pattern[str], str]]:
    """(English pattern, Korean term), longest English first."""
    entries = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip() or line.startswith("english\t"):
            continue
        english, korean, source = line.split("\t")
        assert source in {"article", "book"}, line
        entries.append((english, korean))
    entries.sort(key=lambda e: len(e[0]), reverse=True)
    return [(re.compile(rf"\b(?:{e})\b", re.IGNORECASE), k) for e, k in entries]


def article_text() -> str:
    return whitespace(ARTICLE.read_text(encoding="utf-8").replace("**", ""))


def test_every_page_has_a_catalogue_and_the_api_s_holds_its_title_only() -> None:
    from tests.book_sources import GENERATED, toc_documents

    assert {page(p) for p in CATALOGUES} == set(toc_documents())
    for doc in GENERATED:  # generated from docstrings: English, but for its title
        (title,) = [t.text for t in titles(doc) if t.level == 1]
        assert [m.id for m in messages(LOCALE / f"{doc}.po")] == [title]


@pytest.mark.parametrize(("domain", "example"), THEME_CATALOGUES.items())
def test_the_themes_words_are_translated(domain: str, example: str) -> None:
    """The theme's own words the Korean pages show ("Color mode", "Live Code"), from the
    catalogues Sphinx (domain ``sphinx``) and the book's extension (``booktheme``) read."""
    path = LOCALE / f"{domain}.po"
    found = {m.id: m.string for m in messages(path)}
    assert example in found
    assert all(HANGUL.search(korean) for korean in found.values()), found


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_every_message_translated_none_fuzzy(path: Path) -> None:
    untranslated = [m.id for m in messages(path) if not m.string]
    fuzzy = [m.id for m in messages(path) if m.fuzzy]
    assert not untranslated, f"{page(path)}: {len(untranslated)} untranslated: {untranslated[:3]}"
    assert not fuzzy, f"{page(path)}: {len(fuzzy)} fuzzy: {fuzzy[:3]}"


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_translations_keep_math_code_and_roles(path: Path) -> None:
    for m in messages(path):
        if not m.string:
            continue
        quoting = bool(ARTICLE_ROLE.search(m.string))
        english = shared_parts(m.id, quoting=quoting)
        korean = shared_parts(m.string, quoting=quoting)
        missing = english - korean
        assert not missing, f"{page(path)}: {sorted(missing)} lost in {m.string!r}"
        if m.id.startswith("\n"):  # a display-math block is shared as it is
            assert m.string == m.id, f"{page(path)}: display math changed: {m.string!r}"


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_chapter_links_carry_no_glued_particle(path: Path) -> None:
    for m in messages(path):
        glued = GLUED_CHAPTER.findall(m.string or "")
        assert not glued, (
            f"{page(path)}: {glued} renders the chapter's title with a particle glued to it: "
            f"write {{ref}}`N장 <ch-…>` in {m.string!r}"
        )


def test_cross_references_compared_by_target() -> None:
    english = "See {ref}`ch-rope-alibi` and {numref}`fig-x`."
    assert shared_parts(english) == shared_parts("{ref}`7장 <ch-rope-alibi>`과 {numref}`fig-x`")
    assert shared_parts(english) != shared_parts("{ref}`7장 <ch-relative>`과 {numref}`fig-x`")
    assert shared_parts(english) != shared_parts("{ref}`7장 <ch-rope-alibi>`")
    assert GLUED_CHAPTER.search("{ref}`ch-rope-alibi`의 RoPE")
    assert not GLUED_CHAPTER.search("{ref}`7장 <ch-rope-alibi>`의 RoPE")


def missing_terms(english: str, korean: str, terms: list[tuple[re.Pattern[str], str]]) -> list:
    """The glossary's (English pattern, Korean term) pairs a translation should hold and does not."""
    english = prose(english)
    quoted = " ".join(ARTICLE_ROLE.findall(korean))
    if quoted:
        # Where the translation quotes the article, the article's own words stand, whatever
        # terms they use: a message that is the article's words alone is not checked; in one
        # that quotes them, only the English outside its quotations is, and a term the article
        # itself writes in English (Dropout, "Attention Is All You Need") is kept by quoting it.
        if not HANGUL.search(ARTICLE_ROLE.sub("", korean)):
            return []
        english = QUOTED.sub(" ", english)
    missing = []
    for pattern, term in terms:
        if pattern.search(english):
            if term not in korean and not pattern.search(quoted):
                missing.append((pattern.pattern, term))
            english = pattern.sub(" ", english)
    return missing


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_glossary_terms_used(path: Path) -> None:
    terms = glossary()
    for m in messages(path):
        # Display math is shared as it is.
        if not m.string or m.id.startswith("\n"):
            continue
        missing = missing_terms(m.id, m.string, terms)
        assert not missing, f"{page(path)}: {missing} not in {m.string!r}"


def test_glossary_checks_what_a_quoting_message_says_itself() -> None:
    terms = glossary()
    english = 'The article says the sinusoidal table has "no learned parameters".'
    quote = "{article}`학습 파라미터 없음`"
    assert not missing_terms(english, f"글은 사인·코사인 테이블에 {quote}이라고 한다.", terms)
    assert missing_terms(english, f"글은 고정 테이블에 {quote}이라고 한다.", terms)
    assert not missing_terms(english, quote, terms)  # the article's words alone


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_article_quotes_are_verbatim(path: Path) -> None:
    article = article_text()
    for m in messages(path):
        for quote in ARTICLE_ROLE.findall(m.string or ""):
            assert whitespace(quote) in article, f"{page(path)}: not the article's text: {quote!r}"


def blockquotes(doc: str) -> list[str]:
    """The English book's blockquotes on a page (its translations of the article), as messages."""
    quotes = []
    for text in markdown_of(doc):
        for block in re.findall(r"(?:^> ?.*\n?)+", text, re.MULTILINE):
            quotes.append(whitespace(re.sub(r"^> ?", "", block, flags=re.MULTILINE)))
    return quotes


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_blockquotes_are_the_article_s_own_words(path: Path) -> None:
    translated = {whitespace(m.id): m.string for m in messages(path)}
    for quote in blockquotes(page(path)):
        assert quote in translated, f"{page(path)}: blockquote not a message: {quote[:60]!r}"
        korean = translated[quote]
        if not korean:
            continue
        rest = ARTICLE_ROLE.sub("", korean)
        assert ARTICLE_ROLE.search(korean) and not HANGUL.search(rest), (
            f"{page(path)}: a blockquote translates the article: quote it with {{article}}: "
            f"{korean!r}"
        )


def test_a_table_in_the_text_takes_pyo_and_a_position_table_teibeul() -> None:
    terms = glossary()

    def needs(english: str, korean: str) -> set[str]:
        return {term for _, term in missing_terms(english, korean, terms)}

    models = "The cell describes three rows of {ref}`ch-todays-models`'s table."
    assert not needs(models, "아래 셀은 {ref}`11장 <ch-todays-models>`의 표에서 세 행을 설명한다.")
    assert needs(
        models, "아래 셀은 {ref}`11장 <ch-todays-models>`의 테이블에서 세 행을 설명한다."
    ) == {"표"}
    assert needs("The table reads each model's `config.json`.", "테이블은 설정을 읽는다.") == {"표"}
    cheat = 'Chapter 8\'s table "which method when" gives the choice.'
    assert needs(cheat, "8장의 테이블 “언제 어떤 방법을”이 알려 준다.") == {"표"}
    # A position table keeps 테이블, however it is named: by code, or by its rows.
    assert needs("It equals `pe_lib`'s table of the formula.", "`pe_lib`의 표와 같다.") == {
        "테이블"
    }
    assert needs("A table's rows are row vectors.", "표의 행은 행 벡터다.") == {"테이블"}
    assert needs("The table of {ref}`ch-formula`.", "{ref}`2장 <ch-formula>`의 표.") == {"테이블"}
    # A requirement is a 조건, not a 요구.
    assert needs("The flaw (requirement 2).", "결함(요구 2).") == {"조건"}
    assert not needs("The flaw (requirement 2).", "결함(조건 2).")


def test_glossary_is_well_formed() -> None:
    terms = glossary()
    assert len(terms) >= 30
    koreans = [k for _, k in terms]
    assert len(set(koreans)) == len(koreans), "one Korean term per English term"


def test_article_terms_are_the_article_s() -> None:
    article = ARTICLE.read_text(encoding="utf-8")
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[2] == "article":
            assert fields[1] in article, f"{fields[1]!r} is marked as the article's term"


# Quotation marks around the article's words, and one term per idea --------------------------

#: A quotation in the Korean running prose: “…” or ‘…’.
KOREAN_QUOTE = re.compile(r"“[^”]*”|‘[^’]*’")


def unquoted_article_roles(korean: str) -> list[str]:
    """The article's words in ``korean`` that no quotation mark (“…” or ‘…’) encloses, where
    the message is more than the quotation itself (a blockquote or a table cell that holds only
    the article's words is quoted by its place on the page)."""
    if not re.search(r"[\uac00-\ud7a3A-Za-z0-9]", ARTICLE_ROLE.sub("", korean)):
        return []
    spans = [m.span() for m in KOREAN_QUOTE.finditer(korean)]
    return [
        role.group()
        for role in ARTICLE_ROLE.finditer(korean)
        if not any(start < role.start() and role.end() < end for start, end in spans)
    ]


def test_the_quote_check_sees_an_unmarked_quote() -> None:
    assert unquoted_article_roles("글은 {article}`최대 길이 제한`으로 적는다.")
    assert not unquoted_article_roles("글은 “{article}`최대 길이 제한`”으로 적는다.")
    assert not unquoted_article_roles("“$x${article}`는` $y${article}`의 변환이다.`”")
    assert not unquoted_article_roles("{article}`학습 파라미터 없음`")  # a table cell


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_article_quotes_in_running_prose_carry_quotation_marks(path: Path) -> None:
    headings = {whitespace(t.text) for t in titles(page(path))}
    for m in messages(path):
        if not m.string or whitespace(m.id) in headings:  # a heading names the article's section
            continue
        unquoted = unquoted_article_roles(m.string)
        assert not unquoted, f"{page(path)}: put “…” around {unquoted} in {m.string!r}"


#: Words the Korean edition chose against, each with the glossary's term that replaces it: one
#: term per idea (the article's own words, quoted or named as its titles, may differ).
REJECTED = {
    "홀드아웃": "떼어 둔",
    "평가용 텍스트": "떼어 둔",
    "학습에 쓰지 않은 텍스트": "떼어 둔",
    r"(?<![\uac00-\ud7a3])폭(?!넓)": "너비",
    "문맥": "컨텍스트",
    r"찍힌|찍어 보|찍는 수(?!준)|찍는다|찍고": "출력",
    "간직": "저장해 두",
    r"\d\s+%": "a percentage written without a space (90%)",
    # The field's words (the full form 키-값 캐시 once, at first mention: "KV 캐시(키-값 캐시)").
    r"(?<!KV 캐시\()(?<!KV 캐시\*\()키-값 캐시": "KV 캐시",
    "슬라이딩 창": "슬라이딩 윈도우",
    "전체 패스": "전체 순전파",
    "진짜 토큰|첫 실제 토큰": "패딩이 아닌 첫 토큰",
    "내보[내낸낼]": "축출하다 (evicting)",
    "한 줄 너머": "직선 너머 (a line of text is not meant)",
    "유계": "값의 범위가 정해져 있다 (real analysis's word, not this book's readers')",
    "열 한 쌍": "두 열을 한 쌍으로 (열 한 reads as eleven)",
}


def rejected_words(korean: str, article: str) -> list[str]:
    """The rejected words of :data:`REJECTED` in ``korean``, outside the article's words."""
    text = ARTICLE_ROLE.sub(" ", korean)
    for emphasised in re.findall(r"\*([^*]+)\*", text):  # a title of the article's, named
        if whitespace(emphasised) in article:
            text = text.replace(emphasised, " ")
    return [
        f"{found.group()!r} ({term})"
        for word, term in REJECTED.items()
        for found in re.finditer(word, text)
    ]


def test_the_rejected_words_are_seen() -> None:
    article = article_text()
    assert rejected_words("홀드아웃 퍼플렉서티", article)
    assert rejected_words("학생의 테이블은 폭이 384이고", article)
    assert not rejected_words("진폭이 커지고 폭넓게 쓰인다", article)
    assert rejected_words("위에 찍힌 대로", article) and not rejected_words(
        "무작위로 찍는 수준", article
    )
    assert rejected_words("90 %를", article) and not rejected_words("90%를", article)
    assert rejected_words("키-값 캐시에 기억한다", article)
    assert not rejected_words("*KV 캐시*(키-값 캐시)에 기억한다", article)
    assert rejected_words("로짓을 전체 패스와 비교하면", article)
    assert rejected_words("나머지는 내보낸다", article)
    assert rejected_words("코드가 유계가 아니다", article)
    assert rejected_words("열 한 쌍을 두고", article) and not rejected_words(
        "두 열을 한 쌍으로", article
    )
    title = "*Transformer Encoder: 문맥을 이해하는 핵심 블록*"
    assert whitespace(title.strip("*")) in article and not rejected_words(title, article)


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_one_korean_term_per_idea(path: Path) -> None:
    article = article_text()
    for m in messages(path):
        found = rejected_words(m.string or "", article)
        assert not found, f"{page(path)}: {found} in {m.string!r}"


#: 증명 is a proof (a theorem's, or a derivation's); a check by experiment or by a test is 검증.
PROOF = re.compile(r"\b(?:prov(?:e|es|ed|en|ing)|proofs?|theorems?)\b", re.IGNORECASE)
#: What a test or a cell does is a check, whatever verb the English gives it.
CHECKED_PROOF = re.compile(r"\b(?:tests?|cells?|checks?)\s+prov(?:e|es|ed)\b", re.IGNORECASE)


def proof_problems(english: str, korean: str) -> list[str]:
    """Why ``korean``'s 증명 is not a proof: the English speaks of none, or of a test's check."""
    if "증명" not in korean:
        return []
    english = prose(english)
    if not PROOF.search(english):
        return ["증명 where the English names no proof: 검증 for a check"]
    if CHECKED_PROOF.search(english) and not PROOF.search(CHECKED_PROOF.sub(" ", english)):
        return ["증명 for what a test checks: 검증"]
    return []


def test_the_proof_check_sees_a_check_called_a_proof() -> None:
    assert proof_problems("Checked for every shift up to 100.", "모든 이동에 대해 증명한다.")
    assert proof_problems("(the tests prove them disjoint)", "(테스트가 겹치지 않음을 증명한다)")
    assert not proof_problems(
        "(the tests prove them disjoint)", "(테스트가 겹치지 않음을 검증한다)"
    )
    theorem = "They prove (section 5, theorem 1) that the first layer recovers positions."
    assert not proof_problems(theorem, "첫 레이어가 위치를 복원할 수 있음을 증명한다(5절, 정리 1).")


@pytest.mark.parametrize("path", CATALOGUES, ids=page)
def test_a_proof_is_zeungmyeong_and_a_check_geomjeung(path: Path) -> None:
    for m in messages(path):
        found = proof_problems(m.id, m.string or "")
        assert not found, f"{page(path)}: {found} in {m.string!r}"
