"""The ``unknown_outcome`` option of a resumed run, kept apart from the ledger (which loads only when a run uses it)."""

from __future__ import annotations

from typing import Literal

from handrail.errors import ConfigurationError

__all__ = ["UnknownOutcome", "check_unknown_outcome"]

UnknownOutcome = Literal["retry", "fail"] | None


def check_unknown_outcome(value: object) -> UnknownOutcome:
    """Validate ``unknown_outcome`` (None, "retry" or "fail").

    Raises:
        ConfigurationError: Any other value.
    """
    if value is None or value == "retry" or value == "fail":
        return value
    raise ConfigurationError(f"unknown_outcome must be None, 'retry' or 'fail', got {value!r}.")
