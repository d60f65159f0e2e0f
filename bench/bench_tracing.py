#!/usr/bin/env python
"""W1 with handrail's tracing off and on (in-memory exporter): CPU per step, added CPU per step, spans per step.

Usage:
    python bench/bench_tracing.py [--rounds 5] [--runs 20] [--api sync|async] [--json F]
    python bench/bench_tracing.py --trees /tmp/wt-base . [--rounds 6]   # W1 off, one tree against another

The workload is ``bench_handrail.py``'s W1 (its fake model, ``mk_agent``, ``check``, ``user_msgs`` and timing
loop: 50 steps of one trivial ``ping`` call), in these configurations, measured by ``tracing_common.py`` as the
peer scripts ``bench/peers/tracing_haystack.py`` and ``bench/peers/tracing_pydantic_ai.py`` measure theirs:

* ``off``: no tracing (the default);
* ``on``: ``Agent(tracer_provider=P)``, P a private ``TracerProvider`` with
  ``SimpleSpanProcessor(InMemorySpanExporter())``;
* ``on+content``: ``handrail.tracing.enable(tracer_provider=P, capture_content=True)`` around the runs (and
  ``disable()`` after), on an Agent without a provider of its own;
* ``on+metrics``: ``on`` plus the metrics observer of a private ``MeterProvider`` with an ``InMemoryMetricReader``
  (``handrail.tracing._metrics.metrics_observer_for``), when that module exists.

``--trees A B ...`` instead runs ``bench/bench_handrail.py --workload w1_sync`` and ``w1_async`` of each tree (its own
script, ``PYTHONPATH=<tree>/src``), each in a fresh process, the trees alternating and their order flipped every
round: the tracing-off figure of this tree against an older checkout, e.g. one made with
``git worktree add --detach /tmp/wt-base 49e917a``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_handrail as hb  # the W1 workload and its timing loop
import tracing_common as tc

SCOPE = "handrail"
"""The instrumentation scope of handrail's spans; only those are counted."""


def configs(apis: list[str]) -> list[tc.Config]:
    import handrail.tracing as tracing

    otel = tc.in_memory_tracing()
    out = []
    for api in apis:
        out.append(_config(api, "off", {}, otel, lambda: tc.cleared(otel)))
        if not hasattr(tracing, "observer_for"):  # before the tracing observer exists: the off figure alone
            print("handrail.tracing has no observer_for yet: tracing off only", file=sys.stderr)
            continue
        out.append(_config(api, "on", {"tracer_provider": otel.provider}, otel, lambda: tc.cleared(otel)))
        out.append(_config(api, "on+content", {}, otel, lambda: _enabled(otel, capture_content=True)))
        metrics = _metrics_observer()
        if metrics is not None:
            kw = {"tracer_provider": otel.provider, "observers": [metrics]}
            out.append(_config(api, "on+metrics", kw, otel, lambda: tc.cleared(otel)))
    return out


@contextlib.contextmanager
def _enabled(otel: tc.InMemoryTracing, **options: Any) -> Iterator[None]:
    """``handrail.tracing.enable`` for every run, with P; ``disable`` after."""
    import handrail.tracing as tracing

    with tc.cleared(otel):
        tracing.enable(tracer_provider=otel.provider, **options)  # type: ignore[attr-defined]
        try:
            yield
        finally:
            tracing.disable()  # type: ignore[attr-defined]


def _metrics_observer() -> Any:
    """The metrics observer of a private MeterProvider, or None before ``handrail.tracing._metrics`` exists."""
    try:
        metrics = importlib.import_module("handrail.tracing._metrics")
    except ImportError:
        return None
    make = getattr(metrics, "metrics_observer_for", None)
    if make is None:
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    return make(MeterProvider(metric_readers=[InMemoryMetricReader()]))


def _config(
    api: str,
    name: str,
    agent_kw: dict[str, Any],
    otel: tc.InMemoryTracing,
    active: Callable[[], AbstractContextManager[Any]],
) -> tc.Config:
    if api == "sync":
        agent = hb.mk_agent(hb.ping, tc.STEPS, **agent_kw)

        def once() -> Any:
            return agent.run(messages=hb.user_msgs())

        def measure(n: int) -> list[float]:
            return list(hb.bench_sync(once, 3, n).cpu)
    else:
        agent = hb.mk_agent(hb.aping, tc.STEPS, **agent_kw)

        def once() -> Any:
            return asyncio.run(agent.run_async(messages=hb.user_msgs()))

        def measure(n: int) -> list[float]:
            return list(hb.bench_async(lambda: agent.run_async(messages=hb.user_msgs()), 3, n).cpu)

    def span_names() -> list[str]:
        otel.exporter.clear()
        hb.check(once(), tc.STEPS, 1)
        return [s.name for s in otel.finished(SCOPE)]

    return tc.Config(api, name, measure, span_names, active)


# ---- --trees: the tracing-off W1 of several checkouts, alternating ------------------------------------------------
WORKLOADS = ("w1_sync", "w1_async")


def compare_trees(trees: list[str], rounds: int) -> dict[str, Any]:
    """Per tree and workload: the W1 ``per_step_us`` ``cpu_median`` of each round, its median, lowest and highest."""
    trees = [os.path.abspath(t) for t in trees]
    per: dict[str, dict[str, list[float]]] = {t: {w: [] for w in WORKLOADS} for t in trees}
    loads = []
    for r in range(rounds):
        order = trees if r % 2 == 0 else trees[::-1]
        for w in WORKLOADS:
            for tree in order:
                loads.append(os.getloadavg()[0])
                cmd = [sys.executable, os.path.join(tree, "bench", "bench_handrail.py"), "--workload", w]
                env = {**os.environ, "PYTHONPATH": os.path.join(tree, "src")}
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                line = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
                per[tree][w].append(line["per_step_us"]["cpu_median"])
                print(f"round {r + 1} {w:8} {tree}: {per[tree][w][-1]:.1f} us/step", file=sys.stderr)
    out: dict[str, Any] = {"rounds": rounds, "loadavg1_min_max": [min(loads), max(loads)], "trees": {}}
    for tree, by_w in per.items():
        head = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        out["trees"][tree] = {
            "commit": head.stdout.strip(),
            **{w: {"median": statistics.median(v), "min": min(v), "max": max(v), "rounds": v} for w, v in by_w.items()},
        }
    first = out["trees"][trees[0]]
    for tree in trees[1:]:
        for w in WORKLOADS:
            figure = out["trees"][tree][w]
            figure["change_vs_first"] = round(figure["median"] / first[w]["median"] - 1, 4)
    return out


def main() -> None:
    def trees(ap: Any) -> None:
        ap.add_argument("--trees", nargs="+", metavar="TREE", help="compare W1, tracing off, of these checkouts")

    a = tc.arguments(__doc__.splitlines()[0], trees)
    if a.trees:
        line = json.dumps(compare_trees(a.trees, a.rounds))
        if a.json:
            with open(a.json, "w") as fh:
                fh.write(line + "\n")
        print(line)
        return
    versions = tc.version_of("handrail", "opentelemetry-api", "opentelemetry-sdk", "pydantic")
    tc.report("handrail", versions, configs(a.api), a)


if __name__ == "__main__":
    main()
