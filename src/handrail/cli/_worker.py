"""``handrail worker``: resume the runs of a store by themselves once their calls are decided, until stopped.

It runs :class:`~handrail.server.Resumer` in the foreground: every paused run whose held calls are all decided
(or expired) is continued once, whatever the number of workers and servers on the store; the expiry sweep runs
at each approval's expiry time; a run whose process died is taken over. One line per run it resumes, pauses,
finishes or fails goes to stdout (the model's text shown as printable text, never obeyed by the terminal).
SIGTERM or Ctrl-C stops it cleanly (exit 0): the runs it is continuing finish or pause first, queued ones are
left to the other processes; a second signal stops it at once (exit 130).

With ``--temporal HOST:PORT`` it is a Temporal worker instead (:mod:`handrail.cli._temporal_worker`): it runs the
agent files of ``--agents`` for the runs started on ``--task-queue``, with ``--store`` as its tool-call ledger.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from handrail.cli._common import fail_usage, printable
from handrail.cli._serve import service_store
from handrail.cli._temporal import parse_address

__all__ = ["worker"]

_TEXT_SHOWN = 200


def _line(what: str, record: Any) -> str | None:
    """The line printed for a change to a run (None: not printed)."""
    run = f"run {printable(record.run_id)} ({printable(record.agent_name)})"
    if what in ("resumed", "running"):
        return f"resumed {run}"
    if what == "paused":
        return f"paused {run}: waiting for approval (snapshot {printable(record.snapshot_id)})"
    if what == "finished":
        result = record.result or {}
        text = ((result.get("last_message") or {}).get("content") or [{}])[0].get("text") or ""
        shown = printable(text)[:_TEXT_SHOWN]
        return (f"finished {run}: exit {printable(result.get('exit_reason'))}, {result.get('step_count')} steps: "
                f"{shown}")  # fmt: skip
    if what == "failed":
        return f"failed {run}: {printable(record.error)}"
    return None


def _report(what: str, record: Any) -> None:
    line = _line(what, record)
    if line is not None:
        click.echo(line)


@click.command()
@click.option("--store", "store_url", required=True, metavar="URL",
              help="The store: sqlite:///PATH, postgresql://... (password from PGPASSWORD or ~/.pgpass), or a "
                   "directory.")  # fmt: skip
@click.option("--agents", "agents_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path),
              help="Run only agent files inside DIR (<name>.yaml); default: the files snapshots record.")  # fmt: skip
@click.option("--allow-module", "allow_modules", multiple=True, metavar="PREFIX",
              help="Trust dotted paths under this module prefix in agent files (repeatable).")  # fmt: skip
@click.option("--allow-command", "allow_commands", multiple=True, metavar="NAME",
              help="Let the agent files' stdio MCP servers run this command, exactly as a file writes it "
                   "(repeatable).")  # fmt: skip
@click.option("--unknown-outcome", type=click.Choice(["fail", "retry"]), default="fail", show_default=True,
              help="A call found running (its process died mid-call): fail it (the model is told its outcome is "
                   "unknown) or retry it with the same call id (for idempotent tools).")  # fmt: skip
@click.option("--max-workers", type=click.IntRange(1, 256), metavar="N",
              help="Runs continued at once (the rest wait their turn)  [default: 4]; with --temporal: model and "
                   "tool calls at once  [default: 16].")  # fmt: skip
@click.option("--temporal", "address", metavar="HOST:PORT", callback=parse_address,
              help="Be a Temporal worker of this frontend instead: run the agent files of --agents (each "
                   "DIR/NAME.yaml is agent NAME) for the runs of --task-queue; --store is the tool-call "
                   "ledger (sqlite:///PATH or postgresql://..., created if missing).")  # fmt: skip
@click.option("--task-queue", metavar="QUEUE", help="With --temporal: the queue 'handrail run --temporal' starts "
              "runs on.")  # fmt: skip
@click.option("--namespace", metavar="NS", help="With --temporal: the Temporal namespace  [default: default].")
@click.option("--tracing", is_flag=True,
              help="Trace the runs with OpenTelemetry to the global tracer provider (configure it as the SDK does, "
                   "e.g. run under opentelemetry-instrument); needs handrail[tracing]. With --temporal: the "
                   "workflows and activities (temporalio's TracingInterceptor).")  # fmt: skip
@click.pass_context
def worker(
    ctx: click.Context,
    store_url: str,
    agents_dir: Path | None,
    allow_modules: tuple[str, ...],
    allow_commands: tuple[str, ...],
    unknown_outcome: str,
    max_workers: int | None,
    address: str | None,
    task_queue: str | None,
    namespace: str | None,
    tracing: bool,
) -> None:
    """Resume paused runs by themselves once their calls are decided (and sweep expired approvals).

    Any number of workers and servers may share a store: each decided run is continued exactly once. Stop with
    Ctrl-C or SIGTERM (exit 0). A store that does not exist, or does not answer now, is refused as 'handrail
    serve' refuses it (one error line; exit 2, or 1 for an unreachable server); a later outage is retried.

    With --temporal HOST:PORT --task-queue QUEUE --agents DIR, it runs agents on Temporal instead: every agent
    file of DIR is built and checked first (bad ones: one FILE:LINE line each, exit 2); their confirmation
    settings (quorum, allowed decisions, expiry, initiator_may_approve) decide who is asked, through 'handrail
    runs decide' or the console of 'handrail run --temporal'. One line says when it polls the queue. Ctrl-C or
    SIGTERM stops it (exit 0; calls under way get 30 s to finish, their runs wait for another worker); a
    second one at once (exit 130). An address that does not answer: one error line, exit 1.
    """
    from rich.console import Console

    err = Console(stderr=True, highlight=False)
    if address is not None:
        _temporal(ctx, err, store_url, agents_dir, (allow_modules, allow_commands), max_workers, address, task_queue,
                  namespace, tracing)  # fmt: skip
        return
    for given, flag in ((task_queue, "--task-queue"), (namespace, "--namespace")):
        if given is not None:
            raise click.UsageError(f"{flag} goes with --temporal HOST:PORT (a Temporal worker).", ctx)
    max_workers = max_workers or 4
    from handrail.server import Resumer

    if agents_dir is not None and not agents_dir.is_dir():
        fail_usage(err, f"--agents {printable(agents_dir)}: not a directory.")
    stop = threading.Event()
    with service_store(err, store_url, allow_modules) as (where, _):  # as serve checks it: it exists, it answers
        resumer = Resumer(
            where.store, agents_dir=agents_dir, allowed_modules=allow_modules, allowed_commands=allow_commands,
            unknown_outcome=unknown_outcome, max_workers=max_workers, report=_report, tracing=tracing,
        )  # fmt: skip
        previous = _on_signals(stop)
        try:
            agents = ", ".join(printable(n) for n in resumer.launcher.registry.names()) or "the files snapshots record"
            click.echo(f"handrail worker: watching {printable(where.value)} (agents: {agents}; unknown outcome: "
                       f"{unknown_outcome}). Ctrl-C stops.")  # fmt: skip
            resumer.run_forever(stop)
            resumer.stop()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
    click.echo("handrail worker: stopped.")


def _temporal(ctx: click.Context, err: Any, store_url: str, agents_dir: Path | None,
              allowed: tuple[tuple[str, ...], tuple[str, ...]], max_workers: int | None, address: str,
              task_queue: str | None, namespace: str | None, tracing: bool = False) -> None:  # fmt: skip
    from handrail.cli._temporal import Target
    from handrail.cli._temporal_worker import serve_temporal

    if ctx.get_parameter_source("unknown_outcome") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--unknown-outcome is not a worker's choice on Temporal: each run's is (it asks a "
                               "person by default).", ctx)  # fmt: skip
    if task_queue is None:
        raise click.UsageError("--temporal needs --task-queue QUEUE (the queue runs are started on).", ctx)
    if agents_dir is None:
        raise click.UsageError("--temporal needs --agents DIR (its NAME.yaml files are the agents it runs).", ctx)
    serve_temporal(Target(address, namespace or "default", store_url), task_queue, agents_dir, allowed[0],
                   max_workers, allow_commands=allowed[1], tracing=tracing)  # fmt: skip


def _on_signals(stop: threading.Event) -> dict[int, Any]:
    """SIGINT and SIGTERM set ``stop``; a second one ends the process at once (exit 130)."""

    def handler(number: int, frame: FrameType | None) -> None:
        if stop.is_set():
            os._exit(130)
        click.echo("handrail worker: stopping (the runs under way finish or pause first) …", err=True)
        stop.set()

    return {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
