r"""The checkers' messages: English templates in the code, their translations in gettext catalogues.

Every sentence a checker can print is a :class:`Text`, an English ``str.format`` template
declared once at module level (a mistake's *what* and *how* are declared through
:meth:`pe_lib.checks.Catalogue.declare`). Its Korean is the ``msgstr`` of that ``msgid`` in
``locale/ko/LC_MESSAGES/pe_lib_checks.po`` beside this module, a gettext catalogue as the book's
Korean edition uses: a translator edits the catalogue, not the code. It is read with a few lines
of the standard library (:func:`read_po`); a fuzzy or empty entry counts as untranslated and the
English is printed.

A Korean template may follow a field with the particle its value's last sound asks for,
``{call:이}`` (:func:`particle`): the value is not known until a mistake is found.

``python -m pe_lib.checks`` brings the catalogue up to date with the code, as ``msgmerge``
would: new texts are added untranslated, texts no longer declared are dropped, and the
translations of the others are kept.
"""

from __future__ import annotations

import functools
import re
import string
import sys
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = [
    "DOMAIN",
    "LANGUAGES",
    "PARTICLES",
    "REGISTRY",
    "Text",
    "fields_of",
    "get_language",
    "particle",
    "read_po",
    "render",
    "set_language",
    "translation",
    "write_po",
]

#: The gettext domain: ``locale/<language>/LC_MESSAGES/<DOMAIN>.po`` beside this module.
DOMAIN = "pe_lib_checks"
#: The languages a checker speaks: English and Korean (the Korean edition's notebooks choose it).
LANGUAGES = ("en", "ko")

_language = "en"


def set_language(language: str) -> None:
    """Write every checker's messages in ``language`` from now on: ``"en"`` or ``"ko"``.

    The Korean edition's notebooks call ``set_language("ko")`` in their first cell. A
    :class:`~pe_lib.checks.CheckFailed`'s ``mistake`` code is the same in every language;
    its message says what is wrong and, after ``Fix:`` (``고치는 법:``), how to fix it.

    Raises:
        TypeError: ``language`` is not a string.
        ValueError: ``language`` is not one of ``"en"``, ``"ko"``.
    """
    global _language
    if not isinstance(language, str):
        raise TypeError(
            f"language must be a string, one of {', '.join(map(repr, LANGUAGES))}, "
            f"got {language!r} ({type(language).__name__})"
        )
    if language not in LANGUAGES:
        raise ValueError(
            f"language must be one of {', '.join(map(repr, LANGUAGES))}, got {language!r}"
        )
    _language = language


def get_language() -> str:
    """The language of the checkers' messages (``"en"`` unless :func:`set_language` chose)."""
    return _language


# Reading and writing a catalogue -------------------------------------------------------------

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(line: str, where: str) -> str:
    if len(line) < 2 or not (line.startswith('"') and line.endswith('"')):
        raise ValueError(f"{where}: expected a quoted string, got {line!r}")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), line[1:-1])


def read_po(text: str, *, name: str = "catalogue") -> dict[str, str]:
    """The translations of a ``.po`` catalogue: ``{msgid: msgstr}``.

    The header (``msgid ""``), fuzzy entries (``#, fuzzy``), obsolete ones (``#~``) and empty
    translations are left out: they are not translations yet. Plural forms and contexts are not
    used by the checkers and are refused.

    Raises:
        ValueError: the text is not a catalogue of that form (the line is named).
    """
    entries: dict[str, str] = {}
    fuzzy, key = False, None
    parts: dict[str, list[str]] = {"msgid": [], "msgstr": []}

    def finish() -> None:
        nonlocal fuzzy, key
        msgid, msgstr = "".join(parts["msgid"]), "".join(parts["msgstr"])
        if key is not None and msgid and msgstr and not fuzzy:
            entries[msgid] = msgstr
        fuzzy, key = False, None
        parts["msgid"], parts["msgstr"] = [], []

    for number, raw in enumerate(text.splitlines(), start=1):
        line, where = raw.strip(), f"{name}, line {number}"
        if not line:
            finish()
        elif line.startswith("#~"):
            continue
        elif line.startswith("#,"):
            if key is not None:
                finish()
            fuzzy = "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgid ", "msgstr ")):
            word, _, rest = line.partition(" ")
            if word == "msgid" and key is not None:
                keep = fuzzy
                finish()
                fuzzy = keep
            key = word
            parts[word].append(_unquote(rest, where))
        elif line.startswith('"') and key is not None:
            parts[key].append(_unquote(line, where))
        else:
            raise ValueError(f"{where}: not a line of a simple .po catalogue: {raw!r}")
    finish()
    return entries


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _po_string(keyword: str, text: str, width: int = 79) -> list[str]:
    """``msgid "..."``, wrapped at spaces as ``msgcat`` does when it is long."""
    if len(keyword) + len(_quote(text)) + 1 <= width:
        return [f"{keyword} {_quote(text)}"]
    lines, line = [f'{keyword} ""'], ""
    for word in re.findall(r"\S*\s*", text):
        if line and len(_quote(line + word)) > width:
            lines.append(_quote(line))
            line = ""
        line += word
    if line:
        lines.append(_quote(line))
    return lines


