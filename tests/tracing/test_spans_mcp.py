"""An MCP call inside execute_tool: the MCP SDK's spans nest under handrail's span (TR-T9, TR-11).

The MCP SDK traces to the global tracer provider, which a process can set once: the session fixture sets it (or,
when another test module set it first, adds its exporter to it) and each test clears what it exported.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import handrail.tracing
from handrail.components.agents import Agent
from handrail.human_in_the_loop import BlockingConfirmationStrategy, NeverAskPolicy
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import MCPToolset
from tests.human_in_the_loop._helpers import ScriptedUI
from tests.mcp.conftest import stdio_spec
from tests.mcp.server_double import build_server


@pytest.fixture(scope="session")
def global_exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    current = trace.get_tracer_provider()
    if not isinstance(current, TracerProvider):
        trace.set_tracer_provider(TracerProvider())
        current = trace.get_tracer_provider()
    assert isinstance(current, TracerProvider)
    current.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def exported(global_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    global_exporter.clear()
    handrail.tracing.enable()  # the global provider, looked up as each run starts
    try:
        yield global_exporter
    finally:
        handrail.tracing.disable()
        global_exporter.clear()


def _ancestors(span: ReadableSpan, spans: list[ReadableSpan]) -> list[str]:
    by_id = {s.context.span_id: s for s in spans}
    names: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        names.append(by_id[parent.span_id].name)
        parent = by_id[parent.span_id].parent
    return names


def _run(server: Any, mode: str) -> None:
    allow = {"*": BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI())}
    script = [reply(call("add", {"a": 1, "b": 2}, id="c1")), reply("3")]
    agent = Agent(
        chat_generator=ScriptedChatGenerator(script), tools=[MCPToolset(server)], confirmation_strategies=allow
    )
    try:
        if mode == "sync":
            agent.run([user("add 1 and 2")])
        else:
            asyncio.run(agent.run_async([user("add 1 and 2")]))
    finally:
        agent.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_in_process_server_span_is_a_descendant_of_execute_tool(exported: InMemorySpanExporter, mode: str) -> None:
    _run(build_server(), mode)
    spans = list(exported.get_finished_spans())
    [server] = [s for s in spans if s.name == "tools/call add"]
    [tool] = [s for s in spans if s.name == "execute_tool add" and s.instrumentation_scope.name == "handrail"]
    assert server.context.trace_id == tool.context.trace_id
    assert "execute_tool add" in _ancestors(server, spans)
    assert _ancestors(tool, spans) == ["invoke_agent"]


def test_over_stdio_the_client_span_is_a_child_of_execute_tool(exported: InMemorySpanExporter) -> None:
    _run(stdio_spec(), "sync")
    spans = list(exported.get_finished_spans())
    [tool] = [s for s in spans if s.name == "execute_tool add" and s.instrumentation_scope.name == "handrail"]
    clients = [s for s in spans if s.instrumentation_scope.name != "handrail" and "tools/call" in s.name]
    assert clients, [s.name for s in spans]
    assert all(c.parent is not None and c.parent.span_id == tool.context.span_id for c in clients)
