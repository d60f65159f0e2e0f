"""``handrail run --temporal`` and ``handrail runs show|decide``: start, follow, show and decide runs on Temporal.

A run is started on a task queue by the agent's name (the agent file's stem: every worker of the queue must have
``<stem>.yaml``), with the OS user as its initiator. Followed (without ``--detach``), each call that waits for a
decision is asked at the console when stdin is a terminal (only the decisions its policy allows, and ``wait``
to leave it to somebody else), sent as the ``decide`` Update by the OS user; otherwise the ``handrail runs
decide`` commands are printed once per call and the command keeps waiting. Ctrl-C stops following, never the
run (exit 130). A refused decision is shown with the run's reason and the call asked again.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import EXIT_NO_ANSWER, EXIT_RUN_FAILED, EXIT_USAGE, echo_json, error, printable, quote
from handrail.cli._temporal import (
    Target,
    client_store,
    connect_or_fail,
    fail,
    json_line,
    os_user,
    rpc_problem,
    run_async,
    target_options,
    temporal_errors,
)

__all__ = ["runs", "start_temporal_run"]

DECIDE_SECONDS = 30.0
"""How long ``runs decide`` waits for a worker to take the decision before it says none did."""
_QUERY = timedelta(seconds=5)
_POLL = 0.3
_CLOSED = {"COMPLETED": "done", "FAILED": "failed", "TERMINATED": "terminated", "CANCELED": "cancelled",
           "TIMED_OUT": "timed out"}  # fmt: skip
_KEYS = {"approve": "a", "reject": "r", "edit": "e"}


def _consoles(as_json: bool) -> tuple[Any, Any]:
    from rich.console import Console

    return Console(stderr=as_json, highlight=False, soft_wrap=True), Console(stderr=True, highlight=False,
                                                                              soft_wrap=True)  # fmt: skip


def _failure_text(exc: BaseException) -> str:
    """Why a run failed: the innermost cause's message (``UnknownAgentError: ...``)."""
    cause: BaseException | None = getattr(exc, "cause", None) or exc.__cause__
    text = str(exc)
    while cause is not None:
        text = getattr(cause, "message", None) or str(cause) or text
        cause = getattr(cause, "cause", None) or cause.__cause__
    return text


# -- reading a run -----------------------------------------------------------------------------------------------


async def fetch(client: Any, run_id: str) -> dict[str, Any]:
    """The run as ``runs show`` reports it: Temporal's status, handrail's (waiting calls, usage), the answer.

    Raises:
        RPCError: NOT_FOUND for an unknown run id (reported by :func:`temporal_errors`).
        ConfigurationError: The id is not a handrail run, or its data is kept by reference in a store not given.
    """
    from temporalio.client import WorkflowFailureError

    from handrail.errors import ConfigurationError
    from handrail.temporal._types import WORKFLOW_NAME

    handle = client.get_workflow_handle(run_id)
    info = await handle.describe(rpc_timeout=_QUERY * 2)
    if info.workflow_type != WORKFLOW_NAME:
        raise ConfigurationError(f"{run_id!r} is a workflow of type {info.workflow_type!r}, not a handrail run.")
    state = info.status.name if info.status is not None else "UNKNOWN"
    out: dict[str, Any] = {"run_id": run_id, "workflow_status": state, "started": info.start_time.isoformat(),
                           "closed": info.close_time.isoformat() if info.close_time else None,
                           "task_queue": info.task_queue, "waiting": []}  # fmt: skip
    if state == "RUNNING":
        try:
            out.update(await handle.query("status", rpc_timeout=_QUERY))
        except Exception as exc:  # no worker polls the queue, or none answers now
            if isinstance(exc, ConfigurationError):
                raise
            out["status"] = "running"
            out["status_error"] = f"no worker of task queue {info.task_queue!r} answered: {_failure_text(exc)[:200]}"
        return out
    out["status"] = _CLOSED.get(state, state.lower())
    if state == "COMPLETED":
        result = await handle.result(rpc_timeout=_QUERY * 2)
        out.update({k: result.get(k) for k in ("agent", "answer", "exit_reason", "step_count", "usage", "token_usage")})
        out["messages"] = result.get("messages", [])
    elif state in ("FAILED", "TERMINATED", "CANCELED", "TIMED_OUT"):
        try:
            await handle.result(rpc_timeout=_QUERY * 2)
        except WorkflowFailureError as exc:
            out["error"] = _failure_text(exc)
    return out


