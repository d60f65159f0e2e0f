"""The ``handrail`` command: run an agent file, decide paused tool calls, resume, print the agent file schema.

Exit codes (also in ``handrail --help`` and docs/cli.md):

* 0: the agent answered, or a command succeeded;
* 1: the run failed (a model or tool error, an I/O error); a Temporal frontend (``--temporal``) that does not
  answer;
* 2: bad usage or input: neither or both of ``--dir`` and ``--store``, or a store that is not there; a bad
  agent file; an unknown or finished snapshot; a decision for an interrupted snapshot (it takes none:
  resume it); a refused decision, or one that conflicts with the decision already recorded for the call;
  an empty ``--by``; the agent changed since the pause (``--allow-drift``); a call whose outcome is
  unknown (``--unknown-outcome``); a file or directory you may not read or write; with ``--temporal``: a
  malformed ``HOST:PORT``, an unknown run id, a run id used before, an agents directory without agent files;
* 3: the run ended without an answer (step limit, length, content filter);
* 4: the run paused for approval (``--pause-for-approval`` / ``resume``: the snapshot id is printed);
* 5: the snapshot is in use: another process is resuming it now; try again when that run has paused or
  finished;
* 130: Ctrl-C: ``handrail run`` / ``resume`` say what they stopped and, for a run with a snapshot store, the
  command that continues it; a worker's second Ctrl-C; ``handrail run --temporal`` stops waiting (the run goes on).

``handrail run --approve none`` exits 0 when the model answered, even though calls were refused: the refusal is
what was asked for, so it is not a failure; the last line (and ``rejected_tool_call_counts`` in ``--json``) says
how many calls were refused, for a script that must tell.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import warnings
from typing import Any, TextIO

import click

from handrail import __version__
from handrail.cli._approvals import approvals
from handrail.cli._models import models
from handrail.cli._replay import replay
from handrail.cli._run import resume, run
from handrail.cli._serve import serve
from handrail.cli._temporal_runs import runs
from handrail.cli._tokens import tokens
from handrail.cli._worker import worker

__all__ = ["main"]

_EPILOG = (
    "\b\nExit codes:\n"
    "  0 answered / done\n"
    "  1 the run failed (a model or tool error, an I/O error); Temporal does not\n"
    "    answer\n"
    "  2 bad usage or input: not exactly one of --dir and --store; a bad agent\n"
    "    file; a corrupt snapshot file, store record or store schema row; an\n"
    "    unknown or finished snapshot; a decision for an interrupted snapshot\n"
    "    (resume it instead); a refused or conflicting decision; the agent changed\n"
    "    since the pause (--allow-drift); a call's outcome is unknown\n"
    "    (--unknown-outcome); permission denied; with --temporal: a malformed\n"
    "    HOST:PORT, an unknown or reused run id, an agents dir without agent files\n"
    "  3 the run ended without an answer (step limit, length, content filter)\n"
    "  4 paused for approval (see 'handrail approvals --help')\n"
    "  5 the snapshot is held by a running process (a resume in progress): try\n"
    "    again later\n"
    "  130 Ctrl-C: run/resume say what stopped and how to continue a run with a\n"
    "    store; a worker's second one; 'run --temporal' stops waiting (the run\n"
    "    goes on)\n"
    'With --json, run and resume print an error as {"error": {"type", "message"}} on\n'
    "stdout (same exit codes)."
)


class _Command(click.Group):
    """The ``handrail`` group, which ends its process with ``os._exit`` once the Temporal SDK was used.

    As the process's entry point (``handrail ...``, ``python -m handrail.cli``) it calls ``main``, then exits at once
    when the SDK's threads could abort a normal exit (:func:`handrail.cli._temporal.exit_now_if_temporal`). Click's
    test runner calls ``main`` itself and is unaffected.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from handrail.cli._temporal import exit_now_if_temporal

        try:
            return self.main(*args, **kwargs)
        except SystemExit as exc:
            code = exc.code
            if code is not None and not isinstance(code, int):
                click.echo(code, err=True)
                code = 1
            exit_now_if_temporal(code or 0)
            raise


@click.group(cls=_Command, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.version_option(__version__, prog_name="handrail")
@click.pass_context
def main(ctx: click.Context) -> None:
    """handrail: tool-using LLM agents whose tool calls people can approve, reject or edit."""
    # psycopg's pool logs each failed connection attempt as a warning, which Python prints to stderr when no
    # logging is configured; the command reports an unreachable server once, in its own error message.
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    if not isinstance(sys.stdout, _ClosedPipeSafe):
        sys.stdout = _ClosedPipeSafe(sys.stdout)
    # A Python warning (an agent file's exit_conditions naming tools, ...) is one "warning: ..." line, not
    # handrail's source file and line; the library's own warnings are unchanged, only shown so for the command.
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    ctx.call_on_close(functools.partial(setattr, warnings, "showwarning", shown))


class _ClosedPipeSafe:
    """stdout for the command: once its reader is gone (``handrail ... | head -1``), output is dropped, not an error.

    The command goes on and ends with its own exit code (a decision recorded is 0, a paused run 4), where a
    ``BrokenPipeError`` would have stopped it with click's exit code 1 after the work was done.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self._gone = True
        try:  # the interpreter's last flush of the real stdout must not fail either
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor (a test runner's stream)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:  # fmt: skip
    """``warnings.showwarning`` for the command: ``warning: <message>`` on stderr."""
    click.echo(f"warning: {message}", err=True)


@main.command()
def schema() -> None:
    """Print the JSON Schema of agent files."""
    from handrail.specs import agent_spec_json_schema

    click.echo(json.dumps(agent_spec_json_schema(), indent=2))


main.add_command(run)
main.add_command(resume)
main.add_command(replay)
main.add_command(approvals)
main.add_command(worker)
main.add_command(serve)
main.add_command(tokens)
main.add_command(runs)
main.add_command(models)
