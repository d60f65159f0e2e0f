#!/usr/bin/env python
"""Pydantic AI's Agent on the W1 workload with its OpenTelemetry instrumentation off and on (bench_tracing.py's peer).

Runs in its own virtual environment (handrail is not imported)::

    python -m venv /tmp/bench/pa
    /tmp/bench/pa/bin/pip install pydantic-ai-slim==2.68.0 opentelemetry-sdk==1.45.2
    /tmp/bench/pa/bin/python bench/peers/tracing_pydantic_ai.py [--rounds 5] [--runs 20] [--api sync] [--json F]

The workload is the peer-bench folder's own (``bench_pydantic_ai.py``, imported from ``$PEER_BENCH``, default
``../shared/peer-bench``): its ``FunctionModel`` fake, ``mk_agent``, ``check``, ``srun`` / ``arun`` and timing loop,
50 steps of one trivial ``ping`` call. Tracing on is the agent's ``instrument`` set to
``InstrumentationSettings(tracer_provider=P, include_content=False)`` (``True`` for ``on+content``, Pydantic AI's
default), P a private ``TracerProvider`` exporting to an ``InMemorySpanExporter``; metrics go to the global meter
provider, which is the API's no-op one here (no SDK meter provider is set), so only spans cost.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/ for tracing_common
import tracing_common as tc

sys.path.insert(0, tc.peer_bench_dir())
import bench_pydantic_ai as pa  # the peer-bench folder's W1 workload
from pydantic_ai.models.instrumented import InstrumentationSettings


def configs(apis: list[str]) -> list[tc.Config]:
    otel = tc.in_memory_tracing()
    out = []
    for api in apis:
        for name, instrument in (
            ("off", None),
            ("on", InstrumentationSettings(tracer_provider=otel.provider, include_content=False)),
            ("on+content", InstrumentationSettings(tracer_provider=otel.provider, include_content=True)),
        ):
            out.append(_config(api, name, instrument, otel))
    return out


def _config(api: str, name: str, instrument: Any, otel: tc.InMemoryTracing) -> tc.Config:
    agent = pa.mk_agent(pa.ping if api == "sync" else pa.aping, tc.STEPS)
    agent.instrument = instrument  # None: the default, not instrumented (Agent.instrument_all is never called)
    if api == "sync":

        def once() -> Any:
            return pa.srun(agent)

        def measure(n: int) -> list[float]:
            return list(pa.bench_sync(once, 3, n).cpu)
    else:
        import asyncio

        def once() -> Any:
            return asyncio.run(pa.arun(agent))

        def measure(n: int) -> list[float]:
            return list(pa.bench_async(lambda: pa.arun(agent), 3, n).cpu)

    def spans() -> list[Any]:
        otel.exporter.clear()
        pa.check(once(), tc.STEPS, 1)
        return otel.finished()

    return tc.Config(api, name, measure, spans, lambda: tc.cleared(otel))


def main() -> None:
    a = tc.arguments(__doc__.splitlines()[0])
    versions = tc.version_of("pydantic-ai-slim", "pydantic-graph", "opentelemetry-sdk", "pydantic")
    tc.report("pydantic-ai", versions, configs(a.api), a)


if __name__ == "__main__":
    main()
