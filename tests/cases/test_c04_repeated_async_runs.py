"""C04 — repeated (and concurrent) runs on one Agent instance keep no state between runs."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole
from handrail.testing import ScriptedChatGenerator
from handrail.tools import Tool, create_tool_from_function
from tests.cases._helpers import asst, requested_calls, user


def make_weather() -> tuple[Tool, list[str]]:
    ran: list[str] = []

    def weather(location: str) -> str:
        ran.append(location)
        return f"sunny in {location}"

    return create_tool_from_function(weather), ran


def shape(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The history without ids or the user's text: roles, texts, tool names, arguments and results."""
    out = []
    for m in result["messages"]:
        res = m.tool_call_result
        out.append(
            (
                m.role,
                m.text if m.role is not ChatRole.USER else None,
                [(c.tool_name, c.arguments) for c in m.tool_calls],
                (res.result, res.error, res.origin.tool_name) if res else None,
            )
        )
    return out


USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def script(ids: list[str]) -> list[ChatMessage]:
    replies: list[ChatMessage] = []
    for cid in ids:
        replies += [
            asst(calls=[(cid, "weather", {"location": "Berlin"})], meta={"usage": dict(USAGE)}),
            asst("ok", meta={"usage": dict(USAGE)}),
        ]
    return replies


async def test_repeated_async_runs_on_one_instance():
    weather, ran = make_weather()
    gen = ScriptedChatGenerator(script(["c1", "c2", "c3", "c4"]))
    agent = Agent(chat_generator=gen, tools=[weather])

    results = [await agent.run_async([user("run 1")]), await agent.run_async([user("run 2")])]
    results.append(agent.run([user("run 3")]))
    results.append(await agent.run_async([user("run 4")]))

    assert len(gen.calls) == 8
    assert ran == ["Berlin"] * 4
    first = shape(results[0])
    assert first[1:] == [
        (ChatRole.ASSISTANT, None, [("weather", {"location": "Berlin"})], None),
        (ChatRole.TOOL, None, [], ("sunny in Berlin", False, "weather")),
        (ChatRole.ASSISTANT, "ok", [], None),
    ]
    for n, result in enumerate(results, start=1):
        assert shape(result) == first
        assert result["messages"][0] == user(f"run {n}")
        assert [c.id for c in requested_calls(result["messages"])] == [f"c{n}"]
        assert result["exit_reason"] == "text"
        assert result["step_count"] == 2
        assert result["tool_call_counts"] == {"weather": 1}
        assert result["token_usage"] == {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}
        # Each run's first model input holds only that run's messages.
        assert gen.calls[2 * (n - 1)]["messages"] == [user(f"run {n}")]


async def test_same_call_id_in_every_run_is_not_renamed():
    weather, _ = make_weather()
    gen = ScriptedChatGenerator(script(["c1", "c1", "c1"]))
    agent = Agent(chat_generator=gen, tools=[weather])

    results = [await agent.run_async([user("a")]), agent.run([user("b")]), await agent.run_async([user("c")])]

    for result in results:
        assert [c.id for c in requested_calls(result["messages"])] == ["c1"]
        assert result["messages"][2].tool_call_result.origin.id == "c1"


class EchoModel:
    """A stateless model: calls weather(location=<the user's text>), then answers with the result."""

    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, list[ChatMessage]]:
        last = messages[-1]
        if last.role is ChatRole.USER:
            return {"replies": [asst(calls=[("c1", "weather", {"location": last.text})])]}
        return {"replies": [asst(f"answer: {last.tool_call_result.result}")]}

    async def run_async(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, list[ChatMessage]]:
        await asyncio.sleep(0)
        return self.run(messages, tools)


async def test_concurrent_runs_of_one_instance_do_not_mix():
    seen: list[str] = []

    async def weather(location: str) -> str:
        seen.append(location)
        await asyncio.sleep(0.01)
        return f"sunny in {location}"

    agent = Agent(chat_generator=EchoModel(), tools=[create_tool_from_function(weather)])
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Rome"]

    results = await asyncio.gather(*(agent.run_async([user(c)]) for c in cities))

    assert sorted(seen) == sorted(cities)
    for city, result in zip(cities, results, strict=True):
        assert result["last_message"].text == f"answer: sunny in {city}"
        assert [m.role for m in result["messages"]] == [
            ChatRole.USER,
            ChatRole.ASSISTANT,
            ChatRole.TOOL,
            ChatRole.ASSISTANT,
        ]
        assert result["messages"][0] == user(city)
        assert result["tool_call_counts"] == {"weather": 1}


def test_concurrent_sync_runs_in_threads_do_not_mix():
    def weather(location: str) -> str:
        time.sleep(0.01)
        return f"sunny in {location}"

    agent = Agent(chat_generator=EchoModel(), tools=[create_tool_from_function(weather)])
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Rome"]

    with ThreadPoolExecutor(max_workers=len(cities)) as pool:
        results = list(pool.map(lambda c: agent.run([user(c)]), cities))

    for city, result in zip(cities, results, strict=True):
        assert result["last_message"].text == f"answer: sunny in {city}"
        assert result["messages"][0] == user(city)
        assert len(result["messages"]) == 4
