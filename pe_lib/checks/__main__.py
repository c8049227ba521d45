"""``python -m pe_lib.checks``: bring the Korean catalogue of the checkers' messages up to date.

New texts are added untranslated, texts no longer declared are dropped, translations are kept
(:func:`pe_lib.checks._messages.main`).
"""

from __future__ import annotations

from ._messages import main

main()
