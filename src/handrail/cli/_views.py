"""What ``handrail approvals list`` and ``show`` print: text for people, one JSON object with ``--json``."""

from __future__ import annotations

import json
from typing import Any

from handrail.cli._common import (
    age,
    call_line,
    echo_json,
    indented,
    printable,
    resume_hint,
    running_calls,
)
from handrail.cli._stores import Where
from handrail.stores._snapshot_common import INTERRUPTED_CAUSE

__all__ = ["CAUSE", "HELD", "calls_text", "print_list", "print_snapshot"]

CAUSE = INTERRUPTED_CAUSE
"""Why a snapshot says 'running' while no process holds it (the library's words)."""
HELD = "a run or resume in progress, or a cancelled run whose tool call is still finishing"
"""Why a process holds a snapshot."""


def print_list(out: Any, where: Where, rows: list[tuple[Any, list[Any]]], running: list[Any],
                interrupted: list[Any], as_json: bool,
                unreadable: tuple[dict[str, str], ...] = (), approvals: Any = None) -> None:  # fmt: skip
    """Print ``approvals list``.

    Args:
        out: The console (rich) to print to.
        where: The store or directory listed.
        rows: Paused snapshots with the calls of each that await a decision, oldest first.
        running: Snapshots a process holds now.
        interrupted: Snapshots that say 'running' while no process holds them.
        as_json: One JSON object (keys ``pending``, ``ready_to_resume``, ``running``, ``interrupted``,
            ``unreadable``) instead.
        unreadable: ``{"snapshot_id", "error"}`` of the records skipped because they cannot be read (the text
            output leaves them to the warnings already printed on stderr).
        approvals: For a store that keeps approval records: the service; the status counts and each pending
            approval (id, tool, age, time left before expiry) are printed first (JSON: ``counts``, ``approvals``).
    """
    from handrail.cli._service import list_approvals

    extra = None if approvals is None else list_approvals(out, approvals, as_json)
    if as_json:
        echo_json({**_list_json(rows, running, interrupted, where), "unreadable": list(unreadable), **(extra or {})})
        return
    if not rows:
        out.print(f"No paused runs in {where.label}.", markup=False)
    for snapshot, waiting in rows:
        header = f"{printable(snapshot.snapshot_id)}  paused {age(snapshot.timestamp)} ago"
        if waiting:
            out.print(header, style="bold", markup=False)
            for call in waiting:
                out.print(call_line(call.id, call.tool_name, call.arguments))
        else:
            out.print(header + " · nothing to decide", markup=False)
            out.print(indented(resume_hint(snapshot, where)), markup=False)
    if running:
        out.print(f"Running now (a process holds them: {HELD}):", style="bold", markup=False)
    for snapshot in running:
        out.print(f"{printable(snapshot.snapshot_id)}  running · last saved {age(snapshot.timestamp)} ago",
                  markup=False)  # fmt: skip
        for entry in running_calls(snapshot):
            out.print(call_line(entry.tool_call_id, entry.tool_name, entry.arguments))
    if interrupted:
        out.print(f"Interrupted (status 'running' in the {where.noun}, but no process is running them: {CAUSE}):",
                  style="bold yellow", markup=False)  # fmt: skip
    for snapshot in interrupted:
        out.print(f"{printable(snapshot.snapshot_id)}  interrupted · last saved {age(snapshot.timestamp)} ago",
                  style="bold", markup=False)  # fmt: skip
        for entry in running_calls(snapshot):
            line = call_line(entry.tool_call_id, entry.tool_name, entry.arguments)
            line.append("  running when it stopped: outcome unknown", style="yellow")
            out.print(line)
        out.print(indented(resume_hint(snapshot, where)), style="dim", markup=False)


def _list_json(
    rows: list[tuple[Any, list[Any]]], running: list[Any], interrupted: list[Any], where: Where
) -> dict[str, Any]:
    pending = [
        {"snapshot_id": s.snapshot_id, "tool_call_id": c.id, "tool_name": c.tool_name, "arguments": c.arguments,
         "created_at": s.timestamp.isoformat(), "path": s.location}
        for s, waiting in rows for c in waiting
    ]  # fmt: skip
    ready = [{"snapshot_id": s.snapshot_id, "created_at": s.timestamp.isoformat(), "path": s.location,
              "hint": resume_hint(s, where)}
             for s, waiting in rows if not waiting]  # fmt: skip
    stopped = [
        {"snapshot_id": s.snapshot_id, "status": "interrupted", "file_status": s.status,
         "created_at": s.timestamp.isoformat(), "path": s.location,
         "running_calls": [{"tool_call_id": e.tool_call_id, "tool_name": e.tool_name, "arguments": e.arguments}
                           for e in running_calls(s)],
         "hint": resume_hint(s, where)}
        for s in interrupted
    ]  # fmt: skip
    in_progress = [
        {"snapshot_id": s.snapshot_id, "status": "running", "created_at": s.timestamp.isoformat(), "path": s.location,
         "running_calls": [{"tool_call_id": e.tool_call_id, "tool_name": e.tool_name, "arguments": e.arguments}
                           for e in running_calls(s)]}
        for s in running
    ]  # fmt: skip
    return {"pending": pending, "ready_to_resume": ready, "running": in_progress, "interrupted": stopped}


