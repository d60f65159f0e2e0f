"""``-v`` / ``-vv`` / ``--log-json`` / ``--tracing`` of ``handrail run`` and ``handrail resume``.

The first three show the run's log records on stderr; ``--tracing`` traces the run to OpenTelemetry's global
tracer provider (:func:`handrail.tracing.enable`), as ``handrail serve --tracing`` does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import click

__all__ = ["run_logs", "verbose_options"]

_RUN_LOGGER = "handrail.run"


class LineFormatter(logging.Formatter):
    """``12:00:01 step 1 chat gpt-4o 0.80s in=120 out=20``: the time and the message (a warning says so)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(message)s", datefmt="%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        from handrail.core._terminal import printable

        line = printable(super().formatMessage(record))  # a tool's error text cannot break the line or clear the screen
        if record.levelno >= logging.WARNING:
            time, _, message = line.partition(" ")
            return f"{time} {record.levelname.lower()}: {message}"
        return line


def utc_time(created: float) -> str:
    """``created`` (seconds since the epoch) as UTC ISO 8601 with milliseconds: ``2026-12-04T02:05:00.123Z``.

    Examples:
        >>> utc_time(1796349900.1234)
        '2026-12-04T02:05:00.123Z'
    """
    import datetime

    moment = datetime.datetime.fromtimestamp(created, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and the record's fields (run_id, step, ...)."""

    def format(self, record: logging.LogRecord) -> str:
        from handrail.components._run_logging import FIELDS

        data: dict[str, Any] = {"time": utc_time(record.created), "level": record.levelname,
                                "logger": record.name, "message": record.getMessage()}  # fmt: skip
        data.update({name: getattr(record, name) for name in FIELDS if hasattr(record, name)})
        return json.dumps(data, ensure_ascii=False, default=str)


def _tracing(ctx: click.Context, _param: click.Parameter, tracing: bool) -> None:
    """``--tracing``: :func:`handrail.tracing.enable` for this command (the global provider), off again at its end."""
    if not tracing:
        return
    try:
        import handrail.tracing

        was_on = handrail.tracing.is_enabled()
        handrail.tracing.enable()
    except ImportError as exc:
        raise click.UsageError(
            f"--tracing needs OpenTelemetry ({exc.name or exc} is not installed): pip install 'handrail[tracing]'."
        ) from None
    if not was_on:
        ctx.call_on_close(handrail.tracing.disable)
    from opentelemetry import trace

    if type(trace.get_tracer_provider()).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
        click.echo("handrail: --tracing: no OpenTelemetry SDK tracer provider is configured, so the spans go nowhere "
                   "(run under opentelemetry-instrument, or set one up in code).", err=True)  # fmt: skip


def verbose_options(command: Any) -> Any:
    """Add ``-v`` (counted), ``--log-json`` and ``--tracing`` to ``command``."""
    command = click.option(
        "--tracing", is_flag=True, expose_value=False, callback=_tracing,
        help="Trace the run with OpenTelemetry to the global tracer provider (configure it as the SDK does, e.g. "
             "run under opentelemetry-instrument; with none configured the spans go nowhere); needs "
             "handrail[tracing].",
    )(command)  # fmt: skip
    command = click.option(
        "--log-json", is_flag=True,
        help="With -v: write each log record as one JSON object per line (run_id, step, tool_call_id, ...).",
    )(command)  # fmt: skip
    return click.option(
        "-v", "--verbose", count=True,
        help="Log the run on stderr: -v each model call, tool call, approval and pause; -vv also hooks, writes and "
             "a masked preview of tool arguments and results.",
    )(command)  # fmt: skip


@contextlib.contextmanager
def run_logs(verbose: int, as_json: bool = False) -> Iterator[None]:
    """While the command runs, show ``handrail.run``'s records on stderr (none when ``verbose`` is 0)."""
    if verbose <= 0:
        if as_json:
            raise click.UsageError("--log-json goes with -v (it formats the log records -v shows).")
        yield
        return
    logger = logging.getLogger(_RUN_LOGGER)
    handler = logging.StreamHandler(sys.stderr)  # the stream of this command (a test runner's, when it runs one)
    handler.setFormatter(JsonLineFormatter() if as_json else LineFormatter())
    level = logging.INFO if verbose == 1 else logging.DEBUG
    handler.setLevel(level)
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
        handler.flush()
