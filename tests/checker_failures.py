"""The one way the checker tests assert a diagnosis: the checker fails with the expected code."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pe_lib.checks import CheckFailed


def failing_with(checker: Callable[..., object]) -> Callable[..., CheckFailed]:
    """``fails_with(mistake, *args, **kwargs)``: ``checker(*args, **kwargs)`` must fail with
    the declared code ``mistake`` and a message that says how to fix it; returns the failure."""

    def fails_with(mistake: str, *args: object, **kwargs: object) -> CheckFailed:
        assert mistake in checker.mistakes, f"{mistake!r} is not a code of the checker"  # type: ignore[attr-defined]
        with pytest.raises(CheckFailed) as info:
            checker(*args, **kwargs)
        assert info.value.mistake == mistake, str(info.value)
        assert "Fix: " in str(info.value), "every message says how to fix the mistake"
        return info.value

    return fails_with
