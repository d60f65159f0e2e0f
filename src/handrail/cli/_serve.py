"""``handrail serve``: the approval service's HTTP API (and the resumer) over one store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import errors_as_exit_codes, fail_usage, printable
from handrail.cli._stores import Where, opened
from handrail.cli._temporal import parse_address

__all__ = ["serve", "service_store"]


def _consoles() -> tuple[Any, Any]:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True), Console(stderr=True, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def service_store(err: Any, store_url: str, allow_modules: tuple[str, ...] = ()) -> Iterator[tuple[Where, int]]:
    """The store ``serve`` and ``worker`` run on, and its number of valid tokens; errors inside become exit codes.

    It must exist (a mistyped path must not look like an empty store: one error line, exit 2) and answer now (an
    unreachable PostgreSQL server is an error exit, 1; an outage later is retried by the resumer).
    """
    from handrail.stores.service import ServiceStore

    with opened(err, None, store_url, allow_modules) as where, errors_as_exit_codes(err):
        yield where, len(where.store.list_tokens()) if isinstance(where.store, ServiceStore) else 0


def _temporal_options(temporal: str | None, namespace: str) -> dict[str, Any]:
    return {"temporal": temporal, "namespace": namespace} if temporal else {}


def _tracing_options(tracing: bool) -> dict[str, Any]:
    return {"tracing": True} if tracing else {}


@click.command()
@click.option(
    "--store",
    "store_url",
    required=True,
    metavar="URL",
    help="The store: sqlite:///PATH, postgresql://..., or a directory (approvals, tokens, events, runs).",
)
@click.option(
    "--agents",
    "agents_dir",
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="A directory of agent files (NAME.yaml): the agents runs start and resume with.",
)
@click.option(
    "--allow-module",
    "allow_modules",
    multiple=True,
    metavar="PREFIX",
    help="Trust classes under this module prefix in snapshots and agent files (repeatable).",
)
@click.option(
    "--allow-command",
    "allow_commands",
    multiple=True,
    metavar="NAME",
    help="Let the agent files' stdio MCP servers run this command, exactly as a file writes it (repeatable).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; another than loopback needs a token in the store.",
)
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535), help="0: a free port.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Server processes.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name to answer to besides loopback and --host, e.g. the public name (repeatable).",
)
@click.option(
    "--unknown-outcome",
    type=click.Choice(["fail", "retry"]),
    default="fail",
    show_default=True,
    help="A call found running after a crash: fail (the model reads 'outcome unknown') or retry (run it again).",
)
@click.option(
    "--no-resume",
    "no_resume",
    is_flag=True,
    help="Serve the API only: leave resuming runs to 'handrail worker' processes on the store.",
)
@click.option("--preview-timeout", default=2.0, show_default=True, type=click.FloatRange(min=0.01, max=3599),
              help="Seconds a tool's preview may take before the page shows 'preview unavailable'.")  # fmt: skip
@click.option("--temporal", "temporal", metavar="HOST:PORT", default=None, callback=parse_address,
              help="Temporal's frontend: the approvals of Temporal runs (recorded here by their workers) are decided "
                   "by Updates to their workflows.")  # fmt: skip
@click.option("--namespace", default="default", show_default=True, help="The Temporal namespace (with --temporal).")
@click.option("--tracing", is_flag=True,
              help="Trace the runs and decisions with OpenTelemetry to the global tracer provider (configure it as the "
                   "SDK does, e.g. run under opentelemetry-instrument); needs handrail[tracing].")  # fmt: skip
@click.option("--keepalive", default=15.0, show_default=True, type=click.FloatRange(min=0.01), hidden=True)
@click.option("--log-level", default="warning", show_default=True, help="The server's log level.",
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))  # fmt: skip
def serve(
    store_url: str,
    agents_dir: Path | None,
    allow_modules: tuple[str, ...],
    allow_commands: tuple[str, ...],
    host: str,
    port: int,
    workers: int,
    allowed_hosts: tuple[str, ...],
    unknown_outcome: str,
    no_resume: bool,
    preview_timeout: float,
    temporal: str | None,
    namespace: str,
    tracing: bool,
    keepalive: float,
    log_level: str,
) -> None:
    """Serve the approval service's HTTP API, and resume runs, until Ctrl+C (SIGINT) or SIGTERM.

    People decide paused tool calls through it (GET /api/v1/approvals, POST /api/v1/approvals/ID/decision);
    every route but /healthz needs a token (handrail tokens add). The URL is printed once the port listens.
    Each server process also runs the resumer (as 'handrail worker' does; --no-resume leaves it to workers): a
    paused run continues once its calls are decided or expired. Any number of servers and workers may share the
    store. With --temporal it decides the approvals of Temporal runs too (their workers record them in the store):
    a decision goes to the run as an Update.
    """
    from handrail.server._serve import serve as serve_api

    out, err = _consoles()
    if agents_dir is not None and not agents_dir.is_dir():
        fail_usage(err, f"--agents {printable(str(agents_dir))}: no such directory.")
    with service_store(err, store_url, allow_modules) as (where, count):

        def ready(url: str) -> None:
            note = f"{count} token{'s' if count != 1 else ''}" if count else "no tokens yet: handrail tokens add"
            out.print(f"handrail serve: listening on {url} (store {where.label}; {note}). Ctrl+C stops it.",
                      markup=False)  # fmt: skip
            out.file.flush()

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: the server shut down; no "Aborted!"
            serve_api(
                where.store, agents_dir=None if agents_dir is None else str(agents_dir), host=host, port=port,
                allowed_hosts=allowed_hosts, workers=workers, store_url=where.value, allow_modules=allow_modules,
                allow_commands=allow_commands, keepalive=keepalive, log_level=log_level, on_ready=ready,
                unknown_outcome=unknown_outcome, resume=not no_resume, preview_timeout=preview_timeout,
                **_temporal_options(temporal, namespace), **_tracing_options(tracing),
            )  # fmt: skip
