r"""What every homework checker shares.

* :class:`~pe_lib.checks.CheckFailed`, the failure a checker raises, and
  :class:`~pe_lib.checks.Note`, a remark that does not fail;
* :class:`~pe_lib.checks.Mistake`, one declared mistake (its code, a *what is wrong* and a
  *how to fix it* template, in English and in Korean), and :class:`~pe_lib.checks.Catalogue`,
  the mistakes of one checker in the order it looks for them; a checker's list of codes is
  read from its catalogue, never kept by hand;
* :func:`~pe_lib.checks.set_language` and :func:`~pe_lib.checks.get_language`, the language
  of the messages (``"en"`` or ``"ko"``), and :func:`say`, a phrase a checker builds at
  failure time, in both languages; :func:`particle`, a value followed by the Korean particle
  its last sound asks for (a Korean template writes ``{field:을}`` for the same);
* :func:`call_student`, calling student code so that an error in it is reported as the call
  that raised, not as a traceback from inside the checker;
* :class:`Tolerance`, the error allowed for a sinusoid computed in a given precision;
* :func:`as_float64`, what the student handed in (numpy array or torch tensor) as a float64
  CPU tensor;
* :func:`reference`, the correct sinusoidal table (Vaswani et al., 2017, section 3.5) at any
  float64 positions, from :func:`pe_lib.sinusoidal.angular_frequencies`.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import torch

from ..sinusoidal import angular_frequencies

__all__ = [
    "ANGLE_ERROR_CAP",
    "LANGUAGES",
    "EPS16",
    "EPS32",
    "EPS64",
    "EPS_BF16",
    "F",
    "Catalogue",
    "CheckFailed",
    "Mistake",
    "Note",
    "NotAnArray",
    "T",
    "Tolerance",
    "angle_ulps",
    "as_float64",
    "call_student",
    "column_frequencies",
    "dtype_name",
    "fmt_base",
    "get_language",
    "particle",
    "reference",
    "say",
    "set_language",
]

#: The type a student's function returns, passed through by :func:`call_student`.
T = TypeVar("T")
#: A checker function, returned unchanged by :meth:`pe_lib.checks.Catalogue.attach`.
F = TypeVar("F", bound=Callable[..., object])

EPS64 = float(torch.finfo(torch.float64).eps)
EPS32 = float(torch.finfo(torch.float32).eps)
EPS16 = float(torch.finfo(torch.float16).eps)
EPS_BF16 = float(torch.finfo(torch.bfloat16).eps)


# The language of the messages -------------------------------------------------------------

#: The languages a checker speaks: English and Korean (the Korean edition's notebooks choose it).
LANGUAGES = ("en", "ko")
#: The words the core puts between *what is wrong* and *how to fix it*, in each language.
FIX_LABEL = {"en": "Fix:", "ko": "고치는 법:"}

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
# "shape이"), "RoPE" as 로프.
_READINGS = {"shape": "consonant", "type": "consonant", "dtype": "consonant", "rope": "vowel"}


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


def _final_sound(text: str) -> str:
    """How ``text`` ends when read aloud in Korean: ``"consonant"``, ``"rieul"`` or ``"vowel"``.

    Hangul by its last syllable's final consonant; a number by its Korean reading (``10``, 십;
    ``0.1``, 일; ``7``, 칠); a Latin word as a Korean loanword ends (``RuntimeError``, 에러;
    ``cos``... see :data:`_WORD_END`); a single letter or an all-capital abbreviation by its
    letters' names (``x``, 엑스; ``L``, 엘). Closing quotes, brackets and dots are not read.
    """
    stripped = text.rstrip(" '\"`)]}>.,;:!?…_")
    if not stripped:
        return "vowel"
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
    ``particle("RuntimeError", "으로")`` is ``"RuntimeError로"``. In a catalogue's Korean
    templates the same is written ``{field:을}``.

    Raises:
        ValueError: ``form`` is not a particle of ``PARTICLES``.
    """
    if form not in _PAIR:
        raise ValueError(f"form must be one of {', '.join(sorted(_PAIR))}, got {form!r}")
    text = str(value)
    after_consonant, after_vowel = _PAIR[form]
    sound = _final_sound(text)
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


