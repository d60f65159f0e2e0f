"""What every snapshot store shares: reading a paused snapshot, validating and recording a decision, ids.

The rules for a decision are the same in a directory of files, a SQLite file and a PostgreSQL database:

* the snapshot must be ``paused`` (not finished, resumed or being resumed) and taken before a tool step;
* the decision names a call of the paused step by ``tool_call_id``, for the same tool, whose ledger entry is
  still ``pending``;
* edited arguments must pass the tool's JSON Schema recorded in the snapshot's fingerprint;
* a second, different decision for a decided call is a conflict; the same decision again changes nothing.

The stores apply :func:`with_decision` inside their own atomic read-check-write (a lock, a transaction), so
the rules hold across processes. ``handrail.human_in_the_loop.snapshots`` re-exports the public helpers.
"""

from __future__ import annotations

import copy
import dataclasses
import getpass
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from handrail.dataclasses.chat_message import ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision, check_decided_by
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, LedgerStatus, snapshot_file_name
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    DecisionConflictError,
    SnapshotFinishedError,
    SnapshotInterruptedError,
    SnapshotResumedError,
    SnapshotUnavailableError,
)
from handrail.stores.types import PendingApproval
from handrail.tools._validation import unknown_parameters

__all__ = [
    "awaiting_decision",
    "check_snapshot",
    "check_snapshot_id",
    "id_from_name",
    "new_snapshot_id",
    "pending_approvals",
    "recorded_decision",
    "unavailable_error",
    "unavailable_reason",
    "waits_for_decision",
    "with_decision",
]

_BAD_ID = re.compile(r"[/\\#\x00]")
_MAX_ID = 200


def check_snapshot(agent_snapshot: Any) -> AgentSnapshot:
    """Return ``agent_snapshot`` when it is an AgentSnapshot.

    Raises:
        ConfigurationTypeError: When it is anything else.
    """
    if not isinstance(agent_snapshot, AgentSnapshot):
        raise ConfigurationTypeError(f"Expected an AgentSnapshot, got {type(agent_snapshot).__name__}.")
    return agent_snapshot


def check_snapshot_id(snapshot_id: Any) -> str:
    r"""Return a valid snapshot id.

    A valid id is a non-empty str of at most 200 characters, without ``/``, ``\``, ``#`` or NUL, not starting
    with ``.`` (ids name files in a directory store and follow ``#`` in a locator).

    Raises:
        ConfigurationTypeError: When the id is not a str.
        ConfigurationError: When it is empty, too long, starts with ``.`` or holds a forbidden character.
    """
    if not isinstance(snapshot_id, str):
        raise ConfigurationTypeError(f"A snapshot id must be a str, got {type(snapshot_id).__name__}.")
    if not snapshot_id or snapshot_id.startswith(".") or len(snapshot_id) > _MAX_ID or _BAD_ID.search(snapshot_id):
        raise ConfigurationError(
            f"Invalid snapshot id {snapshot_id!r:.80}: use 1 to {_MAX_ID} characters, not starting with '.', "
            "without '/', '\\', '#' or NUL."
        )
    return snapshot_id


def id_from_name(name: str) -> str:
    """The snapshot id for a name given to ``create`` / ``continue_in``: the name without a ``.json`` suffix.

    Args:
        name: E.g. ``snapshot_file_name(break_point, visit)`` (``"agent_tool_invoker_0_..._1a2b3c4d.json"``).

    Returns:
        The id (``"agent_tool_invoker_0_..._1a2b3c4d"``).

    Raises:
        ConfigurationError: When the resulting id is invalid (see :func:`check_snapshot_id`).
    """
    if not isinstance(name, str):
        raise ConfigurationTypeError(f"A snapshot name must be a str, got {type(name).__name__}.")
    return check_snapshot_id(name.removesuffix(".json"))


def new_snapshot_id(snapshot: AgentSnapshot) -> str:
    """A fresh id for ``save``: the stem of ``snapshot_file_name`` (breakpoint, visit, UTC time, 8 random hex)."""
    visit = snapshot.break_point.break_point.visit_count
    return snapshot_file_name(snapshot.break_point, visit).removesuffix(".json")


def _name(snapshot: AgentSnapshot) -> str:
    """The snapshot's id in its store: after ``#`` in a database locator, else the file stem."""
    location = snapshot.location
    if location and "#" in location and "://" in location:
        return location.rpartition("#")[2]
    return snapshot.snapshot_id or "(in memory)"


