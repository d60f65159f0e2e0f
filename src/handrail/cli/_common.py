"""Shared pieces of the ``handrail`` command: exit codes, error lines, the streaming printer, snapshot lookup."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

__all__ = [
    "EXIT_NO_ANSWER",
    "EXIT_OK",
    "EXIT_PAUSED",
    "EXIT_RUN_FAILED",
    "EXIT_USAGE",
    "Printer",
    "age",
    "call_line",
    "error",
    "errors_as_exit_codes",
    "fail_usage",
    "find_snapshot",
    "quote",
    "snapshot_dir",
]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_ANSWER, EXIT_PAUSED = 0, 1, 2, 3, 4


class Printer:
    """Streams the answer text and shows each tool call with its result."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.in_text = False

    def __call__(self, chunk: Any) -> None:
        from rich.text import Text

        if chunk.content:
            self.console.print(chunk.content, end="", markup=False, highlight=False, soft_wrap=True)
            self.in_text = True
        result = chunk.tool_call_result
        if result is not None:
            self.end_text()
            args = result.origin.arguments
            shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else str(args)
            text = result.result if len(result.result) <= 400 else result.result[:400] + " …"
            call = Text("→ ")
            call.append(result.origin.tool_name, style="bold red" if result.error else "bold cyan")
            call.append(f"({shown})")
            self.console.print(call)
            self.console.print(Text("  " + text, style="dim"))

    def end_text(self) -> None:
        """End a line of streamed text, if one is open."""
        if self.in_text:
            self.console.print()
            self.in_text = False


def error(out: Any, message: str) -> None:
    """Print one error line; the message is plain text, never read as rich markup."""
    from rich.text import Text

    line = Text("error: ", style="bold red")
    line.append(message)
    out.print(line)


def fail_usage(out: Any, message: str) -> NoReturn:
    """Print one error line and exit with :data:`EXIT_USAGE`."""
    error(out, message)
    sys.exit(EXIT_USAGE)


_HINTS = {
    "UnknownOutcomeError": " Resume with --unknown-outcome retry (run it again, with the same call id) or "
    "--unknown-outcome fail (record it as failed and go on).",
    "SnapshotDriftError": " Resume with --allow-drift to continue anyway.",
}


@contextlib.contextmanager
def errors_as_exit_codes(out: Any, agent_file: Path | None = None) -> Iterator[None]:
    """Turn expected failures into one error line and an exit code (see ``handrail --help``)."""
    from handrail.errors import ConfigurationError, HandrailError
    from handrail.specs import SpecError

    try:
        yield
    except click.ClickException:
        raise
    except SpecError as exc:
        named = agent_file is None or str(exc).startswith(str(agent_file))
        fail_usage(out, str(exc) if named else f"{agent_file}: {exc}")
    except ConfigurationError as exc:
        fail_usage(out, str(exc) + _HINTS.get(type(exc).__name__, ""))
    except ImportError as exc:
        hint = (
            ""
            if "pip install" in str(exc)
            else ". A component needs an optional dependency: pip install 'handrail[local]' for the embedded "
            "model, 'handrail[openai]' for OpenAI-compatible servers."
        )
        fail_usage(out, f"{exc}{hint}")
    except (HandrailError, OSError) as exc:
        text = f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
        error(out, text + _HINTS.get(type(exc).__name__, ""))
        sys.exit(EXIT_RUN_FAILED)


def snapshot_dir(out: Any, directory: Path) -> Path:
    """The absolute snapshot directory; exits with a usage error when it does not exist or is a file."""
    folder = directory.expanduser().absolute()
    if not folder.exists():
        fail_usage(out, f"--dir {directory}: no such directory.")
    if not folder.is_dir():
        fail_usage(out, f"--dir {directory}: not a directory.")
    return folder


def find_snapshot(out: Any, folder: Path, snapshot_id: str) -> Path:
    """The file of SNAPSHOT_ID in ``folder``; exits with a usage error naming the ids present when unknown."""
    from handrail.human_in_the_loop.snapshots import snapshot_files

    stem = snapshot_id.removesuffix(".json")
    if "/" in stem or "\\" in stem or stem in ("", ".", ".."):
        fail_usage(out, f"SNAPSHOT_ID {snapshot_id!r} must be a snapshot id (a file name in --dir), not a path.")
    files = snapshot_files(folder)
    match = next((p for p in files if p.stem == stem), None)
    if match is None:
        ids = [p.stem for p in files]
        present = ", ".join(ids[:20]) + (f" (and {len(ids) - 20} more)" if len(ids) > 20 else "") if ids else "none"
        fail_usage(out, f"No snapshot '{stem}' in {folder}. Snapshots there: {present}.")
    return match


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
    """A rich Text ``"  c2  transfer({"amount": 5})"`` (arguments as JSON, cut at ``limit`` characters)."""
    from rich.text import Text

    shown = json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments)
    if len(shown) > limit:
        shown = shown[:limit] + " …"
    line = Text(f"  {call_id or '?'}  ")
    line.append(tool_name, style="bold cyan")
    line.append(f"({shown})")
    return line


def quote(value: str | Path) -> str:
    """Quote a value for a shell command line shown to the user."""
    return shlex.quote(str(value))
