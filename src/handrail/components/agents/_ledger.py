"""The execution ledger of one run: what happened to each tool call, by ``tool_call_id``.

Statuses move ``pending`` → ``approved`` / ``rejected`` → ``running`` → ``done`` / ``failed`` (a call
without a confirmation strategy goes straight to ``running``). A durable run writes the ledger to its
snapshot file before each call starts and after it ends (the ``on_change`` callback; calls that start or
end together share one write), so a resumed run never runs a call whose result is recorded, and finds a
call that was under way when its process died.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from handrail.components.agents._group_commit import GroupCommit
from handrail.components.agents._unknown_outcome import UnknownOutcome, check_unknown_outcome
from handrail.components.tools._effects import Invocation, Outcome
from handrail.components.tools._results import result_message_text
from handrail.components.tools._step import ToolStepOptions, failed_call, failure_text, finish_call
from handrail.core._typed_json import decode_value, encode_value
from handrail.core.serialization import restricted_imports
from handrail.dataclasses.chat_message import ChatMessage, ToolCall, result_text
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import LedgerEntry
from handrail.dataclasses.state import State
from handrail.errors import StringConversionError, UnknownOutcomeError

__all__ = ["Ledger", "UnknownOutcome", "check_unknown_outcome"]


def _now() -> datetime:
    return datetime.now(UTC)


class Ledger:
    """Per-call records of one run, plus the decisions given for the paused step.

    Args:
        entries: Entries carried over from a snapshot (by call id), or None.
        decisions: Decisions for the paused step (``AgentSnapshot.tool_execution_decisions``); spent when that
            step ends (:meth:`end_step`).
        unknown_outcome: What to do with a call found ``running``: None raises, "retry" runs it
            again (same ``ToolCallId``), "fail" records an error result.
        on_change: Writes the ledger (it takes the ledger's lock to read the entries); called after the changes
            that must be durable before the run goes on: before a call starts and after it ends. Changes made
            while a write is under way share the next write (:class:`GroupCommit`).

    Thread-safe: the sync driver reports calls from worker threads.
    """

    def __init__(
        self,
        entries: dict[str, LedgerEntry] | None = None,
        decisions: Iterable[ToolExecutionDecision] = (),
        unknown_outcome: UnknownOutcome = None,
        on_change: Callable[[], None] | None = None,
        *,
        read_under: tuple[str, ...] | None = None,
    ) -> None:
        self.entries: dict[str, LedgerEntry] = dict(entries or {})
        self.read_under = read_under
        """The allowlist of the snapshot the entries were read from (None: this process wrote them)."""
        self.decisions: list[ToolExecutionDecision] = list(decisions)
        self.unknown_outcome = unknown_outcome
        self.on_change = on_change
        self.json_strings = False
        """The run's ``convert_result_to_json_string`` (for the recorded text of a result)."""
        self.lock = threading.RLock()
        self._commit: GroupCommit | None = None
        self._before_start: dict[str, LedgerEntry | None] = {}
        self._workers = 0
        self._on_idle: list[Callable[[], None]] = []
        self.unsaved: int | None = None
        """The ticket of a change recorded outside a tool call that must be made durable next (:meth:`persist`)."""

    def _recorded_value(self, data: Any) -> Any:
        """A recorded result's value, decoded under the snapshot's allowlist when it was read from data."""
        if self.read_under is None:
            return decode_value(data, "ledger result")
        with restricted_imports(self.read_under):  # a file's value may not name a class outside its allowlist
            return decode_value(data, "ledger result")

    # -- decisions -------------------------------------------------------------------------------

    def decision_for(self, call: ToolCall, pending: list[ToolCall]) -> ToolExecutionDecision | None:
        """The decision already known for ``call``: recorded in the ledger, else given for the paused step.

        Looked up by :meth:`ToolExecutionDecision.find` (a given decision without ``tool_call_id`` answers the
        call only when it is the one pending call of that tool).
        """
        entry = self.entries.get(call.id or "")
        recorded = entry.decision if entry is not None else None
        return ToolExecutionDecision.find(call, recorded=recorded, given=self.decisions, step_calls=pending)

    def decided(self, call: ToolCall, arguments: dict[str, Any], decision: ToolExecutionDecision) -> None:
        """Record a decision (approved / rejected) for ``call``; written with the next durable change."""
        with self.lock:
            self.entries[call.id or ""] = LedgerEntry(
                tool_call_id=call.id or "",
                tool_name=call.tool_name,
                status="approved" if decision.execute else "rejected",
                arguments=dict(arguments),
                decision=decision,
                decided_by=decision.decided_by,
                decided_at=_now(),
                updated_at=_now(),
            )

    def end_step(self) -> None:
        """The tool step finished: the decisions given for it are spent.

        Their outcomes are in the entries (decision, status, result), which answer those calls from now on;
        the decisions themselves must not answer a call of a later step (a decision without ``tool_call_id``
        would match a later call of the same tool) nor go into a later step's snapshot, where they would name
        calls that are not paused there.
        """
        with self.lock:
            self.decisions = []

    def hold(self, call: ToolCall, arguments: dict[str, Any]) -> None:
        """Record ``call`` as pending a decision."""
        with self.lock:
            self.entries[call.id or ""] = LedgerEntry(
                tool_call_id=call.id or "", tool_name=call.tool_name, status="pending", arguments=dict(arguments)
            )

    # -- replay ----------------------------------------------------------------------------------

    def replay(
        self, inv: Invocation, state: State, opts: ToolStepOptions
    ) -> tuple[Literal["run", "answered"], ChatMessage | None]:
        """Answer ``inv`` from the ledger when its outcome is recorded.

        Returns:
            ``("answered", message)`` for a call that finished (its recorded result, outputs merged into
            State again), failed, or whose unknown outcome is given up (``unknown_outcome="fail"``);
            ``("run", None)`` for a call to run (never started, or retried).

        Raises:
            UnknownOutcomeError: The call was found ``running`` and ``unknown_outcome`` is None.
        """
        entry = self.entries.get(inv.call.id or "")
        if entry is None or entry.status in ("pending", "approved", "rejected"):
            return "run", None
        if entry.status == "running":
            return self._unknown(inv, entry)
        result = entry.result or {}
        text = result.get("text")
        if entry.status == "failed":
            return "answered", failed_call(inv, str(text), opts)
        if "value" in result:
            return "answered", finish_call(inv, (True, self._recorded_value(result["value"])), state, opts)
        if inv.tool.outputs_to_state:
            warnings.warn(
                f"The recorded result of call '{inv.call.id}' to '{inv.tool.name}' holds no value to merge into "
                f"State (it could not be serialized); its outputs_to_state are not applied again.",
                stacklevel=2,
            )
        if result.get("error") and opts.raise_on_failure:
            raise StringConversionError(str(text))
        return "answered", ChatMessage.from_tool(str(text), inv.call, error=bool(result.get("error")))

    def _unknown(self, inv: Invocation, entry: LedgerEntry) -> tuple[Literal["run", "answered"], ChatMessage | None]:
        call = inv.call
        if self.unknown_outcome == "retry":
            return "run", None
        if self.unknown_outcome == "fail":
            text = (
                f"Outcome unknown: the process running tool '{call.tool_name}' (call '{call.id}') stopped before "
                f"it recorded a result; the call may or may not have taken effect."
            )
            with self.lock:
                self.entries[call.id or ""] = LedgerEntry(
                    tool_call_id=call.id or "", tool_name=call.tool_name, status="failed",
                    arguments=entry.arguments, result={"text": text, "error": True}, decision=entry.decision,
                    decided_by=entry.decided_by, decided_at=entry.decided_at,
                )  # fmt: skip
                self.unsaved = self._ticket() or self.unsaved  # written by the Persist effect the gate yields next
            return "answered", ChatMessage.from_tool(text, call, error=True)
        raise UnknownOutcomeError(
            f"Call '{call.id}' to tool '{call.tool_name}' was running when its process stopped (since "
            f"{entry.updated_at.isoformat()}); its outcome is unknown. Resume with unknown_outcome='retry' to run "
            f"it again (same ToolCallId) or unknown_outcome='fail' to record an error result and continue.",
            call.tool_name,
            call.id or "",
        )

    # -- the observer the drivers call -----------------------------------------------------------

    def _ticket(self) -> int | None:
        """A change to make durable was made (under the lock): its ticket, or None when nothing is written."""
        if self.on_change is None:
            return None
        if self._commit is None:
            self._commit = GroupCommit(self._write)
        return self._commit.ticket()

    def _write(self) -> None:
        if self.on_change is not None:
            self.on_change()

    @property
    def writes(self) -> int:
        """How many durable writes the ledger's changes took so far (group commit: often fewer than changes)."""
        return 0 if self._commit is None else self._commit.writes

    def make_durable(self, ticket: int | None) -> None:
        """Return once the change of ``ticket`` (from a ``record_*`` method) is written; never call it under the lock.

        Changes recorded by other calls meanwhile go into the same write (group commit).
        """
        if ticket is not None and self._commit is not None:
            self._commit.wait(ticket)

    def persist(self) -> None:
        """Make the changes recorded outside a tool call durable (a driver executing a ``Persist`` effect)."""
        ticket, self.unsaved = self.unsaved, None
        self.make_durable(ticket)

    def started(self, inv: Invocation) -> None:
        """Mark the call ``running`` and make that durable before the tool starts."""
        self.make_durable(self.record_started(inv))

    def finished(self, inv: Invocation, outcome: Outcome) -> None:
        """Record the call's result (``done``) or error (``failed``) and make it durable."""
        self.make_durable(self.record_finished(inv, outcome))

    def record_started(self, inv: Invocation) -> int | None:
        """Mark the call ``running`` in memory; :meth:`make_durable` of the ticket before the tool starts."""
        call = inv.call
        with self.lock:
            old = self.entries.get(call.id or "")
            self._before_start[call.id or ""] = old
            self.entries[call.id or ""] = LedgerEntry(
                tool_call_id=call.id or "", tool_name=call.tool_name, status="running", arguments=dict(inv.arguments),
                decision=old.decision if old else None, decided_by=old.decided_by if old else None,
                decided_at=old.decided_at if old else None,
            )  # fmt: skip
            return self._ticket()

    def record_not_started(self, inv: Invocation) -> int | None:
        """The call marked by :meth:`record_started` did not start after all (cancelled): its entry goes back."""
        call_id = inv.call.id or ""
        with self.lock:
            old = self._before_start.pop(call_id, None)
            if old is None:
                self.entries.pop(call_id, None)
            else:
                self.entries[call_id] = old
            return self._ticket()

    def record_finished(self, inv: Invocation, outcome: Outcome) -> int | None:
        """Record the call's result (``done``) or error (``failed``) in memory; returns the ticket to make durable."""
        call = inv.call
        ok, value = outcome
        result: dict[str, Any]
        if ok:
            content, error = result_message_text(inv.tool, call.id, value, self.json_strings)
            # A result of content parts is recorded as its text, each image as its placeholder: what a person reads
            # in the ledger; the parts themselves come back from the recorded value.
            result = {"text": result_text(content, image_placeholders=True), "error": error}
            # Without a value, replay gives the recorded text (the message the model was given; a warning names the
            # call when outputs_to_state is set, as its State update cannot be applied again).
            # The tool has run: whatever the encoder meets (a SerializationError, a to_dict() that raises), the
            # value is dropped, never the record, so the call is not left 'running' when it finished.
            with contextlib.suppress(Exception):
                result["value"] = encode_value(value, f"the result of call '{call.id}'")
        else:
            result = {"text": failure_text(inv, value), "error": True}
        with self.lock:
            old = self.entries[call.id or ""]
            self.entries[call.id or ""] = LedgerEntry(
                tool_call_id=old.tool_call_id, tool_name=old.tool_name, status="done" if ok else "failed",
                arguments=old.arguments, result=result, decision=old.decision, decided_by=old.decided_by,
                decided_at=old.decided_at,
            )  # fmt: skip
            self._before_start.pop(call.id or "", None)
            return self._ticket()

    def worker_started(self, inv: Invocation) -> None:
        """A call went to a worker thread that records its own outcome (a sync tool under ``run_async``)."""
        with self.lock:
            self._workers += 1

    def worker_ended(self, inv: Invocation) -> None:
        """That thread is done; the last one runs the callbacks left by :meth:`when_idle`, if any."""
        with self.lock:
            self._workers -= 1
            callbacks, self._on_idle = (self._on_idle, []) if self._workers == 0 else ([], self._on_idle)
        for callback in callbacks:
            callback()

    def when_idle(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` now, or when the last worker thread still running a call of this run is done.

        A cancelled ``run_async`` leaves its sync tools running in their threads; the run's claim on its record
        is released only after they recorded their outcome, so no resume can start (and run them again, or be
        overwritten by their late write) while they still run.
        """
        with self.lock:
            if self._workers:
                self._on_idle.append(callback)
                return
        callback()

    def snapshot_entries(self) -> dict[str, LedgerEntry]:
        """A copy of the entries (entries themselves are replaced, never mutated)."""
        with self.lock:
            return dict(self.entries)