def write_po(entries: list[tuple[str, str, str]], *, language: str) -> str:
    """A catalogue of ``(comment, msgid, msgstr)`` entries; an empty ``msgstr`` is untranslated."""
    out = [
        f"# The checkers' messages ({DOMAIN}), translated. English is the source: edit the",
        "# translations here; python -m pe_lib.checks adds new messages and drops old ones.",
        'msgid ""',
        'msgstr ""',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        f'"Language: {language}\\n"',
    ]
    for comment, msgid, msgstr in entries:
        out.append("")
        out.append(f"#: {comment}")
        out += _po_string("msgid", msgid)
        out += _po_string("msgstr", msgstr)
    return "\n".join(out) + "\n"


def _catalogue_file(language: str) -> Traversable:
    return resources.files(__package__) / "locale" / language / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def translation(language: str) -> dict[str, str]:
    """The translations into ``language`` (``{}`` for English, the source, and where the
    catalogue was not installed: the messages are then printed in English)."""
    path = _catalogue_file(language)
    if language == "en" or not path.is_file():
        return {}
    return read_po(path.read_text(encoding="utf-8"), name=f"{language}/{DOMAIN}.po")


# Texts ------------------------------------------------------------------------------------------

#: Every English template the checkers declare, by its text, with where it was declared.
REGISTRY: dict[str, str] = {}


def fields_of(*templates: str) -> set[str]:
    """The ``str.format`` field names of ``templates``."""
    return {
        name
        for template in templates
        for _, name, _, _ in string.Formatter().parse(template)
        if name
    }


@dataclass(frozen=True)
class Text:
    """One sentence (or phrase) a checker prints: an English ``str.format`` template.

    Create it at module level with :meth:`declare`, so that the catalogue can be checked
    against the code; ``str(text)`` and :meth:`render` give it in the current language.
    """

    english: str

    @classmethod
    def declare(cls, english: str, where: str = "") -> Text:
        """A text the catalogues translate; ``where`` names the declaring module."""
        if not english.strip():
            raise ValueError(f"a text must not be empty, got {english!r}")
        REGISTRY.setdefault(english, where or _caller_module())
        return cls(english)

    def template(self, language: str | None = None) -> str:
        """The template in ``language`` (by default the current one); English if untranslated."""
        language = _language if language is None else language
        return translation(language).get(self.english, self.english)

    def render(self, **fields: object) -> str:
        """The text in the current language with ``fields`` filled in."""
        return render(self.template(), **fields)

    def __str__(self) -> str:
        return self.render()


def _caller_module() -> str:
    frame = sys._getframe(2)
    return str(frame.f_globals.get("__name__", ""))


# Korean particles after a substituted value -------------------------------------------------

