"""Ctrl-C during ``handrail run`` / ``handrail resume``: say what was interrupted, how to continue, exit 130.

A durable run (``--pause-for-approval DIR|URL``, or any ``handrail resume``) keeps a record in its store: the
snapshot it resumed, or the one it created at its first tool call. After Ctrl-C that record is left
*interrupted* (status running, no process holding it), and the command printed continues it, with
``--unknown-outcome retry|fail`` when a tool call was running (its outcome is unknown). A run without a
record has nothing to continue: it is said so.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from handrail.cli._common import EXIT_INTERRUPTED, error, resume_hint
from handrail.cli._live import RunView

__all__ = ["interrupts"]


def _hint(where: Any, record: str | None) -> str:
    """How to continue the interrupted run (the record as it is in the store now), or why it cannot be."""
    if where is None:
        return "Nothing of this run was saved (it had no snapshot store): run the command again to start over."
    if record is None:
        return f"Nothing of this run was saved in {where.label} yet: run the command again to start over."
    try:
        snapshot = where.store.load(record)
    except Exception:  # the record cannot be read now: the plain command still names it
        return f"Continue the run with: handrail resume {record} {where.arg}"
    return resume_hint(snapshot, where, what="the run")


@contextlib.contextmanager
def interrupts(out: Any, view: RunView, as_json: bool, where: Any = None,
               record: Callable[[], str | None] = lambda: None) -> Iterator[None]:  # fmt: skip
    """Turn Ctrl-C (KeyboardInterrupt) into what was interrupted, the command that continues it, and exit 130.

    Args:
        out: The command's console.
        view: The run's view: it knows the step and what the run was doing.
        as_json: Print ``{"error": {"type": "Interrupted", "message", "hint"}}`` on stdout instead.
        where: The run's store (a ``Where``), or None for a run without one.
        record: The id of the run's durable record, once it has one (asked after the interrupt).
    """
    try:
        yield
    except KeyboardInterrupt:
        view.hide()
        view.end_text()
        message = view.interrupted()
        hint = _hint(where, record())
        if as_json:
            error(out, message, "Interrupted", hint=hint)
        else:
            out.print(message, style="bold yellow", markup=False)
            out.print(hint, markup=False, soft_wrap=True)
        sys.exit(EXIT_INTERRUPTED)
