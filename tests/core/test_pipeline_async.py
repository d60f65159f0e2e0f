"""Pipeline.run_async: the same semantics as run, event-driven, so independent branches overlap end to end.

Concurrency is proven by overlap (both branches started before either finished), never by wall time; the
timeouts below only keep a broken implementation from hanging the suite.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import Any

import pytest

from handrail.core.component import component
from handrail.core.pipeline import Pipeline
from handrail.errors import ConfigurationError, PipelineError, PipelineMaxComponentRuns
from tests.core.test_pipeline import Concat, Gate, Greeter, Upper, loop_pipeline, router_into_pair

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


# ---- event-driven: a component starts as soon as its inputs are ready -------------------------------------


@component
class Step:
    """One step of a chain: logs itself and passes its text on."""

    def __init__(self, name: str, log: list[str], done: asyncio.Event | None = None) -> None:
        self.name, self.log, self.done = name, log, done

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        self.log.append(self.name)
        await asyncio.sleep(0)
        if self.done is not None:
            self.done.set()
        return {"text": text + self.name}


@component
class LongStep:
    """The long branch: keeps running until the other branch's last step is done."""

    def __init__(self, log: list[str], until: asyncio.Event) -> None:
        self.log, self.until = log, until

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        self.log.append("long start")
        await asyncio.wait_for(self.until.wait(), timeout=GUARD_S)
        self.log.append("long end")
        return {"text": text + "L"}


async def test_a_chain_runs_to_its_end_while_an_independent_long_branch_is_still_running() -> None:
    """Branch A is three steps, branch B one long step: all of A's steps run while B runs (no waves)."""
    log: list[str] = []
    a_done = asyncio.Event()
    pipeline = Pipeline()
    pipeline.add_component("a1", Step("1", log))
    pipeline.add_component("a2", Step("2", log))
    pipeline.add_component("a3", Step("3", log, done=a_done))
    pipeline.add_component("b", LongStep(log, until=a_done))
    pipeline.add_component("join", Concat())
    pipeline.connect("a1", "a2")
    pipeline.connect("a2", "a3")
    pipeline.connect("a3.text", "join.left")
    pipeline.connect("b.text", "join.right")
    result = await pipeline.run_async({"a1": {"text": "x"}, "b": {"text": "y"}})
    assert result == {"join": {"text": "x123yL"}}
    assert log == ["1", "long start", "2", "3", "long end"]


@component
class SlowTitle:
    """Yields to the event loop a few times before answering: a deferred receiver must wait for it."""

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        for _ in range(5):
            await asyncio.sleep(0)
        return {"text": text.upper()}


async def test_a_deferred_component_waits_while_a_sender_is_still_running() -> None:
    greeter = Greeter()
    pipeline = Pipeline()
    pipeline.add_component("greeter", greeter)
    pipeline.add_component("title", SlowTitle())
    pipeline.connect("title.text", "greeter.title")
    assert await pipeline.run_async({"name": "Ada", "text": "dr"}) == {"greeter": {"text": "Hello DR Ada"}}
    assert greeter.calls == [("Ada", "DR")]


async def test_a_deferred_component_runs_when_its_optional_input_never_comes() -> None:
    greeter = Greeter()
    pipeline = Pipeline()
    pipeline.add_component("greeter", greeter)
    pipeline.add_component("gate", Gate())
    pipeline.connect("gate.passed", "greeter.title")
    assert await pipeline.run_async({"name": "Ada", "text": "dr", "open": False}) == {"greeter": {"text": "Hello Ada"}}
    assert greeter.calls == [("Ada", None)]


async def test_include_outputs_from_gives_the_last_run_s_outputs() -> None:
    result = await loop_pipeline(limit=3).run_async({"start": {"value": 0}}, include_outputs_from=["threshold"])
    assert result == {"threshold": {"above": 3}}


async def test_a_component_left_waiting_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="handrail.core"):
        assert await router_into_pair().run_async({"value": 3}) == {}
    (record,) = [r for r in caplog.records if r.name == "handrail.core"]
    assert record.levelno == logging.WARNING
    assert re.search(r"'pair' \(Pair\) never ran: it received 'a', but .*'pair\.b'", record.getMessage())


class Pause(Exception):
    handrail_signal = True


@component
class Pauser:
    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be preferred over run")

    async def run_async(self, text: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        raise Pause("approval needed")


async def test_a_control_flow_signal_passes_through_unwrapped_and_cancels_the_others() -> None:
    hanging = Hanging()
    with pytest.raises(Pause, match="approval needed"):
        await branches(Pauser(), hanging).run_async({"text": "x"})
    assert hanging.started and hanging.cancelled


async def test_cancelling_the_run_cancels_the_running_components() -> None:
    hanging = Hanging()
    run = asyncio.ensure_future(branches(Upper(), hanging).run_async({"text": "x"}))
    for _ in range(100):  # the run starts both branches within a few loop iterations
        if hanging.started:
            break
        await asyncio.sleep(0)
    assert hanging.started
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert hanging.cancelled