#: Each Korean particle that changes with the word before it: (after a final consonant, after
#: a vowel). ``으로``/``로`` is the one exception to the rule: after ㄹ it is ``로``.
PARTICLES = {
    "을": ("을", "를"),
    "이": ("이", "가"),
    "은": ("은", "는"),
    "과": ("과", "와"),
    "으로": ("으로", "로"),
    "이라": ("이라", "라"),
    "이나": ("이나", "나"),
}
# Either form names the pair: {value:를} and {value:을} both choose the right one.
_PAIR = {form: pair for pair in PARTICLES.values() for form in pair}
#: Postpositions a value may not end in when a particle follows it (checked where
#: ``REFUSE_POSTPOSITIONS`` is on, as the tests turn it on): "프리필에서가" reads as two
#: particles in a row. Only those no common noun ends in are listed (not 이, 가, 도, 과, 로).
_POSTPOSITIONS = (
    "에서",
    "에게",
    "으로",
    "까지",
    "부터",
    "처럼",
    "보다",
    "에",
    "의",
    "을",
    "를",
    "은",
    "는",
    "와",
)
#: Whether :func:`particle` refuses a value that already ends in a postposition.
REFUSE_POSTPOSITIONS = False

_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3
_FINAL_RIEUL = 8  # ㄹ among the 27 final consonants of a Hangul syllable
# The final sound of a digit read in Korean (영 일 이 삼 사 오 육 칠 팔 구): "consonant", "rieul"
# (ㄹ) or "vowel".
_DIGIT_END = dict(
    zip(
        "0123456789",
        (
            "consonant",
            "rieul",
            "vowel",
            "consonant",
            "vowel",
            "vowel",
            "consonant",
            "rieul",
            "rieul",
            "vowel",
        ),
        strict=True,
    )
)
# The final sound of a Latin letter read by its name (에이 비 씨 ... 엘 엠 엔 ...).
_LETTER_END = {
    **dict.fromkeys("abcdefghijkopqrstuvwxyz", "vowel"),
    "l": "rieul",
    "m": "consonant",
    "n": "consonant",
}
_LETTER_END["r"] = "rieul"  # 알, as a variable is read (행 r은)
# Read as an English word, a Latin word ends as its Korean loanword does (외래어 표기법): -l, -le
# on ㄹ (레이블, 모듈); -m, -n, -ng, -me, -ne on a consonant (토큰, 타임, 라인); -p, -t, -b, -k after
# one short vowel, and -ck, on a consonant (스텝, 오프셋, 레이아웃, 트레이스백); anything else on a
# vowel (레이어, 텐서, 에러, 마스크, 플로트).
_WORD_END = (
    ("le", "rieul"),
    ("l", "rieul"),
    ("me", "consonant"),
    ("ne", "consonant"),
    ("m", "consonant"),
    ("n", "consonant"),
    ("ng", "consonant"),
    ("ck", "consonant"),
)
_VOWELS = "aeiou"
# Words the book reads otherwise: "shape" and "type" as 셰입 and 타입 (the article writes
# "shape이"), "RoPE" as 로프, ViT as 비트; the functions as a Korean reader names them: cos as
# 코사인, sin as 사인, tan as 탄젠트 ("cos과 sin이", "tan를").
_READINGS = {
    "shape": "consonant",
    "type": "consonant",
    "dtype": "consonant",
    "rope": "vowel",
    "vit": "vowel",
    "cos": "consonant",
    "sin": "consonant",
    "tan": "vowel",
}
# A number that is part of a name (Gemma 3, DeepSeek-V3, GPT-2, Qwen2.5, T5) is read in English,
# as the name is: three 쓰리, one 원, seven 세븐, eight 에잇, nine 나인, ten 텐, twelve 트웰브,
# thirteen 써틴, twenty 트웬티, hundred 헌드레드. A name starts with a capital letter; a number after
# a lowercase word (float16, slopes 8) or alone is read in Korean.
_ENGLISH_DIGIT_END = dict(
    zip(
        "0123456789",
        (
            "vowel",
            "consonant",
            "vowel",
            "vowel",
            "vowel",
            "vowel",
            "vowel",
            "consonant",
            "consonant",
            "consonant",
        ),
        strict=True,
    )
)
_NAME_NUMBER = re.compile(r"(?<![\w.])[A-Z][A-Za-z]*(?:-[A-Za-z]+)*[- ]?([0-9]+(?:\.[0-9]+)?)$")
# A fraction is read denominator first, the numerator last: 1/2 is 이분의 일, 3/4 사분의 삼.
_FRACTION = re.compile(r"(?<![\w.])([0-9]+)/[0-9]+$")
# A power ends on 제곱 or 승: a^2 is a 제곱, 10^4 is 10의 4승.
_POWER = re.compile(r"(?:\^|\*\*)(?:-?[0-9A-Za-z]+|\{[^{}]*\})$")


