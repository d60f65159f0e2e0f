"""What ``handrail run`` / ``resume`` print around the answer: rejected calls, the summary, the spinner's words."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from rich.console import Console

from handrail.cli import main
from handrail.cli._live import RunView, describe_progress
from handrail.components.effects import AskApproval, CallModel, ToolInvocation
from handrail.components.generators.chat._progress import progress_meta
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from tests.specs.test_agent_spec import scripted_generator_yaml

ORDER = [
    ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "lamp price"}, "c1")]),
    ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "2 * 30"}, "c2")]),
    ChatMessage.from_assistant("Two lamps have been ordered successfully."),
]
RULES = "\ntools: [search, calculator]\nconfirmation:\n  search: always\n  calculator: never\n"


def _agent(tmp_path: Path, replies: list[ChatMessage]) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(scripted_generator_yaml(replies) + RULES, encoding="utf-8")
    return path


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_approve_none_shows_the_refused_call_counts_it_and_says_so_last(tmp_path: Path) -> None:
    result = cli("run", "--approve", "none", _agent(tmp_path, ORDER), "Order two lamps")
    assert result.exit_code == 0, result.output  # the run answered: --approve none was asked for (see docs/cli.md)
    lines = result.output.splitlines()
    assert "rejected: --approve none runs no call that needs approval" in lines[0]
    assert lines[0].startswith('✗ search({"query": "lamp price"}) ')
    assert "→ search" not in result.output  # a refused call is never shown as one that ran
    assert '→ calculator({"expression": "2 * 30"})' in result.output
    assert "exit: text · steps: 3 · tools: calculator×1, search×1 (1 rejected)" in result.output
    assert lines[-1] == "--approve none refused 1 call (search): it did not run, whatever the answer above says."


def test_json_counts_the_rejected_calls_apart(tmp_path: Path) -> None:
    result = cli("run", "--json", "--approve", "none", _agent(tmp_path, ORDER), "Order two lamps")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["tool_call_counts"] == {"search": 0, "calculator": 1}  # the calls that ran, as before
    assert data["rejected_tool_call_counts"] == {"search": 1}


def test_a_call_rejected_while_paused_is_shown_rejected_when_the_run_resumes(tmp_path: Path) -> None:
    agent = _agent(tmp_path, ORDER)
    paused = cli("run", "--json", "--pause-for-approval", tmp_path / "snaps", agent, "Order two lamps")
    assert paused.exit_code == 4, paused.output
    snapshot_id = json.loads(paused.stdout)["snapshot_id"]
    assert cli("approvals", "reject", snapshot_id, "--dir", tmp_path / "snaps", "--feedback", "too dear").exit_code == 0
    _agent(tmp_path, ORDER[1:])  # the scripted model restarts in each process: the replies still to come
    resumed = cli("resume", snapshot_id, "--dir", tmp_path / "snaps")
    assert resumed.exit_code == 0, resumed.output
    assert '✗ search({"query": "lamp price"}) rejected: too dear' in resumed.output
    assert "tools: calculator×1, search×1 (1 rejected)" in resumed.output
    assert "--approve none" not in resumed.output


def test_the_spinner_words_for_each_progress() -> None:
    words = [describe_progress(progress_meta("reading", prompt_tokens=700, cached_tokens=20)),
             describe_progress(progress_meta("reading", prompt_tokens=700, cached_tokens=700)),
             describe_progress(progress_meta("writing", tokens=1)),
             describe_progress(progress_meta("writing", tokens=3, writing="tool_call")),
             describe_progress(progress_meta("writing", tokens=14, writing="tool_call", tool="se\x1b[2Jarch")),
             describe_progress(progress_meta("writing", tokens=2, writing="final_answer"))]  # fmt: skip
    assert words == ["reading the prompt (680 tokens)", "reading the prompt", "thinking (1 token)",
                     "choosing a tool (3 tokens)", "choosing a tool: se\\x1b[2Jarch (14 tokens)",
                     "writing the answer"]  # fmt: skip


def _terminal() -> tuple[Console, io.StringIO]:
    file = io.StringIO()
    return Console(file=file, force_terminal=True, width=100), file


def test_the_view_follows_the_run_and_hides_its_spinner_before_text() -> None:
    console, file = _terminal()
    view = RunView(console, spinner=True)
    view.started(CallModel([], ("search",)))
    assert view._status is not None and view.step == 1
    view(StreamingChunk(meta={"progress": progress_meta("writing", tokens=5, writing="tool_call", tool="search")}))
    assert view.doing == "choosing a tool: search (5 tokens)"
    assert view.interrupted() == "Interrupted at step 1, while the model was choosing a tool: search (5 tokens)."
    view(StreamingChunk(content="It is "))
    assert view._status is None  # no spinner line under streamed text
    assert "It is " in file.getvalue()


def test_the_view_knows_what_ctrl_c_stopped() -> None:
    view = RunView(Console(file=io.StringIO()), spinner=False)
    assert view.interrupted() == "Interrupted while loading the model."
    assert RunView(Console(file=io.StringIO()), spinner=False, step=3).interrupted() == (
        "Interrupted while loading the model."
    )  # a resumed run, before its model is loaded
    view.started(CallModel([], ()))
    assert view.interrupted() == "Interrupted at step 1, while waiting for the model's reply."
    view.ended(CallModel([], ()), _Ended(error=KeyboardInterrupt()))  # the run tells its observers first
    assert view.interrupted() == "Interrupted at step 1, while waiting for the model's reply."
    view.ended(CallModel([], ()), _Ended())
    call = ToolInvocation("c1", "search", {"query": "x"}, "c1")
    view.started(AskApproval([call]))
    assert view.interrupted() == 'Interrupted at step 1, while search({"query": "x"}) waited for your approval.'
    view.ended(AskApproval([call]), _Ended((ToolExecutionDecision("search", True, "c1"),)))
    view.started(call)
    assert view.interrupted() == 'Interrupted at step 1, while running search({"query": "x"}).'
    view.ended(call, _Ended())
    assert view.interrupted() == "Interrupted at step 1, between two steps."
    assert view.rejected == {}  # approved: nothing to show as rejected


def test_without_a_terminal_there_is_no_spinner(tmp_path: Path) -> None:
    result = cli("run", "--approve", "all", _agent(tmp_path, ORDER), "Order two lamps")
    assert result.exit_code == 0
    assert "step 1" not in result.output and "\x1b[" not in result.output


class _Ended:
    def __init__(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.duration = result, error, 0.0
