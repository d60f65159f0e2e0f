"""Tool lifecycle: a Toolset's own warm_up (once) and close/aclose, called by the Agent and the ToolInvoker;
async-only tools under the sync run."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest

from handrail import Agent, ChatMessage, Tool, ToolCall, ToolInvoker, Toolset
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.docs_examples import code_blocks

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


class CountingTool(Tool):
    """A tool that counts its warm-ups and closes."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, description="", parameters=NO_ARGS, function=lambda: name)
        self.warm_ups = 0
        self.closes = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    def close(self) -> None:
        self.closes += 1


class Connected(Toolset):
    """Like a toolset of a server's tools: they appear in warm_up; close and aclose are counted."""

    def __init__(self) -> None:
        super().__init__([])
        self.warm_ups = 0
        self.closes = 0
        self.acloses = 0
        self.tool = CountingTool("remote")

    def warm_up(self) -> None:
        self.warm_ups += 1
        if not self.tools:
            self.tools = [self.tool]
        super().warm_up()

    def close(self) -> None:
        self.closes += 1

    async def aclose(self) -> None:
        self.acloses += 1


def calls(*names: str) -> ChatMessage:
    return ChatMessage.from_assistant(
        tool_calls=[ToolCall(tool_name=n, arguments={}, id=f"c{i}") for i, n in enumerate(names)]
    )


def results(out: dict[str, Any]) -> list[str]:
    return [m.tool_call_result.result for m in out["messages"] if m.tool_call_result is not None]


def test_the_agent_warms_a_toolset_once_before_listing_its_tools_over_runs_and_warm_ups() -> None:
    toolset, alone = Connected(), CountingTool("alone")
    replies = [calls("remote", "alone"), ChatMessage.from_assistant("a"), ChatMessage.from_assistant("b")]
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[toolset, alone])
    agent.warm_up()
    agent.warm_up()
    assert results(agent.run([ChatMessage.from_user("x")])) == ["remote", "alone"]  # its tool exists after warm_up
    asyncio.run(agent.run_async([ChatMessage.from_user("y")]))
    assert toolset.warm_ups == 1
    assert (toolset.tool.warm_ups, alone.warm_ups) == (1, 1)  # warmed by the toolset, not again by the Agent


def test_a_tool_added_to_a_warmed_toolset_is_warmed_by_the_next_run() -> None:
    toolset = Connected()
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("a")] * 2), tools=toolset)
    agent.run([ChatMessage.from_user("x")])
    late = CountingTool("late")
    toolset.add(late)
    agent.run([ChatMessage.from_user("x")])
    assert (toolset.warm_ups, late.warm_ups) == (1, 1)


def test_agent_close_and_aclose_close_the_toolsets_and_the_tools_each_once() -> None:
    toolset, alone = Connected(), CountingTool("alone")
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[toolset, alone, toolset.tool])
    agent.warm_up()
    agent.close()
    assert (toolset.closes, toolset.acloses, toolset.tool.closes, alone.closes) == (1, 0, 1, 1)
    agent.warm_up()  # open again: the next close closes them again
    asyncio.run(agent.aclose())
    assert (toolset.closes, toolset.acloses, toolset.tool.closes, alone.closes) == (1, 1, 2, 2)


def test_close_goes_on_after_an_object_failed_and_raises_its_error_afterwards() -> None:
    class Failing(CountingTool):
        def close(self) -> None:
            super().close()
            raise OSError("socket already gone")

    first, last = Failing("first"), CountingTool("last")
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[first, last])
    with pytest.raises(OSError, match="already gone"):
        agent.close()
    assert (first.closes, last.closes) == (1, 1)


def test_the_tool_invoker_warms_a_toolset_once_and_closes_it() -> None:
    toolset, alone = Connected(), CountingTool("alone")
    toolset.warm_up()  # a ToolInvoker needs at least one tool when it is made
    toolset.warm_ups = 0
    invoker = ToolInvoker(tools=[toolset, alone])
    for _ in range(3):
        invoker.warm_up()
        assert results({"messages": invoker.run([calls("remote", "alone")])["tool_messages"]}) == ["remote", "alone"]
    asyncio.run(invoker.run_async([calls("remote")]))
    assert (toolset.warm_ups, alone.warm_ups) == (1, 1)
    invoker.close()
    invoker.warm_up()
    asyncio.run(invoker.aclose())
    assert (toolset.closes, toolset.acloses, alone.closes) == (1, 1, 2)


class Server(Toolset):
    """The docs' ServerTools: its tool answers whether the toolset is connected when it runs."""

    def __init__(self) -> None:
        super().__init__([])
        self.connected = False
        self.log: list[str] = []

    def warm_up(self) -> None:
        self.log.append("warm")
        if not self.connected:
            self.connected = True
            self.tools = [Tool(name="ping", description="", parameters=NO_ARGS, function=self.ping)]
        super().warm_up()

    def ping(self) -> str:
        return "pong" if self.connected else "used while disconnected"

    def close(self) -> None:
        self.log.append("close")
        self.connected = False

    async def aclose(self) -> None:
        self.log.append("aclose")
        self.connected = False


def test_after_close_a_run_warms_the_toolset_again_and_a_second_close_closes_nothing() -> None:
    server = Server()
    replies = [calls("ping"), ChatMessage.from_assistant("a"), calls("ping"), ChatMessage.from_assistant("b")]
    agent = Agent(chat_generator=ScriptedChatGenerator(replies), tools=[server])
    assert results(agent.run([ChatMessage.from_user("x")])) == ["pong"]
    agent.close()
    agent.close()
    asyncio.run(agent.aclose())
    assert server.log == ["warm", "close"]
    assert results(agent.run([ChatMessage.from_user("x")])) == ["pong"]  # connected again by the run
    asyncio.run(agent.aclose())
    asyncio.run(agent.aclose())
    assert server.log == ["warm", "close", "warm", "aclose"]


