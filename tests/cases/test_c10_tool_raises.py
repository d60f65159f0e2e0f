"""C10 — a tool that raises: the model reads the type, message and root cause; raise mode names the call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.errors import ToolInvocationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, result_for, user


class SearchError(Exception):
    pass


def search_explicit_cause(q: str) -> str:
    raise SearchError(f"search for {q!r} failed") from ConnectionError("upstream down")


def search_implicit_context(q: str) -> str:
    try:
        raise ConnectionError("upstream down")
    except ConnectionError:
        raise SearchError(f"search for {q!r} failed")  # noqa: B904 - the implicit __context__ is the point


def search_deep_chain(q: str) -> str:
    try:
        try:
            raise ConnectionError("upstream down")
        except ConnectionError as exc:
            raise TimeoutError("retries exhausted") from exc
    except TimeoutError as exc:
        raise SearchError(f"search for {q!r} failed") from exc


async def search_async(q: str) -> str:
    await asyncio.sleep(0)
    raise SearchError(f"search for {q!r} failed") from ConnectionError("upstream down")


SEARCHES: dict[str, Callable[..., Any]] = {
    "explicit-cause": search_explicit_cause,
    "implicit-context": search_implicit_context,
    "deep-chain": search_deep_chain,
}


def make_search(function: Callable[..., Any]):
    return create_tool_from_function(function, name="search")


@pytest.mark.parametrize("function", SEARCHES.values(), ids=SEARCHES.keys())
def test_tool_error_reaches_the_model(run_agent, function):
    gen = ScriptedChatGenerator([asst(calls=[("c1", "search", {"q": "x"})]), asst("done")])
    agent = Agent(chat_generator=gen, tools=[make_search(function)])

    result = run_agent(agent, [user("search x")])

    assert len(gen.calls) == 2
    assert result["last_message"].text == "done"
    assert result["exit_reason"] == "text"
    failed = result_for(gen.calls[1]["messages"], "c1")
    assert failed.error is True
    assert "SearchError" in failed.result
    assert "search for 'x' failed" in failed.result
    assert "upstream down" in failed.result
    assert "ConnectionError" in failed.result


async def test_async_tool_error_reaches_the_model():
    gen = ScriptedChatGenerator([asst(calls=[("c1", "search", {"q": "x"})]), asst("done")])
    agent = Agent(chat_generator=gen, tools=[make_search(search_async)])

    result = await agent.run_async([user("search x")])

    assert len(gen.calls) == 2
    failed = result_for(result["messages"], "c1")
    assert failed.error is True
    assert "SearchError" in failed.result
    assert "upstream down" in failed.result


@pytest.mark.parametrize("function", SEARCHES.values(), ids=SEARCHES.keys())
def test_raise_mode_names_the_tool_and_the_call(run_agent, function):
    gen = ScriptedChatGenerator([asst(calls=[("c1", "search", {"q": "x"})]), asst("never reached")])
    agent = Agent(chat_generator=gen, tools=[make_search(function)], raise_on_tool_invocation_failure=True)

    with pytest.raises(ToolInvocationError) as info:
        run_agent(agent, [user("search x")])

    error = info.value
    assert error.tool_name == "search"
    assert error.tool_call_id == "c1"
    assert "search" in str(error)
    assert "c1" in str(error)
    assert "upstream down" in str(error)
    assert isinstance(error.__cause__, SearchError)
    assert len(gen.calls) == 1


def test_failing_call_does_not_hide_a_sibling_result(run_agent):
    ran: list[str] = []

    def echo(q: str) -> str:
        ran.append(q)
        return q

    gen = ScriptedChatGenerator([asst(calls=[("c1", "search", {"q": "x"}), ("c2", "echo", {"q": "y"})]), asst("done")])
    agent = Agent(chat_generator=gen, tools=[make_search(search_explicit_cause), create_tool_from_function(echo)])

    result = run_agent(agent, [user("both")])

    assert ran == ["y"]
    assert result_for(result["messages"], "c1").error is True
    assert result_for(result["messages"], "c2").result == "y"
    assert result["tool_call_counts"] == {"search": 1, "echo": 1}