def awaiting_decision(agent_snapshot: AgentSnapshot) -> list[ToolCall]:
    """The paused step's calls that still wait for a decision, in call order.

    A call waits when its ledger entry is ``pending`` (or it has none yet) and no decision answers it
    (:func:`recorded_decision`). Calls that ran before the pause (``done``/``failed``) and decided calls
    do not wait.

    Args:
        agent_snapshot: Any snapshot (one paused before the model call has no calls: ``[]``).

    Returns:
        The waiting calls (the snapshot's own objects: do not mutate them).

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
    """
    snapshot = check_snapshot(agent_snapshot)
    waiting = []
    for call in snapshot.pending_tool_calls:
        entry = snapshot.ledger.get(call.id or "")
        if (entry is None or entry.status == "pending") and recorded_decision(snapshot, call.id) is None:
            waiting.append(call)
    return waiting


def pending_approvals(snapshot: AgentSnapshot, snapshot_id: str, path: Path | None = None) -> list[PendingApproval]:
    """One :class:`PendingApproval` per call of ``snapshot`` awaiting a decision (none unless it is paused).

    Args:
        snapshot: The snapshot.
        snapshot_id: Its id in its store.
        path: The snapshot file, for a directory store.

    Returns:
        The entries, in call order (arguments deep-copied; a call whose arguments are not a dict shows ``{}``).
    """
    if snapshot.status != "paused":
        return []
    pending = []
    for call in awaiting_decision(snapshot):
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        pending.append(
            PendingApproval(
                snapshot_id=snapshot_id,
                tool_name=call.tool_name,
                arguments=copy.deepcopy(arguments),
                tool_call_id=call.id or "",
                created_at=snapshot.timestamp,
                path=path,
            )
        )
    return pending


def unavailable_reason(agent_snapshot: AgentSnapshot) -> str | None:
    """Why decisions can no longer be recorded in this snapshot, or None when it is paused.

    Args:
        agent_snapshot: The snapshot.

    Returns:
        None for status ``paused``; else a sentence naming the snapshot and what happened to it
        (finished with its exit reason, resumed and where it continued, or being resumed): the message of
        :func:`unavailable_error`.

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
    """
    found = unavailable_error(agent_snapshot)
    return None if found is None else str(found)


INTERRUPTED_CAUSE = "a run or resume crashed, failed with an error or was cancelled"
"""Why a snapshot says 'running' while no process holds it."""


def unavailable_error(agent_snapshot: AgentSnapshot, *, held: bool | None = None) -> SnapshotUnavailableError | None:
    """The error for a snapshot that takes no decision now, or None when it is paused: one wording everywhere.

    The library (resuming, recording a decision) and the ``handrail`` command raise and print these.

    Args:
        agent_snapshot: The snapshot.
        held: Whether a process holds the snapshot's claim (None: not known). A ``running`` snapshot nobody holds
            was interrupted.

    Returns:
        :class:`~handrail.errors.SnapshotFinishedError` (status ``done``), :class:`~handrail.errors.
        SnapshotResumedError` (``resumed``), :class:`~handrail.errors.SnapshotInterruptedError` (``running``,
        ``held`` False), else a :class:`~handrail.errors.SnapshotUnavailableError` (``running``: being resumed).

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
    """
    snapshot = check_snapshot(agent_snapshot)
    name = _name(snapshot)
    if snapshot.status == "paused":
        return None
    if snapshot.status == "done":
        reason = (snapshot.outcome or {}).get("exit_reason")
        ended = f"Snapshot {name} belongs to a finished run" + (f" (exit reason: {reason})." if reason else ".")
        return SnapshotFinishedError(ended)
    if snapshot.status == "resumed":
        where = f"; it continued in {snapshot.continued_in}" if snapshot.continued_in else ""
        return SnapshotResumedError(f"Snapshot {name} was already resumed{where}.")
    if snapshot.status == "running" and held is False:
        noun = "record" if snapshot.location and "://" in snapshot.location else "file"
        return SnapshotInterruptedError(
            f"Snapshot {name} was interrupted: its {noun} says 'running' but no process holds it "
            f"({INTERRUPTED_CAUSE}), so decisions can no longer be recorded in it; calls still without a decision "
            f"pause the resumed run again under a new snapshot id, where you decide them."
        )
    return SnapshotUnavailableError(f"Snapshot {name} is being resumed (status {snapshot.status!r}).")


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


def _describe(decision: ToolExecutionDecision) -> str:
    if not decision.execute:
        return "reject" + (f" ({decision.feedback!r})" if decision.feedback else "")
    if decision.final_tool_params is not None:
        edited = json.dumps(decision.final_tool_params, ensure_ascii=False, default=repr)
        return f"approve with arguments {edited}"
    return "approve"