def say(english: str, korean: str) -> str:
    """``english`` or ``korean``, whichever the current language is: for the parts of a
    message a checker builds where it finds the mistake (the case it was checking, evidence,
    hints), beside the templates its catalogue declares."""
    return korean if _language == "ko" else english


class CheckFailed(AssertionError):
    """A checker recognised a mistake.

    Attributes:
        mistake: a short code naming the mistake (one of the checker's ``.mistakes``).
        message: the explanation, also ``str(exc)``: what is wrong, then ``Fix:`` and how
            (in Korean, after :func:`~pe_lib.checks.set_language` ``("ko")``, ``고치는 법:``).
    """

    def __init__(self, mistake: str, message: str) -> None:
        super().__init__(message)
        self.mistake = mistake
        self.message = message

    def __reduce__(self) -> tuple[type[CheckFailed], tuple[str, str]]:
        return (type(self), (self.mistake, self.message))  # (mistake, message) survive pickling


@dataclass(frozen=True)
class Note:
    """A property a checker looked at that does not fail by default (``strict=False``).

    Attributes:
        mistake: the code the checker raises for it with ``strict=True``.
        message: what was seen and how to fix it.
    """

    mistake: str
    message: str


@dataclass(frozen=True)
class Mistake:
    """One mistake a checker recognises, declared once.

    ``what`` and ``how`` are ``str.format`` templates; their fields are filled in where
    the mistake is found. ``ko`` holds the same two templates in Korean, with the same fields;
    the message is written in the language :func:`~pe_lib.checks.get_language` names (in
    English where a mistake has no Korean, which no checker's catalogue allows). Several
    records may share a ``code`` (variants of one mistake).

    Attributes:
        code: the short name students see as ``CheckFailed.mistake``.
        what: what is wrong, in plain words.
        how: how to fix it (printed after ``Fix:``).
        ko: ``(what, how)`` in Korean (``how`` printed after ``고치는 법:``), or ``None``.
    """

    code: str
    what: str
    how: str
    ko: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if not self.code.isidentifier():
            raise ValueError(f"a mistake code must be an identifier, got {self.code!r}")
        if self.ko is None:
            return
        if (
            not isinstance(self.ko, tuple)
            or len(self.ko) != 2
            or not all(isinstance(text, str) and text.strip() for text in self.ko)
        ):
            raise TypeError(
                f"ko must be a pair of non-empty strings (what, how), got {self.ko!r} "
                f"for mistake {self.code!r}"
            )
        english, korean = _fields(self.what, self.how), _fields(*self.ko)
        if english != korean:
            raise ValueError(
                f"the Korean texts of mistake {self.code!r} must have the English fields "
                f"{sorted(english)}, got {sorted(korean)}"
            )

    def fields(self) -> set[str]:
        """The template fields of ``what`` and ``how`` (the Korean texts have the same)."""
        return _fields(self.what, self.how)

    def texts(self, language: str | None = None) -> tuple[str, str]:
        """The templates ``(what, how)`` in ``language`` (by default the current one)."""
        if language is None:
            language = _language
        elif language not in LANGUAGES:
            raise ValueError(
                f"language must be one of {', '.join(map(repr, LANGUAGES))}, got {language!r}"
            )
        if language == "ko" and self.ko is not None:
            return self.ko
        return self.what, self.how

    def render(self, **fields: object) -> tuple[str, str]:
        """``(what, how)`` in the current language with ``fields`` filled in (a Korean
        template's ``{field:을}`` gets the particle the value's last sound asks for)."""
        what, how = (_FORMATTER.format(template, **fields) for template in self.texts())
        return what, how

    def explain(self, context: str = "", evidence: str = "", /, **fields: object) -> str:
        """``context + what``, then ``evidence``, then ``Fix: how``, in the current language."""
        what, how = self.render(**fields)
        label = FIX_LABEL["ko" if self.ko is not None and _language == "ko" else "en"]
        return f"{context}{what}{' ' + evidence if evidence else ''} {label} {how}"

    def fail(self, context: str = "", evidence: str = "", /, **fields: object) -> CheckFailed:
        """The :class:`~pe_lib.checks.CheckFailed` to raise (``raise mistake.fail(...) from cause``)."""
        return CheckFailed(self.code, self.explain(context, evidence, **fields))

    def note(self, context: str = "", evidence: str = "", /, **fields: object) -> Note:
        """The same explanation as a :class:`~pe_lib.checks.Note`, for a property checked only when strict."""
        return Note(self.code, self.explain(context, evidence, **fields))


