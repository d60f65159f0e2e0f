"""Deciding paused tool calls after the fact: read snapshots, list what waits, record decisions.

A run paused by :class:`~handrail.human_in_the_loop.breakpoint_strategy.BreakpointConfirmationStrategy`
leaves a snapshot file whose last message holds the step's tool calls and whose ledger marks the
calls that wait for a person as ``pending``. The helpers here read those files and write decisions
into them; the Agent applies the decisions when the run is resumed with
``Agent.run(messages=[], snapshot=...)``. Calls are always decided by their ``tool_call_id``,
never by position.

Example (in memory, the Haystack way)::

    calls, descriptions = get_tool_calls_and_descriptions_from_snapshot(snapshot)
    decision = ToolExecutionDecision(calls[0]["tool_name"], execute=True, tool_call_id=calls[0]["id"])
    result = agent.run(messages=[], snapshot=with_decision(snapshot, decision))

Example (on disk, from another process)::

    for item in list_pending("approvals/"):
        record_decision(item.path, ToolExecutionDecision(item.tool_name, execute=True,
                                                         tool_call_id=item.tool_call_id))
"""

from __future__ import annotations

import copy
import dataclasses
import getpass
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from handrail.core.files import FileLock, lock_path_for
from handrail.dataclasses.chat_message import ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, LedgerStatus, load_snapshot, write_snapshot
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    DecisionConflictError,
    SnapshotUnavailableError,
)

__all__ = [
    "PendingApproval",
    "awaiting_decision",
    "get_tool_calls_and_descriptions_from_snapshot",
    "list_paused",
    "list_pending",
    "record_decision",
    "snapshot_files",
    "unavailable_reason",
    "with_decision",
]

OnError = Callable[[Path, Exception], None]
"""Called with a snapshot file that cannot be read and the error; the file is skipped."""


def _check_snapshot(agent_snapshot: Any) -> AgentSnapshot:
    if not isinstance(agent_snapshot, AgentSnapshot):
        raise ConfigurationTypeError(f"Expected an AgentSnapshot, got {type(agent_snapshot).__name__}.")
    return agent_snapshot


def _name(snapshot: AgentSnapshot) -> str:
    return snapshot.snapshot_id or "(in memory)"


def awaiting_decision(agent_snapshot: AgentSnapshot) -> list[ToolCall]:
    """The paused step's calls that still wait for a decision, in call order.

    A call waits when its ledger entry is ``pending`` (or it has none yet) and no decision for its
    id is in ``tool_execution_decisions``. Calls that ran before the pause (``done``/``failed``)
    and decided calls do not wait.

    Args:
        agent_snapshot: Any snapshot (one paused before the model call has no calls: ``[]``).

    Returns:
        The waiting calls (the snapshot's own objects: do not mutate them).

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
    """
    snapshot = _check_snapshot(agent_snapshot)
    decided = {d.tool_call_id for d in snapshot.tool_execution_decisions}
    waiting = []
    for call in snapshot.pending_tool_calls:
        entry = snapshot.ledger.get(call.id or "")
        if call.id not in decided and (entry is None or entry.status == "pending"):
            waiting.append(call)
    return waiting


def get_tool_calls_and_descriptions_from_snapshot(
    agent_snapshot: AgentSnapshot, breakpoint_tool_only: bool = True
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Return the paused calls as dicts and the tools' descriptions, without mutating the snapshot.

    Args:
        agent_snapshot: A snapshot taken before a tool step (``position == "tool_invoker"``).
        breakpoint_tool_only: True: only the calls awaiting a decision (see :func:`awaiting_decision`);
            False: every call of the paused step.

    Returns:
        ``(calls, descriptions)``: ``calls`` is a list of ``ToolCall.to_dict()`` dicts (deep copies;
        keys ``tool_name``, ``arguments``, ``id``, ``extra``) in call order; ``descriptions`` maps
        each tool name in the snapshot's fingerprint to its description.

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
        ConfigurationError: When the snapshot was not taken before a tool step (a ValueError, as in
            Haystack).
    """
    snapshot = _check_snapshot(agent_snapshot)
    if snapshot.position != "tool_invoker":
        raise ConfigurationError(
            f"Snapshot {_name(snapshot)} was taken before the model call (position {snapshot.position!r}), "
            f"not before a tool step; it holds no tool calls to decide."
        )
    calls = awaiting_decision(snapshot) if breakpoint_tool_only else snapshot.pending_tool_calls
    tools = snapshot.fingerprint.get("tools")
    descriptions: dict[str, str] = {}
    if isinstance(tools, dict):
        for name, info in tools.items():
            if isinstance(info, dict) and isinstance(info.get("description"), str):
                descriptions[str(name)] = info["description"]
    return [copy.deepcopy(call.to_dict()) for call in calls], descriptions


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One paused tool call waiting for a person, as :func:`list_pending` reports it."""

    snapshot_id: str
    """The snapshot file's stem (what the CLI takes as SNAPSHOT_ID)."""
    tool_name: str
    """The tool the call is for."""
    arguments: dict[str, Any]
    """The arguments the model proposed (a copy)."""
    tool_call_id: str
    """The call's id: decisions name it."""
    created_at: datetime
    """When the run paused (the snapshot's timestamp, UTC)."""
    path: Path
    """The snapshot file (absolute)."""


def snapshot_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The snapshot files of a directory: ``*.json``, not hidden (temp and lock files start with ``.``).

    Args:
        directory: The snapshot directory.

    Returns:
        Absolute paths, sorted by name.

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    folder = Path(directory).absolute()
    if not folder.exists():
        raise FileNotFoundError(f"Snapshot directory {folder} does not exist.")
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a directory.")
    return sorted(p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".") and p.is_file())