def _english_number_end(number: str) -> str:
    """The final sound of ``number`` read in English, as in a model's name."""
    whole, _, fraction = number.partition(".")
    if fraction:  # "two point five": the digits after the point one by one
        return _ENGLISH_DIGIT_END[fraction[-1]]
    value = int(whole)
    if value >= 100 and value % 100 == 0:
        return "vowel"  # hundred, thousand
    value %= 100
    if value == 12:
        return "vowel"  # twelve
    if 10 <= value <= 19:
        return "consonant"  # ten, eleven, -teen
    if value >= 20 and value % 10 == 0:
        return "vowel"  # -ty
    return _ENGLISH_DIGIT_END[str(value % 10)]


def _word_end(word: str) -> str:
    """The final sound of a Latin word read as a Korean loanword (see :data:`_WORD_END`)."""
    if word in _READINGS:
        return _READINGS[word]
    for ending, sound in _WORD_END:
        if word.endswith(ending):
            return sound
    if len(word) >= 2 and word[-1] in "ptbk" and word[-2] in _VOWELS:
        before = word[-3:-2]
        if not before or before not in _VOWELS or word[-3:-1] == "ou":
            return "consonant"  # 스텝, 오프셋, 아웃 (not 플로트: a long vowel)
    return "vowel"


def _is_hangul(char: str) -> bool:
    return len(char) == 1 and _HANGUL_FIRST <= ord(char) <= _HANGUL_LAST


def read_last(text: str) -> str:
    """``text`` up to what is read last before a particle.

    Closing quotes, dots and an ellipsis are not read. A gloss in brackets is skipped, the
    particle fitting the word before it: "시드(행)와", "퍼플렉서티(9.0)가", "n(캐시된 토큰 수)이"
    (Korean inside, or right after a Korean word). Code or a number in brackets is read:
    "slopes(8)이" (팔), "module.eval()이" (이발).
    """
    while True:
        text = text.rstrip(" '\"`.,;:!?…_")
        if not text.endswith((")", "]")):
            return text
        depth, opening = 0, None
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "]": 1, "(": -1, "[": -1}.get(text[i], 0)
            if depth == 0:
                opening = i
                break
        if opening is None:
            return text.rstrip(")]")
        inside = text[opening + 1 : -1]
        if any(_is_hangul(c) for c in inside) or _is_hangul(text[opening - 1 : opening]):
            text = text[:opening]  # a gloss
        elif inside.strip(" '\"`.,;:!?…_()[]"):
            text = text[:-1]  # code or a number: read what it holds
        else:
            text = text[:opening]  # an empty call: read the name


def final_sound(text: str) -> str:
    """How ``text`` ends when read aloud in Korean: ``"consonant"``, ``"rieul"`` or ``"vowel"``.

    Hangul by its last syllable's final consonant; a number by its Korean reading (``10``, 십;
    ``0.1``, 일; ``7``, 칠), but in English where it is part of a name (``Gemma 3``, 쓰리;
    ``DeepSeek-V3``; ``Llama 3.1``, 원); a fraction by its numerator (``1/2``, 이분의 일); a power
    by 제곱 or 승 (``a^2``, ``10^4``); a Latin word as a Korean loanword ends (``RuntimeError``,
    에러; see :data:`_WORD_END`), or as the book reads it (``cos``, 코사인; ``tan``, 탄젠트;
    ``ViT``, 비트); a single letter or an all-capital abbreviation by its letters' names (``x``,
    엑스; ``L``, 엘). What :func:`read_last` leaves unread is skipped.
    """
    stripped = read_last(text)
    if not stripped:
        return "vowel"
    if _POWER.search(stripped):
        return "consonant"
    fraction = _FRACTION.search(stripped)
    if fraction:
        return final_sound(fraction.group(1))
    name = _NAME_NUMBER.search(stripped)
    if name:
        return _english_number_end(name.group(1))
    last = stripped[-1]
    if _HANGUL_FIRST <= ord(last) <= _HANGUL_LAST:
        final = (ord(last) - _HANGUL_FIRST) % 28
        return "vowel" if final == 0 else "rieul" if final == _FINAL_RIEUL else "consonant"
    if last.isdigit():
        number = re.search(r"[0-9.]+$", stripped)
        digits = number.group() if number else last
        if "." not in digits and len(digits.lstrip("0")) > 1 and digits.endswith("0"):
            return "consonant"  # 십, 백, 천, 만: every place value ends on a consonant
        return _DIGIT_END[last]
    if last.isascii() and last.isalpha():
        word = re.search(r"[A-Za-z]+$", stripped)
        letters = word.group() if word else last
        if len(letters) == 1 or letters.isupper():
            return _LETTER_END[letters[-1].lower()]
        return _word_end(letters.lower())
    return "vowel"  # a symbol (θ, %, ...) read as a word ending on a vowel (세타, 퍼센트)


