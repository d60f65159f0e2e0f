"""``Toolset + Toolset / Tool / [tools]``, as Haystack 2.x offers it: one combined toolset, parts kept as they are."""

from __future__ import annotations

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationTypeError
from handrail.testing import ScriptedChatGenerator
from handrail.testing.builders import call, reply
from handrail.tools import Tool, Toolset


def _tool(name: str) -> Tool:
    return Tool(name=name, description=f"{name}.", function=lambda: name,
                parameters={"type": "object", "properties": {}})  # fmt: skip


class Growing(Toolset):
    """A dynamic toolset: its tool appears only once it is warmed up (like a server's tools)."""

    def __init__(self) -> None:
        super().__init__([])
        self.warmed = 0

    def warm_up(self) -> None:
        self.warmed += 1
        if not self.tools:
            self.tools.append(_tool("remote"))


def test_adding_a_tool_a_list_or_a_toolset_combines_them_in_order() -> None:
    base = Toolset([_tool("a")])
    assert [t.name for t in base + _tool("b")] == ["a", "b"]
    assert [t.name for t in base + [_tool("b"), _tool("c")]] == ["a", "b", "c"]  # noqa: RUF005 (Toolset + list)
    combined = base + Toolset([_tool("d")])
    assert isinstance(combined, Toolset) and [t.name for t in combined] == ["a", "d"] and "d" in combined
    assert [t.name for t in base] == ["a"]  # the parts are not changed


def test_a_name_in_both_parts_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"Duplicate tool names found: \['a'\]"):
        Toolset([_tool("a")]) + Toolset([_tool("a"), _tool("b")])


@pytest.mark.parametrize("other", ["x", 3, [_tool("ok"), "x"], None])
def test_adding_anything_else_is_a_type_error(other: object) -> None:
    with pytest.raises(ConfigurationTypeError, match="can be added to a Tool, a list of Tools or another Toolset"):
        Toolset([_tool("a")]) + other  # type: ignore[operator]


def test_a_combined_toolset_warms_each_part_up_and_sees_tools_that_come_later() -> None:
    growing = Growing()
    combined = Toolset([_tool("local")]) + growing
    assert [t.name for t in combined] == ["local"]
    combined.warm_up()
    assert growing.warmed == 1 and [t.name for t in combined] == ["local", "remote"]
    agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("remote", {}, id="c1")), reply("done")]),
                  tools=combined)  # fmt: skip
    result = agent.run([ChatMessage.from_user("use the remote tool")])
    assert result["messages"][-2].tool_call_result.result == "remote"


def ping() -> str:
    """Ping."""
    return "pong"


def test_a_combined_toolset_is_saved_as_one_toolset_of_its_tools() -> None:
    from handrail.tools import create_tool_from_function

    combined = Toolset([create_tool_from_function(ping)]) + [create_tool_from_function(ping, name="ping2")]  # noqa: RUF005
    data = combined.to_dict()
    assert data["type"] == "handrail.tools.toolset.Toolset"
    assert [t.name for t in Toolset.from_dict(data)] == ["ping", "ping2"]