def _call_status(snapshot: Any, call: Any, state: str) -> tuple[str, list[str]]:
    """``(status, details)`` of one call of the paused step: the ledger's status, who decided, the result.

    Details are escaped for the terminal (:func:`printable`).
    """
    from handrail.human_in_the_loop.snapshots import recorded_decision

    entry = snapshot.ledger.get(call.id or "")
    decision = recorded_decision(snapshot, call.id)
    status = entry.status if entry is not None else "pending"
    if status == "pending" and decision is not None:
        status = "approved" if decision.execute else "rejected"
    details = ["awaiting a decision"] if status == "pending" else []
    if status == "pending" and state == "resumed":
        status, details = (
            "undecided",
            [f"no longer decided here: the run continued in {printable(snapshot.continued_in)}"],
        )
    elif status == "pending" and state == "done":
        status, details = "undecided", ["the run finished"]
    if status == "running" and state == "interrupted":
        details.append("its process stopped mid-call: outcome unknown")
    if decision is not None:
        details.append(f"by {printable(decision.decided_by or 'unknown')}")
        if decision.execute and decision.final_tool_params is not None:
            edited = json.dumps(decision.final_tool_params, ensure_ascii=False)
            details.append(f"arguments edited to {printable(edited)}")
        if decision.feedback:
            details.append(f"feedback: {printable(decision.feedback)}")
    text = (entry.result or {}).get("text") if entry is not None else None
    if text is not None:
        shown = str(text)
        details.append(f"result: {printable(shown[:160])}{' …' if len(shown) > 160 else ''}")
    return status, details


_STATES = {
    "interrupted": "interrupted (the {noun} says 'running', but no process holds it)",
    "running": "running (a process holds it now: {held})",
}


def _shown_calls(snapshot: Any, state: str) -> list[Any]:
    """The calls ``approvals show`` lists: the paused step's, after the decided calls its ledger records.

    The decided calls come first for a resumed or finished snapshot only: the run went on in this record, so its
    last message may be a later step's.
    """
    from handrail.dataclasses.chat_message import ToolCall

    pending = list(snapshot.pending_tool_calls)
    if state not in ("resumed", "done"):
        return pending
    ids = {c.id for c in pending}
    decided = [
        ToolCall(e.tool_name, dict(e.arguments), e.tool_call_id)
        for e in snapshot.ledger.values()
        if e.decision is not None and e.tool_call_id not in ids
    ]
    return decided + pending


def print_snapshot(out: Any, where: Where, snapshot: Any, state: str, as_json: bool) -> None:
    """Print ``approvals show``: the snapshot's status, question and every call of its step with its status.

    Args:
        out: The console (rich) to print to.
        where: The store or directory it is in.
        snapshot: The AgentSnapshot.
        state: Its status as the CLI reports it (:meth:`Where.state`).
        as_json: One JSON object instead.
    """
    descriptions = _descriptions(snapshot)
    calls = [(c, *_call_status(snapshot, c, state)) for c in _shown_calls(snapshot, state)]
    question = next((m.text for m in snapshot.messages if m.role.value == "user" and m.text), None)
    model_calls = snapshot.component_visits.get("chat_generator", 0)
    if as_json:
        echo_json({
            "snapshot_id": snapshot.snapshot_id, "path": snapshot.location, "status": state,
            "file_status": snapshot.status, "created_at": snapshot.timestamp.isoformat(),
            "position": snapshot.position, "model_calls": model_calls, "step_count": snapshot.step_count,
            "agent_file": snapshot.metadata.get("agent_file"), "question": question,
            "continued_in": snapshot.continued_in, "outcome": snapshot.outcome,
            "calls": [{**c.to_dict(), "status": status, "details": details} for c, status, details in calls],
            "descriptions": descriptions,
            "hint": resume_hint(snapshot, where) if state == "interrupted" else None,
        })  # fmt: skip
        return
    out.print(f"Snapshot {printable(snapshot.snapshot_id)}", style="bold", markup=False)
    when = "paused" if snapshot.status == "paused" else "last saved"
    shown_state = _STATES.get(state, state).format(noun=where.noun, held=HELD)
    facts = [f"status: {shown_state}", f"{when} {age(snapshot.timestamp)} ago", f"model calls so far: {model_calls}"]
    out.print("  " + " · ".join(facts), markup=False)
    for label, value in (("file" if where.files else "location", snapshot.location),
                         ("agent file", snapshot.metadata.get("agent_file")),
                         ("question", question), ("continued in", snapshot.continued_in)):  # fmt: skip
        if value:
            out.print(f"  {label}: {printable(value)}", markup=False)
    if state == "interrupted":
        out.print(indented(resume_hint(snapshot, where)), style="yellow", markup=False)
    if not calls:
        out.print("  Paused before the model call: no tool calls to decide.", markup=False)
    for call, status, details in calls:
        line = call_line(call.id, call.tool_name, call.arguments)
        line.append(f"  {status}", style="yellow" if status in ("pending", "running") else "green")
        if details:
            line.append(" · " + " · ".join(details), style="dim")
        out.print(line)
        if status == "pending" and descriptions.get(call.tool_name):
            out.print(f"      {printable(descriptions[call.tool_name])}", style="dim", markup=False)


def _descriptions(snapshot: Any) -> dict[str, str]:
    from handrail.human_in_the_loop.snapshots import get_tool_calls_and_descriptions_from_snapshot

    if snapshot.position != "tool_invoker":
        return {}
    return get_tool_calls_and_descriptions_from_snapshot(snapshot, breakpoint_tool_only=False)[1]


def calls_text(calls: list[Any]) -> str:
    """``"c1 (transfer), c2 (lookup)"``: call ids with their tools, printable."""
    return ", ".join(f"{printable(c.id)} ({printable(c.tool_name)})" for c in calls)
