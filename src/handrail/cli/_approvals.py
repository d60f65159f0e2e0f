"""``handrail approvals``: list, show and decide the tool calls of runs paused for approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from handrail.cli._common import (
    errors_as_exit_codes,
    fail_busy,
    fail_usage,
    printable,
    resume_hint,
)
from handrail.cli._service import (
    APPROVAL_ID,
    decide_approval,
    parse_now,
    print_expired,
    service_of,
    show_approval,
    skipped_approvals,
)
from handrail.cli._stores import Where, opened, where_options
from handrail.cli._views import HELD, calls_text, print_list, print_snapshot
from handrail.dataclasses.decisions import decided_by_problem

__all__ = ["approvals"]

_ALLOW = click.option("--allow-module", "allow_modules", multiple=True, metavar="PREFIX",
                      help="Trust classes under this module prefix inside snapshot files (repeatable).")  # fmt: skip


def _consoles(as_json: bool = False) -> tuple[Any, Any]:
    from rich.console import Console

    return Console(stderr=as_json, highlight=False, soft_wrap=True), Console(stderr=True, highlight=False)


@click.group()
def approvals() -> None:
    """Decide the tool calls of runs paused with 'handrail run --pause-for-approval DIR|URL'.

    Name the snapshots with --dir DIR (a directory of snapshot files) or --store URL (sqlite:///PATH,
    postgresql://..., or a directory): the place the run paused into. Each paused run is one snapshot
    there. Decisions are recorded atomically, with who decided; of two different decisions for one
    call, the first wins and the other is refused. 'handrail resume' continues the run.
    """


@approvals.command("list")
@where_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_ALLOW
def list_command(directory: Path | None, store_url: str | None, as_json: bool, allow_modules: tuple[str, ...]) -> None:
    """List the calls waiting for a decision, then the runs in progress and the interrupted runs.

    A store that keeps approval records (the built-in ones) starts with their status counts and each pending
    approval, newest first; the paused runs follow, oldest first (the one waiting longest on top).

    Runs in progress have status 'running' and a process holds them (a run or resume under way, or a
    cancelled run whose tool call is still finishing). Interrupted runs have status 'running' while no
    process is running them (a resume that crashed, failed or was cancelled); each comes with the
    'handrail resume' command that continues it. Finished runs are not listed.

    A snapshot or approval record that cannot be read (a damaged or hand-edited file or record) is skipped and
    named in a warning on stderr (with --json also under "unreadable", as {"snapshot_id"|"approval_id",
    "error"}); the others are listed and the exit code stays 0.
    """
    from handrail.human_in_the_loop.snapshots import awaiting_decision

    out, warn = _consoles(as_json)
    unreadable: list[dict[str, str]] = []

    def skipped(snapshot_id: str, name: str, exc: Exception) -> None:
        from rich.text import Text

        unreadable.append({"snapshot_id": snapshot_id, "error": str(exc)})
        warn.print(Text(printable(f"warning: skipped {name}, which cannot be read: {exc}"), style="yellow"),
                   soft_wrap=True)  # fmt: skip

    with opened(out, directory, store_url, allow_modules) as where, errors_as_exit_codes(out):
        paused, running, interrupted = where.scan(skipped)
        service = service_of(where.store)
        unreadable += skipped_approvals(warn, service)
        rows = [(s, awaiting_decision(s)) for s in paused]
        print_list(out, where, rows, running, interrupted, as_json, unreadable=tuple(unreadable),
                   approvals=service)  # fmt: skip


@approvals.command("show")
@click.argument("snapshot_id", metavar="SNAPSHOT_ID|APPROVAL_ID")
@where_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_ALLOW
def show(
    snapshot_id: str, directory: Path | None, store_url: str | None, as_json: bool, allow_modules: tuple[str, ...]
) -> None:
    """Show one snapshot: its status, the question, and every call of the paused step with its status.

    An approval id (ap_ and 32 hex digits, from 'approvals list') shows that approval instead: the call, the
    policy's text, its status, expiry and decision, and its audit trail.
    """
    out, _ = _consoles(as_json)
    with opened(out, directory, store_url, allow_modules) as where:
        service = service_of(where.store)
        if service is not None and APPROVAL_ID.fullmatch(snapshot_id):
            with errors_as_exit_codes(out):
                show_approval(out, service, snapshot_id, as_json)
            return
        with errors_as_exit_codes(out):
            found = where.find(out, snapshot_id)
        with errors_as_exit_codes(out, busy=where.busy(found)):
            snapshot = where.store.load(found)
            state = where.state(snapshot)
        print_snapshot(out, where, snapshot, state, as_json)


def _choose_call(out: Any, snapshot: Any, call_id: str | None, where: Where) -> Any:
    """The call to decide: the one named, else the only one waiting, else the step's only call.

    Deciding a decided call again the same way changes nothing; differently, is a conflict. Exits with a usage
    error when no call is named and none fits.
    """
    from handrail.human_in_the_loop.snapshots import awaiting_decision

    waiting = awaiting_decision(snapshot)
    name = printable(snapshot.snapshot_id)
    if call_id is None:
        if len(waiting) == 1:
            return waiting[0]
        decided = _decided(snapshot)
        if not waiting and len(decided) == 1:
            return decided[0]
        if not waiting:
            fail_usage(out, f"No call of snapshot {name} awaits a decision (decided: {calls_text(decided) or 'none'}"
                            f"{'; name one with --call to repeat its decision' if decided else ''}).\n"
                            f"{resume_hint(snapshot, where)}")  # fmt: skip
        fail_usage(out, f"Snapshot {name} has {len(waiting)} calls awaiting a decision: {calls_text(waiting)}; "
                        f"choose one with --call.")  # fmt: skip
    match = next((c for c in snapshot.pending_tool_calls if c.id == call_id), None)
    if match is None:
        fail_usage(out, f"Call '{printable(call_id)}' is not a call of snapshot {name}; "
                        f"calls awaiting a decision: {calls_text(waiting) or 'none'}.")  # fmt: skip
    return match


def _decided(snapshot: Any) -> list[Any]:
    """The calls of the paused step that have a decision (given for the step, or recorded in the ledger)."""
    from handrail.human_in_the_loop.snapshots import recorded_decision

    return [c for c in snapshot.pending_tool_calls if recorded_decision(snapshot, c.id) is not None]


def _parse_edit(out: Any, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    from handrail.core.json_data import JSONDataError, parse_json

    try:
        value = parse_json(text)  # the JSON a snapshot can hold: no NaN, Infinity or lone surrogate
    except JSONDataError as exc:
        fail_usage(out, f"--edit is not valid JSON ({exc}); pass the new arguments "
                        f"as a JSON object, e.g. --edit '{{\"amount\": 5}}'.")  # fmt: skip
    if not isinstance(value, dict):
        fail_usage(out, f"--edit must be a JSON object of the call's new arguments, got {type(value).__name__} "
                        f"({text[:80]}).")  # fmt: skip
    return value


def _check_open(out: Any, snapshot: Any, where: Where) -> None:
    """Exit unless decisions can be recorded in ``snapshot`` now, saying what is the case instead."""
    from handrail.errors import SnapshotInterruptedError
    from handrail.stores._snapshot_common import unavailable_error

    name = printable(snapshot.snapshot_id)
    state = where.state(snapshot)
    if state == "running":
        fail_busy(out, f"Snapshot {name} is held by a running process right now ({HELD}); decisions are recorded "
                       f"while no run holds it. When the run pauses again, decide in its new snapshot "
                       f"(handrail approvals list {where.arg}).")  # fmt: skip
    found = unavailable_error(snapshot, held=False)  # the library's error, worded and exiting as it says (2)
    if isinstance(found, SnapshotInterruptedError):
        raise SnapshotInterruptedError(f"{found}\n{resume_hint(snapshot, where)}")
    if found is not None:
        raise type(found)(f"{found} Decisions can no longer be recorded in it.")


def _decide(
    snapshot_id: str,
    where: Where,
    call_id: str | None,
    *,
    execute: bool,
    feedback: str | None,
    edit: str | None,
    by: str | None,
) -> None:
    """Record one decision and say what is left to do.

    The store checks the decision against the record as it is at that moment, atomically: of two processes
    deciding one call differently, one wins and the other gets a conflict error (exit code 2).
    """
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.stores._approval_decide import approval_of_call

    out, _ = _consoles()
    params = _parse_edit(out, edit)
    service = service_of(where.store)
    if service is not None and APPROVAL_ID.fullmatch(snapshot_id):
        _decide_approval_id(out, service, where, snapshot_id, call_id, execute=execute, feedback=feedback,
                            params=params, by=by)  # fmt: skip
        return
    with errors_as_exit_codes(out):
        found = where.find(out, snapshot_id)
    with errors_as_exit_codes(out, busy=where.busy(found)):
        snapshot = where.store.load(found)
        _check_open(out, snapshot, where)
        call = _choose_call(out, snapshot, call_id, where)
        approval = None if service is None else approval_of_call(where.store, snapshot, call.id or "")
        if approval is None:  # no record (a snapshot written by hand, or before records): the snapshot alone
            decision = ToolExecutionDecision(call.tool_name, execute=execute, tool_call_id=call.id,
                                             feedback=feedback, final_tool_params=params)  # fmt: skip
            updated, recorded_now = where.store.decide(found, decision, decided_by=by)
    if approval is not None:
        _decide_approval_id(out, service, where, approval.id, None, execute=execute, feedback=feedback,
                            params=params, by=by)  # fmt: skip
        return
    _say_decided(out, updated, call, recorded_now)
    _say_left(out, updated, where)


def _kind(execute: bool, params: dict[str, Any] | None) -> Any:
    return "reject" if not execute else ("edit" if params is not None else "approve")


def _decide_approval_id(
    out: Any,
    service: Any,
    where: Where,
    approval_id: str,
    call_id: str | None,
    *,
    execute: bool,
    feedback: str | None,
    params: dict[str, Any] | None,
    by: str | None,
) -> None:
    """Decide one approval through the service (the checks the API shares), then say what is left to do."""
    from handrail.stores._snapshot_common import _os_user

    with errors_as_exit_codes(out):
        approval = service.get(approval_id, context_messages=0).approval
    if call_id is not None and call_id != approval.tool_call_id:
        fail_usage(out, f"--call {printable(call_id)}: approval {approval_id} is for call "
                        f"{printable(approval.tool_call_id)} ({printable(approval.tool_name)}).")  # fmt: skip
    with errors_as_exit_codes(out):
        decide_approval(out, service, approval, _kind(execute, params), by=by or _os_user(), feedback=feedback,
                        edit=params)  # fmt: skip
        now_id = service.snapshot_of(approval_id)
        updated = where.store.load(now_id) if now_id is not None else None
    if updated is not None and updated.status == "paused":
        _say_left(out, updated, where)


def _say_left(out: Any, updated: Any, where: Where) -> None:
    """Say which calls of the paused snapshot still wait, or how to resume."""
    from handrail.human_in_the_loop.snapshots import awaiting_decision

    waiting = awaiting_decision(updated)
    if waiting:
        them = "it" if len(waiting) == 1 else "them"
        out.print(f"Still awaiting a decision: {calls_text(waiting)}. Resuming now would pause the run again at "
                  f"{them}.", markup=False)  # fmt: skip
    else:
        out.print(f"Every call is decided. {resume_hint(updated, where, what='the run')}", markup=False)


def _say_decided(out: Any, snapshot: Any, call: Any, recorded_now: bool) -> None:
    """Say what the store holds for ``call`` now: this command's decision, or the same one somebody made before."""
    from handrail.human_in_the_loop.snapshots import recorded_decision

    decision = recorded_decision(snapshot, call.id)
    assert decision is not None  # the store recorded it, or refused a different one
    named = f"call {printable(call.id)} ({printable(call.tool_name)})"
    verb = "approved" if decision.execute else "rejected"
    how = " with edited arguments" if decision.execute and decision.final_tool_params is not None else ""
    who = printable(decision.decided_by or "unknown")
    where = f"in snapshot {printable(snapshot.snapshot_id)}"
    if recorded_now:
        out.print(f"{verb.capitalize()} {named}{how} {where}, decided by {who}.", markup=False)
        return
    entry = snapshot.ledger.get(call.id or "")
    when = f" at {entry.decided_at.isoformat(timespec='seconds')}" if entry is not None and entry.decided_at else ""
    out.print(f"That decision already existed: {named} {where} was {verb}{how} by {who}{when}. Nothing was "
              f"recorded; it stays {who}'s decision.", markup=False)  # fmt: skip


def _check_by(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse a ``--by`` the stores would refuse (:func:`decided_by_problem`), before any store is opened."""
    problem = None if value is None else decided_by_problem(value)
    if problem is not None:
        raise click.UsageError(f"--by {problem}; name who decides, or leave --by out to record the OS user.", ctx)
    return value


_CALL = click.option("--call", "call_id", metavar="CALL_ID",
                     help="The call to decide (needed when several calls of the step are waiting).")  # fmt: skip
_BY = click.option("--by", metavar="NAME", callback=_check_by,
                   help="Who decides (recorded; not empty; default: the OS user).")  # fmt: skip


@approvals.command()
@click.argument("snapshot_id", metavar="SNAPSHOT_ID|APPROVAL_ID")
@where_options
@_CALL
@click.option("--edit", metavar="JSON", help="Run the call with these arguments instead (a JSON object; "
              "it replaces the proposed arguments and must pass the tool's JSON Schema).")  # fmt: skip
@click.option("--feedback", metavar="TEXT", help="A note the model reads with the result.")
@_BY
@_ALLOW
def approve(
    snapshot_id: str,
    directory: Path | None,
    store_url: str | None,
    call_id: str | None,
    edit: str | None,
    feedback: str | None,
    by: str | None,
    allow_modules: tuple[str, ...],
) -> None:
    """Approve a paused call of SNAPSHOT_ID, or the approval APPROVAL_ID (optionally with edited arguments).

    In a store that keeps approval records, the decision goes through the approval service: the same decision
    again by the same --by prints the one stored (exit 0); a different one, the same one by somebody else, or
    one on an expired approval is refused (exit 2), naming who decided first.
    """
    out, _ = _consoles()
    with opened(out, directory, store_url, allow_modules) as where:
        _decide(snapshot_id, where, call_id, execute=True, feedback=feedback, edit=edit, by=by)


@approvals.command()
@click.argument("snapshot_id", metavar="SNAPSHOT_ID|APPROVAL_ID")
@where_options
@_CALL
@click.option("--feedback", metavar="TEXT", required=True, help="Why: the model reads it instead of a result.")
@_BY
@_ALLOW
def reject(
    snapshot_id: str,
    directory: Path | None,
    store_url: str | None,
    call_id: str | None,
    feedback: str,
    by: str | None,
    allow_modules: tuple[str, ...],
) -> None:
    """Reject a paused call of SNAPSHOT_ID, or the approval APPROVAL_ID: it will not run; the model reads why."""
    if not feedback.strip():
        raise click.UsageError("--feedback is empty; say why the call is rejected (the model reads it).")
    out, _ = _consoles()
    with opened(out, directory, store_url, allow_modules) as where:
        _decide(snapshot_id, where, call_id, execute=False, feedback=feedback, edit=None, by=by)


@approvals.command()
@where_options
@click.option("--now", "now_text", metavar="ISO", help="Judge expiry at this time (ISO 8601; without a zone: UTC) "
              "instead of now.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@_ALLOW
def expire(
    directory: Path | None, store_url: str | None, now_text: str | None, as_json: bool, allow_modules: tuple[str, ...]
) -> None:
    """Expire the approvals whose time has come (one pass of the sweeper) and print them.

    Each gets its expiry action: reject (the default; the model is told the request expired, unapproved) or approve
    (only where the strategy set on_expiry='approve'), written into the paused snapshot; 'handrail resume'
    continues the run. An expired approval takes no decision. Each is recorded as expired at its expiry time
    (--now only judges which are due). A record that cannot be read is skipped and named in a warning on stderr
    (with --json also under "unreadable"); the others still expire and the exit code stays 0.
    """
    out, warn = _consoles(as_json)
    now = parse_now(out, now_text)
    with opened(out, directory, store_url, allow_modules) as where:
        service = service_of(where.store)
        if service is None:
            fail_usage(out, f"{where.label} keeps no approval records: nothing can expire there.")
        with errors_as_exit_codes(out):
            expired = service.expire_due(now)
            unreadable = skipped_approvals(warn, service)
        print_expired(out, expired, as_json, where.label, unreadable)