def _target_call(snapshot: AgentSnapshot, decision: ToolExecutionDecision) -> ToolCall:
    """The paused call a decision is for; raises naming the waiting ids when there is none.

    The waiting ids are looked up only for the message: finding them is quadratic in the step's calls.
    """
    name = _name(snapshot)
    if decision.tool_call_id is None:
        raise ConfigurationError(
            f"A decision for snapshot {name} must name its call (tool_call_id); calls awaiting a decision: "
            f"{[c.id for c in awaiting_decision(snapshot)]}."
        )
    call = next((c for c in snapshot.pending_tool_calls if c.id == decision.tool_call_id), None)
    if call is None:
        raise ConfigurationError(
            f"Call '{decision.tool_call_id}' is not a paused call of snapshot {name}; calls awaiting a decision: "
            f"{[c.id for c in awaiting_decision(snapshot)]}."
        )
    if call.tool_name != decision.tool_name:
        raise ConfigurationError(
            f"Call '{call.id}' of snapshot {name} is to '{call.tool_name}', but the decision is for "
            f"'{decision.tool_name}'."
        )
    return call


def recorded_decision(snapshot: AgentSnapshot, call_id: str | None) -> ToolExecutionDecision | None:
    """The decision known for a call of the paused step: recorded in the ledger, else given for the step.

    Looked up as the run looks it up (:meth:`ToolExecutionDecision.find`): the ledger entry's decision first,
    then a decision of ``tool_execution_decisions`` for the call's id, then one without an id for the call's
    tool when the call is the step's only call of that tool.

    Args:
        snapshot: The snapshot.
        call_id: The call's id.

    Returns:
        The decision, or None when the call has none (or ``call_id`` names no call of the paused step and the
        ledger records no decision for it).
    """
    entry = snapshot.ledger.get(call_id or "")
    recorded = entry.decision if entry is not None else None
    calls = snapshot.pending_tool_calls
    call = next((c for c in calls if c.id == call_id), None)
    if call is None:
        given = (d for d in snapshot.tool_execution_decisions if d.tool_call_id == call_id and call_id is not None)
        return recorded if recorded is not None else next(given, None)
    return ToolExecutionDecision.find(
        call, recorded=recorded, given=snapshot.tool_execution_decisions, step_calls=calls
    )


def _check_edit(snapshot: AgentSnapshot, call: ToolCall, decision: ToolExecutionDecision) -> None:
    if not decision.execute or decision.final_tool_params is None:
        return
    tools = snapshot.fingerprint.get("tools")
    info = tools.get(call.tool_name) if isinstance(tools, dict) else None
    schema = info.get("parameters") if isinstance(info, dict) else None
    if schema is None:
        return  # no recorded schema: the Agent validates the edit when the run resumes
    edited = decision.final_tool_params
    problem = _schema_problem(schema, edited) or (
        unknown_parameters(call.tool_name, schema, edited) if isinstance(schema, dict) else None
    )
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


def _check_decidable(snapshot: AgentSnapshot, decision: Any) -> None:
    if not isinstance(decision, ToolExecutionDecision):
        raise ConfigurationTypeError(f"Expected a ToolExecutionDecision, got {type(decision).__name__}.")
    found = unavailable_error(snapshot)
    if found is not None:
        raise type(found)(f"{found} Decisions can no longer be recorded in it.")
    if snapshot.position != "tool_invoker":
        raise ConfigurationError(f"Snapshot {_name(snapshot)} was taken before the model call; no call waits.")


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
        decided_by: Who decided; default (None) the decision's own ``decided_by``, else the OS user. An empty or
            blank name is refused.

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
        ConfigurationError / ConfigurationTypeError: ``decided_by`` is empty or blank, or not a str.
    """
    check_decided_by(decided_by, "decided_by")
    snapshot = check_snapshot(agent_snapshot)
    _check_decidable(snapshot, decision)
    call = _target_call(snapshot, decision)
    call_id = decision.tool_call_id
    assert call_id is not None  # checked by _target_call
    previous = recorded_decision(snapshot, call_id)
    if previous is not None:
        if decision.same_as(previous, call.arguments if isinstance(call.arguments, dict) else None):
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


def waits_for_decision(snapshot: AgentSnapshot, tool_call_id: str | None) -> bool:
    """Whether ``snapshot`` is paused with call ``tool_call_id`` waiting for a decision not recorded yet."""
    if snapshot.status != "paused" or tool_call_id is None:
        return False
    waiting = any(call.id == tool_call_id for call in awaiting_decision(snapshot))
    return waiting and recorded_decision(snapshot, tool_call_id) is None
