"""Shared pieces of the ``handrail`` command: exit codes, error lines, the streaming printer.

Every value a model, a tool or a snapshot file chose (call ids, tool names, arguments, results, feedback,
answer text, file names) goes through :func:`printable` (or :func:`echo_json`) before it reaches the
terminal, so an escape sequence in it is shown, never obeyed.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import re
import shlex
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

from handrail.core._terminal import printable, terminal_json

__all__ = [
    "EXIT_BUSY",
    "EXIT_INTERRUPTED",
    "EXIT_NO_ANSWER",
    "EXIT_OK",
    "EXIT_PAUSED",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "Printer",
    "age",
    "agent_file_note",
    "call_line",
    "drift_message",
    "echo_json",
    "error",
    "error_table",
    "errors_as_exit_codes",
    "fail_busy",
    "fail_usage",
    "indented",
    "json_errors",
    "printable",
    "python_resume",
    "quote",
    "recorded_agent_file",
    "reported",
    "resume_command",
    "resume_hint",
    "running_calls",
    "unknown_outcome_message",
]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_ANSWER, EXIT_PAUSED, EXIT_BUSY = 0, 1, 2, 3, 4, 5
EXIT_INTERRUPTED = 130
"""Ctrl-C stopped the command (128 + SIGINT, as shells report it)."""

_JSON_ERRORS: contextvars.ContextVar[bool] = contextvars.ContextVar("handrail_json_errors", default=False)
"""True while a command given ``--json`` runs: :func:`error` prints a JSON object on stdout instead of a line."""


def echo_json(value: Any) -> None:
    r"""Print ``value`` as one line of JSON (UTF-8, not ASCII-escaped) that is safe to show in a terminal.

    ``json.dumps`` escapes C0 controls but not DEL, C1 or bidirectional controls; those are written as
    ``\uXXXX`` escapes too, so the line is the same JSON data and holds no character a terminal acts on.
    """
    click.echo(terminal_json(json.dumps(value, ensure_ascii=False, default=str)))


class Printer:
    """Streams the answer text and shows each tool call with its result (control characters escaped)."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.in_text = False

    def __call__(self, chunk: Any) -> None:
        from rich.text import Text

        if chunk.content:
            self.console.print(printable(chunk.content, keep_newlines=True), end="", markup=False, highlight=False,
                               soft_wrap=True)  # fmt: skip
            self.in_text = True
        result = chunk.tool_call_result
        if result is not None:
            self.end_text()
            args = result.origin.arguments
            shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else str(args)
            from handrail.dataclasses.chat_message import result_text

            full = result_text(result, image_placeholders=True)
            text = full if len(full) <= 400 else full[:400] + " …"
            call = Text("→ ")
            call.append(printable(result.origin.tool_name), style="bold red" if result.error else "bold cyan")
            call.append(f"({printable(shown)})")
            self.console.print(call)
            self.console.print(Text("  " + printable(text), style="dim"))

    def end_text(self) -> None:
        """End a line of streamed text, if one is open."""
        if self.in_text:
            self.console.print()
            self.in_text = False


def error(out: Any, message: str, kind: str = "Error", **extra: Any) -> None:
    """Print an error line; the message is plain text, never read as rich markup, its control characters escaped.

    Newlines are kept (a drift error holds a diff). Under :func:`json_errors` it is one JSON object on stdout
    instead: ``{"error": {"type": kind, "message": message, **extra}}``.
    """
    from rich.text import Text

    if _JSON_ERRORS.get():
        echo_json({"error": {"type": kind, "message": message, **extra}})
        return

    line = Text("error: ", style="bold red")
    line.append(printable(message, keep_newlines=True))
    out.print(line)


def fail_usage(out: Any, message: str) -> NoReturn:
    """Print one error line and exit with :data:`EXIT_USAGE`."""
    error(out, message, "UsageError")
    sys.exit(EXIT_USAGE)


