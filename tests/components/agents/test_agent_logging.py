"""Runtime conditions Haystack logs are logged under handrail.components.agents at WARNING (issue 20, item 9)."""

from __future__ import annotations

import logging
import warnings

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import Tool, Toolset

LOGGER = "handrail.components.agents"


def _ping(x: str) -> str:
    return x


PING = Tool(
    name="ping",
    description="Echo.",
    parameters={"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    function=_ping,
)


def _records(caplog: pytest.LogCaptureFixture, phrase: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and phrase in r.getMessage()]


def test_reaching_max_agent_steps_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    agent = Agent(
        chat_generator=ScriptedChatGenerator([reply(call("ping", {"x": "a"}, f"c{i}")) for i in range(2)]),
        tools=[PING],
        max_agent_steps=2,
    )
    with caplog.at_level(logging.WARNING, logger=LOGGER), warnings.catch_warnings():
        warnings.simplefilter("error")  # a log record, not a warning
        result = agent.run([user("go")])
    assert result["exit_reason"] == "max_agent_steps"
    [record] = _records(caplog, "reached maximum agent steps of 2")
    assert record.levelno == logging.WARNING


def test_a_normal_exit_logs_no_max_steps_warning(caplog: pytest.LogCaptureFixture) -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([reply("done")]), tools=[PING], max_agent_steps=2)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent.run([user("go")])
    assert _records(caplog, "maximum agent steps") == []


def test_an_agent_without_tools_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        Agent(chat_generator=ScriptedChatGenerator([reply("x")]))
    [record] = _records(caplog, "No tools provided to the Agent")
    assert record.levelno == logging.WARNING
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        Agent(chat_generator=ScriptedChatGenerator([reply("x")]), tools=[PING])
    assert _records(caplog, "No tools provided") == []


class _Connecting(Toolset):
    """A toolset whose tools are known only once it is warmed up (as an MCP server's are)."""

    def __init__(self) -> None:
        super().__init__([])

    def warm_up(self) -> None:
        self.tools = [PING]


def test_an_agent_whose_toolset_lists_its_tools_at_warm_up_is_not_logged_as_without_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for tools in ([_Connecting()], _Connecting()):
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            agent = Agent(chat_generator=ScriptedChatGenerator([reply(call("ping", {"x": "a"}, "c1")), reply("ok")]),
                          tools=tools)  # fmt: skip
        assert _records(caplog, "No tools provided") == [], tools
        assert agent.run([user("go")])["messages"][2].tool_call_result.result == "a"  # its tool was there after all


def test_only_system_messages_in_the_input_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([reply("a"), reply("b")]), tools=[PING], system_prompt="S")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent.run([ChatMessage.from_system("only")])
    [record] = _records(caplog, "All messages provided to the Agent component are system messages")
    assert record.levelno == logging.WARNING
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent.run([user("hi")])
    assert _records(caplog, "are system messages") == []
