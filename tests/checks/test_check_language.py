"""The checkers' two languages: every mistake explained in English and in Korean, one setting."""

from __future__ import annotations

import re

import pytest
from checker_failures import HANGUL, assert_korean, korean_style_problems
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
from pe_lib.checks._core import FIX_LABEL, text
from pe_lib.checks._messages import particle

MISTAKES = [
    pytest.param(mistake, id=f"{catalogue.checker}-{mistake.code}-{index}")
    for catalogue in CATALOGUES
    for index, mistake in enumerate(catalogue)
]
FIELD = re.compile(r"\{([^{}!:]*)(?:![rsa])?(?::[^{}]*)?\}")


def test_the_languages_are_english_and_korean_and_english_by_default() -> None:
    assert LANGUAGES == ("en", "ko")
    assert (FIX_LABEL.template("en"), FIX_LABEL.template("ko")) == ("Fix:", "고치는 법:")
    assert get_language() == "en"


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_has_both_texts_with_the_same_fields(mistake: Mistake) -> None:
    what_ko, how_ko = mistake.texts("ko")
    assert (what_ko, how_ko) != (mistake.what, mistake.how), f"{mistake.code} has no Korean"
    for english, korean in ((mistake.what, what_ko), (mistake.how, how_ko)):
        assert sorted(FIELD.findall(korean)) == sorted(FIELD.findall(english)), mistake
    # Korean prose (a how that is only a field, "{how}", is filled in Korean where it is found)
    for korean in (what_ko, how_ko):
        assert HANGUL.search(korean) or FIELD.fullmatch(korean.strip()), korean


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_renders_in_korean_with_its_fields(mistake: Mistake) -> None:
    fields = {name: f"<{name}>" for name in mistake.fields()}
    english = mistake.explain(**fields)
    set_language("ko")
    korean = mistake.fail("", "", **fields)
    assert korean.mistake == mistake.code
    what, label, how = korean.message.partition(f" {FIX_LABEL.template('ko')} ")
    assert label and how, korean.message
    assert korean.message != english and "Fix:" not in korean.message
    for name, value in fields.items():  # each field lands in the Korean message too
        assert (value in korean.message) == (value in english), name
    assert mistake.texts("en") == (mistake.what, mistake.how)


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


def test_a_text_is_written_in_the_current_language() -> None:
    fix = text("Fix:")  # declared by the core: translated in the catalogue
    assert str(fix) == "Fix:"
    set_language("ko")
    assert str(fix) == "고치는 법:"


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


def test_a_korean_pair_given_with_a_declaration_needs_the_same_fields() -> None:
    """A checker outside the package may give its Korean with the declaration."""
    catalogue = Catalogue("check_example")
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


# The Korean of the messages ------------------------------------------------------------------

#: A substituted value followed by a particle that changes with it, written without a particle
#: spec (``{call}이`` instead of ``{call:이}``): right for some values, wrong for others.
_PARTICLE = "(?:으로|이라|이나|을|를|이|가|은|는|와|과|로)"
BARE_PARTICLE = re.compile(
    r"\{[^{}:]*(?::(?!" + _PARTICLE + r"\})[^{}]*)?\}" + _PARTICLE + r"(?![\uac00-\ud7a3])"
)


@pytest.mark.parametrize(
    ("value", "form", "expected"),
    [
        ("dropout=0.1", "를", "dropout=0.1을"),  # 영 점 일: ㄹ
        ("RuntimeError", "으로", "RuntimeError로"),  # 에러
        ("ValueError", "이", "ValueError가"),
        ("x", "을", "x를"),  # 엑스
        ("L", "이", "L이"),  # 엘
        ("r", "으로", "r로"),  # 알: ㄹ takes 로
        ("10", "를", "10을"),  # 십
        ("1000", "가", "1000이"),  # 천
        ("2", "을", "2를"),  # 이
        ("3", "로", "3으로"),  # 삼
        ("7", "으로", "7로"),  # 칠: ㄹ
        ("0.5", "이", "0.5가"),  # 영 점 오
        ("float16", "로", "float16으로"),  # 육
        ("bfloat16", "와", "bfloat16과"),
        ("float32", "을", "float32를"),  # 이
        ("(2, 3)", "을", "(2, 3)을"),  # 삼, the bracket not read
        ("'half'", "을", "'half'를"),  # 하프
        ("'interleaved'", "은", "'interleaved'는"),
        ("모듈", "으로", "모듈로"),  # ㄹ
        ("텐서", "을", "텐서를"),
        ("테이블", "과", "테이블과"),
        ("offset", "는", "offset은"),  # 오프셋
        ("step", "가", "step이"),  # 스텝
        ("layout", "를", "layout을"),  # 레이아웃
        ("float", "이", "float가"),  # 플로트
        ("table", "가", "table이"),  # 테이블
        ("token", "를", "token을"),  # 토큰
        ("shape", "가", "shape이"),  # as the article writes it
        ("RoPE", "은", "RoPE는"),  # 로프
        ("NaN", "가", "NaN이"),  # 난
        ("self.pe", "를", "self.pe를"),  # 피이
        ("DropoutNeverBuilt.__init__", "는", "DropoutNeverBuilt.__init__은"),  # 이닛
        ("θ", "을", "θ를"),  # 세타
        # as a Korean reader says them, and the book's prose with them
        ("cos", "와", "cos과"),  # 코사인
        ("cos", "가", "cos이"),
        ("sin", "를", "sin을"),  # 사인
        ("tan", "이", "tan가"),  # 탄젠트
        ("1/2", "가", "1/2이"),  # 이분의 일
        ("3/4", "를", "3/4을"),  # 사분의 삼
        ("2/3", "을", "2/3를"),  # 삼분의 이
        ("1/16", "를", "1/16을"),  # 십육분의 일
        ("a^2", "가", "a^2이"),  # a 제곱
        ("10^4", "를", "10^4을"),  # 10의 4승
        ("2**16", "가", "2**16이"),  # 2의 16승
        ("ViT", "이", "ViT가"),  # 비트
        ("Gemma 3", "이", "Gemma 3가"),  # 쓰리
        ("DeepSeek-V3", "은", "DeepSeek-V3는"),  # 브이쓰리
        ("Llama 3.1", "와", "Llama 3.1과"),  # 쓰리 포인트 원
        ("GPT-2", "이", "GPT-2가"),  # 투
        ("Qwen2.5", "을", "Qwen2.5를"),  # 파이브
        ("Llama 4", "으로", "Llama 4로"),  # 포
        ("Phi-3", "은", "Phi-3는"),
        ("Gemma 7", "가", "Gemma 7이"),  # 세븐
        ("T5", "이", "T5가"),  # 파이브
        ("float16", "로", "float16으로"),  # a dtype: 육 (a lowercase word is not a name)
        ("slopes 8", "가", "slopes 8이"),  # 팔
    ],
)
def test_a_particle_fits_the_last_sound_of_what_it_follows(
    value: str, form: str, expected: str
) -> None:
    assert particle(value, form) == expected
    other = {"을": "를", "를": "을", "이": "가", "가": "이", "은": "는", "는": "은"}.get(form)
    if other:  # either form of the pair names it
        assert particle(value, other) == expected


