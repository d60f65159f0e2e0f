#!/usr/bin/env python
"""W1 with handrail's tracing off and on (in-memory exporter): CPU per step, added CPU per step, spans per step.

Usage:
    python bench/bench_tracing.py [--rounds 5] [--runs 20] [--api sync|async] [--json F]
    python bench/bench_tracing.py --trees /tmp/wt-base . [--rounds 6]   # W1 off, one tree against another

The workload is ``bench_handrail.py``'s W1 (its fake model, ``mk_agent``, ``check``, ``user_msgs`` and timing
loop: 50 steps of one trivial ``ping`` call), in these configurations, measured by ``tracing_common.py`` as the
peer scripts ``bench/peers/tracing_haystack.py`` and ``bench/peers/tracing_pydantic_ai.py`` measure theirs:

* ``off``: no tracing (the default);
* ``no-op observer``: ``Agent(observers=[NoOp()])``, an observer that does nothing: the seam's own cost;
* ``on``: ``Agent(tracer_provider=P)``, P a private ``TracerProvider`` with
  ``SimpleSpanProcessor(InMemorySpanExporter())``;
* ``on+content``: ``handrail.tracing.observer_for(P, capture_content=True)`` made for every run by an observer
  factory (``handrail.components.drivers.add_observer_factory``, as ``enable`` does; removed after);
* ``metrics``: ``Agent(observers=[metrics_observer_for(M)])`` (``handrail.tracing._metrics``), M a private
  ``MeterProvider`` with an ``InMemoryMetricReader``: metrics alone;
* ``on+metrics``: ``Agent(tracer_provider=P, observers=[metrics_observer_for(M)])``: spans and metrics.

``--trees A B ...`` instead runs ``bench/bench_handrail.py --workload w1_sync`` and ``w1_async`` of each tree (its own
script, ``PYTHONPATH=<tree>/src``), each in a fresh process, the trees alternating and their order flipped every
round: the tracing-off figure of this tree against an older checkout, e.g. one made with
``git worktree add --detach /tmp/wt-base 49e917a``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
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
    metrics = _metrics_observer()
    spans = hasattr(tracing, "observer_for")
    if not spans:
        print("handrail.tracing has no observer_for yet: no span configurations", file=sys.stderr)
    out = []
    for api in apis:
        out.append(_config(api, "off", {}, otel, lambda: tc.cleared(otel)))
        out.append(_config(api, "no-op observer", {"observers": [NoOp()]}, otel, lambda: tc.cleared(otel)))
        if spans:
            out.append(_config(api, "on", {"tracer_provider": otel.provider}, otel, lambda: tc.cleared(otel)))
            content = functools.partial(tracing.observer_for, otel.provider, capture_content=True)
            out.append(_config(api, "on+content", {}, otel, lambda f=content: _factory(otel, f)))  # type: ignore[misc]
        if metrics is not None:
            out.append(_config(api, "metrics", {"observers": [metrics]}, otel, lambda: tc.cleared(otel)))
        if metrics is not None and spans:
            kw = {"tracer_provider": otel.provider, "observers": [metrics]}
            out.append(_config(api, "on+metrics", kw, otel, lambda: tc.cleared(otel)))
    return out


class NoOp:
    """An observer that does nothing: what the observer seam itself costs, before any tracing."""

    def started(self, event: Any) -> None:
        pass

    def ended(self, event: Any, ended: Any) -> None:
        pass


@contextlib.contextmanager
def _factory(otel: tc.InMemoryTracing, factory: Callable[[], Any]) -> Iterator[None]:
    """``factory`` makes an observer for every run (as ``enable`` registers one), removed after."""
    from handrail.components.drivers import add_observer_factory, remove_observer_factory

    with tc.cleared(otel):
        add_observer_factory(factory)
        try:
            yield
        finally:
            remove_observer_factory(factory)


def _metrics_observer() -> Any:
    """``metrics_observer_for`` a private MeterProvider with an InMemoryMetricReader (None: no metrics module)."""
    if importlib.util.find_spec("handrail.tracing._metrics") is None:
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from handrail.tracing._metrics import metrics_observer_for

    return metrics_observer_for(MeterProvider(metric_readers=[InMemoryMetricReader()]))


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

    def spans() -> list[Any]:
        otel.exporter.clear()
        hb.check(once(), tc.STEPS, 1)
        return otel.finished(SCOPE)

    return tc.Config(api, name, measure, spans, active)


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
            paired = [v / f for v, f in zip(figure["rounds"], first[w]["rounds"], strict=True)]
            figure["paired_ratio_median"] = round(statistics.median(paired), 4)  # the same round: similar load
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
