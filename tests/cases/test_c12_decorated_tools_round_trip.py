"""C12 — an Agent with @tool-decorated module-level tools round-trips through to_dict / JSON / from_dict."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool
from tests.cases import _tools
from tests.cases._helpers import asst, result_for, user


@pytest.fixture(autouse=True)
def clear_log():
    _tools.CALLS.clear()
    yield
    _tools.CALLS.clear()


def make_agent(tools: list[Tool], calls) -> Agent:
    gen = ScriptedChatGenerator([asst(calls=calls), asst("It is sunny.")])
    return Agent(chat_generator=gen, tools=tools, system_prompt="You are S.", exit_conditions=["text"])


def test_decorated_tool_round_trips(run_agent):
    agent = make_agent([_tools.get_weather], [("c1", "get_weather", {"location": "Oslo"})])

    data = agent.to_dict()
    loaded = json.loads(json.dumps(data))
    given = copy.deepcopy(loaded)
    rebuilt = Agent.from_dict(loaded)

    assert loaded == given  # from_dict did not modify the dict it was given
    assert rebuilt.to_dict() == data
    assert data["init_parameters"]["tools"][0]["init_parameters"]["function"] == "tests.common_tools.get_weather"
    tool = rebuilt.tools[0]
    assert isinstance(tool, Tool)
    assert tool.name == "get_weather"
    assert tool.description == "Get the weather for a location."
    assert tool.parameters == _tools.get_weather.parameters
    assert tool.function is _tools.get_weather.function

    result = run_agent(rebuilt, [user("weather in Oslo?")])

    assert _tools.CALLS == [("get_weather", "Oslo")]
    assert result_for(result["messages"], "c1").result == "Sunny in Oslo"
    assert result["last_message"].text == "It is sunny."
    assert len(rebuilt.chat_generator.calls) == 2
    assert agent.chat_generator.calls == []  # the original's generator was not used


def test_named_async_decorated_tool_round_trips():
    agent = make_agent(
        [_tools.get_weather, _tools.get_forecast],
        [("c1", "forecast", {"location": "Bergen"}), ("c2", "get_weather", {"location": "Oslo"})],
    )

    data = agent.to_dict()
    loaded = json.loads(json.dumps(data))
    given = copy.deepcopy(loaded)
    rebuilt = Agent.from_dict(loaded)

    assert loaded == given
    assert rebuilt.to_dict() == data
    forecast = rebuilt.tools[1]
    assert forecast.name == "forecast"
    assert forecast.description == "Tomorrow's weather."
    assert forecast.function is None
    assert forecast.async_function is _tools.get_forecast.async_function

    result = asyncio.run(rebuilt.run_async([user("weather?")]))

    assert sorted(_tools.CALLS) == [("forecast", "Bergen"), ("get_weather", "Oslo")]
    assert result_for(result["messages"], "c1").result == "Rain in Bergen"
    assert result_for(result["messages"], "c2").result == "Sunny in Oslo"
