"""``handrail worker --temporal``: a Temporal worker running the agent files of a directory, by name.

Every ``DIR/<name>.yaml`` (or ``.yml``) is agent ``<name>``, built at startup as a Temporal worker needs it
(``approve="workflow"``: its confirmation strategies carry every setting of the file, quorum, allowed decisions,
expiry..., and the workflow asks through Updates) and checked for what a workflow cannot run (chat or memory
stores, a tool taking the whole State). All files are checked before the worker takes work; the bad ones are
reported together, one ``FILE:LINE: problem`` line each (exit 2). The generator is built then, but its model is
loaded at the first model call of that agent (a local model does not slow the start). The ledger (``--store``)
makes each tool call's effect happen once however often Temporal runs its activity; clients (``handrail run
--temporal``) use the same store for large payloads kept by reference.

One line says when the worker polls its queue. SIGTERM or Ctrl-C stops it cleanly (exit 0): it takes no new
work and the model and tool calls under way get :data:`GRACE_SECONDS` to finish (their runs wait on the queue
for another worker); a second signal stops it at once (exit 130).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import EXIT_RUN_FAILED, EXIT_USAGE, printable
from handrail.cli._temporal import Target, client_store, connect_or_fail, fail, run_async

__all__ = ["GRACE_SECONDS", "agents_of", "serve_temporal"]

GRACE_SECONDS = 30.0
"""How long a stopping worker lets its model and tool calls under way finish before they are cancelled."""
_SUFFIXES = (".yaml", ".yml")


def _file_problem(path: Path, exc: Exception) -> str:
    """``FILE:LINE: problem`` (the first line of the error; how many more it has)."""
    lines = str(exc).splitlines() or [type(exc).__name__]
    more = f" (and {len(lines) - 1} more in this file)" if len(lines) > 1 else ""
    first = lines[0] if lines[0].startswith(str(path)) else f"{path}: {lines[0]}"
    return first + more


def _build(name: str, path: Path, allow_modules: tuple[str, ...], allow_commands: tuple[str, ...] = ()) -> Any:
    from handrail.specs import build_agent, load_agent_spec
    from handrail.temporal._catalog import check_for_temporal
    from handrail.tools.utils import flatten_tools

    spec = load_agent_spec(path)
    folder = str(path.parent)
    if (spec.allowed_modules or allow_modules) and folder not in sys.path:
        sys.path.insert(0, folder)  # tool modules may sit beside the agent file, as for 'handrail run'
    agent = build_agent(spec, base_dir=path.parent, allowed_modules=allow_modules, allowed_commands=allow_commands,
                        approve="workflow")  # fmt: skip
    check_for_temporal(name, agent, {t.name: t for t in flatten_tools(agent.tools)})
    return agent


def agents_of(out: Any, directory: Path, allow_modules: tuple[str, ...],
              allow_commands: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """The agents of ``directory`` by name (its agent files' stems), or the problems of every bad file and exit 2."""
    from handrail.errors import ConfigurationError, ConfigurationTypeError

    if not directory.is_dir():
        fail(out, f"--agents {printable(directory)}: not a directory.")
    files: dict[str, Path] = {}
    problems: list[str] = []
    for path in sorted(directory.iterdir()):
        if path.suffix not in _SUFFIXES or not path.is_file():
            continue
        if path.stem in files:
            problems.append(f"{path}: agent {path.stem!r} is also defined by {files[path.stem].name}; keep one.")
            continue
        files[path.stem] = path
    if not files and not problems:
        fail(out, f"--agents {printable(directory)} holds no agent files (NAME.yaml or NAME.yml, one per agent).")
    agents: dict[str, Any] = {}
    for name, path in files.items():
        try:
            agents[name] = _build(name, path, allow_modules, allow_commands)
        except (ConfigurationError, ConfigurationTypeError, ImportError) as exc:
            problems.append(_file_problem(path, exc))
    if problems:
        fail(out, "\n".join(problems), EXIT_USAGE)
    return agents


def serve_temporal(target: Target, task_queue: str, directory: Path, allow_modules: tuple[str, ...],
                   max_workers: int | None, *, allow_commands: tuple[str, ...] = (),
                   tracing: bool = False) -> None:  # fmt: skip
    """Run the worker until stopped (see the module docstring)."""
    from rich.console import Console

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if not task_queue.strip():
        raise click.UsageError("--task-queue is empty; name the queue clients start runs on.")
    agents = agents_of(err, directory, allow_modules, allow_commands)
    store = client_store(err, target.store_url, create=True)
    try:
        run_async(lambda: _serve(err, target, task_queue, agents, store, max_workers, tracing))
    finally:
        store.close()
    click.echo("handrail worker: stopped.")


async def _serve(err: Any, target: Target, task_queue: str, agents: dict[str, Any], store: Any,
                 max_workers: int | None, tracing: bool = False) -> None:  # fmt: skip
    from handrail.temporal import create_worker

    client = await connect_or_fail(err, target, store, tracing=tracing)
    worker = create_worker(client, task_queue, agents, store, max_concurrent_activities=max_workers or 16,
                           graceful_shutdown_timeout=timedelta(seconds=GRACE_SECONDS))  # fmt: skip
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:
        if stop.is_set():
            sys.stdout.flush()
            os._exit(130)
        click.echo(f"handrail worker: stopping (calls under way get {GRACE_SECONDS:.0f} s to finish; again to stop "
                   f"at once) …", err=True)  # fmt: skip
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, on_signal)
    running = asyncio.create_task(worker.run())
    while not worker.is_running and not running.done():
        await asyncio.sleep(0.02)
    if running.done():
        _failed(err, target, task_queue, running.exception())
    names = ", ".join(printable(n) for n in sorted(agents))
    click.echo(f"handrail worker: serving task queue {printable(task_queue)} on {printable(target.address)} "
               f"(namespace {printable(target.namespace)}; agents: {names}; ledger {printable(store.url)}). "
               f"Ctrl-C stops.")  # fmt: skip
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({running, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if running.done():
        stopped.cancel()
        _failed(err, target, task_queue, running.exception())
    await worker.shutdown()
    await running


def _failed(err: Any, target: Target, task_queue: str, exc: BaseException | None) -> None:
    reason = str(exc).splitlines()[0][:300] if exc is not None and str(exc) else type(exc).__name__
    fail(err, f"the worker of task queue {printable(task_queue)} on {printable(target.address)} stopped: "
              f"{printable(reason)}", EXIT_RUN_FAILED)  # fmt: skip
