r"""What every homework checker is built from.

A checker declares four things and the core does the rest:

* **its case space**: a few fixed cases, the readable ones a student meets first, then cases
  drawn from everything the exercise allows (odd and large sizes, far offsets, packed positions,
  several new tokens at once) by :func:`draw_cases`, seeded, so that a failure is reproducible
  and its message names the case and the seed that drew it;
* **its reference**: the right answer, computed in float64 from what the student received;
* **its tolerance**: :class:`Tolerance`, the error that rounding in the precision the exercise
  asks for explains, and no more;
* **one table of diagnoses**, :class:`Diagnosis` rows tried in order by :func:`diagnose`: each
  rebuilds what a mistake would give and, if that is what the student's work gives, names it.

The guards every checker needs come from here: :func:`call_student` (an exception in student
code, the ``"exception"`` mistake, declared once in :data:`~pe_lib.checks._core.EXCEPTION`), :func:`as_float64`
(what was handed in: :data:`WRONG_TYPE`), :data:`SHAPE`, :data:`DTYPE`, :data:`NOT_FINITE`,
:data:`IN_PLACE` and :data:`HIDDEN_STATE`; a checker's :class:`~pe_lib.checks.Catalogue` :meth:`~pe_lib.checks.Catalogue.uses`
those it can raise.

Messages are :class:`~pe_lib.checks._core.Text` s: English in the code, translated in the
gettext catalogue of each language (``pe_lib.checks._messages``).
"""

from __future__ import annotations

import dataclasses
import math
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import torch

from .._validation import check_nonnegative_int
from ..encodings.sinusoidal import angular_frequencies
from ._messages import (
    LANGUAGES,
    PARTICLES,
    Text,
    fields_of,
    get_language,
    particle,
    render,
    set_language,
)

__all__ = [
    "ANGLE_ERROR_CAP",
    "C",
    "DTYPE",
    "E",
    "EPS16",
    "EPS32",
    "EPS64",
    "EPS_BF16",
    "EXCEPTION",
    "HIDDEN_STATE",
    "IN_PLACE",
    "LANGUAGES",
    "NOT_FINITE",
    "PARTICLES",
    "SHAPE",
    "WRONG_TYPE",
    "Case",
    "Catalogue",
    "CheckFailed",
    "Diagnosis",
    "F",
    "Mistake",
    "NotAnArray",
    "Note",
    "T",
    "Text",
    "Tolerance",
    "angle_ulps",
    "as_float64",
    "call_student",
    "check_seed",
    "column_frequencies",
    "diagnose",
    "draw_cases",
    "dtype_name",
    "fmt_base",
    "get_language",
    "kind_of",
    "particle",
    "reference",
    "set_language",
    "text",
]

#: The type a student's function returns, passed through by :func:`call_student`.
T = TypeVar("T")
#: A checker function, returned unchanged by :meth:`pe_lib.checks.Catalogue.attach`.
F = TypeVar("F", bound=Callable[..., object])
#: A case of a checker's case space.
C = TypeVar("C")
#: The evidence a table of diagnoses is read against.
E = TypeVar("E")

EPS64 = float(torch.finfo(torch.float64).eps)
EPS32 = float(torch.finfo(torch.float32).eps)
EPS16 = float(torch.finfo(torch.float16).eps)
EPS_BF16 = float(torch.finfo(torch.bfloat16).eps)


def text(english: str) -> Text:
    """Declare a sentence a checker prints (at module level): see :class:`~pe_lib.checks._core.Text`."""
    return Text.declare(english, str(sys._getframe(1).f_globals.get("__name__", "")))


#: The words between *what is wrong* and *how to fix it*.
FIX_LABEL = text("Fix:")


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

    ``what`` and ``how`` are English ``str.format`` templates whose fields are filled in where
    the mistake is found; their translations are read from the catalogues
    (``pe_lib.checks._messages``), or from ``ko``, a ``(what, how)`` pair given here (for a
    mistake declared outside the package). Several records may share a ``code`` (variants of
    one mistake).

    Attributes:
        code: the short name students see as ``CheckFailed.mistake``.
        what: what is wrong, in plain words.
        how: how to fix it (printed after ``Fix:``).
        ko: ``(what, how)`` in Korean, or ``None`` to read them from the Korean catalogue.
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
            or not all(isinstance(t, str) and t.strip() for t in self.ko)
        ):
            raise TypeError(
                f"ko must be a pair of non-empty strings (what, how), got {self.ko!r} "
                f"for mistake {self.code!r}"
            )
        english, korean = fields_of(self.what, self.how), fields_of(*self.ko)
        if english != korean:
            raise ValueError(
                f"the Korean texts of mistake {self.code!r} must have the English fields "
                f"{sorted(english)}, got {sorted(korean)}"
            )

    def renamed(self, code: str) -> Mistake:
        """The same mistake under another code (a checker that named it so before)."""
        return dataclasses.replace(self, code=code)

    def fields(self) -> set[str]:
        """The template fields of ``what`` and ``how`` (every translation has the same)."""
        return fields_of(self.what, self.how)

    def texts(self, language: str | None = None) -> tuple[str, str]:
        """The templates ``(what, how)`` in ``language`` (by default the current one)."""
        if language is None:
            language = get_language()
        elif language not in LANGUAGES:
            raise ValueError(
                f"language must be one of {', '.join(map(repr, LANGUAGES))}, got {language!r}"
            )
        if language == "ko" and self.ko is not None:
            return self.ko
        return Text(self.what).template(language), Text(self.how).template(language)

    def render(self, **fields: object) -> tuple[str, str]:
        """``(what, how)`` in the current language with ``fields`` filled in."""
        what, how = (render(template, **fields) for template in self.texts())
        return what, how

    def explain(self, context: str = "", evidence: str = "", /, **fields: object) -> str:
        """``context + what``, then ``evidence``, then ``Fix: how``, in the current language."""
        what, how = self.render(**fields)
        return f"{context}{what}{' ' + evidence if evidence else ''} {FIX_LABEL} {how}"

    def fail(self, context: str = "", evidence: str = "", /, **fields: object) -> CheckFailed:
        """The :class:`~pe_lib.checks.CheckFailed` to raise (``raise mistake.fail(...) from cause``)."""
        return CheckFailed(self.code, self.explain(context, evidence, **fields))

    def note(self, context: str = "", evidence: str = "", /, **fields: object) -> Note:
        """The same explanation as a :class:`~pe_lib.checks.Note`, for a property checked only when strict."""
        return Note(self.code, self.explain(context, evidence, **fields))