def _print_run(out: Any, run: dict[str, Any], target: Target) -> None:
    from rich.text import Text

    from handrail.cli._common import call_line

    out.print(Text(f"Run {printable(run['run_id'])}", style="bold"))
    facts = [f"status: {printable(run.get('status'))}"]
    if run.get("agent"):
        facts.append(f"agent: {printable(run['agent'])}")
    facts.append(f"task queue: {printable(run.get('task_queue'))}")
    facts.append(f"started {printable(run.get('started'))}")
    out.print("  " + " · ".join(facts), markup=False)
    if run.get("initiator"):
        out.print(f"  initiator: {printable(run['initiator'])}", markup=False)
    usage = run.get("usage") or {}
    if usage:
        shown = ", ".join(f"{printable(k).replace('_', ' ')}: {v}" for k, v in usage.items())
        out.print(f"  usage: {shown}", markup=False)
    if run.get("status_error"):
        out.print(f"  {printable(run['status_error'])}", style="yellow", markup=False)
    for call in run.get("waiting") or []:
        line = call_line(call.get("call_id"), call.get("tool_name", "?"), call.get("arguments"))
        line.append("  waiting", style="yellow")
        line.append(" · " + " · ".join(_call_facts(call)), style="dim")
        out.print(line)
        if call.get("description"):
            out.print(f"      {printable(call['description'])}", style="dim", markup=False)
    if run.get("waiting"):
        out.print("Decide with:", markup=False)
        for command in _decide_commands(run["run_id"], run["waiting"][0], target):
            out.print(f"  {command}", style="dim", markup=False, soft_wrap=True)
    if run.get("status") == "done":
        out.print(f"  exit: {printable(run.get('exit_reason'))} · steps: {run.get('step_count')}", markup=False)
        if run.get("answer") is not None:
            out.print(printable(run["answer"], keep_newlines=True), markup=False)
    if run.get("error"):
        out.print(Text("  error: " + printable(run["error"]), style="red"))


def _call_facts(call: dict[str, Any]) -> list[str]:
    facts = ["may: " + ", ".join(printable(d) for d in call.get("allowed_decisions") or [])]
    if call.get("kind") == "unknown_outcome":
        facts.insert(0, "outcome unknown: run it again?")
    if (call.get("quorum") or 1) > 1:
        votes = call.get("votes") or []
        facts.append(f"needs {call['quorum']} approvers (so far: {', '.join(printable(v) for v in votes) or 'none'})")
    if call.get("expires_at"):
        facts.append(f"expires {printable(call['expires_at'])}")
    return facts


def _decide_commands(run_id: str, call: dict[str, Any], target: Target) -> list[str]:
    """The ``handrail runs decide`` commands for ``call``: one per decision its policy allows."""
    head = f"handrail runs decide {quote(run_id)} {quote(call.get('call_id') or '?')}"
    tail = target.args()
    commands = []
    for decision in call.get("allowed_decisions") or []:
        if decision == "approve":
            commands.append(f"{head} approve {tail}")
        elif decision == "reject":
            commands.append(f"{head} reject --feedback 'why not' {tail}")
        elif decision == "edit":
            commands.append(f"{head} edit --arguments {quote(json_line(call.get('arguments') or {}))} {tail}")
    return commands


# -- starting and following a run ------------------------------------------------------------------------------


