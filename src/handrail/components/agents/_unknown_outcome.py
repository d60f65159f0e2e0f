"""The ``unknown_outcome`` option of a resumed run, kept apart from the ledger (which loads only when a run uses it)."""

from __future__ import annotations

from typing import Any, Literal

from handrail.errors import ConfigurationError

__all__ = ["UnknownOutcome", "check_unknown_outcome"]

UnknownOutcome = Literal["retry", "fail"] | None
_UNKNOWN_OUTCOMES = (None, "retry", "fail")


def check_unknown_outcome(value: Any) -> UnknownOutcome:
    """Validate ``unknown_outcome`` (None, "retry" or "fail").

    Raises:
        ConfigurationError: Any other value.
    """
    if value not in _UNKNOWN_OUTCOMES:
        raise ConfigurationError(f"unknown_outcome must be None, 'retry' or 'fail', got {value!r}.")
    return value  # type: ignore[no-any-return]