@dataclass
class Catalogue:
    """The mistakes of one checker, in the order it looks for them.

    ``codes`` is derived from the declarations, so a new mistake is one :meth:`declare` call
    (or one :meth:`uses` of a mistake the core declares for every checker). Decorating the
    checker with :meth:`attach` (after the last declaration) gives it ``.mistakes``, these
    codes: the one public way to read a checker's mistakes.
    """

    checker: str
    _records: list[Mistake] = field(default_factory=list)

    def declare(
        self, code: str, what: str, how: str, *, ko: tuple[str, str] | None = None
    ) -> Mistake:
        """Declare a mistake (or one more variant of a declared code) and return it.

        ``what`` and ``how`` are English templates; their translations are read from the
        catalogues (or from ``ko``, for a checker written outside this package)."""
        record = Mistake(code, what, how, ko)
        if ko is None:
            module = str(sys._getframe(1).f_globals.get("__name__", self.checker))
            Text.declare(what, module)
            Text.declare(how, module)
        self._records.append(record)
        return record

    def uses(self, *mistakes: Mistake) -> None:
        """Add mistakes declared once for every checker (:data:`~pe_lib.checks._core.EXCEPTION`, ...) in this place."""
        self._records.extend(mistakes)

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


def _shared(code: str, what: str, how: str) -> Mistake:
    Text.declare(what, __name__)
    Text.declare(how, __name__)
    return Mistake(code, what, how)


# The guards every checker shares -------------------------------------------------------------

#: Student code raised. ``contract`` says how the checker calls it.
EXCEPTION = _shared(
    "exception",
    "{call} raised {error_type}: {error}.",
    "fix that error first (the traceback above this one shows where it happened). {contract}",
)
#: Student code returned something that is not what the exercise asks for.
WRONG_TYPE = _shared("wrong_type", "{call} returned {found}, not {wanted}.", "{how}")
#: The result has the wrong shape.
SHAPE = _shared("shape", "{call} returned shape {shape}, not {wanted}.", "{how}")
#: The result has another dtype than the input.
DTYPE = _shared("dtype", "{call} returned a {found} result for {wanted} inputs.", "{how}")
#: NaN or infinite values.
NOT_FINITE = _shared(
    "not_finite", "{call} returned NaN or infinite values, the first at {where}.", "{how}"
)
#: The student's code changed what it was given.
IN_PLACE = _shared(
    "in_place",
    "{call} changed its input {name} in place ({example}).",
    "build a new tensor and leave the caller's {name} as it was ({instead}).",
)
#: The same case, run twice from the start, gave different results.
HIDDEN_STATE = _shared(
    "hidden_state",
    "{call}: the same case run twice from the start gave different results (by up to {error}): "
    "the code keeps something between calls outside what it returns, such as a global or an "
    "attribute that is never reset.",
    "keep everything a call needs in its arguments and in what it returns ({how}).",
)


def call_student(
    mistake: Mistake, call: str, function: Callable[..., T], *args: object, **fields: object
) -> T:
    """``function(*args)``; an exception in it becomes ``mistake`` (:data:`~pe_lib.checks._core.EXCEPTION`).

    The message names ``call`` (how the checker called the student's code), the error and
    ``fields`` (for :data:`~pe_lib.checks._core.EXCEPTION`, ``contract``: how the checker calls the code); the
    original exception is chained as ``__cause__``.
    """
    try:
        return function(*args)
    except Exception as error:
        raise mistake.fail(
            call=call, error_type=type(error).__name__, error=error, **fields
        ) from error


# Case spaces ---------------------------------------------------------------------------------

_DRAWN = text("(case {index} of those drawn with seed={seed}: the same seed draws it again)")