def start_temporal_run(target: Target, task_queue: str, agent_file: Path, question: str, *, detach: bool,
                       run_id: str | None, as_json: bool) -> None:  # fmt: skip
    """``handrail run --temporal``: start the run of ``agent_file``'s stem, then follow it unless ``detach``."""
    from handrail.specs import load_agent_spec

    out, err = _consoles(as_json)
    if not task_queue.strip():
        raise click.UsageError("--task-queue is empty; name the queue the workers serve.")
    from handrail.cli._common import errors_as_exit_codes

    with errors_as_exit_codes(err, agent_file):
        spec = load_agent_spec(agent_file)  # a file that is no agent file is refused here, not by the worker
    store = client_store(err, target.store_url)
    started: list[str] = []
    try:
        code = run_async(lambda: _start_and_follow(out, err, store, target, task_queue, agent_file.stem, question,
                                                   spec, detach, run_id, as_json, started))  # fmt: skip
    except KeyboardInterrupt:
        if not started:
            raise
        err.print(f"Stopped following run {printable(started[0])}; the run goes on. See it with: handrail runs show "
                  f"{quote(started[0])} {target.args()}", style="yellow", markup=False)  # fmt: skip
        code = 130
    finally:
        store.close()
    sys.exit(code)


async def _start_and_follow(out: Any, err: Any, store: Any, target: Target, task_queue: str, agent: str,
                            question: str, spec: Any, detach: bool, run_id: str | None, as_json: bool,
                            started: list[str]) -> int:  # fmt: skip
    from handrail.temporal import start_run

    client = await connect_or_fail(err, target, store)
    with temporal_errors(err, target):
        run_id = await start_run(client, agent, question, task_queue=task_queue, run_id=run_id, initiator=os_user())
    started.append(run_id)
    if detach:
        if as_json:
            echo_json({"run_id": run_id, "agent": agent, "task_queue": task_queue})
        else:
            click.echo(run_id)
        err.print(f"Started run {printable(run_id)} of agent {printable(agent)} on task queue "
                  f"{printable(task_queue)}. Follow it with: handrail runs show {quote(run_id)} {target.args()}",
                  style="dim", markup=False)  # fmt: skip
        return 0
    err.print(f"run {printable(run_id)} (agent {printable(agent)}, task queue {printable(task_queue)})", style="dim",
              markup=False)  # fmt: skip
    try:
        result = await _follow(err, client, target, run_id, task_queue, ask=sys.stdin.isatty())
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        from temporalio.client import WorkflowFailureError

        if not isinstance(exc, WorkflowFailureError):
            raise
        error(err, f"run {run_id} failed: {_failure_text(exc)}")
        return EXIT_RUN_FAILED
    return _report(out, result, spec, as_json)


def _report(out: Any, result: dict[str, Any], spec: Any, as_json: bool) -> int:
    answered = result.get("exit_reason") == "text" or result.get("exit_reason") in (spec.exit_conditions or [])
    if as_json:
        echo_json({k: result.get(k) for k in ("run_id", "agent", "answer", "exit_reason", "step_count", "usage",
                                              "token_usage", "messages")})  # fmt: skip
    else:
        if answered and result.get("answer") is not None:
            out.print(printable(result["answer"], keep_newlines=True), markup=False)
        usage = result.get("usage") or {}
        counts = " · ".join(f"{k.replace('_', ' ')}: {v}" for k, v in usage.items())
        out.print(f"exit: {printable(result.get('exit_reason'))} · steps: {result.get('step_count')} · {counts}",
                  style="dim", markup=False)  # fmt: skip
        if not answered:
            out.print(f"The run ended without an answer ({printable(result.get('exit_reason'))}).", style="yellow",
                      markup=False)  # fmt: skip
    return 0 if answered else EXIT_NO_ANSWER


