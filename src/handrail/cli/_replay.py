"""``handrail replay``: run an agent file again on a recording (``handrail run --record``) and report what changed."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import EXIT_OK, EXIT_RUN_FAILED, errors_as_exit_codes, fail_usage, printable

__all__ = ["recording_metadata", "replay"]


def recording_metadata(agent_file: Path, approve: str, max_steps: int | None,
                       allow_modules: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    """What ``handrail run --record`` keeps in the header, so ``handrail replay`` builds the agent the same way."""
    return {"agent_file": str(agent_file.resolve()), "approve": approve, "max_steps": max_steps,
            "allow_modules": list(allow_modules)}  # fmt: skip


class _NobodyAsked:
    """The confirmation UI of a replayed agent: the decisions come from the recording, so nobody is ever asked."""

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any],
                              injected_params: dict[str, Any] | None = None) -> Any:  # fmt: skip
        raise click.ClickException(f"the replay asked for a decision on {tool_name}: a replay never asks anyone")


def _agent_file(out: Any, header: dict[str, Any], given: Path | None, source: str) -> Path:
    if given is not None:
        return given
    recorded = (header.get("metadata") or {}).get("agent_file")
    if not isinstance(recorded, str) or not recorded:
        fail_usage(out, f"The recording {printable(source)} does not name its agent file (it was not made by "
                        f"'handrail run --record'); pass --agent AGENT.yaml.")  # fmt: skip
    path = Path(recorded)
    if not path.is_file():
        fail_usage(out, f"The agent file named in the recording is gone ({printable(path)}); pass --agent "
                        f"AGENT.yaml.")  # fmt: skip
    return path


def _build(agent_file: Path, header: dict[str, Any], recording: Any, stack: contextlib.ExitStack,
           allow_modules: tuple[str, ...]) -> Any:  # fmt: skip
    """The agent of the file, built as the recorded run built it (its approvals), answering from the recording."""
    from handrail.specs import build_agent, load_agent_spec
    from handrail.testing import ReplayChatGenerator

    metadata = header.get("metadata") or {}
    spec = load_agent_spec(agent_file)
    allowed = (*allow_modules, *(m for m in metadata.get("allow_modules") or () if isinstance(m, str)))
    if spec.allowed_modules or allowed:
        sys.path.insert(0, str(agent_file.resolve().parent))
    if isinstance(metadata.get("max_steps"), int):
        spec.max_agent_steps = metadata["max_steps"]
    approve = metadata.get("approve") if metadata.get("approve") in ("ask", "all", "none", "pause") else "ask"
    pause: dict[str, Any] = {}
    if approve == "pause":  # never written: a replay does not pause or persist, but the strategy needs a store
        pause = {"snapshot_store": stack.enter_context(tempfile.TemporaryDirectory(prefix="handrail-replay-"))}
    return build_agent(spec, base_dir=agent_file.parent, allowed_modules=allowed,
                       generator=ReplayChatGenerator(recording), approve=approve,  # type: ignore[arg-type]
                       confirmation_ui=_NobodyAsked() if approve == "ask" else None, **pause)  # fmt: skip


@click.command()
@click.argument("recording_file", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--agent",
    "agent_option",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The agent file to replay (default: the one named in the recording by 'handrail run').",
)
@click.option("--allow-module", "allow_modules", multiple=True, metavar="PREFIX",
              help="Trust dotted paths under this module prefix in the agent file (repeatable).")  # fmt: skip
def replay(recording_file: Path, agent_option: Path | None, allow_modules: tuple[str, ...]) -> None:
    """Run the agent again on the recording FILE ('handrail run --record FILE') and report the first divergence.

    The model's replies, the tools' results and the decisions come from the recording: no model, tool or person
    is asked, no store is written. Each model input, tool call and decision point of the agent is compared with
    the recorded one; the first that differs is printed with a diff. Exit code 0: replayed identically; 1: it
    diverged; 2: the recording cannot be read (the line is named), has no run or stops before the end of its
    last run, or the agent file is bad or missing.
    """
    from rich.console import Console

    from handrail.testing import read_recording
    from handrail.testing._recording_format import check_complete
    from handrail.tracing.recording import replay as replay_recording

    out = Console(highlight=False, soft_wrap=True)
    with errors_as_exit_codes(out, agent_option):
        recording = read_recording(recording_file)
        check_complete(recording)  # no run in it, or cut short: refused before the agent is built
    agent_file = _agent_file(out, recording.header, agent_option, str(recording_file))
    with contextlib.ExitStack() as stack, errors_as_exit_codes(out, agent_file):
        agent = _build(agent_file, recording.header, recording, stack, allow_modules)
        stack.callback(agent.close)
        runs = len(recording.runs)
        out.print(f"Replaying {printable(recording_file)} ({runs} run{'s' if runs != 1 else ''}) with "
                  f"{printable(agent_file)}", style="dim", markup=False)  # fmt: skip
        result = replay_recording(recording, agent)
    if result.divergence is None:
        out.print(result.report(), markup=False)
        sys.exit(EXIT_OK)
    out.print(f"{result.matched} effects matched over {result.steps} model calls.", markup=False)
    out.print(result.divergence.summary, style="bold red", markup=False)
    out.print(result.divergence.diff, markup=False)
    sys.exit(EXIT_RUN_FAILED)