def _warn(path: Path, exc: Exception) -> None:
    warnings.warn(f"Skipping snapshot file {path}: {exc}", UserWarning, stacklevel=3)


def list_paused(
    directory: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), on_error: OnError | None = None
) -> list[AgentSnapshot]:
    """Load the snapshots of a directory whose status is ``paused``, oldest first.

    Args:
        directory: The snapshot directory.
        allowed_modules: Module prefixes trusted for classes named inside the files (state values).
        on_error: Called with each file that cannot be read (truncated, invalid, unknown version,
            a class outside the allowlist) and the error; default: a ``UserWarning`` naming the file.
            Such files are skipped. A file that vanishes while listing (renamed by a running
            agent) is skipped silently.

    Returns:
        The paused snapshots (``location`` set), sorted by timestamp, then id.

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    report = on_error if on_error is not None else _warn
    allowed = tuple(allowed_modules)
    found = []
    for path in snapshot_files(directory):
        try:
            snapshot = load_snapshot(path, allowed_modules=allowed)
        except FileNotFoundError:
            continue
        except (ConfigurationError, OSError, UnicodeDecodeError) as exc:
            report(path, exc)
            continue
        if snapshot.status == "paused":
            found.append(snapshot)
    return sorted(found, key=lambda s: (s.timestamp.timestamp(), s.snapshot_id or ""))


def list_pending(
    directory: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), on_error: OnError | None = None
) -> list[PendingApproval]:
    """List the tool calls waiting for a decision in a snapshot directory, oldest first.

    Only snapshots with status ``paused`` count (finished and resumed ones are never listed);
    within one snapshot, calls keep their order.

    Args:
        directory: The snapshot directory.
        allowed_modules: See :func:`list_paused`.
        on_error: See :func:`list_paused` (default: a ``UserWarning`` naming the unreadable file).

    Returns:
        One :class:`PendingApproval` per waiting call.

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    pending = []
    for snapshot in list_paused(directory, allowed_modules=allowed_modules, on_error=on_error):
        assert snapshot.location is not None and snapshot.snapshot_id is not None  # set by load_snapshot
        for call in awaiting_decision(snapshot):
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            pending.append(
                PendingApproval(
                    snapshot_id=snapshot.snapshot_id,
                    tool_name=call.tool_name,
                    arguments=copy.deepcopy(arguments),
                    tool_call_id=call.id or "",
                    created_at=snapshot.timestamp,
                    path=Path(snapshot.location),
                )
            )
    return pending


def unavailable_reason(agent_snapshot: AgentSnapshot) -> str | None:
    """Why decisions can no longer be recorded in this snapshot, or None when it is paused.

    Args:
        agent_snapshot: The snapshot.

    Returns:
        None for status ``paused``; else a sentence naming the snapshot and what happened to it
        (finished with its exit reason, resumed and where it continued, or being resumed).
    """
    snapshot = _check_snapshot(agent_snapshot)
    name = _name(snapshot)
    if snapshot.status == "paused":
        return None
    if snapshot.status == "done":
        reason = (snapshot.outcome or {}).get("exit_reason")
        return f"Snapshot {name} belongs to a finished run" + (f" (exit reason: {reason})." if reason else ".")
    if snapshot.status == "resumed":
        where = f"; it continued in {snapshot.continued_in}" if snapshot.continued_in else ""
        return f"Snapshot {name} was already resumed{where}."
    return f"Snapshot {name} is being resumed (status {snapshot.status!r})."


