"""In a real pseudo-terminal: the spinner line says the step and what runs; ``a`` allows a tool for the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect

from handrail.components.generators.chat._progress import progress_meta
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from tests.cli._slow_tool import write_slow_agent
from tests.specs.test_agent_spec import scripted_generator_yaml


def _spawn(tmp_path: Path, agent: Path, *extra: str) -> pexpect.spawn:
    args = ["-m", "handrail.cli", "run", *extra, str(agent), "q"]
    return pexpect.spawn(sys.executable, args, cwd=str(tmp_path), encoding="utf-8", timeout=60, dimensions=(50, 200))


def test_the_spinner_names_the_step_the_running_call_and_the_models_progress(tmp_path: Path) -> None:
    answer = [
        StreamingChunk(meta={"progress": progress_meta("reading", prompt_tokens=700, cached_tokens=20)}),
        StreamingChunk(meta={"progress": progress_meta("writing", tokens=2, writing="final_answer")}),
        StreamingChunk(content="It said HI.", finish_reason="stop"),
    ]
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("wait", {"text": "hi"}, "c1")]), answer]
    agent = write_slow_agent(tmp_path, replies)  # type: ignore[arg-type]  # a streamed reply is a chunk list
    child = _spawn(tmp_path, agent, "--approve", "all", "--allow-module", "slowtools")
    child.expect("step 1 · running wait")  # drawn while the tool waits for the go below
    (tmp_path / "go").write_text("x")
    child.expect("step 2 · reading the prompt \\(680 tokens\\)")
    child.expect("It said HI.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_always_allows_the_tool_for_the_rest_of_the_run_and_says_how_to_keep_it(tmp_path: Path) -> None:
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "maplebrook"}, "c1")]),
               ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "lumen hardware"}, "c2")]),
               ChatMessage.from_assistant("Found both.")]  # fmt: skip
    agent = tmp_path / "assistant.yaml"
    agent.write_text(scripted_generator_yaml(replies) + "\ntools: [search]\nconfirmation:\n  search: always\n")
    child = _spawn(tmp_path, agent)
    child.expect("a = always allow search in this run\\)")
    child.sendline("a")
    child.expect("search runs without asking for the rest of this run")
    child.expect("'search: never' under 'confirmation:'")
    child.expect("Found both.")
    rest = str(child.before)
    child.expect(pexpect.EOF)
    rest += str(child.before)
    child.close()
    assert child.exitstatus == 0
    assert "Execute this tool call" not in rest  # the second search was not asked
    assert "lumen" in rest.lower()  # it ran
    assert "search×2" in rest


def test_an_unknown_answer_lists_the_four(tmp_path: Path) -> None:
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "x"}, "c1")]),
               ChatMessage.from_assistant("done")]  # fmt: skip
    agent = tmp_path / "assistant.yaml"
    agent.write_text(scripted_generator_yaml(replies) + "\ntools: [search]\nconfirmation:\n  search: always\n")
    child = _spawn(tmp_path, agent)
    child.expect("Execute this tool call")
    child.sendline("maybe")
    child.expect("Please answer y \\(yes\\), n \\(no\\), m \\(modify\\) or a \\(always allow search in this run\\)")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_at_the_prompt_names_the_call_that_waited(tmp_path: Path) -> None:
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "x"}, "c1")]),
               ChatMessage.from_assistant("done")]  # fmt: skip
    agent = tmp_path / "assistant.yaml"
    agent.write_text(scripted_generator_yaml(replies) + "\ntools: [search]\nconfirmation:\n  search: always\n")
    child = _spawn(tmp_path, agent)
    child.expect("Execute this tool call")
    child.sendintr()  # Ctrl-C, as the terminal sends it
    child.expect('Interrupted at step 1, while search\\(\\{"query": "x"\\}\\) waited for your approval.')
    child.expect("Nothing of this run was saved")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Aborted!" not in str(child.before)
