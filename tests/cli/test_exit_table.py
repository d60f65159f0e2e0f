"""The command maps an exception to its exit code by one table, reading a handrail error's own ``exit_code``."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from rich.console import Console

from handrail.cli._common import EXIT_BUSY, EXIT_RUN_FAILED, EXIT_USAGE, errors_as_exit_codes, reported
from handrail.errors import (
    CalculationError,
    ConfigurationError,
    ConfigurationTypeError,
    CorruptRecordError,
    DecisionConflictError,
    RunError,
    SnapshotError,
    SnapshotUnavailableError,
    StoreError,
)


class _StrictError(RunError):
    """A user's error that states its own exit code."""

    exit_code = 2


def _exit(exc: BaseException, busy: Callable[[], bool] | None = None) -> tuple[int, str]:
    text = io.StringIO()
    out = Console(file=text, width=200)
    with pytest.raises(SystemExit) as stopped, errors_as_exit_codes(out, busy=busy):
        raise exc
    code = stopped.value.code
    assert isinstance(code, int)
    return code, text.getvalue()


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ConfigurationError("bad"), EXIT_USAGE),
        (ConfigurationTypeError("bad"), EXIT_RUN_FAILED),
        (SnapshotError("bad"), EXIT_USAGE),
        (DecisionConflictError("bad"), EXIT_USAGE),
        (CalculationError("bad"), EXIT_USAGE),
        (StoreError("bad"), EXIT_RUN_FAILED),
        (CorruptRecordError("bad"), EXIT_USAGE),
        (SnapshotUnavailableError("bad"), EXIT_BUSY),
        (RunError("bad"), EXIT_RUN_FAILED),
        (PermissionError(13, "bad", "/tmp/bad"), EXIT_USAGE),
        (ImportError("bad"), EXIT_USAGE),
        (OSError("bad"), EXIT_RUN_FAILED),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_each_error_exits_with_its_code_and_one_error_line(exc: BaseException, code: int) -> None:
    exit_code, text = _exit(exc)
    assert exit_code == code
    assert text.startswith("error: ") and "bad" in text and "Traceback" not in text


def test_the_code_is_the_error_s_own_attribute() -> None:
    assert _exit(_StrictError("strict"))[0] == 2
    found = reported(_StrictError("strict"))
    assert found is not None and found[0] == 2


def test_a_snapshot_nobody_holds_is_bad_input_not_busy() -> None:
    assert _exit(SnapshotUnavailableError("gone"), busy=lambda: True)[0] == EXIT_BUSY
    assert _exit(SnapshotUnavailableError("gone"), busy=lambda: False)[0] == EXIT_USAGE


def test_an_exception_not_in_the_table_passes() -> None:
    assert reported(KeyError("k")) is None
    with pytest.raises(KeyError), errors_as_exit_codes(Console(file=io.StringIO())):
        raise KeyError("k")