def _schema_problem(schema: Any, arguments: dict[str, Any]) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError, best_match

    try:
        Draft202012Validator.check_schema(schema)
        error = best_match(Draft202012Validator(schema).iter_errors(arguments))
    except SchemaError as exc:
        return f"the tool's recorded JSON Schema is invalid: {exc.message}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at '{where}')" if where else str(error.message)


def _same(a: ToolExecutionDecision, b: ToolExecutionDecision, call: ToolCall) -> bool:
    """Equal in what they do: who decided does not matter, and an edit to the proposed arguments is a confirm."""

    def effect(d: ToolExecutionDecision) -> tuple[Any, ...]:
        params = None if d.final_tool_params == call.arguments else d.final_tool_params
        return (d.tool_name, d.execute, params if d.execute else None, d.feedback or None)

    return effect(a) == effect(b)


def _describe(decision: ToolExecutionDecision) -> str:
    if not decision.execute:
        return "reject" + (f" ({decision.feedback!r})" if decision.feedback else "")
    if decision.final_tool_params is not None:
        return f"approve with arguments {decision.final_tool_params!r}"
    return "approve"


def _target_call(snapshot: AgentSnapshot, decision: ToolExecutionDecision) -> ToolCall:
    """The paused call a decision is for; raises naming the waiting ids when there is none."""
    name = _name(snapshot)
    waiting_ids = [c.id for c in awaiting_decision(snapshot)]
    if decision.tool_call_id is None:
        raise ConfigurationError(
            f"A decision for snapshot {name} must name its call (tool_call_id); calls awaiting a decision: "
            f"{waiting_ids}."
        )
    call = next((c for c in snapshot.pending_tool_calls if c.id == decision.tool_call_id), None)
    if call is None:
        raise ConfigurationError(
            f"Call '{decision.tool_call_id}' is not a paused call of snapshot {name}; calls awaiting a decision: "
            f"{waiting_ids}."
        )
    if call.tool_name != decision.tool_name:
        raise ConfigurationError(
            f"Call '{call.id}' of snapshot {name} is to '{call.tool_name}', but the decision is for "
            f"'{decision.tool_name}'."
        )
    return call


def _existing(snapshot: AgentSnapshot, call_id: str) -> ToolExecutionDecision | None:
    found = next((d for d in snapshot.tool_execution_decisions if d.tool_call_id == call_id), None)
    if found is None:
        entry = snapshot.ledger.get(call_id)
        found = entry.decision if entry is not None else None
    return found


def with_decision(
    agent_snapshot: AgentSnapshot, decision: ToolExecutionDecision, *, decided_by: str | None = None
) -> AgentSnapshot:
    """Return a copy of the snapshot with ``decision`` recorded for its call (the snapshot is not mutated).

    The decision goes into ``tool_execution_decisions`` and into the call's ledger entry (status
    ``approved`` or ``rejected``, ``decision``, ``decided_by``, ``decided_at``; an edit's arguments become
    the entry's ``arguments``). Recording the same decision again returns the snapshot unchanged.

    Args:
        agent_snapshot: A paused snapshot taken before a tool step.
        decision: The decision; ``tool_call_id`` must name a paused call of the step.
        decided_by: Who decided; default the decision's own ``decided_by``, else the OS user.

    Returns:
        The new snapshot (``location`` kept), or ``agent_snapshot`` itself for a repeated decision.

    Raises:
        ConfigurationTypeError: When the arguments are not an AgentSnapshot and a ToolExecutionDecision.
        SnapshotUnavailableError: When the snapshot is not ``paused`` (finished, resumed, being resumed).
        ConfigurationError: When the snapshot is not at a tool step, the call is not one of its paused
            calls (the message lists the calls awaiting a decision), it ran already, the tool name
            differs, or ``final_tool_params`` is refused by schema validation against the tool's
            JSON Schema recorded in the fingerprint.
        DecisionConflictError: When a different decision is already recorded for the call.
    """
    snapshot = _check_snapshot(agent_snapshot)
    if not isinstance(decision, ToolExecutionDecision):
        raise ConfigurationTypeError(f"Expected a ToolExecutionDecision, got {type(decision).__name__}.")
    reason = unavailable_reason(snapshot)
    if reason is not None:
        raise SnapshotUnavailableError(f"{reason} Decisions can no longer be recorded in it.")
    if snapshot.position != "tool_invoker":
        raise ConfigurationError(f"Snapshot {_name(snapshot)} was taken before the model call; no call waits.")
    call = _target_call(snapshot, decision)
    call_id = decision.tool_call_id
    assert call_id is not None  # checked by _target_call
    previous = _existing(snapshot, call_id)
    if previous is not None:
        if _same(previous, decision, call):
            return snapshot
        raise DecisionConflictError(
            f"Call '{call_id}' to '{call.tool_name}' in snapshot {_name(snapshot)} was already decided "
            f"({_describe(previous)}, by {previous.decided_by or 'unknown'}); refusing a different decision "
            f"({_describe(decision)})."
        )
    entry = snapshot.ledger.get(call_id)
    if entry is not None and entry.status != "pending":
        raise ConfigurationError(
            f"Call '{call_id}' to '{call.tool_name}' in snapshot {_name(snapshot)} is not pending (status "
            f"{entry.status!r}); calls awaiting a decision: {[c.id for c in awaiting_decision(snapshot)]}."
        )
    _check_edit(snapshot, call, decision)
    who = decided_by or decision.decided_by or _os_user()
    recorded = dataclasses.replace(decision, decided_by=who)
    now = datetime.now(UTC)
    status: LedgerStatus = "approved" if decision.execute else "rejected"
    if entry is None:
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        entry = LedgerEntry(call_id, call.tool_name, "pending", copy.deepcopy(arguments))
    ledger = dict(snapshot.ledger)
    edited = decision.final_tool_params if decision.execute else None
    arguments = copy.deepcopy(edited) if edited is not None else entry.arguments
    ledger[call_id] = dataclasses.replace(
        entry, status=status, arguments=arguments, decision=recorded, decided_by=who, decided_at=now, updated_at=now
    )
    return dataclasses.replace(
        snapshot, tool_execution_decisions=[*snapshot.tool_execution_decisions, recorded], ledger=ledger
    )