def fail_busy(out: Any, message: str) -> NoReturn:
    """Print one error line and exit with :data:`EXIT_BUSY` (another process is resuming the snapshot)."""
    error(out, message, "SnapshotBusy")
    sys.exit(EXIT_BUSY)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _unescape_json_strings(text: str) -> str:
    r"""Rewrite the JSON string literals in ``text`` without ``\uXXXX`` escapes of printable characters.

    The drift diff is made of ``json.dumps`` lines, which escape every non-ASCII character (``"f\u00fcr"``);
    shown here as ``"für"``. Quotes, backslashes and control characters stay escaped.
    """

    def plain(match: re.Match[str]) -> str:
        try:
            value = json.loads(match.group())
        except ValueError:
            return match.group()
        return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else match.group()

    return _JSON_STRING.sub(plain, text)


def drift_message(exc: Exception) -> str:
    """The CLI's wording of a SnapshotDriftError: the same facts and diff, with --allow-drift as the way on."""
    text = str(exc)
    head, marker, diff = text.partition("Changes:\n")
    head = re.sub(r"\s*Pass allow_drift=True[^.]*\.", "", head).rstrip()
    if not head.endswith("."):
        head += "."
    hint = " Resume with --allow-drift to continue anyway, or restore the agent file."
    return f"{head}{hint}" + (f" Changes (- the snapshot, + the agent now):\n{_unescape_json_strings(diff)}"
                              if marker else "")  # fmt: skip


def unknown_outcome_message(exc: Any) -> str:
    """The CLI's wording of an UnknownOutcomeError: the call named, --unknown-outcome as the way on."""
    since = re.search(r"\(since [^)]*\)", str(exc))
    when = f" {since.group()}" if since else ""
    return (
        f"Call '{exc.tool_call_id}' to tool '{exc.tool_name}' was running when its process stopped{when}; its "
        f"outcome is unknown (it may or may not have taken effect). Resume again with --unknown-outcome retry "
        f"(run it again, with the same call id) or --unknown-outcome fail (record it as failed and go on)."
    )


