"""``handrail.tracing.enable`` measures every run too (``metrics=True``, the default), to its ``meter_provider``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import handrail.tracing
from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator, reply, user
from handrail.tracing import _conventions as c
from tests.tracing._metric_points import Reader


@pytest.fixture
def reader() -> Iterator[Reader]:
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    yield Reader(memory, provider)
    handrail.tracing.disable()
    provider.shutdown()


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _run() -> None:
    Agent(chat_generator=ScriptedChatGenerator([reply("hi")])).run([user("hello")])


def test_enable_traces_and_measures_every_run_until_disabled(
    reader: Reader, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = spans
    handrail.tracing.enable(tracer_provider, meter_provider=reader.provider)
    _run()
    _run()
    assert sum(p.count for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION)) == 2
    assert sum(p.count for p in reader.points(c.METRIC_OPERATION_DURATION)) == 2
    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")] == ["invoke_agent"] * 2
    handrail.tracing.disable()
    _run()
    assert sum(p.count for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION)) == 2


def test_enable_without_metrics_records_none(
    reader: Reader, spans: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    tracer_provider, exporter = spans
    handrail.tracing.enable(tracer_provider, meter_provider=reader.provider, metrics=False)
    _run()
    assert reader.points(c.METRIC_INVOKE_AGENT_DURATION) == []
    assert exporter.get_finished_spans()  # the run was traced
