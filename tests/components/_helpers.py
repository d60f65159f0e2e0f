"""Module-level tools, callbacks and fake chat generators shared by the component tests.

Everything here is importable by dotted path (``tests.components._helpers.<name>``) so that
serialization round trips can resolve it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk, ToolCall
from handrail.testing import call as call
from handrail.testing import reply as reply
from handrail.testing import user as user
from handrail.tools import Tool, create_tool_from_function
from tests.common_tools import add as add
from tests.common_tools import echo as echo

if TYPE_CHECKING:
    from handrail.components.agents import Agent

# --------------------------------------------------------------------------- tool functions


def weather(city: str) -> dict[str, Any]:
    """Get the weather for a city."""
    return {"weather": "sunny", "temperature": 7, "city": city}


def parrot(text: str) -> str:
    """Repeat the text."""
    return f"parrot: {text}"


def finish(answer: str) -> str:
    """Give the final answer."""
    return f"final: {answer}"


def broken(x: int) -> int:
    """Always fails, with a chained root cause."""
    try:
        {}["missing"]
    except KeyError as exc:
        raise ValueError(f"cannot handle {x}") from exc
    return x  # pragma: no cover


def upper(value: Any) -> str:
    """A result handler."""
    return str(value).upper()


def concat_handler(current: Any, new: Any) -> list[Any]:
    """A State handler that concatenates."""
    return [*(current or []), *(new if isinstance(new, list) else [new])]


def collect_chunk(chunk: StreamingChunk) -> None:
    """A module-level (serializable) streaming callback that does nothing."""


WEATHER_TOOL = create_tool_from_function(weather)
ECHO_TOOL = create_tool_from_function(echo)
PARROT_TOOL = create_tool_from_function(parrot)
FINISH_TOOL = create_tool_from_function(finish)
BROKEN_TOOL = create_tool_from_function(broken)
ADD_TOOL = create_tool_from_function(add)


def make_tool(name: str, function: Callable[..., Any], **kwargs: Any) -> Tool:
    """Build a tool from ``function`` under another name."""
    return create_tool_from_function(function, name=name, **kwargs)


@dataclasses.dataclass
class Point:
    """A dataclass result."""

    x: int
    label: str


class Report:
    """An object with to_dict."""

    def __init__(self, title: str) -> None:
        self.title = title

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "kind": "report"}


# --------------------------------------------------------------------------- messages (call, reply and user are
# handrail.testing's builders, imported above for the tests that import them from here)


def calls_msg(*tool_calls: ToolCall, text: str | None = None, meta: dict[str, Any] | None = None) -> ChatMessage:
    """An assistant message holding ``tool_calls`` (and ``text`` before them)."""
    return reply(*([] if text is None else [text]), *tool_calls, **(meta or {}))


# --------------------------------------------------------------------------- concurrency probe


class ThreadProbe:
    """Counts simultaneous calls from threads and holds them until ``limit`` run at once.

    Each call increments ``active`` (recording ``peak``), then waits until the probe is opened.
    The probe opens itself when ``active`` reaches ``limit`` (after a short grace period in which
    any call that should not be running would also have entered), or after ``timeout``.
    """

    def __init__(self, limit: int, timeout: float = 5.0) -> None:
        self.limit = limit
        self.timeout = timeout
        self.active = 0
        self.peak = 0
        self.total = 0
        self._cond = threading.Condition()
        self._open = threading.Event()

    def enter(self) -> None:
        with self._cond:
            self.active += 1
            self.total += 1
            self.peak = max(self.peak, self.active)
            reached = self.active >= self.limit
        if reached and not self._open.is_set():
            # Give any excess call (a bound violation) the chance to enter before opening.
            threading.Event().wait(0.05)
            with self._cond:
                self.peak = max(self.peak, self.active)
            self._open.set()
        self._open.wait(self.timeout)
        with self._cond:
            self.active -= 1


class AsyncProbe:
    """The asyncio twin of :class:`ThreadProbe` (deterministic: it yields instead of sleeping)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self.peak = 0
        self.total = 0
        self._open: asyncio.Event | None = None

    async def enter(self) -> None:
        if self._open is None:
            self._open = asyncio.Event()
        self.active += 1
        self.total += 1
        self.peak = max(self.peak, self.active)
        if self.active >= self.limit and not self._open.is_set():
            for _ in range(20):  # let every runnable coroutine (a violator too) enter
                await asyncio.sleep(0)
                self.peak = max(self.peak, self.active)
            self._open.set()
        await asyncio.wait_for(self._open.wait(), 5)
        self.active -= 1


# --------------------------------------------------------------------------- fake generators

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _echo_reply(messages: list[ChatMessage]) -> ChatMessage:
    last = messages[-1]
    if last.role is ChatRole.USER:
        text = last.text or ""
        return ChatMessage.from_assistant(
            tool_calls=[ToolCall(tool_name="echo", arguments={"text": text}, id=f"id-{text}")],
            meta={"usage": dict(USAGE)},
        )
    result = last.tool_call_result
    answer = result.result if result is not None else "?"
    return ChatMessage.from_assistant(f"done: {answer}", meta={"usage": dict(USAGE)})


class EchoGenerator:
    """A stateless fake model: a user message is echoed through the ``echo`` tool, a tool result answered.

    Its reply depends only on its input, so one instance is safe to share between concurrent runs.
    """

    def run(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        threading.Event().wait(0.001)  # give other threads a chance to interleave
        return {"replies": [_echo_reply(messages)]}

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return {"replies": [_echo_reply(messages)]}

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.EchoGenerator", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EchoGenerator:
        return cls()


class NoToolsGenerator:
    """A chat generator whose run has no ``tools`` parameter."""

    def __init__(self, text: str = "plain") -> None:
        self.text = text
        self.calls: list[list[ChatMessage]] = []

    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        self.calls.append(list(messages))
        return {"replies": [ChatMessage.from_assistant(self.text)]}


class SyncOnlyGenerator:
    """A tools-capable generator without run_async; records the thread and callback it saw."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []

    def run(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: Any = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        self.calls.append({"messages": list(messages), "thread": threading.get_ident(), "callback": streaming_callback})
        if streaming_callback is not None:
            streaming_callback(StreamingChunk(content="chunk"))
        return {"replies": [self.replies[len(self.calls) - 1]]}


class WarmCountingTool(Tool):
    """A Tool subclass that counts its warm-ups."""

    warm_ups: int = 0

    def warm_up(self) -> None:
        self.warm_ups += 1


def warm_echo_tool(name: str = "echo") -> WarmCountingTool:
    return WarmCountingTool(name=name, description="Echo.", parameters=ECHO_TOOL.parameters, function=echo)


def run_in_mode(agent: Agent, mode: str, messages: list[ChatMessage], **kwargs: Any) -> dict[str, Any]:
    """Run ``agent`` in ``mode``: ``"sync"``, ``"async"`` (run_async) or ``"stream"`` (sync, with a callback)."""
    if mode == "async":
        return asyncio.run(agent.run_async(messages, **kwargs))
    if mode == "stream":
        chunks: list[StreamingChunk] = []
        return agent.run(messages, streaming_callback=chunks.append, **kwargs)
    return agent.run(messages, **kwargs)
