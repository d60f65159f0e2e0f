"""How the decisions given for a resumed snapshot are checked against it and merged with those it records.

Every check runs before the resumed run's first effect; "the same decision" is
:meth:`~handrail.dataclasses.decisions.ToolExecutionDecision.same_as` throughout, and a decision recorded in
a call's ledger entry wins over one given for it (:meth:`ToolExecutionDecision.find`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError, DecisionConflictError

if TYPE_CHECKING:
    from handrail.dataclasses.chat_message import ToolCall
    from handrail.dataclasses.snapshot import AgentSnapshot

__all__ = ["bind_unnamed", "check_decision_types", "check_decisions", "merge_decisions", "unspent"]


def bind_unnamed(decisions: list[ToolExecutionDecision], calls: list[ToolCall]) -> list[ToolExecutionDecision]:
    """``decisions``, each one without ``tool_call_id`` given the id of the call it answers, when it answers one.

    A decision without an id answers the step's only call of its tool (:meth:`ToolExecutionDecision.find`); named
    so, it is compared with that call's recorded decision and with any other decision given for the call, as a
    decision carrying the id is. A decision that answers no call is kept as it is (the checks refuse it).
    """
    bound = []
    for decision in decisions:
        matching = [c for c in calls if c.tool_name == decision.tool_name]
        if decision.tool_call_id is None and len(matching) == 1 and matching[0].id:
            decision = dataclasses.replace(decision, tool_call_id=matching[0].id)
        bound.append(decision)
    return bound


def unspent(stored: AgentSnapshot, decisions: list[ToolExecutionDecision]) -> list[ToolExecutionDecision]:
    """``decisions`` less those an earlier step of the run already applied.

    Records written before decisions were dropped at the end of their step carry them into later pauses (and
    a caller may pass such a record's list back); the ledger shows them spent (the entry of a call that is not
    paused here holds the same decision and its outcome), so they are left out rather than refused as
    decisions for calls of no paused step. Any other decision is kept and checked.
    """
    paused = {c.id for c in stored.pending_tool_calls}
    kept = []
    for decision in decisions:
        entry = stored.ledger.get(decision.tool_call_id or "")
        spent = (
            decision.tool_call_id not in paused
            and entry is not None
            and entry.status in ("done", "failed", "rejected")
            and entry.decision is not None
            and decision.same_as(entry.decision)
        )
        if not spent:
            kept.append(decision)
    return kept


def merge_decisions(
    recorded: list[ToolExecutionDecision],
    given: list[ToolExecutionDecision],
    name: str,
    calls: list[ToolCall] | None = None,
) -> list[ToolExecutionDecision]:
    """``recorded`` plus the ``given`` decisions not already there (:meth:`ToolExecutionDecision.same_as`).

    Args:
        recorded: The decisions the store holds.
        given: The caller's decisions.
        name: The snapshot, for messages.
        calls: The paused step's calls (their proposed arguments equal an approval without edited ones; a
            decision without ``tool_call_id`` answers the step's only call of its tool: :func:`bind_unnamed`).

    Raises:
        DecisionConflictError: A given decision differs from the recorded one for the same call.
    """
    proposed = {c.id: c.arguments for c in calls or () if isinstance(c.arguments, dict)}
    recorded, given = bind_unnamed(recorded, list(calls or ())), bind_unnamed(given, list(calls or ()))
    by_id = {d.tool_call_id: d for d in recorded if d.tool_call_id is not None}
    out = list(recorded)
    for decision in given:
        old = by_id.get(decision.tool_call_id) if decision.tool_call_id is not None else None
        if old is None:
            if decision not in out:
                out.append(decision)
        elif not decision.same_as(old, proposed.get(decision.tool_call_id)):
            raise DecisionConflictError(
                f"Snapshot {name} already records a different decision for call '{decision.tool_call_id}': "
                f"{old.to_dict()} (given: {decision.to_dict()})."
            )
    return out


def check_decisions(snapshot: AgentSnapshot) -> None:
    """Every decision must answer a call of the paused step, by id (or by tool name when that tool has one call).

    A decision without ``tool_call_id`` is checked as the decision for the call it answers (:func:`bind_unnamed`).

    Raises:
        ConfigurationError: A decision for no pending call (named, with the calls that are pending), or
            decisions on a snapshot that is not paused at a tool step.
        DecisionConflictError: Two different decisions for one call, or one differing from the call's recorded
            decision.
    """
    check_decision_types(snapshot.tool_execution_decisions)
    if not snapshot.tool_execution_decisions:
        return
    calls = snapshot.pending_tool_calls
    if snapshot.position != "tool_invoker":
        raise ConfigurationError("tool_execution_decisions were given, but the snapshot is not paused at a tool step.")
    decisions = bind_unnamed(snapshot.tool_execution_decisions, calls)
    ids = {c.id: c for c in calls}
    listed = [f"{c.id} ({c.tool_name})" for c in calls]
    seen: dict[str, ToolExecutionDecision] = {}
    for d in decisions:
        if d.tool_call_id is None:
            if sum(c.tool_name == d.tool_name for c in calls) != 1:
                raise ConfigurationError(
                    f"A decision for '{d.tool_name}' has no tool_call_id and does not match exactly one pending call; "
                    f"give the id. Calls of the paused step: {listed}."
                )
            continue
        call = ids.get(d.tool_call_id)
        if call is None or call.tool_name != d.tool_name:
            raise ConfigurationError(
                f"A decision names call '{d.tool_call_id}' to '{d.tool_name}', which is not a call of the paused step: "
                f"{listed}."
            )
        other = seen.setdefault(d.tool_call_id, d)
        if other is not d and not d.same_as(other, call.arguments if isinstance(call.arguments, dict) else None):
            raise DecisionConflictError(
                f"Two different decisions were given for call '{d.tool_call_id}' to '{d.tool_name}': "
                f"{other.to_dict()} and {d.to_dict()}; give exactly one."
            )
        _check_against_ledger(snapshot, d, call)


def _check_against_ledger(snapshot: AgentSnapshot, given: ToolExecutionDecision, call: ToolCall) -> None:
    """A given decision must be the call's recorded decision (:meth:`ToolExecutionDecision.same_as`), if any.

    Raises:
        ConfigurationError: The call already ran or started, without that decision.
        DecisionConflictError: The ledger records a different decision for the call (the record wins:
            :meth:`ToolExecutionDecision.find`).
    """
    entry = snapshot.ledger.get(given.tool_call_id or "")
    if entry is None:
        return
    proposed = call.arguments if isinstance(call.arguments, dict) else None
    same = entry.decision is not None and given.same_as(entry.decision, proposed)
    if entry.status in ("running", "done", "failed") and not same:
        raise ConfigurationError(
            f"Call '{given.tool_call_id}' to '{given.tool_name}' already ran or started (ledger status "
            f"'{entry.status}'); a decision can only answer a call that waits for one."
        )
    if entry.decision is not None and not same:
        name = snapshot.snapshot_id or "in memory"
        raise DecisionConflictError(
            f"Snapshot '{name}' records a different decision for call '{given.tool_call_id}' in its ledger: "
            f"{entry.decision.to_dict()} (given: {given.to_dict()})."
        )


def check_decision_types(decisions: Any, name: str = "tool_execution_decisions") -> None:
    """Raise ConfigurationTypeError unless ``decisions`` is a list of ToolExecutionDecision (``name``: the argument)."""
    if not isinstance(decisions, list) or not all(isinstance(d, ToolExecutionDecision) for d in decisions):
        shown = type(decisions).__name__ if not isinstance(decisions, list) else "a list holding other objects"
        raise ConfigurationTypeError(f"{name} must be a list of ToolExecutionDecision, got {shown}.")
