"""Every checker test starts and ends with the checkers speaking English, and a Korean particle
after a value that already ends in a postposition is an error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pe_lib.checks import _messages, set_language


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    """The language is a module-level setting: a test that changes it does not change the next."""
    set_language("en")
    yield
    set_language("en")


@pytest.fixture(autouse=True)
def _refuse_double_particles(monkeypatch: pytest.MonkeyPatch) -> None:
    """ "프리필(호출 1)에서가": a particle after a postposition fails the test that prints it."""
    monkeypatch.setattr(_messages, "REFUSE_POSTPOSITIONS", True)
