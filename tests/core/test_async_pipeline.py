"""AsyncPipeline: Haystack's class, run_async with a concurrency limit, run through asyncio.run."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from handrail import AsyncPipeline, Pipeline
from handrail.core.component import component
from handrail.errors import ConfigurationError, ConfigurationTypeError, PipelineError

GUARD_S = 5.0


@component
class Meter:
    """Counts how many of its kind run at the same time (shared counters), then passes its text on."""

    live = 0
    peak = 0

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise AssertionError("run_async must be awaited")

    @component.output_types(text=str)
    async def run_async(self, text: str) -> dict[str, Any]:
        Meter.live += 1
        Meter.peak = max(Meter.peak, Meter.live)
        await asyncio.sleep(0.01)
        Meter.live -= 1
        return {"text": text + "."}


@component
class SyncOnly:
    def __init__(self) -> None:
        self.threads: list[str] = []

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        self.threads.append(threading.current_thread().name)
        return {"text": text.upper()}


def fan_out(width: int) -> AsyncPipeline:
    pipeline = AsyncPipeline()
    for i in range(width):
        pipeline.add_component(f"m{i}", Meter())
    return pipeline


@pytest.fixture(autouse=True)
def _reset_meter() -> None:
    Meter.live = Meter.peak = 0


def test_is_a_pipeline_and_round_trips() -> None:
    pipeline = fan_out(2)
    assert isinstance(pipeline, Pipeline)
    again = AsyncPipeline.from_dict(pipeline.to_dict())
    assert type(again) is AsyncPipeline
    assert list(dict(again.walk())) == ["m0", "m1"]


def test_independent_components_run_concurrently_up_to_the_limit() -> None:
    pipeline = fan_out(6)
    result = asyncio.run(pipeline.run_async({"text": "a"}, concurrency_limit=2))
    assert result == {f"m{i}": {"text": "a."} for i in range(6)}
    assert Meter.peak == 2


def test_default_limit_is_four() -> None:
    asyncio.run(fan_out(6).run_async({"text": "a"}))
    assert Meter.peak == 4


def test_limit_one_runs_one_at_a_time() -> None:
    asyncio.run(fan_out(3).run_async({"text": "a"}, concurrency_limit=1))
    assert Meter.peak == 1


def test_sync_components_run_in_a_worker_thread() -> None:
    pipeline = AsyncPipeline()
    shout = SyncOnly()
    pipeline.add_component("shout", shout)
    pipeline.add_component("meter", Meter())
    pipeline.connect("shout.text", "meter.text")
    assert asyncio.run(pipeline.run_async({"shout": {"text": "hi"}})) == {"meter": {"text": "HI."}}
    assert shout.threads and shout.threads[0] != threading.main_thread().name


def test_run_drives_run_async() -> None:
    assert fan_out(1).run({"text": "b"}, include_outputs_from={"m0"}) == {"m0": {"text": "b."}}


def test_run_inside_an_event_loop_is_refused() -> None:
    async def inside() -> None:
        fan_out(1).run({"text": "b"})

    with pytest.raises(RuntimeError, match="Cannot call run\\(\\) from within an async context"):
        asyncio.run(inside())


def test_bad_limit_is_named() -> None:
    with pytest.raises(ConfigurationError, match="concurrency_limit must be at least 1"):
        asyncio.run(fan_out(1).run_async({"text": "a"}, concurrency_limit=0))
    with pytest.raises(ConfigurationTypeError, match="concurrency_limit must be an int"):
        fan_out(1).run({"text": "a"}, concurrency_limit="2")  # type: ignore[arg-type]


def test_a_failure_names_the_component() -> None:
    @component
    class Broken:
        @component.output_types(text=str)
        async def run_async(self, text: str) -> dict[str, Any]:
            raise KeyError("boom")

        @component.output_types(text=str)
        def run(self, text: str) -> dict[str, Any]:
            raise KeyError("boom")

    pipeline = AsyncPipeline()
    pipeline.add_component("broken", Broken())
    with pytest.raises(PipelineError, match=r"'broken'.*KeyError"):
        asyncio.run(asyncio.wait_for(pipeline.run_async({"text": "a"}), GUARD_S))


def test_run_async_generator_yields_each_component_then_the_result() -> None:
    pipeline = AsyncPipeline()
    pipeline.add_component("shout", SyncOnly())
    pipeline.add_component("meter", Meter())
    pipeline.connect("shout.text", "meter.text")

    async def collect() -> list[dict[str, Any]]:
        return [item async for item in pipeline.run_async_generator({"shout": {"text": "hi"}})]

    assert asyncio.run(collect()) == [
        {"shout": {"text": "HI"}},
        {"meter": {"text": "HI."}},
        {"meter": {"text": "HI."}},
    ]


def test_stopping_the_generator_early_cancels_what_still_runs() -> None:
    cancelled = asyncio.Event()

    @component
    class Slow:
        @component.output_types(text=str)
        def run(self, text: str) -> dict[str, Any]:
            raise AssertionError("run_async must be awaited")

        @component.output_types(text=str)
        async def run_async(self, text: str) -> dict[str, Any]:
            try:
                await asyncio.sleep(GUARD_S)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return {"text": text}

    pipeline = AsyncPipeline()
    pipeline.add_component("fast", Meter())
    pipeline.add_component("slow", Slow())

    async def first_only() -> dict[str, Any]:
        generator = pipeline.run_async_generator({"text": "a"})
        first = await generator.__anext__()
        await generator.aclose()
        return first

    assert asyncio.run(first_only()) == {"fast": {"text": "a."}}
    assert cancelled.is_set()
