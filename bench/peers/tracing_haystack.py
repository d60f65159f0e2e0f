#!/usr/bin/env python
"""Haystack's Agent on the W1 workload with its OpenTelemetry tracing off and on: the peer figures of bench_tracing.py.

Runs in its own virtual environment (handrail is not imported)::

    python -m venv /tmp/bench/hs
    /tmp/bench/hs/bin/pip install haystack-ai==3.4.1 opentelemetry-haystack==2.0.0 opentelemetry-sdk==1.45.2
    /tmp/bench/hs/bin/python bench/peers/tracing_haystack.py [--rounds 5] [--runs 20] [--api sync] [--json F]

The workload is the peer-bench folder's own (``bench_haystack.py``, imported from ``$PEER_BENCH``, default
``../shared/peer-bench``): its fake chat model, ``mk_agent``, ``check`` and timing loop, 50 steps of one trivial
``ping`` call. Haystack 3 keeps its OpenTelemetry tracer in the ``opentelemetry-haystack`` integration:
``haystack.tracing.enable_tracing(OpenTelemetryTracer(provider.get_tracer(...)))`` with a private
``TracerProvider`` exporting to an ``InMemorySpanExporter``, and ``disable_tracing()`` after. Content tags
(``HAYSTACK_CONTENT_TRACING_ENABLED=true``, read when haystack is imported) are the proxy tracer's
``is_content_tracing_enabled`` flag, set for the ``on+content`` configuration only.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/ for tracing_common
import tracing_common as tc

sys.path.insert(0, tc.peer_bench_dir())
import bench_haystack as hs  # the peer-bench folder's W1 workload
from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

from haystack import tracing


def configs(apis: list[str]) -> list[tc.Config]:
    otel = tc.in_memory_tracing()

    @contextlib.contextmanager
    def traced(content: bool) -> Iterator[None]:
        proxy = tracing.tracer
        with tc.cleared(otel):
            tracing.enable_tracing(OpenTelemetryTracer(otel.provider.get_tracer("haystack")))
            proxy.is_content_tracing_enabled = content
            try:
                yield
            finally:
                tracing.disable_tracing()
                proxy.is_content_tracing_enabled = False

    out = []
    for api in apis:
        for name, active in (
            ("off", contextlib.nullcontext),
            ("on", lambda: traced(False)),
            ("on+content", lambda: traced(True)),
        ):
            out.append(_config(api, name, active, otel))
    return out


def _config(api: str, name: str, active: Any, otel: tc.InMemoryTracing) -> tc.Config:
    if api == "sync":
        agent = hs.mk_agent(hs.ping, tc.STEPS)

        def once() -> Any:
            return agent.run(messages=hs.user_msgs())

        def measure(n: int) -> list[float]:
            return list(hs.bench_sync(once, 3, n).cpu)
    else:
        import asyncio

        agent = hs.mk_agent(hs.aping, tc.STEPS)

        def once() -> Any:
            return asyncio.run(agent.run_async(messages=hs.user_msgs()))

        def measure(n: int) -> list[float]:
            return list(hs.bench_async(lambda: agent.run_async(messages=hs.user_msgs()), 3, n).cpu)

    def spans() -> list[Any]:
        otel.exporter.clear()
        hs.check(once(), tc.STEPS, 1)
        return otel.finished()

    return tc.Config(api, name, measure, spans, active)


def main() -> None:
    a = tc.arguments(__doc__.splitlines()[0])
    versions = tc.version_of("haystack-ai", "opentelemetry-haystack", "opentelemetry-sdk", "pydantic")
    tc.report("haystack", versions, configs(a.api), a)


if __name__ == "__main__":
    main()