async def _follow(err: Any, client: Any, target: Target, run_id: str, task_queue: str, *,
                  ask: bool) -> dict[str, Any]:  # fmt: skip
    """Wait for the run's result, asking (or telling how to decide) each call that waits for a decision."""
    handle = client.get_workflow_handle(run_id)
    result = asyncio.ensure_future(handle.result())
    told: set[str] = set()
    me = os_user()
    silent_worker = False
    try:
        while not result.done():
            try:
                status = await handle.query("status", rpc_timeout=_QUERY)
            except Exception as exc:  # no worker yet, or the run just closed
                if result.done():
                    break
                if not silent_worker:
                    err.print(f"Waiting for a worker of task queue {printable(task_queue)} to answer "
                              f"({printable(_failure_text(exc))[:120]}).", style="yellow", markup=False)  # fmt: skip
                    silent_worker = True
                status = {}
            for call in status.get("waiting") or []:
                call_id = call.get("call_id") or ""
                if call_id in told or me in (call.get("votes") or []):
                    continue
                if not ask:
                    _tell(err, run_id, call, target)
                    told.add(call_id)
                    continue
                if not await _ask_and_send(err, client, target, run_id, call, me):
                    told.add(call_id)
                break  # ask the next call on the run's new status
            await asyncio.wait({result}, timeout=_POLL)
        return dict(result.result())
    finally:
        if not result.done():
            result.cancel()


def _tell(err: Any, run_id: str, call: dict[str, Any], target: Target) -> None:
    from handrail.cli._common import call_line

    err.print(f"Run {printable(run_id)} waits for a decision:", style="bold yellow", markup=False)
    line = call_line(call.get("call_id"), call.get("tool_name", "?"), call.get("arguments"))
    line.append(" · " + " · ".join(_call_facts(call)), style="dim")
    err.print(line)
    err.print("Decide from a shell (this command keeps waiting):", markup=False)
    for command in _decide_commands(run_id, call, target):
        err.print(f"  {command}", style="dim", markup=False, soft_wrap=True)


async def _ask_and_send(err: Any, client: Any, target: Target, run_id: str, call: dict[str, Any], me: str) -> bool:
    """Ask about ``call`` and send the decision; False when the person left it (or it is no longer theirs)."""
    from handrail.temporal import DecisionRefused, decide

    answer = await asyncio.to_thread(_dialogue, err, call)
    if answer is None:
        _tell(err, run_id, call, target)
        return False
    kind, arguments, feedback = answer
    try:
        sent = await decide(client, run_id, call["call_id"], kind, decided_by=me, arguments=arguments,
                            feedback=feedback)  # fmt: skip
    except DecisionRefused as exc:
        error(err, str(exc))
        return "already decided" not in str(exc)
    if sent.get("status") == "voted":
        err.print(f"Your approval counts ({len(sent.get('votes') or [])} of {sent.get('quorum')}); the call waits for "
                  f"more approvers.", style="yellow", markup=False)  # fmt: skip
        _tell(err, run_id, call, target)
        return False
    err.print(f"{kind}: call {printable(call['call_id'])} ({printable(call.get('tool_name'))}) by {printable(me)}",
              style="green", markup=False)  # fmt: skip
    return True


