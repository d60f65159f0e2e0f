"""A private tracer provider with an in-memory exporter, and the scripted agents the span tests run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools import create_tool_from_function


class Started(SpanProcessor):
    """Counts the spans started (to compare with those ended: none may be left open)."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == "handrail":
            self.started.append(span.name)


class Traced:
    """A TracerProvider of a test's own and what it exported (SimpleSpanProcessor: exported as each span ends)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.starts = Started()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.starts)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def assert_all_ended(self) -> None:
        """Every handrail span started was ended (and exported)."""
        assert sorted(self.starts.started) == sorted(s.name for s in self.spans())

    def spans(self) -> list[ReadableSpan]:
        """handrail's spans, in the order they ended."""
        return [s for s in self.exporter.get_finished_spans() if s.instrumentation_scope.name == "handrail"]

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in self.spans()]}"
        return found[0]

    def agent(self) -> ReadableSpan:
        found = [s for s in self.spans() if s.name.startswith("invoke_agent")]
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]


def get_weather(city: str) -> str:
    """Get the weather for a city.

    Args:
        city: The city.
    """
    return f"sunny in {city}"


def explode(x: int) -> int:
    """A tool that always fails.

    Args:
        x: Anything.
    """
    raise ValueError(f"cannot handle {x}")


WEATHER = create_tool_from_function(get_weather)
EXPLODE = create_tool_from_function(explode)

USAGE_1 = {"prompt_tokens": 11, "completion_tokens": 5}
USAGE_2 = {"prompt_tokens": 23, "completion_tokens": 7}


def weather_script() -> list[Any]:
    """A 2-step script: one call of get_weather, then the answer; with usage and finish reasons."""
    return [
        reply(call("get_weather", id="c1", city="Paris"), usage=USAGE_1, finish_reason="tool_calls", model="m-1"),
        reply("It is sunny in Paris.", usage=USAGE_2, finish_reason="stop", model="m-1", id="resp-2"),
    ]


def weather_agent(provider: Any, replies: Sequence[Any] | None = None, **kwargs: Any) -> Agent:
    tools = kwargs.pop("tools", [WEATHER, EXPLODE])
    script = list(replies) if replies is not None else weather_script()
    return Agent(chat_generator=ScriptedChatGenerator(script), tools=tools, tracer_provider=provider, **kwargs)


def shape(spans: Sequence[ReadableSpan]) -> list[tuple[str, str, dict[str, Any]]]:
    """Names, kinds and attributes, without ids, times or what differs between runs (run ids, digests)."""
    varying = {"gen_ai.conversation.id", "handrail.run.id", "handrail.approval.wait_ms"}
    return [(s.name, s.kind.name, {k: v for k, v in (s.attributes or {}).items() if k not in varying})
            for s in spans]  # fmt: skip


def assert_tree(traced: Traced) -> None:
    """Every handrail span but the agent's is a child of the agent span, in one trace."""
    agent = traced.agent()
    for span in traced.spans():
        assert span.context.trace_id == agent.context.trace_id
        if span is not agent:
            assert span.parent is not None and span.parent.span_id == agent.context.span_id, span.name