def test_an_object_whose_close_raised_is_not_closed_again_and_its_error_is_raised_once() -> None:
    class Failing(CountingTool):
        def close(self) -> None:
            super().close()
            raise OSError("socket already gone")

    failing, other = Failing("failing"), CountingTool("other")
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[failing, other])
    agent.warm_up()
    with pytest.raises(OSError, match="already gone"):
        agent.close()
    agent.close()
    asyncio.run(agent.aclose())
    assert (failing.closes, other.closes) == (1, 1)


def test_the_tools_of_a_base_toolset_are_warmed_again_after_close() -> None:
    inner = CountingTool("inner")
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=Toolset([inner]))
    agent.warm_up()
    agent.close()
    agent.warm_up()
    agent.warm_up()
    assert (inner.warm_ups, inner.closes) == (2, 1)


def test_the_tool_invoker_closes_once_and_warms_again_after_close() -> None:
    server = Server()
    server.warm_up()  # a ToolInvoker needs at least one tool when it is made
    invoker = ToolInvoker(tools=server)
    invoker.close()
    invoker.close()
    asyncio.run(invoker.aclose())
    assert server.log == ["warm", "close"]
    [out] = invoker.run([calls("ping")])["tool_messages"]
    assert out.tool_call_result.result == "pong"
    invoker.close()
    assert server.log == ["warm", "close", "warm", "close"]


def test_a_toolset_passed_to_one_run_is_warmed_by_it_and_left_open() -> None:
    toolset = Connected()
    agent = Agent(chat_generator=ScriptedChatGenerator([calls("remote"), ChatMessage.from_assistant("ok")]))
    assert results(agent.run([ChatMessage.from_user("x")], tools=toolset)) == ["remote"]
    agent.close()
    assert (toolset.warm_ups, toolset.closes) == (1, 0)


ASKED: contextvars.ContextVar[str] = contextvars.ContextVar("asked", default="unset")


async def shout(text: str) -> str:
    """Shout.

    Args:
        text: What to shout.
    """
    await asyncio.sleep(0)
    return f"{text.upper()} ({ASKED.get()}, {threading.current_thread().name})"


def _shout_agent(count: int) -> Agent:
    step = ChatMessage.from_assistant(
        tool_calls=[ToolCall(tool_name="shout", arguments={"text": f"t{i}"}, id=f"c{i}") for i in range(count)]
    )
    generator = ScriptedChatGenerator([step, ChatMessage.from_assistant("done")])
    return Agent(chat_generator=generator, tools=[create_tool_from_function(shout)])


@pytest.mark.parametrize("count", [1, 3])
def test_an_async_only_tool_runs_under_the_sync_agent_run_with_the_callers_context(count: int) -> None:
    token = ASKED.set("caller")
    try:
        out = _shout_agent(count).run([ChatMessage.from_user("x")])
    finally:
        ASKED.reset(token)
    assert [r.split(",")[0] for r in results(out)] == [f"T{i} (caller" for i in range(count)]
    assert out["last_message"].text == "done"


def test_an_async_only_tool_runs_under_a_sync_run_called_from_a_thread_that_runs_a_loop() -> None:
    async def inside_a_loop() -> dict[str, Any]:
        ASKED.set("in the loop")
        return _shout_agent(1).run([ChatMessage.from_user("x")])  # a sync call: this loop is blocked meanwhile

    [result] = results(asyncio.run(inside_a_loop()))
    assert result.startswith("T0 (in the loop, handrail-async-tool")


def test_an_async_only_tool_runs_under_the_sync_tool_invoker_run() -> None:
    invoker = ToolInvoker(tools=[create_tool_from_function(shout)])
    message = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="shout", arguments={"text": "hi"}, id="1")])
    [out] = invoker.run([message])["tool_messages"]
    assert out.tool_call_result is not None
    assert out.tool_call_result.result.startswith("HI (unset")
    assert out.tool_call_result.error is False


def test_an_async_only_tool_that_raises_reports_the_same_error_under_run_and_run_async() -> None:
    async def fail(url: str) -> str:
        """Fail.

        Args:
            url: The address.
        """
        raise ValueError("async fail")

    async def fail_from(url: str) -> str:
        """Fail from a cause of its own.

        Args:
            url: The address.
        """
        try:
            raise KeyError(url)
        except KeyError as exc:
            raise ValueError("lookup failed") from exc

    def agent() -> Agent:
        step = ChatMessage.from_assistant(
            tool_calls=[ToolCall(tool_name=n, arguments={"url": "a"}, id=n) for n in ("fail", "fail_from")]
        )
        tools = [create_tool_from_function(fail), create_tool_from_function(fail_from)]
        generator = ScriptedChatGenerator([step, ChatMessage.from_assistant("done")])
        return Agent(chat_generator=generator, tools=tools, raise_on_tool_invocation_failure=False)

    under_run = results(agent().run([ChatMessage.from_user("x")]))
    under_run_async = results(asyncio.run(agent().run_async([ChatMessage.from_user("x")])))
    assert under_run == under_run_async
    assert under_run[0].endswith("Error: ValueError: async fail")  # no root cause from handrail's own plumbing
    assert under_run[1].endswith("ValueError: lookup failed (root cause: KeyError: 'a')")  # the tool's own cause


def test_docs_have_their_examples() -> None:
    assert len(code_blocks("tools-lifecycle-and-threads.md")) == 3  # they run in tests/test_docs_pages.py
