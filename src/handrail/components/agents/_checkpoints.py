"""Breakpoints, approval pauses and the durable snapshot file of one run (DESIGN.md §3.10).

The step machine asks :class:`Checkpoints` whether a breakpoint fires and builds snapshots from it
(pure); the drivers execute the :class:`Pause` and :class:`Finish` effects, and the ledger calls
:meth:`Checkpoints.write_running` before and after each tool call of a durable run (file I/O).

A durable run keeps one *current file*: the snapshot it was resumed from, or a file it creates in
its snapshot directory at its first tool call. Every write replaces that file atomically. At a pause
the file is written once more and renamed to a fresh name (unique per pause); when it was the
snapshot this run resumed, a record is left under the old name saying where the run continued
(status ``resumed``). A finished run marks its file ``done``. The file's lock is held from the first
write (or the resume) until the run ends, so no other process resumes a run that is still going.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

from handrail.components.agents._ledger import Ledger
from handrail.core.files import FileLock, lock_path_for
from handrail.core.typed_json import decode_value, encode_value
from handrail.dataclasses.breakpoints import (
    AgentBreakpoint,
    BreakpointException,
    HITLBreakpointException,
    ToolBreakpoint,
)
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import AgentSnapshot, MessageCache, snapshot_file_name, write_snapshot
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, SnapshotUnavailableError

__all__ = ["Checkpoints", "Finish", "Pause"]

Position = Literal["chat_generator", "tool_invoker"]


@dataclass(slots=True)
class _Step:
    """What a durable tool step writes: the history up to the calls and the State as the step began."""

    messages: list[ChatMessage]
    state: dict[str, Any]
    visits: dict[str, int]
    tool_visits: dict[str, int]


class Checkpoints:
    """Breakpoint, pause and durability bookkeeping of one run.

    Args:
        break_point: The debugging breakpoint of this run, or None.
        directory: Where snapshot files go (a breakpoint's or a pausing strategy's directory), or None.
        agent_name: The label put into snapshots and file names ("" for none).
        fingerprint: The agent definition's fingerprint, recorded in every snapshot.
        metadata: Free JSON recorded in every snapshot (e.g. the agent file of a CLI run).
        ledger: The run's ledger, when calls are recorded (durable runs, pausing strategies, resumes).
        resumed: The snapshot this run resumes (its ``location`` is the current file), or None.
        lock: The lock held on the resumed file, or None.
    """

    def __init__(
        self,
        *,
        break_point: AgentBreakpoint | None,
        directory: Path | None,
        agent_name: str,
        fingerprint: dict[str, Any],
        metadata: dict[str, Any],
        ledger: Ledger | None,
        resumed: AgentSnapshot | None = None,
        lock: FileLock | None = None,
    ) -> None:
        self.break_point = break_point
        self.directory = directory
        self.agent_name = agent_name
        self.fingerprint = fingerprint
        self.metadata = metadata
        self.ledger = ledger
        self.visits: dict[str, int] = dict(resumed.component_visits) if resumed else {}
        self.visits.setdefault("chat_generator", 0)
        self.visits.setdefault("tool_invoker", 0)
        self.tool_visits: dict[str, int] = dict(resumed.tool_visits) if resumed else {}
        self.cache = MessageCache()
        self.resumed_path = Path(resumed.location) if resumed is not None and resumed.location else None
        self.current: Path | None = self.resumed_path
        self.lock = lock
        self.last: AgentSnapshot | None = resumed
        self.step: _Step | None = None
        if ledger is not None and self.durable:
            ledger.on_change = self.write_running

    @property
    def durable(self) -> bool:
        """True when this run writes its ledger to a file."""
        return self.current is not None or self.directory is not None

    # -- breakpoints (pure) ----------------------------------------------------------------------

    def breaks_at_model(self) -> bool:
        """True when the breakpoint targets the chat generator at the current visit."""
        bp = self.break_point.break_point if self.break_point else None
        return bp is not None and not isinstance(bp, ToolBreakpoint) and bp.visit_count == self.visits["chat_generator"]

    def breaks_at_tools(self, calls: list[ToolCall]) -> bool:
        """True when the breakpoint targets this tool step (for its tool, or any) at the current visit."""
        bp = self.break_point.break_point if self.break_point else None
        if not isinstance(bp, ToolBreakpoint):
            return False
        if bp.tool_name is None:
            return bp.visit_count == self.visits["tool_invoker"]
        if all(c.tool_name != bp.tool_name for c in calls):
            return False
        return bp.visit_count == self.tool_visits.get(bp.tool_name, 0)

    def count_model_visit(self) -> None:
        """The chat generator answered."""
        self.visits["chat_generator"] += 1

    def count_tool_visit(self, calls: list[ToolCall]) -> None:
        """A tool step finished; ``calls`` were its calls."""
        self.visits["tool_invoker"] += 1
        for name in {c.tool_name for c in calls}:
            self.tool_visits[name] = self.tool_visits.get(name, 0) + 1
        self.step = None

    # -- snapshots (pure) ------------------------------------------------------------------------

    def begin_step(self, state: State) -> None:
        """Remember the State as a tool step begins.

        The copy goes through the snapshot encoding, so an unserializable value fails here, naming its key,
        before any call runs.
        """
        if self.ledger is None:
            return
        values = {k: v for k, v in state.data.items() if k != "messages"}
        copied = {k: decode_value(encode_value(v, f"state[{k!r}]"), f"state[{k!r}]") for k, v in values.items()}
        self.step = _Step(list(state.data["messages"]), copied, dict(self.visits), dict(self.tool_visits))

    def snapshot(
        self,
        position: Position,
        state: State | None,
        break_point: AgentBreakpoint,
        status: Literal["paused", "running"] = "paused",
    ) -> AgentSnapshot:
        """The snapshot of the run at ``position`` (at a tool step: the State as the step began)."""
        step = self.step if position == "tool_invoker" else None
        if step is not None:
            messages, values, visits, tool_visits = step.messages, step.state, step.visits, step.tool_visits
        else:
            assert state is not None
            messages = list(state.data["messages"])
            values = {k: v for k, v in state.data.items() if k != "messages"}
            visits, tool_visits = dict(self.visits), dict(self.tool_visits)
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
        where = str(self.directory) if self.directory else None
        visit = self.visits["tool_invoker"] if tool_name is None else self.tool_visits.get(tool_name, 0)
        return AgentBreakpoint(self.agent_name, ToolBreakpoint("tool_invoker", tool_name, visit, where))

    # -- file I/O (drivers and the ledger call these) --------------------------------------------

    def _write(self, snapshot: AgentSnapshot, path: Path) -> None:
        self.last = write_snapshot(snapshot, path, self.cache)

    def _claim_new_file(self, break_point: AgentBreakpoint, visit: int) -> Path:
        assert self.directory is not None
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(
                f"The snapshot directory {self.directory} cannot be created or used: {exc.strerror or exc}."
            ) from exc
        path = self.directory / snapshot_file_name(break_point, visit)
        lock = FileLock(lock_path_for(path), timeout=0)
        if not lock.acquire():  # a fresh random name: only a clash of 32 random bits gets here
            raise SnapshotUnavailableError(f"Snapshot file {path} is locked by another process.")
        self.lock = lock
        return path

    def write_running(self) -> None:
        """Write the current tool step with the ledger as it is now (before / after a call)."""
        step = self.step
        if step is None:
            return
        bp = self.tool_break_point(None)
        snap = self.snapshot("tool_invoker", None, bp, status="running")
        if self.current is None:
            self.current = self._claim_new_file(bp, step.visits["tool_invoker"])
        self._write(snap, self.current)

    def pause(self, snapshot: AgentSnapshot, held: list[ToolCall]) -> BreakpointException:
        """Write the pause snapshot (where a location is known) and return the exception to raise."""
        path: Path | None = None
        inner = snapshot.break_point.break_point
        if self.current is not None or self.directory is not None or inner.snapshot_file_path:
            path = self._pause_file(snapshot)
            snapshot = self.last if self.last is not None else snapshot
        if held:
            names = [c.id or "" for c in held]
            return HITLBreakpointException(
                f"Tool execution for '{held[0].tool_name}' requires user confirmation.",
                snapshot=snapshot,
                snapshot_file_path=str(path) if path else None,
                break_point=snapshot.break_point,
                tool_name=held[0].tool_name,
                tool_call_id=names[0],
                tool_call_ids=names,
            )
        return BreakpointException(
            f"Breaking at component {inner.component_name} at visit count {inner.visit_count}",
            snapshot=snapshot,
            snapshot_file_path=str(path) if path else None,
            break_point=snapshot.break_point,
        )

    def _pause_file(self, snapshot: AgentSnapshot) -> Path:
        inner = snapshot.break_point.break_point
        visit = inner.visit_count
        if self.current is None:
            if self.directory is None:
                self.directory = Path(str(inner.snapshot_file_path))
            self.current = self._claim_new_file(snapshot.break_point, visit)
            self._write(snapshot, self.current)
            return self.current
        old = self.current
        self._write(snapshot, old)
        target = old.parent / snapshot_file_name(snapshot.break_point, visit)
        os.replace(old, target)
        self.last = dataclasses.replace(self.last or snapshot, location=str(target.resolve()))
        self.current = target
        if old == self.resumed_path:
            tombstone = dataclasses.replace(snapshot, status="resumed", continued_in=target.name)
            write_snapshot(tombstone, old, self.cache)
        return target

    def finish(self, state: State) -> None:
        """Mark the current file ``done`` with the run's outcome (no file: nothing to do)."""
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
        self._write(final, self.current)

    def close(self) -> None:
        """Release the lock on the current file (the run ended, paused or failed)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None


@dataclass(slots=True)
class Pause:
    """Effect: stop the run here. The driver writes the snapshot and raises the breakpoint exception."""

    checkpoints: Checkpoints
    snapshot: AgentSnapshot
    held: list[ToolCall]
    """Calls held for a decision (empty for a debugging breakpoint)."""

    def execute(self) -> NoReturn:
        """Write and raise."""
        raise self.checkpoints.pause(self.snapshot, self.held)


@dataclass(slots=True)
class Finish:
    """Effect: the run ended; mark its durable file done. Answer with None."""

    checkpoints: Checkpoints
    state: State

    def execute(self) -> None:
        """Write the ``done`` record."""
        self.checkpoints.finish(self.state)
