"""Homework checkers: call them on your own work; they explain what is wrong.

Each checker passes correct work silently and otherwise raises :class:`CheckFailed`, an
``AssertionError`` whose ``.mistake`` is a short code and whose message says, in plain words,
what the checker recognised and, after ``Fix:``, how to fix it. A checker *recognises* a
mistake by rebuilding what the mistake would produce and comparing; when nothing it knows fits,
it reports where the answer is furthest from the right one.

========================================  =========================================
checker                                   what it checks
========================================  =========================================
:func:`check_sinusoidal_table`            a table ``(num_positions, d_model)``
:func:`check_positional_encoding_module`  an ``nn.Module`` that adds the table
:func:`check_relative_shift`              a builder of the shift matrix ``M_k``
:func:`check_rope`                        a rotary embedding (function or module)
:func:`check_rope_tables`                 an engine's cos and sin tables for a model's layer
:func:`check_rope_rotate`                 an engine's rotation for a model's layer
:func:`check_alibi_slopes`                ALiBi's per-head slopes
:func:`check_alibi_bias`                  ALiBi's attention bias
:func:`check_kv_cache`                    a decoding step with a key-value cache
:func:`check_flat`                        perplexity that stays flat as the length grows
========================================  =========================================

Every checker tries the cases the exercise allows, not one: a few readable ones first, then
cases drawn with a seed (its ``seed=`` argument, 0 by default) from the whole space (odd and
large sizes, far offsets, packed positions, several new tokens at once); a failure names the
case, and for a drawn one the seed that draws it again. Each holds the work to the tolerance of
the precision the exercise asks for.

The messages are English unless ``set_language("ko")`` asks for Korean (the Korean edition's
notebooks do, in their first cell); ``get_language()`` says which, and the ``.mistake`` codes are
the same in both. The English is in the code; the Korean is in the gettext catalogue
``locale/ko/LC_MESSAGES/pe_lib_checks.po`` of this package, which a translator edits
(``pe_lib.checks._messages``).

Each checker's ``.mistakes`` is the tuple of the codes it recognises, in the order it looks
for them, read from the :class:`Catalogue` its module declares (the one way to read them). A new
checker is one module of this package built on :mod:`pe_lib.checks._core`: declare its case
space (``draw_cases``), its reference, its tolerance (``Tolerance``) and its mistakes in a
:class:`Catalogue`, try them in order with one table of ``Diagnosis`` rows (``diagnose``),
call student code through ``call_student`` and use the shared guards (``EXCEPTION``,
``WRONG_TYPE``, ``SHAPE``, ``DTYPE``, ``NOT_FINITE``, ``IN_PLACE``, ``HIDDEN_STATE``);
``python -m pe_lib.checks`` then adds the new messages to the catalogue to translate.
"""

from __future__ import annotations

from ._core import LANGUAGES, Catalogue, CheckFailed, Mistake, Note, get_language, set_language
from .alibi import check_alibi_bias, check_alibi_slopes
from .cache import check_kv_cache
from .flat import check_flat
from .module import check_positional_encoding_module
from .rope import check_rope
from .rope_tables import check_rope_rotate, check_rope_tables
from .shift import check_relative_shift
from .table import check_sinusoidal_table

__all__ = [
    "LANGUAGES",
    "Catalogue",
    "CheckFailed",
    "Mistake",
    "Note",
    "check_alibi_bias",
    "check_alibi_slopes",
    "check_flat",
    "check_kv_cache",
    "check_positional_encoding_module",
    "check_relative_shift",
    "check_rope",
    "check_rope_rotate",
    "check_rope_tables",
    "check_sinusoidal_table",
    "get_language",
    "set_language",
]