def _dialogue(err: Any, call: dict[str, Any]) -> tuple[str, dict[str, Any] | None, str | None] | None:
    """Ask at the console: ``(decision, arguments, feedback)``, or None to leave the call to somebody else."""
    from rich.panel import Panel
    from rich.text import Text

    from handrail.human_in_the_loop._display import show_value

    body = Text()
    body.append("Tool: ", style="bold").append(printable(call.get("tool_name", "?")), style="cyan")
    body.append(f"  (call {printable(call.get('call_id'))})\n")
    if call.get("description"):
        body.append("Description: ", style="bold").append(printable(call["description"])).append("\n")
    body.append("Arguments:", style="bold")
    arguments = call.get("arguments") or {}
    for key, value in arguments.items():
        body.append(f"\n  {printable(key)}: ", style="green").append(show_value(value))
    if not arguments:
        body.append("\n  (No arguments)", style="dim")
    body.append("\n" + " · ".join(_call_facts(call)), style="dim")
    err.print(Panel(body, title="Tool call waiting for a decision", title_align="left", expand=False),
              soft_wrap=False)  # fmt: skip
    allowed = [d for d in call.get("allowed_decisions") or [] if d in _KEYS]
    keys = {**{_KEYS[d]: d for d in allowed}, **{d: d for d in allowed}, "w": "wait", "wait": "wait"}
    question = "/".join([*(f"[{_KEYS[d]}]{d[1:]}" for d in allowed), "[w]ait"])
    while True:
        try:
            typed = err.input(Text(f"Decide {question}: ")).strip().lower()
        except EOFError:
            return None
        chosen = keys.get(typed)
        if chosen is None:
            err.print(f"Answer one of: {', '.join(sorted(set(keys.values())))}.", style="yellow", markup=False)
            continue
        if chosen == "wait":
            return None
        if chosen == "approve":
            return "approve", None, None
        if chosen == "reject":
            try:
                feedback = err.input(Text("Why (the model reads it; Enter for none): ")).strip()
            except EOFError:
                feedback = ""
            return "reject", None, feedback or None
        edited = _read_arguments(err, arguments)
        if edited is not None:
            return "edit", edited, None


def _read_arguments(err: Any, current: dict[str, Any]) -> dict[str, Any] | None:
    from rich.text import Text

    while True:
        try:
            typed = err.input(Text(f"New arguments as a JSON object (Enter keeps {json_line(current)}): ")).strip()
        except EOFError:
            return None
        if not typed:
            return dict(current)
        try:
            value = json.loads(typed)
        except ValueError as exc:
            err.print(f"Not JSON: {exc}.", style="yellow", markup=False)
            continue
        if isinstance(value, dict):
            return value
        err.print("The arguments must be a JSON object ({...}).", style="yellow", markup=False)


# -- handrail runs ---------------------------------------------------------------------------------------------


@click.group()
def runs() -> None:
    """Show and decide the runs of agents on Temporal (started with 'handrail run --temporal').

    Name the Temporal frontend with --temporal HOST:PORT (and --namespace). --store, the ledger the workers use,
    is needed only for a run whose data is large (kept there by reference).
    """


