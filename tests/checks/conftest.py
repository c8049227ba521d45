"""Every checker test starts and ends with the checkers speaking English."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pe_lib.checks import set_language


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    """The language is a module-level setting: a test that changes it does not change the next."""
    set_language("en")
    yield
    set_language("en")
