"""Breakpoints, approval pauses and the durable snapshot record of one run.

The step machine asks :class:`Checkpoints` whether a breakpoint fires (pure); the run's context executes the
``Pause`` and ``Finish`` effects through it, and the ledger calls :meth:`Checkpoints.write_running` before and
after each tool call of a durable run (store I/O, done by the drivers). A call is durably ``running`` before it
starts and its result is durable before the step ends, so a resumed run never runs a recorded call again.

A durable run writes to a snapshot store (a directory of files, SQLite or PostgreSQL) and keeps one
*current record*: the snapshot it was resumed from, or one it creates at its first tool call (or
pause). A tool step's first write replaces that record atomically; its later writes (around each call) only
append the ledger entries that changed (``store.append_entries``: a journal line or an entries row per entry),
which every read of the record folds in and the next full write absorbs, so a step of n calls writes O(n)
bytes, not O(n²). When the run resumed a record and pauses again,
the pause goes under a new id (unique per pause) and the old record says where the run continued
(status ``resumed``). A finished run marks its record ``done``. The record's claim is held from its
creation (or the resume) until the run ends, so no other process resumes a run that is still going.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from handrail.components.agents._approval_records import ExecutedTrail, keeps_approvals
from handrail.components.agents._ledger import Ledger
from handrail.components.agents._resume import let_go
from handrail.components.agents._run_state import RunState, StepStart
from handrail.components.effects import Position
from handrail.core._typed_json import decode_value, encode_value
from handrail.dataclasses.breakpoints import (
    AgentBreakpoint,
    BreakpointException,
    HITLBreakpointException,
    ToolBreakpoint,
)
from handrail.dataclasses.chat_message import ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import RUN_ID_KEY, AgentSnapshot, LedgerEntry, MessageCache, snapshot_file_name
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError

__all__ = ["Checkpoints"]


class Checkpoints:
    """Breakpoint, pause and durability bookkeeping of one run.

    Args:
        break_point: The debugging breakpoint of this run, or None.
        store: The snapshot store of a durable run (from a pausing strategy or a breakpoint's directory, or
            the store a resumed snapshot came from), or None.
        agent_name: The label put into snapshots and file names ("" for none).
        fingerprint: The agent definition's fingerprint, recorded in every snapshot.
        metadata: Free JSON recorded in every snapshot (e.g. the agent file of a CLI run).
        ledger: The run's ledger, when calls are recorded (durable runs, pausing strategies, resumes).
        resumed: The snapshot this run resumes (its ``location`` names the current record), or None.
        owns_store: True when the run opened ``store`` itself (it is closed when the run ends).
        run: The run's state (visit counts, the step being written); a new one when None.
    """

    def __init__(
        self,
        *,
        break_point: AgentBreakpoint | None,
        store: Any,
        agent_name: str,
        fingerprint: dict[str, Any],
        metadata: dict[str, Any],
        ledger: Ledger | None,
        resumed: AgentSnapshot | None = None,
        owns_store: bool = False,
        run: RunState | None = None,
    ) -> None:
        self.break_point = break_point
        self.store = store
        self.owns_store = owns_store
        self.agent_name = agent_name
        self.fingerprint = fingerprint
        self.metadata = metadata
        self.ledger = ledger
        self.run = run if run is not None else RunState(State())
        self.cache = MessageCache()
        self.resumed_id = resumed.snapshot_id if resumed is not None and resumed.location and store else None
        self.current: str | None = self.resumed_id
        self.lease: Any = None
        self.closed = False
        """True once :meth:`close` ran (it runs once: at a pause, at the end, or when the run is closed)."""
        self.last: AgentSnapshot | None = resumed
        # The run id (AgentSnapshot.run_id): a resumed durable run keeps the id of its chain's first snapshot in
        # every snapshot it writes; a fresh run has none until its first record is created (that record's id).
        inherited = resumed.run_id if resumed is not None and self.resumed_id is not None else None
        if inherited is not None:
            self.metadata[RUN_ID_KEY] = inherited
        else:
            self.metadata.pop(RUN_ID_KEY, None)  # never a strategy's or an in-memory snapshot's: handrail's own
        self.written: tuple[StepStart, str, dict[str, LedgerEntry], list[ToolExecutionDecision]] | None = None
        """What the last write of the current record held: the step, the id, the entries and decisions."""
        if ledger is not None and self.durable:
            ledger.on_change = self.write_running
        self.trail = ExecutedTrail(resumed)
        """Audits the approved calls that ran (in a store that keeps approvals)."""
        self._approvals: bool | None = None

    @property
    def run_id(self) -> str | None:
        """The run's id: the inherited one, or the id of the record this run created (None before it has one)."""
        inherited = self.metadata.get(RUN_ID_KEY)
        return inherited if isinstance(inherited, str) else self.current

    @property
    def keeps_approvals(self) -> bool:
        """Whether the run's store keeps approval records (checked once the store is known)."""
        if self._approvals is None and self.store is not None:
            self._approvals = keeps_approvals(self.store)
        return bool(self._approvals)

    def _audit(self, ledger: dict[str, LedgerEntry]) -> None:
        if self.keeps_approvals:
            self.trail.written(self.store, self.run_id, ledger)

    @property
    def durable(self) -> bool:
        """True when this run writes its ledger to a snapshot store."""
        return self.store is not None

    # -- breakpoints (pure) ----------------------------------------------------------------------

    def breaks_at_model(self) -> bool:
        """True when the breakpoint targets the chat generator at the current visit."""
        bp = self.break_point.break_point if self.break_point else None
        return (
            bp is not None
            and not isinstance(bp, ToolBreakpoint)
            and bp.visit_count == self.run.visits["chat_generator"]
        )

    def breaks_at_tools(self, calls: list[ToolCall]) -> bool:
        """True when the breakpoint targets this tool step (for its tool, or any) at the current visit."""
        bp = self.break_point.break_point if self.break_point else None
        if not isinstance(bp, ToolBreakpoint):
            return False
        if bp.tool_name is None:
            return bp.visit_count == self.run.visits["tool_invoker"]
        if all(c.tool_name != bp.tool_name for c in calls):
            return False
        return bp.visit_count == self.run.tool_visits.get(bp.tool_name, 0)

    # -- snapshots (pure) ------------------------------------------------------------------------

    def begin_step(self, state: State) -> None:
        """Remember the State as a tool step begins.

        The copy goes through the snapshot encoding, so an unserializable value fails here, naming its key,
        before any call runs.
        """
        if self.ledger is None:
            return
        run = self.run
        values = {k: v for k, v in state.data.items() if k != "messages"}
        copied = {k: decode_value(encode_value(v, f"state[{k!r}]"), f"state[{k!r}]") for k, v in values.items()}
        run.step_start = StepStart(list(state.data["messages"]), copied, dict(run.visits), dict(run.tool_visits))

    def snapshot(
        self,
        position: Position,
        state: State | None,
        break_point: AgentBreakpoint,
        status: Literal["paused", "running"] = "paused",
    ) -> AgentSnapshot:
        """The snapshot of the run at ``position`` (at a tool step: the State as the step began)."""
        step = self.run.step_start if position == "tool_invoker" else None
        if step is not None:
            messages, values, visits, tool_visits = step.messages, step.state, step.visits, step.tool_visits
        else:
            assert state is not None
            messages = list(state.data["messages"])
            values = {k: v for k, v in state.data.items() if k != "messages"}
            visits, tool_visits = dict(self.run.visits), dict(self.run.tool_visits)
        ledger = self.ledger
        return AgentSnapshot(
            messages=messages,
            state=values,
            component_visits=visits,
            break_point=break_point,
            position=position,
            tool_visits=tool_visits,
            tool_execution_decisions=list(ledger.decisions) if ledger else [],
            ledger=ledger.snapshot_entries() if ledger else {},
            fingerprint=self.fingerprint,
            metadata=self.metadata,
            status=status,
        )

    def tool_break_point(self, tool_name: str | None) -> AgentBreakpoint:
        """The breakpoint recorded for a pause (or a durable write) at the current tool step."""
        where = getattr(self.store, "directory", None)
        where = str(where) if where is not None else None
        visit = self.run.visits["tool_invoker"] if tool_name is None else self.run.tool_visits.get(tool_name, 0)
        return AgentBreakpoint(self.agent_name, ToolBreakpoint("tool_invoker", visit, where, tool_name))

    # -- store I/O (drivers and the ledger call these) -------------------------------------------

    def _record(self, snapshot_id: str, snapshot: AgentSnapshot) -> None:
        assert self.store is not None
        self.written = None
        self.store.replace(snapshot_id, snapshot, self.cache)
        self.last = dataclasses.replace(snapshot, location=self.store.locator(snapshot_id))

    def _create(self, snapshot: AgentSnapshot, break_point: AgentBreakpoint, visit: int) -> str:
        assert self.store is not None
        self.written = None
        snapshot_id: str
        try:
            snapshot_id, lease = self.store.create(snapshot, snapshot_file_name(break_point, visit))
        except OSError as exc:
            raise ConfigurationError(
                f"The snapshot directory of {self.store} cannot be created or used: {exc.strerror or exc}."
            ) from exc
        self.lease = lease
        self.last = dataclasses.replace(snapshot, location=self.store.locator(snapshot_id))
        return snapshot_id

    def write_running(self) -> None:
        """Write the current tool step with the ledger as it is now (before / after a call)."""
        step = self.run.step_start
        if step is None or self.store is None:
            return
        bp = self.tool_break_point(None)
        snap = self.snapshot("tool_invoker", None, bp, status="running")
        written = self.written
        append = getattr(self.store, "append_entries", None)
        if (
            written is not None
            and append is not None
            and written[0] is step
            and written[1] == self.current
            and _same(written[3], snap.tool_execution_decisions)
        ):
            known = written[2]
            changed = {k: v for k, v in snap.ledger.items() if known.get(k) is not v}
            if len(known) + sum(k not in known for k in changed) == len(snap.ledger):  # nothing was dropped
                if changed:
                    append(written[1], changed, self.cache)
                self.written = (step, written[1], snap.ledger, snap.tool_execution_decisions)
                assert self.last is not None
                self.last = dataclasses.replace(snap, location=self.last.location)
                self._audit(snap.ledger)
                return
        if self.current is None:
            self.current = self._create(snap, bp, step.visits["tool_invoker"])
        else:
            self._record(self.current, snap)
        self.written = (step, self.current, snap.ledger, snap.tool_execution_decisions)
        self._audit(snap.ledger)

    def pause(self, snapshot: AgentSnapshot, held: list[ToolCall]) -> BreakpointException:
        """Write the pause snapshot (where a store is known) and return the exception to raise."""
        where: str | None = None
        inner = snapshot.break_point.break_point
        if self.store is None and inner.snapshot_file_path:
            self.store = self._open(Path(str(inner.snapshot_file_path)))
        if self.store is not None:
            self._store_pause(snapshot)
            assert self.last is not None
            snapshot, where = self.last, self.last.location
        if held:
            names = [c.id or "" for c in held]
            return HITLBreakpointException(
                f"Tool execution for '{held[0].tool_name}' requires user confirmation.",
                snapshot=snapshot,
                snapshot_file_path=where,
                break_point=snapshot.break_point,
                tool_name=held[0].tool_name,
                tool_call_id=names[0],
                tool_call_ids=names,
            )
        return BreakpointException(
            f"Breaking at component {inner.component_name} at visit count {inner.visit_count}",
            snapshot=snapshot,
            snapshot_file_path=where,
            break_point=snapshot.break_point,
        )

    def _store_pause(self, snapshot: AgentSnapshot) -> None:
        """Write a pause: a new record, or a new id for the record this run resumed, or a rewrite.

        The record this run resumed keeps saying where the run went (``continue_in``); a record this run
        created itself is rewritten in place (nobody else knows its id).
        """
        assert self.store is not None
        visit = snapshot.break_point.break_point.visit_count
        if self.current is None:
            self.current = self._create(snapshot, snapshot.break_point, visit)
        elif self.current == self.resumed_id:
            name = snapshot_file_name(snapshot.break_point, visit)
            self.written = None
            self.current = self.store.continue_in(self.current, snapshot, name, self.cache)
            self.last = dataclasses.replace(snapshot, location=self.store.locator(self.current))
        else:
            self._record(self.current, snapshot)

    def finish(self, state: State) -> None:
        """Mark the run's record ``done`` with its outcome (no record: nothing to do)."""
        if self.current is None or self.last is None:
            return
        messages = state.data["messages"]
        outcome: dict[str, Any] = {"exit_reason": state.data["exit_reason"]}
        if messages:
            try:
                outcome["last_message"] = encode_value(messages[-1].to_dict(), "last_message")
            except Exception:
                outcome["last_message"] = None
        final = dataclasses.replace(self.last, status="done", outcome=outcome)
        if self.ledger is not None:  # decisions and given-up outcomes that no tool call wrote yet
            final = dataclasses.replace(
                final, ledger=self.ledger.snapshot_entries(), tool_execution_decisions=list(self.ledger.decisions)
            )
        self._record(self.current, final)
        self._audit(final.ledger)

    def close(self) -> None:
        """Release the claim on the run's record (the run ended, paused or failed); close a store it opened.

        When a cancelled ``run_async`` left sync tools running in worker threads, this happens when the last of
        them has recorded its outcome (:meth:`Ledger.when_idle`).
        """
        if self.closed:
            return
        self.closed = True
        lease, self.lease = self.lease, None
        store = self.store if self.owns_store else None
        if self.ledger is None:
            let_go(lease, store)
        else:
            self.ledger.when_idle(lambda: let_go(lease, store))

    def _open(self, directory: Path) -> Any:
        from handrail.stores.snapshot_file import FileSnapshotStore

        self.owns_store = True
        return FileSnapshotStore(directory)


def _same(old: list[ToolExecutionDecision], new: list[ToolExecutionDecision]) -> bool:
    """Whether two lists hold the very same decisions (objects), in order."""
    return len(old) == len(new) and all(a is b for a, b in zip(old, new, strict=True))