def test_a_bare_particle_after_a_field_is_seen() -> None:
    assert BARE_PARTICLE.search("{call}이 실패했다")
    assert BARE_PARTICLE.search("{value:.1f}로 높다")
    assert not BARE_PARTICLE.search("{call:이} 실패했다")
    assert not BARE_PARTICLE.search("{value}이다")


def test_an_unknown_particle_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"form must be one of .* got '의'"):
        particle("x", "의")


@pytest.mark.parametrize("mistake", MISTAKES)
def test_korean_templates_choose_their_particles_and_keep_the_books_words(
    mistake: Mistake,
) -> None:
    for korean in mistake.texts("ko"):
        assert not BARE_PARTICLE.search(korean), korean
        assert not korean_style_problems(korean), (korean_style_problems(korean), korean)
        for clash, word in (("평범한 RoPE", "기본 RoPE"), ("기대값", "정답값"), ("간직", "저장")):
            assert clash not in korean, f"{clash} is {word} in the book: {korean}"
        assert "모양" not in korean, f"the book keeps 'shape': {korean}"


VALUES = ("dropout=0.1", "RuntimeError", "x", "10", "3", "float16", "'half'", "모듈", "(2, 3)")


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_korean_message_reads_right_whatever_is_filled_in(mistake: Mistake) -> None:
    set_language("ko")
    for value in VALUES:
        message = mistake.explain(**dict.fromkeys(mistake.fields(), value))
        assert not korean_style_problems(message), (korean_style_problems(message), message)


def test_the_style_check_sees_each_fault() -> None:
    assert korean_style_problems("dropout=0.1를 넘겨라.") == [
        "'dropout=0.1를' should be 'dropout=0.1을'"
    ]
    assert korean_style_problems("RuntimeError으로 실패했다.")
    assert korean_style_problems("{call}이(가) 값을(를) 반환했다.")
    assert korean_style_problems("'절반' 배치의 회전이다.")
    assert not korean_style_problems("앞에 크기 1인 배치 차원이 있어도 된다.")
    assert korean_style_problems("짝수 열에 코사인이 있다: sin과 cos이 뒤바뀌었다.")
    assert not korean_style_problems("짝수 열에 코사인이 있다. 즉 sin과 cos이 뒤바뀌었다.")


@pytest.mark.parametrize(
    "wrong",
    [
        "위치 0, 1, ...가 아니라 2, 3, ...이다.",  # 일: 이
        "맞는 위치 n(캐시된 토큰 수)가 아니라",  # the gloss is skipped: 엔, 이
        "slopes(8)가 맞는 값이다.",  # 팔: 이
        "omega_i = base ** (-2i / d_model)를 써라.",  # 모델: 을
        "build(0, 2)에서 ValueError를 일으켰다.",  # a calque of "raised"
        "네 step을 전체 패스와 비교하라.",  # reads as "four steps"
        "BERT의 임베딩 층이 그렇다.",  # the book's word is 레이어
    ],
)
def test_the_style_check_sees_a_particle_after_a_bracket_or_an_ellipsis_and_the_words(
    wrong: str,
) -> None:
    assert korean_style_problems(wrong), wrong


@pytest.mark.parametrize(
    "right",
    [
        "위치 0, 1, ...이 아니라 2, 3, ...이다.",
        "시드(행)와 길이(열)마다",
        "퍼플렉서티(9.0)가 높다.",
        "slopes(8)이 맞는 값이다.",
        "module.eval()이 끄는 Dropout",
        "omega_i = base ** (-2i / d_model)을 써라.",
        "build(0, 2)에서 ValueError가 발생했다.",
    ],
)
def test_the_style_check_passes_the_right_particles(right: str) -> None:
    assert not korean_style_problems(right), (korean_style_problems(right), right)
