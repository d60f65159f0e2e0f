"""A tool may bring its own confirmation (``confirmation_default``): used only where the Agent's strategies say nothing.

The seam MCP toolsets plug into (their servers' hints decide it); tested here with plain tools so it holds for any
tool that sets the attribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    BreakpointConfirmationStrategy,
    NeverAskPolicy,
)
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import SQLiteSnapshotStore
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import Tool, Toolset
from tests.human_in_the_loop._helpers import ScriptedUI

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"path": {"type": "string"}}}


@dataclass
class _OwnConfirmation(Tool):
    confirmation_default: Any = field(default=None, kw_only=True)


def _tool(name: str, default: Any, ran: list[str]) -> _OwnConfirmation:
    def run(path: str) -> str:
        ran.append(f"{name}:{path}")
        return f"{name} {path}"

    return _OwnConfirmation(name=name, description=f"{name} a file.", parameters=SCHEMA, function=run,
                            confirmation_default=default)  # fmt: skip


def _asking(answers: list[str]) -> tuple[BlockingConfirmationStrategy, ScriptedUI]:
    ui = ScriptedUI([ConfirmationUIResult(a) for a in answers])
    return BlockingConfirmationStrategy(AlwaysAskPolicy(), ui), ui


def _run(tools: list[Any], strategies: dict[Any, Any] | None, *names: str) -> dict[str, Any]:
    model = ScriptedChatGenerator([reply(*[call(n, {"path": "a.txt"}, id=f"c{i}") for i, n in enumerate(names)]),
                                   reply("done")])  # fmt: skip
    return Agent(chat_generator=model, tools=tools, confirmation_strategies=strategies).run([user("go")])


def _results(result: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(m.tool_call_result.result, m.tool_call_result.error) for m in result["messages"] if m.tool_call_result]


def test_a_tools_own_strategy_decides_its_calls_when_the_agent_names_none() -> None:
    own, ui = _asking(["reject"])
    ran: list[str] = []
    result = _run([_tool("delete", own, ran), _tool("read", None, ran)], None, "delete", "read")
    assert [c["tool_name"] for c in ui.calls] == ["delete"]  # read brings no confirmation: it runs
    assert ran == ["read:a.txt"]
    assert _results(result)[0][1] is True  # the rejection is an error result the model reads


def test_an_explicit_strategy_wins_both_ways() -> None:
    ran: list[str] = []
    own, own_ui = _asking(["confirm"])
    never = BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI())
    _run([_tool("delete", own, ran)], {"delete": never}, "delete")  # the user said: never ask
    assert own_ui.calls == [] and ran == ["delete:a.txt"]

    ran.clear()
    ask, ui = _asking(["reject"])
    _run([_tool("read", None, ran)], {"*": ask}, "read")  # the tool says "run"; the user said: ask all
    assert [c["tool_name"] for c in ui.calls] == ["read"] and ran == []


def test_a_tuple_key_is_explicit_too() -> None:
    ran: list[str] = []
    own, own_ui = _asking(["reject"])
    never = BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI())
    _run([_tool("delete", own, ran), _tool("move", own, ran)], {("delete", "move"): never}, "delete", "move")
    assert own_ui.calls == [] and sorted(ran) == ["delete:a.txt", "move:a.txt"]


def test_ask_means_the_console_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def fake_input(prompt: str = "") -> str:
        asked.append(prompt)
        return "n"

    monkeypatch.setattr("builtins.input", fake_input)
    ran: list[str] = []
    result = _run([_tool("delete", "ask", ran)], None, "delete")
    assert asked and ran == []
    assert _results(result)[0][1] is True


class _Growing(Toolset):
    """A toolset whose tool appears once ``ready`` is set (like a server announcing a new tool)."""

    tools_may_ask = True

    def __init__(self, later: Tool) -> None:
        super().__init__([])
        self.later = later
        self.ready = False

    def __iter__(self) -> Iterator[Tool]:
        return iter([self.later] if self.ready else [])


def test_a_tool_that_appears_mid_run_is_gated_by_its_own_strategy() -> None:
    own, ui = _asking(["reject"])
    ran: list[str] = []
    growing = _Growing(_tool("delete", own, ran))

    def read(path: str) -> str:
        growing.ready = True  # the run was planned without 'delete'; the next step lists it
        return "read"

    reader = Tool(name="read", description="Read.", parameters=SCHEMA, function=read)
    model = ScriptedChatGenerator([reply(call("read", {"path": "a.txt"}, id="c1")),
                                   reply(call("delete", {"path": "a.txt"}, id="c2")), reply("done")])  # fmt: skip
    result = Agent(chat_generator=model, tools=[reader, growing]).run([user("go")])
    assert [c["tool_name"] for c in ui.calls] == ["delete"] and ran == []
    assert _results(result) == [("read", False), (_results(result)[1][0], True)]


def test_a_pausing_default_pauses_into_its_own_store(tmp_path: Path) -> None:
    ran: list[str] = []
    own = BreakpointConfirmationStrategy(snapshot_file_path=str(tmp_path / "snaps"))
    with pytest.raises(HITLBreakpointException) as info:
        _run([_tool("delete", own, ran)], None, "delete")
    assert ran == [] and info.value.snapshot_file_path is not None
    assert Path(info.value.snapshot_file_path).parent == tmp_path / "snaps"


@dataclass
class _Described(_OwnConfirmation):
    """A tool with a text of its own for the person deciding its calls (as an MCP tool names its server)."""

    @property
    def approval_description(self) -> str:
        return f"Server 'files', tool '{self.name}' (destructive)\n{self.description}"


def test_a_paused_calls_approval_record_shows_the_tools_approval_description(tmp_path: Path) -> None:
    store = SQLiteSnapshotStore(tmp_path / "approvals.db")
    try:
        own = BreakpointConfirmationStrategy(snapshot_store=store)
        plain = _OwnConfirmation(name="move", description="move a file.", parameters=SCHEMA,
                                 function=lambda path: "moved", confirmation_default=own)  # fmt: skip
        described = _Described(name="delete", description="delete a file.", parameters=SCHEMA,
                               function=lambda path: "deleted", confirmation_default=own)  # fmt: skip
        with pytest.raises(HITLBreakpointException):
            _run([described, plain], None, "delete", "move")
        records = {a.tool_name: a for a in ApprovalService(store).list().items}
        assert records["delete"].tool_description == "Server 'files', tool 'delete' (destructive)\ndelete a file."
        assert records["move"].tool_description == "move a file."  # no text of its own: its description
    finally:
        store.close()


def test_the_metadata_of_a_pausing_strategy_a_tool_brings_goes_into_the_snapshot(tmp_path: Path) -> None:
    own = BreakpointConfirmationStrategy(snapshot_file_path=str(tmp_path / "snaps"), metadata={"ticket": 7})
    with pytest.raises(HITLBreakpointException) as info:
        _run([_tool("delete", own, [])], None, "delete")
    assert info.value.snapshot.metadata["ticket"] == 7  # as for a strategy the Agent is given