def _permission_message(exc: PermissionError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return (
        f"Permission denied:{where}. Snapshot files are written with mode 0600 (only their owner reads them); "
        f"run as the user who owns them, or fix the file's or directory's permissions."
    )


def _import_message(exc: ImportError) -> str:
    hint = (
        ""
        if "pip install" in str(exc)
        else ". A component needs an optional dependency: pip install 'handrail[local]' for the embedded "
        "model, 'handrail[openai]' for OpenAI-compatible servers."
    )
    return f"{exc}{hint}"


def _spec_message(exc: Exception, agent_file: Path | None) -> str:
    named = agent_file is None or str(exc).startswith(str(agent_file))
    return str(exc) if named else f"{agent_file}: {exc}"


ErrorLine = Callable[[Any, Path | None], str]
"""How an error is worded on the command's error line: ``(exception, agent file) -> text``."""


@functools.cache
def error_table() -> tuple[tuple[type[BaseException], int | None, ErrorLine], ...]:
    """The one table from an exception to its error line and exit code; the first row whose type matches wins.

    Each row is ``(exception type, exit code, wording)``; an exit code of None is the exception's own
    ``exit_code`` (every handrail error carries one, see :mod:`handrail.errors`). Only the exceptions that are
    not handrail's (an I/O error, a missing optional dependency) have their code here.
    """
    from handrail.errors import DecisionConflictError, HandrailError, SnapshotDriftError, UnknownOutcomeError
    from handrail.specs import SpecError

    return (
        (SpecError, None, _spec_message),
        (SnapshotDriftError, None, lambda exc, _: drift_message(exc)),
        (UnknownOutcomeError, None, lambda exc, _: unknown_outcome_message(exc)),
        (DecisionConflictError, None, lambda exc, _: f"Conflict: {exc} This decision was not recorded."),
        (PermissionError, EXIT_USAGE, lambda exc, _: _permission_message(exc)),
        (ImportError, EXIT_USAGE, lambda exc, _: _import_message(exc)),
        (HandrailError, None, lambda exc, _: str(exc)),
        (OSError, EXIT_RUN_FAILED, lambda exc, _: f"{type(exc).__name__}: {exc}"),
    )


def reported(exc: BaseException) -> tuple[int, ErrorLine] | None:
    """The exit code and wording :func:`errors_as_exit_codes` gives ``exc``, from :func:`error_table`.

    None when it lets ``exc`` pass (a bug, or an exception of a user's code: the caller words it).
    """
    for kind, code, wording in error_table():
        if isinstance(exc, kind):
            return (getattr(exc, "exit_code", EXIT_RUN_FAILED) if code is None else code), wording
    return None


@contextlib.contextmanager
def errors_as_exit_codes(
    out: Any, agent_file: Path | None = None, busy: Callable[[], bool] | None = None
) -> Iterator[None]:
    """Turn expected failures into one error line and an exit code (see ``handrail --help``), by :func:`reported`.

    Args:
        out: The console errors go to.
        agent_file: The agent file, named in spec errors that do not name it.
        busy: Whether another process holds the claim of the snapshot the command works on (``Where.busy``): an
            error whose exit code is :data:`EXIT_BUSY` (a SnapshotUnavailableError) exits with it while one does,
            else with :data:`EXIT_USAGE` (the snapshot was resumed or its run ended). None: always
            :data:`EXIT_BUSY`.
    """
    try:
        yield
    except click.ClickException:
        raise
    except Exception as exc:
        found = reported(exc)
        if found is None:
            raise
        code, wording = found
        if code == EXIT_BUSY and busy is not None and not busy():
            code = EXIT_USAGE
        error(out, wording(exc, agent_file), type(exc).__name__)
        sys.exit(code)


@contextlib.contextmanager
def json_errors(enabled: bool) -> Iterator[None]:
    """While a command given ``--json`` runs: its errors are JSON objects on stdout (exit codes unchanged).

    Every :func:`error` line becomes ``{"error": {"type", "message"}}`` on stdout, and so does a click usage
    error raised in the command's body (an empty QUESTION, options that do not go together). Errors in the
    command line itself (an unknown option, a bad choice) are found before ``--json`` is read: click's text.
    """
    token = _JSON_ERRORS.set(enabled)
    try:
        yield
    except click.ClickException as exc:
        if not enabled:
            raise
        echo_json({"error": {"type": type(exc).__name__, "message": exc.format_message()}})
        sys.exit(exc.exit_code)
    finally:
        _JSON_ERRORS.reset(token)


def running_calls(snapshot: Any) -> list[Any]:
    """The ledger entries marked ``running``: calls whose process stopped mid-call, outcome unknown."""
    return [entry for entry in snapshot.ledger.values() if entry.status == "running"]


def recorded_agent_file(snapshot: Any) -> str | None:
    """The agent file recorded in the snapshot (by ``handrail run``), when it is still there; else None."""
    recorded = snapshot.metadata.get("agent_file")
    if isinstance(recorded, str) and recorded and Path(recorded).is_file():
        return recorded
    return None


def resume_command(snapshot: Any, store: Any, *options: str) -> str:
    """The ``handrail resume`` command line that continues ``snapshot``, with ``options`` at the end.

    ``store`` is the command's ``Where`` (its ``arg``: ``--dir DIR`` or ``--store URL``). A snapshot that names no
    agent file that exists (paused from Python, or its file is gone) gets ``--agent AGENT.yaml``, a placeholder
    that :func:`agent_file_note` explains; print the note with the command.
    """
    command = f"handrail resume {quote(str(snapshot.snapshot_id))} {store.arg}"
    if recorded_agent_file(snapshot) is None:
        command += " --agent AGENT.yaml"
    return " ".join([command, *options])


def python_resume(snapshot: Any, store: Any, unknown_outcome: str | None = None) -> str:
    """The Python statement that resumes ``snapshot`` with an Agent named ``agent``, runnable as printed.

    ``import handrail; handrail.resume('<id>', store='<url or dir>', agent=agent)``, with ``unknown_outcome=``
    when given; a store the command was given ``--allow-module`` for is opened with those ``allowed_modules``.
    """
    value = repr(store.value)
    imports = "import handrail"
    if store.allow_modules:
        imports = f"from handrail.stores import open_snapshot_store; {imports}"
        value = f"open_snapshot_store({value}, allowed_modules={list(store.allow_modules)!r})"
    outcome = f", unknown_outcome={unknown_outcome!r}" if unknown_outcome else ""
    statement = f"{imports}; handrail.resume({str(snapshot.snapshot_id)!r}, store={value}, agent=agent{outcome})"
    return printable(statement)


def agent_file_note(snapshot: Any, store: Any) -> str:
    """What AGENT.yaml stands for in :func:`resume_command`, and how to resume in Python instead (leading space).

    ``""`` when the snapshot's agent file is recorded and there. The Python statements (:func:`python_resume`)
    end their lines and run as printed, given the Agent as ``agent``: with ``unknown_outcome='retry'`` and
    ``'fail'`` (one line each) for a snapshot with a call found running, which plain resuming refuses.
    """
    if recorded_agent_file(snapshot) is not None:
        return ""
    recorded = snapshot.metadata.get("agent_file")
    if isinstance(recorded, str) and recorded:
        why = f"the agent file recorded in the snapshot ({printable(recorded)}) is gone"
    else:
        why = "the snapshot records no agent file (the run was paused from Python)"
    note = f" Replace AGENT.yaml with an agent file that defines the same agent: {why}."
    if not running_calls(snapshot):
        return f"{note} Or resume it in Python, with that agent as `agent`:\n  {python_resume(snapshot, store)}"
    return (
        f"{note} Or resume it in Python, with that agent as `agent`, with one of:\n"
        f"  {python_resume(snapshot, store, 'retry')}\n  {python_resume(snapshot, store, 'fail')}"
    )


def resume_hint(snapshot: Any, store: Any, *, what: str = "it") -> str:
    """How to continue ``snapshot``: every hint to resume is built here, from the snapshot's ledger.

    A snapshot with a call marked ``running`` (its process stopped mid-call, so the outcome is unknown) gets the
    two commands with ``--unknown-outcome retry`` and ``--unknown-outcome fail``: the plain command would be
    refused. ``store`` is the command's ``Where`` (its ``arg``: ``--dir DIR`` or ``--store URL``); ``what`` names
    the thing continued ("it", "the run"). Every command in it runs as printed and ends its line; what AGENT.yaml
    stands for, when it is there, follows on its own line. Ids and names are escaped for the terminal
    (:func:`printable`).
    """
    note = agent_file_note(snapshot, store).strip()
    note = f"\n{note}" if note else ""
    running = running_calls(snapshot)
    if not running:
        return f"Continue {what} with: {resume_command(snapshot, store)}{note}"
    calls = ", ".join(f"{printable(entry.tool_call_id)} ({printable(entry.tool_name)})" for entry in running)
    one = len(running) == 1
    them = "it" if one else "them"
    return (
        f"{'Call' if one else 'Calls'} {calls} {'was' if one else 'were'} running when the run stopped; "
        f"{'its' if one else 'their'} outcome is unknown. Continue {what} with one of:\n"
        f"  {resume_command(snapshot, store, '--unknown-outcome', 'retry')}\n"
        f"    (runs {them} again with the same call id)\n"
        f"  {resume_command(snapshot, store, '--unknown-outcome', 'fail')}\n"
        f"    (records {them} as failed and goes on){note}"
    )


def indented(text: str, prefix: str = "  ") -> str:
    """``text`` with ``prefix`` before each of its lines (a hint printed under a heading)."""
    return "\n".join(prefix + line for line in text.split("\n"))


def age(moment: datetime, now: datetime | None = None) -> str:
    """How long ago ``moment`` was, briefly: ``"42s"``, ``"5m"``, ``"3h"``, ``"2d"``."""
    if moment.tzinfo is None:  # written without a zone: handrail writes UTC
        moment = moment.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def call_line(call_id: str | None, tool_name: str, arguments: Any, limit: int = 300) -> Any:
    """A rich Text ``"  c2  transfer({"amount": 5})"`` (arguments as JSON, cut at ``limit`` characters).

    Every part is passed through :func:`printable`: the model chose them.
    """
    from rich.text import Text

    shown = json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments)
    if len(shown) > limit:
        shown = shown[:limit] + " …"
    line = Text(f"  {printable(call_id or '?')}  ")
    line.append(printable(tool_name), style="bold cyan")
    line.append(f"({printable(shown)})")
    return line


def quote(value: str | Path) -> str:
    """Quote a value for a shell command line shown to the user (control characters escaped)."""
    return printable(shlex.quote(str(value)))