def particle(value: object, form: str) -> str:
    """``value`` followed by the Korean particle ``form`` in the shape its last sound takes.

    ``form`` is either shape of a pair of ``PARTICLES`` (``"을"`` or ``"를"``, ``"으로"`` or
    ``"로"``, ...): ``particle("dropout=0.1", "를")`` is ``"dropout=0.1을"``,
    ``particle("RuntimeError", "으로")`` is ``"RuntimeError로"``. In a Korean template the
    same is written ``{field:을}``.

    Raises:
        ValueError: ``form`` is not a particle of ``PARTICLES``; or, where
            ``REFUSE_POSTPOSITIONS`` is on, ``value`` already ends in a postposition.
    """
    if form not in _PAIR:
        raise ValueError(f"form must be one of {', '.join(sorted(_PAIR))}, got {form!r}")
    text = str(value)
    if REFUSE_POSTPOSITIONS:
        read = read_last(text)
        ending = next((p for p in _POSTPOSITIONS if read.endswith(p) and len(read) > len(p)), None)
        if ending is not None:
            raise ValueError(
                f"value {text!r} already ends in the postposition {ending!r}: a particle after "
                "it reads as two; reword the template so that a noun comes before the particle"
            )
    after_consonant, after_vowel = _PAIR[form]
    sound = final_sound(text)
    if after_consonant == "으로":
        return text + ("으로" if sound == "consonant" else "로")
    return text + (after_vowel if sound == "vowel" else after_consonant)


class _Formatter(string.Formatter):
    """``str.format`` where a field's format spec may be a Korean particle: ``{call:이}``
    writes the value, then ``이`` or ``가`` as the value's last sound asks."""

    def format_field(self, value: object, format_spec: str) -> str:
        if format_spec in _PAIR:
            return particle(format(value, ""), format_spec)
        return str(super().format_field(value, format_spec))


_FORMATTER = _Formatter()


def render(template: str, **fields: object) -> str:
    """``template.format(**fields)``, a ``{field:을}`` spec choosing the particle; a field given
    as a :class:`Text` is rendered in the current language first."""
    values = {
        name: str(value) if isinstance(value, Text) else value for name, value in fields.items()
    }
    return _FORMATTER.format(template, **values)


# Bringing a catalogue up to date ------------------------------------------------------------


def declared() -> dict[str, str]:
    """Every text the checker modules declare (importing them all), with its module."""
    import importlib
    import pkgutil

    package = importlib.import_module(__package__ or "pe_lib.checks")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "__main__":
            importlib.import_module(f"{package.__name__}.{info.name}")
    return dict(REGISTRY)


def update(language: str = "ko") -> str:
    """The catalogue of ``language`` brought up to date with the code (not written)."""
    path = _catalogue_file(language)
    old = read_po(path.read_text(encoding="utf-8")) if path.is_file() else {}
    texts = declared()
    order = sorted(texts, key=lambda english: texts[english])
    return write_po([(texts[e], e, old.get(e, "")) for e in order], language=language)


def main() -> None:
    """Write the updated Korean catalogue in place (new texts untranslated, old ones dropped)."""
    path = _catalogue_file("ko")
    text = update("ko")
    with resources.as_file(path) as file:
        file.write_text(text, encoding="utf-8")
    missing = len(declared()) - len(read_po(text))
    print(f"{path}: {len(declared())} texts, {missing} to translate")
