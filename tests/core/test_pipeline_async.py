"""Pipeline.run_async: the same semantics as run, and independent components of one wave overlap.

Concurrency is proven by overlap (both branches started before either finished), never by wall time; the
timeouts below only keep a broken implementation from hanging the suite.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from handrail.core.component import component
from handrail.core.pipeline import Pipeline
from handrail.errors import ConfigurationError, PipelineError, PipelineMaxComponentRuns
from tests.core.test_pipeline import Concat, Upper, loop_pipeline

GUARD_S = 5.0  # only against hangs: a correct implementation never waits this long


@component
class AsyncBranch:
    """Records its start, waits until the other branch has started, then records its end."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.log: list[str] = []
        self.started = asyncio.Event()
        self.other = asyncio.Event()

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        self.log.append(f"start {self.name}")
        self.started.set()
        await asyncio.wait_for(self.other.wait(), timeout=GUARD_S)
        await asyncio.sleep(0)
        self.log.append(f"end {self.name}")
        return {"text": f"{text}:{self.name}"}


@component
class ThreadBranch:
    """A sync component: passes only when another thread reaches the same barrier while it waits there."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.barrier: threading.Barrier | None = None
        self.log: list[str] = []
        self.lock = threading.Lock()

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        assert self.barrier is not None
        with self.lock:
            self.log.append(f"start {self.name}")
        self.barrier.wait()
        with self.lock:
            self.log.append(f"end {self.name}")
        return {"text": f"{text}:{self.name}"}


@component
class Boom:
    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        raise RuntimeError("backend down")


@component
class Hanging:
    def __init__(self) -> None:
        self.cancelled = False
        self.started = False

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        self.started = True
        try:
            await asyncio.sleep(GUARD_S)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return {"text": text}


def branches(a: Any, b: Any) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("a", a)
    pipeline.add_component("b", b)
    pipeline.add_component("join", Concat())
    pipeline.connect("a.text", "join.left")
    pipeline.connect("b.text", "join.right")
    return pipeline


async def test_two_independent_async_branches_run_concurrently() -> None:
    a, b = AsyncBranch("a"), AsyncBranch("b")
    log: list[str] = []
    a.log = b.log = log
    a.other, b.other = b.started, a.started
    result = await branches(a, b).run_async({"text": "x"})
    assert result == {"join": {"text": "x:ax:b"}}
    assert sorted(log[:2]) == ["start a", "start b"]  # both started before either finished
    assert sorted(log[2:]) == ["end a", "end b"]


async def test_sync_components_run_concurrently_in_worker_threads() -> None:
    a, b = ThreadBranch("a"), ThreadBranch("b")
    barrier = threading.Barrier(2, timeout=GUARD_S)
    a.barrier = b.barrier = barrier
    a.log, a.lock = b.log, b.lock
    result = await branches(a, b).run_async({"text": "x"})
    assert result == {"join": {"text": "x:ax:b"}}
    assert sorted(a.log[:2]) == ["start a", "start b"]


async def test_run_async_has_the_semantics_of_run() -> None:
    data = {"start": {"value": 0}}
    expected = loop_pipeline(limit=4).run(data, include_outputs_from=["counter"])
    got = await loop_pipeline(limit=4).run_async(data, include_outputs_from=["counter"])
    assert got == expected == {"threshold": {"above": 4}, "counter": {"value": 4}}


async def test_run_async_enforces_the_visit_limit() -> None:
    with pytest.raises(PipelineMaxComponentRuns, match="'start'") as caught:
        await loop_pipeline(limit=1000, max_runs=3).run_async({"value": 0})
    assert caught.value.component_name == "start"


async def test_run_async_checks_the_data_before_anything_runs() -> None:
    upper = Upper()
    pipeline = Pipeline()
    pipeline.add_component("upper", upper)
    with pytest.raises(ConfigurationError, match=r"'upper\.text'"):
        await pipeline.run_async({})
    assert upper.calls == []


async def test_a_failing_branch_is_named_and_its_sibling_cancelled() -> None:
    hanging = Hanging()
    pipeline = branches(Boom(), hanging)
    with pytest.raises(PipelineError, match=r"Component 'a' \(Boom\) failed: RuntimeError: backend down") as caught:
        await pipeline.run_async({"text": "x"})
    assert caught.value.component_name == "a"
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert hanging.started and hanging.cancelled