@runs.command("show")
@click.argument("run_id")
@target_options(store_required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def show(run_id: str, address: str, namespace: str, store_url: str | None, as_json: bool) -> None:
    """Show the run RUN_ID: its status, the calls waiting for a decision, its usage, and its answer once done.

    An unknown run id is refused (exit 2); a running run whose worker does not answer is shown with what
    Temporal knows.
    """
    out, err = _consoles(as_json)
    target = Target(address, namespace, store_url)

    async def shown(client: Any, run: dict[str, Any]) -> dict[str, Any]:
        return run

    run = _on_run(err, target, run_id, shown)
    if as_json:
        echo_json(run)
    else:
        _print_run(out, run, target)


def _on_run(
    err: Any, target: Target, run_id: str, then: Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """Connect to Temporal (and the --store), read run ``run_id``, and return ``then(client, run)``.

    A connection that fails, or an unknown run, ends the command with its message (what ``runs show`` and
    ``runs decide`` both begin with); the store is closed whatever happens.
    """
    store = client_store(err, target.store_url)

    async def go() -> dict[str, Any]:
        client = await connect_or_fail(err, target, store)
        with temporal_errors(err, target, run_id):
            run = await fetch(client, run_id)
        return await then(client, run)

    try:
        return run_async(go)
    finally:
        store.close()


def _check_by(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from handrail.dataclasses.decisions import decided_by_problem

    problem = None if value is None else decided_by_problem(value)
    if problem is not None:
        raise click.UsageError(f"--by {problem}; name who decides, or leave --by out to record the OS user.", ctx)
    return value


@runs.command("decide")
@click.argument("run_id")
@click.argument("call_id")
@click.argument("decision", type=click.Choice(["approve", "reject", "edit"]))
@click.option("--arguments", "arguments_text", metavar="JSON",
              help="With edit: the new arguments (a JSON object, checked against the tool's schema).")  # fmt: skip
@click.option("--feedback", metavar="TEXT", help="A note the model reads (why a call was rejected, ...).")
@click.option("--by", metavar="NAME", callback=_check_by, help="Who decides (recorded; default: the OS user).")
@target_options(store_required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the run's answer to the decision as one JSON object.")
def decide_command(run_id: str, call_id: str, decision: str, arguments_text: str | None, feedback: str | None,
                   by: str | None, address: str, namespace: str, store_url: str | None,
                   as_json: bool) -> None:  # fmt: skip
    """Decide the call CALL_ID of run RUN_ID: approve, reject or edit (with --arguments).

    The run checks the decision before it takes it: an unknown call, a decision its policy does not allow, edited
    arguments its tool refuses, a different decision on a call already decided, or the run's initiator approving
    where its policy forbids it are refused with the reason (exit 2) and change nothing. The same decision sent
    again is accepted once. With a quorum, an approval counts as one vote ('voted') until enough people approved.
    """
    arguments = _parse_arguments(decision, arguments_text)
    out, err = _consoles(as_json)
    target = Target(address, namespace, store_url)

    async def go(client: Any, run: dict[str, Any]) -> dict[str, Any]:
        from handrail.temporal import DecisionRefused, RunNotFoundError, TemporalUnavailableError, decide

        if run["workflow_status"] != "RUNNING":
            fail(err, f"run {run_id} has ended ({run.get('status')}): no call waits for a decision.")
        try:
            return await asyncio.wait_for(decide(client, run_id, call_id, decision, decided_by=by or os_user(),
                                                 arguments=arguments, feedback=feedback), DECIDE_SECONDS)  # fmt: skip
        except (DecisionRefused, RunNotFoundError) as exc:  # refused, or the run ended a moment ago
            fail(err, str(exc), EXIT_USAGE)
        except TemporalUnavailableError as exc:
            fail(err, str(exc), EXIT_RUN_FAILED)
        except TimeoutError:
            fail(err, f"no worker of task queue {run.get('task_queue')} took the decision within "
                      f"{DECIDE_SECONDS:.0f} s; it may still apply when one does: check with 'handrail runs show "
                      f"{run_id} {target.args()}'.", EXIT_RUN_FAILED)  # fmt: skip
        except Exception as exc:
            problem = rpc_problem(exc)
            if problem is None:
                raise
            fail(err, f"run {run_id}: {problem[1]}", EXIT_USAGE if problem[0] == "NOT_FOUND" else EXIT_RUN_FAILED)

    answer = _on_run(err, target, run_id, go)
    if as_json:
        echo_json(answer)
        return
    who = printable(by or os_user())
    status = answer.get("status")
    if status == "voted":
        votes = answer.get("votes") or []
        out.print(f"voted: {who}'s {decision} of call {printable(call_id)} counts ({len(votes)} of "
                  f"{answer.get('quorum')}: {', '.join(printable(v) for v in votes)}); the call waits for more "
                  f"approvers.", markup=False)  # fmt: skip
    elif status == "duplicate":
        out.print(f"duplicate: call {printable(call_id)} was already decided so; nothing changed.", markup=False)
    else:
        out.print(f"decided: call {printable(call_id)} {_past(decision)} by {who}.", markup=False)


def _past(decision: str) -> str:
    return {"approve": "approved", "reject": "rejected", "edit": "edited (and approved)"}[decision]


def _parse_arguments(decision: str, text: str | None) -> dict[str, Any] | None:
    if text is None:
        if decision == "edit":
            raise click.UsageError("edit needs --arguments JSON (the call's new arguments, a JSON object).")
        return None
    if decision != "edit":
        raise click.UsageError(f"--arguments goes with edit, not with {decision}.")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.UsageError(f"--arguments is not JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise click.UsageError("--arguments must be a JSON object ({...}).")
    return value