@dataclass(frozen=True)
class Case(Generic[C]):
    """One case of a checker's case space: its parameters, and where it came from.

    Attributes:
        value: the parameters (sizes, positions, ...), whatever the checker uses.
        index: ``None`` for a fixed case; else the number of the draw, from 1.
        seed: the seed the drawn cases came from.
    """

    value: C
    index: int | None = None
    seed: int = 0

    @property
    def label(self) -> str:
        """For a drawn case, which draw it was and its seed (with a leading space); else ``""``."""
        if self.index is None:
            return ""
        return " " + _DRAWN.render(index=self.index, seed=self.seed)


def check_seed(seed: object) -> int:
    """``seed`` as a non-negative int, or a ``TypeError``/``ValueError`` naming it."""
    return check_nonnegative_int("seed", seed)


def draw_cases(
    fixed: Sequence[C], draw: Callable[..., C], count: int, seed: int
) -> Iterator[Case[C]]:
    """The fixed cases, then ``count`` cases ``draw(rng)``, ``rng`` a ``random.Random``
    seeded by ``seed``.

    The fixed cases come first so that a common mistake is shown on a small, readable case; the
    drawn ones cover the rest of what the exercise allows.
    """
    for value in fixed:
        yield Case(value, None, seed)
    rng = random.Random(seed)
    for index in range(1, count + 1):
        yield Case(draw(rng), index, seed)


# Diagnoses -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Diagnosis(Generic[E]):
    """One row of a checker's table of diagnoses.

    Attributes:
        mistake: what is raised when this row explains the evidence.
        explains: ``explains(evidence)``, the fields of the message if the mistake explains the
            evidence (rebuilding what it would give and comparing), else ``None``.
    """

    mistake: Mistake
    explains: Callable[[E], dict[str, object] | None]


def diagnose(
    table: Sequence[Diagnosis[E]], evidence: E, context: str = "", note: str = ""
) -> CheckFailed | None:
    """The failure of the first row of ``table`` that explains ``evidence``, or ``None``."""
    for row in table:
        fields = row.explains(evidence)
        if fields is not None:
            return row.mistake.fail(context, note, **fields)
    return None


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
        angle_eps: machine epsilon of the precision the angles must be formed in: the one the
            exercise asks for.
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
    def for_table(cls, value_eps: float, base: float, angle_eps: float | None = None) -> Tolerance:
        """A table of that epsilon, capped; angles in ``angle_eps`` (by default the table's
        precision, but at least float32's)."""
        angles = min(value_eps, EPS32) if angle_eps is None else angle_eps
        return cls(value_eps, angles, angle_ulps(base), ANGLE_ERROR_CAP)

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


_META = text("a {dtype} tensor on the meta device (a shape without values)")
_TENSOR_OF = text("a {dtype} tensor")
_ARRAY_OF = text("a numpy array of dtype {dtype}")
_OBJECT = text("a {kind}")


class NotAnArray(Exception):
    """:func:`as_float64` could not read a value; ``str()`` says what it was, in the current
    language (``english`` always in English, for argument errors)."""

    def __init__(self, what: Text, **fields: object) -> None:
        super().__init__(what.english)
        self.what, self.fields = what, fields

    @property
    def english(self) -> str:
        return render(self.what.english, **self.fields)

    def __str__(self) -> str:
        return self.what.render(**self.fields)


def kind_of(value: object) -> str:
    """What ``value`` is, in the current language: ``"a list"``, ``"list 객체"``, ..."""
    return _OBJECT.render(kind=type(value).__name__)


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
            raise NotAnArray(_META, dtype=dtype_name(value.dtype))
        if value.is_floating_point():
            eps = float(torch.finfo(value.dtype).eps)
        elif integers and not value.is_complex() and value.dtype != torch.bool:
            eps = EPS64
        else:
            raise NotAnArray(_TENSOR_OF, dtype=dtype_name(value.dtype))
        return value.detach().to("cpu", torch.float64), dtype_name(value.dtype), max(eps, EPS64)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            eps = float(np.finfo(value.dtype).eps)
        elif integers and value.dtype.kind in "iu":
            eps = EPS64
        else:
            raise NotAnArray(_ARRAY_OF, dtype=str(value.dtype))
        values = torch.from_numpy(np.array(value, dtype=np.float64, copy=True))
        return values, str(value.dtype), max(eps, EPS64)
    raise NotAnArray(_OBJECT, kind=type(value).__name__)


# The correct table ---------------------------------------------------------------------------


def column_frequencies(d_model: int, base: float) -> torch.Tensor:
    """The angular frequency of each column, ``omega_(j // 2)``: shape ``(d_model,)`` float64."""
    return angular_frequencies(d_model, base).repeat_interleave(2)[:d_model]


def reference(
    positions: torch.Tensor, d_model: int, base: float
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The sinusoidal table at ``positions`` and its angles.

    :math:`PE(pos, 2i) = \sin(pos\,\omega_i)`, :math:`PE(pos, 2i+1) = \cos(pos\,\omega_i)`:
    the values of :func:`pe_lib.encodings.sinusoidal.sinusoidal_table`, at any float64 positions.

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