@dataclass
class Catalogue:
    """The mistakes of one checker, in the order it looks for them.

    ``codes`` is derived from the declarations, so a new mistake is one :meth:`declare` call.
    Decorating the checker with :meth:`attach` (after the last declaration) gives it
    ``.mistakes``, these codes: the one public way to read a checker's mistakes.
    """

    checker: str
    _records: list[Mistake] = field(default_factory=list)

    def declare(self, code: str, what: str, how: str, *, ko: tuple[str, str]) -> Mistake:
        """Declare a mistake (or one more variant of a declared code) and return it.

        ``what`` and ``how`` are the English templates, ``ko`` the same two in Korean: every
        mistake a checker names can be explained in both languages."""
        record = Mistake(code, what, how, ko)
        self._records.append(record)
        return record

    @property
    def codes(self) -> tuple[str, ...]:
        """Every declared code, once, in declaration order."""
        return tuple(dict.fromkeys(record.code for record in self._records))

    def __iter__(self) -> Iterator[Mistake]:
        return iter(tuple(self._records))

    def __contains__(self, code: object) -> bool:
        return code in self.codes

    def attach(self, function: F) -> F:
        """Decorator: gives ``function`` the attribute ``.mistakes``, the tuple :attr:`codes`
        (the codes it recognises, in the order it looks for them)."""
        function.mistakes = self.codes  # type: ignore[attr-defined]
        return function


def _fields(*templates: str) -> set[str]:
    """The ``str.format`` fields of ``templates``."""
    return {
        name
        for template in templates
        for _, name, _, _ in string.Formatter().parse(template)
        if name
    }


def call_student(mistake: Mistake, call: str, function: Callable[..., T], *args: object) -> T:
    """``function(*args)``; an exception in it becomes ``mistake`` (code ``"exception"``).

    The message names ``call`` (how the checker called the student's code) and the error;
    the original exception is chained as ``__cause__``.
    """
    try:
        return function(*args)
    except Exception as error:
        raise mistake.fail(call=call, error_type=type(error).__name__, error=error) from error


# Tolerances ----------------------------------------------------------------------------------


def angle_ulps(base: float) -> float:
    r"""Rounding steps in forming the angle :math:`pos\,\omega_i`: :math:`\ln \mathrm{base} + 4`.

    :math:`\omega_i = \mathrm{base}^{-2i/d}` computed as ``exp(-2i/d * ln(base))`` carries the
    rounding of an exponent up to :math:`\ln \mathrm{base}`; the product adds a few more.
    """
    return math.log(base) + 4.0


#: The most an angle's rounding may move an accepted entry. Beyond it (a float32 angle past
#: about 6,000 positions, a float64 one past about 10**12) the rounding bound would accept
#: any value in [-1, 1]; an entry off by more than this is wrong, and if the formula is right
#: it is named ``"precision"``.
ANGLE_ERROR_CAP = 0.01


@dataclass(frozen=True)
class Tolerance:
    r"""Allowed error :math:`4\,\varepsilon_v + \min(u\,\varepsilon_a\,|angle|,\ c)`.

    Attributes:
        value_eps: machine epsilon of the values (rounding of numbers in [-1, 1]).
        angle_eps: machine epsilon of the precision the angles were formed in.
        angle_ulps: :func:`angle_ulps` of the base.
        angle_cap: the cap ``c`` of the angle term: none (``inf``) unless given;
            :data:`ANGLE_ERROR_CAP` for tables (:meth:`for_table`).
    """

    value_eps: float
    angle_eps: float
    angle_ulps: float
    angle_cap: float = math.inf

    VALUE_ULPS = 4.0

    @classmethod
    def for_table(cls, value_eps: float, base: float) -> Tolerance:
        """A table of that epsilon: angles in its precision, but at least float32; capped."""
        return cls(value_eps, min(value_eps, EPS32), angle_ulps(base), ANGLE_ERROR_CAP)

    def __call__(self, angles: torch.Tensor) -> torch.Tensor:
        """Per-entry bound, the shape of ``angles``."""
        angle_term = (self.angle_ulps * self.angle_eps * angles.abs()).clamp(max=self.angle_cap)
        return self.VALUE_ULPS * self.value_eps + angle_term

    def coarser(self, angle_eps: float, angle_cap: float | None = None) -> Tolerance:
        """The envelope of a table computed in half precision: bfloat16 values, and angles
        formed with epsilon ``angle_eps`` (float16's or bfloat16's), capped at ``angle_cap``
        (by default, this tolerance's cap)."""
        return Tolerance(
            max(self.value_eps, EPS_BF16),
            max(self.angle_eps, angle_eps),
            self.angle_ulps,
            self.angle_cap if angle_cap is None else angle_cap,
        )