def _check_edit(snapshot: AgentSnapshot, call: ToolCall, decision: ToolExecutionDecision) -> None:
    if not decision.execute or decision.final_tool_params is None:
        return
    tools = snapshot.fingerprint.get("tools")
    info = tools.get(call.tool_name) if isinstance(tools, dict) else None
    schema = info.get("parameters") if isinstance(info, dict) else None
    if schema is None:
        return  # no recorded schema: the Agent validates the edit when the run resumes
    problem = _schema_problem(schema, decision.final_tool_params)
    if problem is not None:
        raise ConfigurationError(
            f"The edited arguments for call '{call.id}' to '{call.tool_name}' were refused by schema validation: "
            f"{problem}. Nothing was recorded."
        )


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment nor the password database
        return "unknown"


def record_decision(
    path: str | os.PathLike[str],
    decision: ToolExecutionDecision,
    *,
    decided_by: str | None = None,
    allowed_modules: Iterable[str] = (),
    lock_timeout: float = 5.0,
) -> AgentSnapshot:
    """Record a decision in a snapshot file, atomically, under the file's lock.

    Under ``FileLock(lock_path_for(path))`` the file is read again (it, not any copy in memory, is
    the source of truth), checked and updated as :func:`with_decision` describes, and rewritten
    atomically (temp file, fsync, rename; mode 0600). A refused decision writes nothing; the same
    decision again writes nothing.

    Args:
        path: The snapshot file.
        decision: The decision; ``tool_call_id`` names the call.
        decided_by: Who decided; default the decision's ``decided_by``, else the OS user.
        allowed_modules: Module prefixes trusted for classes named inside the file.
        lock_timeout: Seconds to wait for the lock (a resuming run holds it for its whole run).

    Returns:
        The snapshot as it now is on disk (``location`` set).

    Raises:
        FileNotFoundError: When the file does not exist.
        SnapshotError: When the file is truncated, invalid or of an unknown schema version.
        SnapshotUnavailableError: When the lock is held past ``lock_timeout`` ("is being resumed"), or
            the snapshot is not paused any more.
        ConfigurationError: See :func:`with_decision` (unknown or non-pending call, schema refusal).
        DecisionConflictError: When a different decision is already recorded for the call.
    """
    file = Path(path).absolute()
    if not file.is_file():
        raise FileNotFoundError(f"Snapshot file {file} does not exist.")
    lock = FileLock(lock_path_for(file), timeout=lock_timeout)
    if not lock.acquire():
        raise SnapshotUnavailableError(
            f"Snapshot {file.stem} is being resumed (its lock {lock_path_for(file)} is held); "
            f"decide again when that run has paused or finished."
        )
    try:
        snapshot = load_snapshot(file, allowed_modules=allowed_modules)
        updated = with_decision(snapshot, decision, decided_by=decided_by)
        if updated is snapshot:
            return snapshot
        return write_snapshot(updated, file)
    finally:
        lock.release()
