"""No span outlives its run, none is held current across an effect, tools see their own span (TR-T8, TR-10, TR-11)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from handrail.components.drivers import execute_sync
from handrail.dataclasses import StreamingChunk
from handrail.testing import call, reply, user
from handrail.tools import create_tool_from_function
from handrail.tracing import TracingObserver
from tests.tracing._span_helpers import Traced, weather_agent

SEEN: dict[str, int] = {}


def where(name: str) -> str:
    """Record the span current in the tool.

    Args:
        name: A label.
    """
    SEEN[name] = trace.get_current_span().get_span_context().span_id
    return name


async def where_async(name: str) -> str:
    """Record the span current in the async tool.

    Args:
        name: A label.
    """
    await asyncio.sleep(0)
    SEEN[name] = trace.get_current_span().get_span_context().span_id
    return name


WHERE = create_tool_from_function(where)
WHERE_ASYNC = create_tool_from_function(where_async)


@pytest.fixture
def traced(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    SEEN.clear()
    made = Traced()
    yield made
    assert "Failed to detach context" not in caplog.text
    made.assert_all_ended()


def _tool_spans(traced: Traced) -> dict[str, int]:
    return {str((s.attributes or {})["gen_ai.tool.call.id"]): s.context.span_id for s in traced.spans()
            if s.name.startswith("execute_tool")}  # fmt: skip


def test_concurrent_tools_each_see_their_own_span_and_the_caller_sees_none(traced: Traced) -> None:
    step = reply(call("where", id="a", name="a"), call("where", id="b", name="b"), call("where", id="c", name="c"))
    weather_agent(traced.provider, [step, reply("done")], tools=[WHERE]).run([user("go")])
    assert _tool_spans(traced) == SEEN and len(set(SEEN.values())) == 3
    assert not trace.get_current_span().get_span_context().is_valid  # nothing left attached in the caller


def test_async_tools_under_run_async_see_their_own_span(traced: Traced) -> None:
    step = reply(call("where_async", id="a", name="a"), call("where", id="b", name="b"))
    agent = weather_agent(traced.provider, [step, reply("done")], tools=[WHERE_ASYNC, WHERE])
    asyncio.run(agent.run_async([user("go")]))
    assert _tool_spans(traced) == SEEN and len(set(SEEN.values())) == 2


def test_a_streaming_callback_raising_after_the_first_chunk_ends_every_span(traced: Traced) -> None:
    chunks = [StreamingChunk(content="Hel", start=True), StreamingChunk(content="lo"),
              StreamingChunk(finish_reason="stop")]  # fmt: skip
    got: list[StreamingChunk] = []

    def callback(chunk: StreamingChunk) -> None:
        got.append(chunk)
        if len(got) == 2:
            raise KeyboardInterrupt  # the consumer stops reading (what Ctrl-C does)

    with pytest.raises(KeyboardInterrupt):
        weather_agent(traced.provider, [chunks]).run([user("hi")], streaming_callback=callback)
    chat = traced.one("chat scripted-model")
    assert chat.status.status_code is StatusCode.ERROR and (chat.attributes or {})["error.type"] == "KeyboardInterrupt"
    assert (traced.agent().attributes or {})["handrail.run.status"] == "failed"


def test_a_hand_driven_run_abandoned_half_way_ends_its_spans_when_closed(traced: Traced) -> None:
    agent = weather_agent(traced.provider)
    with agent.start([user("weather?")]) as run:
        effect = run.send(None)
        assert effect is not None
        [tracing] = [o for o in run.context.observers if isinstance(o, TracingObserver)]
        tracing.started(effect)  # an effect begun by a driver that then gives up on the run
    assert (traced.agent().attributes or {})["handrail.run.status"] == "closed"
    assert len(traced.named("chat scripted-model")) == 1


def test_a_hand_driven_run_driven_to_the_end(traced: Traced) -> None:
    agent = weather_agent(traced.provider)
    with agent.start([user("weather?")]) as run:
        result = None
        while (effect := run.send(result)) is not None:
            result = execute_sync(run.context, effect)
    assert [s.name for s in traced.spans()][-1] == "invoke_agent"
    assert (traced.agent().attributes or {})["handrail.run.status"] == "done"


def test_a_cancelled_run_async_ends_every_span(traced: Traced) -> None:
    started = threading.Event()

    async def slow(name: str) -> str:
        """Wait until cancelled.

        Args:
            name: A label.
        """
        started.set()
        await asyncio.sleep(30)
        return name

    agent = weather_agent(traced.provider, [reply(call("slow", id="s1", name="x")), reply("done")],
                          tools=[create_tool_from_function(slow)])  # fmt: skip

    async def main() -> None:
        task = asyncio.ensure_future(agent.run_async([user("go")]))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    agent_span = traced.agent()
    assert (agent_span.attributes or {})["handrail.run.status"] in ("failed", "closed")
    assert traced.one("execute_tool slow").end_time is not None