# What the student handed in ------------------------------------------------------------------


def dtype_name(dtype: object) -> str:
    """``torch.float32`` -> ``"float32"``; numpy dtypes as they print."""
    return str(dtype).removeprefix("torch.")


class NotAnArray(Exception):
    """:func:`as_float64` could not read a value; ``str()`` says what it was, in the current
    language (``english`` always in English, for argument errors)."""

    def __init__(self, english: str, korean: str) -> None:
        super().__init__(english, korean)
        self.english, self.korean = english, korean

    def __str__(self) -> str:
        return say(self.english, self.korean)


def as_float64(value: object, *, integers: bool = False) -> tuple[torch.Tensor, str, float]:
    """A float64 CPU copy of a real numpy array or torch tensor, its dtype name and epsilon.

    Args:
        value: what the student handed in; never modified.
        integers: accept integer dtypes too (their epsilon is float64's).

    Returns:
        ``(values, dtype name, eps)``, ``eps`` at least float64's.

    Raises:
        NotAnArray: not a numpy array or torch tensor, a tensor on the meta device (it holds
            no values), or not of a real (floating, or with ``integers`` integer) dtype; the
            message says what it is.
    """
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta":
            raise NotAnArray(
                f"a {dtype_name(value.dtype)} tensor on the meta device (a shape without values)",
                f"meta 장치의 {dtype_name(value.dtype)} 텐서(값 없이 shape만 있는 텐서)",
            )
        if value.is_floating_point():
            eps = float(torch.finfo(value.dtype).eps)
        elif integers and not value.is_complex() and value.dtype != torch.bool:
            eps = EPS64
        else:
            raise NotAnArray(
                f"a {dtype_name(value.dtype)} tensor", f"{dtype_name(value.dtype)} 텐서"
            )
        return value.detach().to("cpu", torch.float64), dtype_name(value.dtype), max(eps, EPS64)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            eps = float(np.finfo(value.dtype).eps)
        elif integers and value.dtype.kind in "iu":
            eps = EPS64
        else:
            raise NotAnArray(
                f"a numpy array of dtype {value.dtype}", f"dtype이 {value.dtype}인 numpy 배열"
            )
        values = torch.from_numpy(np.array(value, dtype=np.float64, copy=True))
        return values, str(value.dtype), max(eps, EPS64)
    raise NotAnArray(f"a {type(value).__name__}", f"{type(value).__name__} 객체")


# The correct table ---------------------------------------------------------------------------


def column_frequencies(d_model: int, base: float) -> torch.Tensor:
    """The angular frequency of each column, ``omega_(j // 2)``: shape ``(d_model,)`` float64."""
    return angular_frequencies(d_model, base).repeat_interleave(2)[:d_model]


def reference(
    positions: torch.Tensor, d_model: int, base: float
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The sinusoidal table at ``positions`` and its angles.

    :math:`PE(pos, 2i) = \sin(pos\,\omega_i)`, :math:`PE(pos, 2i+1) = \cos(pos\,\omega_i)`:
    the values of :func:`pe_lib.sinusoidal.sinusoidal_table`, at any float64 positions.

    Args:
        positions: ``(n,)`` float64.
        d_model: number of columns.
        base: frequency base.

    Returns:
        ``(values, angles)``, both ``(n, d_model)`` float64.
    """
    angles = positions[:, None] * column_frequencies(d_model, base)[None, :]
    is_sin = torch.arange(d_model) % 2 == 0
    return torch.where(is_sin, torch.sin(angles), torch.cos(angles)), angles


def fmt_base(base: float) -> str:
    """``10000.0`` -> ``"10000"``; other values with six significant digits."""
    return f"{base:.0f}" if base == round(base) and abs(base) < 1e15 else f"{base:.6g}"
