"""The approval flow in a real pseudo-terminal: `handrail run` asks before each search."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from handrail.dataclasses import ChatMessage, ToolCall
from tests.specs.test_agent_spec import scripted_generator_yaml

REPLIES = [
    ChatMessage.from_assistant(
        tool_calls=[
            ToolCall("calculator", {"expression": "2 + 2"}, "c1"),
            ToolCall("search", {"query": "Haystack framework"}, "c2"),
        ]
    ),
    ChatMessage.from_assistant("Here is what I found."),
]


def spawn(tmp_path: Path, *extra: str) -> pexpect.spawn:
    path = tmp_path / "assistant.yaml"
    path.write_text(
        scripted_generator_yaml(REPLIES)
        + "\ntools: [calculator, search]\nconfirmation:\n  search: always\n  calculator: never\n",
        encoding="utf-8",
    )
    args = ["-m", "handrail.cli", "run", *extra, str(path), "Find information about Haystack"]
    return pexpect.spawn(sys.executable, args, encoding="utf-8", timeout=60, dimensions=(50, 200))


def finish(child: pexpect.spawn) -> str:
    """Wait for the command to end; return what it printed since the last match."""
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before)


def test_confirm_runs_the_search_and_never_asks_for_the_calculator(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    child.expect("Execute this tool call")
    request = str(child.before)
    assert "search" in request and "Haystack framework" in request
    assert "2 + 2" not in request  # the calculator call was never shown for approval
    child.sendline("y")
    rest = finish(child)
    assert child.exitstatus == 0
    assert "haystack.md" in rest  # the search ran and its result was shown
    assert "Execute this tool call" not in rest  # asked exactly once
    assert "Here is what I found." in rest


def test_reject_with_feedback_reaches_the_model(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    child.expect("Execute this tool call")
    child.sendline("n")
    child.expect("Feedback")
    child.sendline("not now")
    child.expect("✗ ")
    child.expect("search")
    child.expect(r"Haystack framework\"\}\) ")
    child.expect("rejected: not now")
    rest = finish(child)
    assert child.exitstatus == 0
    assert "haystack.md" not in rest
    assert "tools: calculator×1, search×1 (1 rejected)" in rest


def test_modify_runs_with_the_new_arguments(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    child.expect("Execute this tool call")
    child.sendline("m")
    child.expect("query")
    child.sendline("maplebrook population")
    child.expect(r"search.*maplebrook population")
    rest = finish(child)
    assert child.exitstatus == 0
    assert "maplebrook.md" in rest


@pytest.mark.parametrize(
    ("flag", "fragment"),
    [("all", "haystack.md"), ("none", "rejected: --approve none runs no call that needs approval")],
)
def test_approve_flags_ask_nobody(tmp_path: Path, flag: str, fragment: str) -> None:
    child = spawn(tmp_path, "--approve", flag)
    text = finish(child)
    assert child.exitstatus == 0
    assert fragment in text
    assert "Execute this tool call" not in text
