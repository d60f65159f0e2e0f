"""A tool call bound to its tool and final arguments, its outcome, and the observer a durable run's ledger is.

The effects themselves (data only) are in :mod:`handrail.components.effects`; these are the live objects the
tool step and its context share within one process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from handrail.components.effects import ToolInvocation
from handrail.dataclasses.chat_message import ToolCall
from handrail.tools.tool import Tool

__all__ = ["Bound", "CallObserver", "Invocation", "Outcome"]

Outcome = tuple[bool, Any]
"""``(True, result)`` when the tool returned, ``(False, exception)`` when it raised."""


@dataclass(slots=True)
class Invocation:
    """One tool call ready to run: the tool and its final keyword arguments."""

    call: ToolCall
    """The call being answered (id already repaired)."""
    tool: Tool
    """The tool to run."""
    kwargs: dict[str, Any]
    """The arguments: the model's, plus State-injected values and the call id where declared."""
    arguments: dict[str, Any]
    """The model's arguments alone (validated against the tool's JSON Schema)."""
    injected: dict[str, Any]
    """Parameter values read from State through ``inputs_from_state`` (read-only for approvers)."""
    key: str = ""
    """The idempotency key given to a ``ToolCallId`` parameter."""


@dataclass(slots=True)
class Bound:
    """The live invocations of a run's last ``RunTools`` / ``AskApproval`` effect, and that effect's list of calls.

    The step machine sets both before it yields the effect; the run's context runs these invocations when it is
    given that very list back (a driver that sent the effect elsewhere gets it bound again by name).
    """

    invocations: list[Invocation] = field(default_factory=list)
    calls: list[ToolInvocation] | None = None

    def set(self, invocations: list[Invocation]) -> list[ToolInvocation]:
        """Keep ``invocations``; returns their calls as effect data (the list that identifies them)."""
        # The arguments are copies: a driver or an observer changing the effect's data changes no call (the
        # approved, validated arguments run).
        if len(invocations) == 1:  # the common case, without the comprehension
            one = invocations[0]
            calls = [ToolInvocation(one.call.id, one.tool.name, dict(one.arguments), one.key)]
        else:
            calls = [ToolInvocation(i.call.id, i.tool.name, dict(i.arguments), i.key) for i in invocations]
        self.invocations = invocations
        self.calls = calls
        return calls


class CallObserver(Protocol):
    """Told right before each invocation starts and right after it ends (e.g. a durable ledger).

    Called by the drivers, possibly from worker threads: implementations must be thread-safe.
    An exception raised here stops the run (the tool's outcome is then unknown to the record).
    """

    def started(self, inv: Invocation) -> None:
        """``inv`` is about to run."""

    def finished(self, inv: Invocation, outcome: Outcome) -> None:
        """``inv`` returned or raised."""

    def record_started(self, inv: Invocation) -> Any:
        """:meth:`started` in two halves (the async driver): note the start; returns a ticket for make_durable."""

    def record_not_started(self, inv: Invocation) -> Any:
        """Undo :meth:`record_started` for a call that was cancelled before it ran; returns a ticket."""

    def record_finished(self, inv: Invocation, outcome: Outcome) -> Any:
        """:meth:`finished` in two halves: note the outcome, return a ticket for :meth:`make_durable`."""

    def make_durable(self, ticket: Any) -> None:
        """Return once the change of ``ticket`` is recorded for good (changes noted meanwhile may share the write)."""

    def worker_started(self, inv: Invocation) -> None:
        """``inv`` goes to a worker thread that reports its own end: the run may end (cancelled) first."""

    def worker_ended(self, inv: Invocation) -> None:
        """The worker thread of ``inv`` is done (after ``finished``), or will never run it."""
