"""Metrics of a run (issue 22, deliverable 3): each instrument's name, unit, attributes and values after scripted runs.

A private MeterProvider with an InMemoryMetricReader per test; no wall-time asserts (durations are > 0, counts exact).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from handrail.components.agents import Agent
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import BlockingConfirmationStrategy
from handrail.human_in_the_loop.policies import AlwaysAskPolicy, NeverAskPolicy
from handrail.testing import ScriptedChatGenerator, call, reply, user
from handrail.tools import create_tool_from_function
from handrail.tracing import MetricsObserver, metrics_observer_for
from handrail.tracing import _conventions as c
from tests.human_in_the_loop._helpers import ScriptedUI
from tests.tracing._metric_points import Reader


def get_weather(city: str) -> str:
    """Weather of a city.

    Args:
        city: The city.
    """
    if city == "Atlantis":
        raise LookupError("no such city")
    return f"sunny in {city}"


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    return f"sent {amount}"


TOOLS = [create_tool_from_function(get_weather), create_tool_from_function(transfer)]
USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}


@pytest.fixture
def reader() -> Iterator[Reader]:
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory])
    yield Reader(memory, provider)
    provider.shutdown()


def _generator(*replies: Any) -> ScriptedChatGenerator:
    gen = ScriptedChatGenerator(list(replies))
    gen.model = "scripted-model"  # type: ignore[attr-defined]  # as a provider's generator names its model
    return gen


def test_a_two_step_run_records_model_calls_tokens_tools_and_the_run(reader: Reader) -> None:
    gen = _generator(reply(call("get_weather", id="c1", city="Oslo"), usage=USAGE),
                     reply("Sunny.", usage={"prompt_tokens": 20, "completion_tokens": 2}))  # fmt: skip
    agent = Agent(chat_generator=gen, tools=TOOLS, observers=[metrics_observer_for(reader.provider)])
    assert agent.run([user("weather?")])["exit_reason"] == "text"

    chat = {c.GEN_AI_OPERATION_NAME: "chat", c.GEN_AI_PROVIDER_NAME: "handrail.testing",
            c.GEN_AI_REQUEST_MODEL: "scripted-model"}  # fmt: skip
    duration = reader.metric(c.METRIC_OPERATION_DURATION)
    assert duration.unit == "s"
    [point] = reader.points(c.METRIC_OPERATION_DURATION)
    assert dict(point.attributes) == chat and point.count == 2 and point.sum > 0
    assert list(point.explicit_bounds) == list(c.DURATION_BUCKETS)

    assert reader.metric(c.METRIC_TOKEN_USAGE).unit == "{token}"
    tokens = {p.attributes[c.GEN_AI_TOKEN_TYPE]: p for p in reader.points(c.METRIC_TOKEN_USAGE)}
    assert {k: (p.count, p.sum) for k, p in tokens.items()} == {"input": (2, 32), "output": (2, 5)}
    assert dict(tokens["input"].attributes) == {**chat, c.GEN_AI_TOKEN_TYPE: "input"}
    assert list(tokens["input"].explicit_bounds) == list(c.TOKEN_BUCKETS)

    assert reader.metric(c.METRIC_EXECUTE_TOOL_DURATION).unit == "s"
    [tool] = reader.points(c.METRIC_EXECUTE_TOOL_DURATION)
    assert dict(tool.attributes) == {c.GEN_AI_OPERATION_NAME: "execute_tool", c.GEN_AI_TOOL_NAME: "get_weather"}
    assert tool.count == 1 and tool.sum > 0
    assert reader.counts(c.METRIC_TOOL_EXECUTIONS) == {(("gen_ai.tool.name", "get_weather"),
                                                        ("handrail.tool.outcome", "ok")): 1}  # fmt: skip

    [run] = reader.points(c.METRIC_INVOKE_AGENT_DURATION)
    assert dict(run.attributes) == {c.GEN_AI_OPERATION_NAME: "invoke_agent", c.HANDRAIL_RUN_STATUS: "done",
                                    c.GEN_AI_PROVIDER_NAME: "handrail.testing",
                                    c.GEN_AI_REQUEST_MODEL: "scripted-model"}  # fmt: skip
    assert run.count == 1 and run.sum > 0
    assert reader.points(c.METRIC_APPROVAL_DECISIONS) == []  # no strategy: nobody was asked


def test_a_failing_tool_counts_an_error_and_the_run_goes_on(reader: Reader) -> None:
    gen = _generator(reply(call("get_weather", id="c1", city="Atlantis")), reply("No such city."))
    agent = Agent(chat_generator=gen, tools=TOOLS, observers=[metrics_observer_for(reader.provider)])
    assert agent.run([user("weather?")])["exit_reason"] == "text"
    [tool] = reader.points(c.METRIC_EXECUTE_TOOL_DURATION)
    assert tool.attributes[c.ERROR_TYPE] == "LookupError" and tool.count == 1
    assert reader.counts(c.METRIC_TOOL_EXECUTIONS) == {(("gen_ai.tool.name", "get_weather"),
                                                        ("handrail.tool.outcome", "error")): 1}  # fmt: skip
    assert reader.points(c.METRIC_TOKEN_USAGE) == []  # the replies had no usage


def test_a_failing_model_call_has_its_error_type_and_fails_the_run(reader: Reader) -> None:
    agent = Agent(chat_generator=_generator(TimeoutError("slow")), observers=[metrics_observer_for(reader.provider)])
    with pytest.raises(TimeoutError):
        agent.run([user("hi")])
    [point] = reader.points(c.METRIC_OPERATION_DURATION)
    assert point.attributes[c.ERROR_TYPE] == "TimeoutError"
    [run] = reader.points(c.METRIC_INVOKE_AGENT_DURATION)
    assert run.attributes[c.HANDRAIL_RUN_STATUS] == "failed" and run.attributes[c.ERROR_TYPE] == "TimeoutError"


class _WatchingUI(ScriptedUI):
    """A scripted UI that reads the pending approvals while it is asked."""

    def __init__(self, answers: list[ConfirmationUIResult], reader: Reader) -> None:
        super().__init__(answers)
        self.reader = reader
        self.pending_seen: list[int] = []

    def get_user_confirmation(self, *args: Any, **kwargs: Any) -> ConfirmationUIResult:
        self.pending_seen.append(self.reader.total(c.METRIC_APPROVALS_PENDING))
        return super().get_user_confirmation(*args, **kwargs)


def test_approve_reject_and_edit_in_process(reader: Reader) -> None:
    ui = _WatchingUI([ConfirmationUIResult("confirm"), ConfirmationUIResult("reject", feedback="no"),
                      ConfirmationUIResult("modify", new_tool_params={"amount": 1})], reader)  # fmt: skip
    step = reply(call("transfer", id="c1", amount=5), call("transfer", id="c2", amount=6),
                 call("transfer", id="c3", amount=7))  # fmt: skip
    agent = Agent(chat_generator=_generator(step, reply("done")), tools=TOOLS,
                  confirmation_strategies={"transfer": BlockingConfirmationStrategy(AlwaysAskPolicy(), ui)},
                  observers=[metrics_observer_for(reader.provider)])  # fmt: skip
    agent.run([user("pay")])

    assert ui.pending_seen == [3, 3, 3]  # the three calls wait while the person is asked
    assert reader.metric(c.METRIC_APPROVALS_PENDING).unit == "{approval}"
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0
    decisions = reader.counts(c.METRIC_APPROVAL_DECISIONS)
    assert decisions == {(("gen_ai.tool.name", "transfer"), ("handrail.approval.decision", kind)): 1
                         for kind in ("approved", "rejected", "edited")}  # fmt: skip
    waits = reader.points(c.METRIC_APPROVAL_WAIT)
    assert reader.metric(c.METRIC_APPROVAL_WAIT).unit == "s"
    assert sorted(p.attributes[c.HANDRAIL_APPROVAL_DECISION] for p in waits) == ["approved", "edited", "rejected"]
    assert all(p.count == 1 and p.sum > 0 for p in waits)
    outcomes = {dict(k)["handrail.tool.outcome"]: n for k, n in reader.counts(c.METRIC_TOOL_EXECUTIONS).items()}
    assert outcomes == {"ok": 2, "refused": 1}


def test_a_policy_that_asks_nobody_is_auto_with_no_wait(reader: Reader) -> None:
    strategy = BlockingConfirmationStrategy(NeverAskPolicy(), ScriptedUI())
    agent = Agent(
        chat_generator=_generator(reply(call("transfer", id="c1", amount=5)), reply("done")),
        tools=TOOLS,
        confirmation_strategies={"transfer": strategy},
        observers=[metrics_observer_for(reader.provider)],
    )
    agent.run([user("pay")])
    assert reader.counts(c.METRIC_APPROVAL_DECISIONS) == {(("gen_ai.tool.name", "transfer"),
                                                           ("handrail.approval.decision", "auto")): 1}  # fmt: skip
    assert reader.points(c.METRIC_APPROVAL_WAIT) == []
    assert reader.total(c.METRIC_APPROVALS_PENDING) == 0


def test_one_observer_serves_runs_of_different_generators(reader: Reader) -> None:
    observer = MetricsObserver(reader.provider)
    first = _generator(reply("a"))
    second = ScriptedChatGenerator([reply("b")])
    second.model = "other-model"  # type: ignore[attr-defined]
    Agent(chat_generator=first, observers=[observer]).run([user("x")])
    Agent(chat_generator=second, observers=[observer]).run([user("y")])
    by_model = {p.attributes[c.GEN_AI_REQUEST_MODEL]: p.count for p in reader.points(c.METRIC_OPERATION_DURATION)}
    assert by_model == {"scripted-model": 1, "other-model": 1}
    assert sum(p.count for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION)) == 2


def test_the_meter_scope_is_handrail_with_its_version(reader: Reader) -> None:
    import handrail

    Agent(chat_generator=_generator(reply("a")), observers=[metrics_observer_for(reader.provider)]).run([user("x")])
    scopes = {(s.scope.name, s.scope.version) for s in reader.scopes()}
    assert scopes == {("handrail", handrail.__version__)}


async def test_concurrent_async_runs_of_one_observer_keep_their_own_model(reader: Reader) -> None:
    import asyncio

    observer = metrics_observer_for(reader.provider)
    assert metrics_observer_for(reader.provider) is observer  # one observer per provider

    async def one(model: str) -> None:
        gen = ScriptedChatGenerator([reply(call("get_weather", id="c1", city="Oslo")), reply("ok")])
        gen.model = model  # type: ignore[attr-defined]
        await Agent(chat_generator=gen, tools=TOOLS, observers=[observer]).run_async([user("x")])

    await asyncio.gather(one("model-a"), one("model-b"), one("model-a"))
    by_model = {p.attributes[c.GEN_AI_REQUEST_MODEL]: p.count for p in reader.points(c.METRIC_OPERATION_DURATION)}
    assert by_model == {"model-a": 4, "model-b": 2}
    runs = {p.attributes[c.GEN_AI_REQUEST_MODEL]: p.count for p in reader.points(c.METRIC_INVOKE_AGENT_DURATION)}
    assert runs == {"model-a": 2, "model-b": 1}
    assert reader.counts(c.METRIC_TOOL_EXECUTIONS) == {(("gen_ai.tool.name", "get_weather"),
                                                        ("handrail.tool.outcome", "ok")): 3}  # fmt: skip


def test_a_streamed_run_records_the_same_model_metrics(reader: Reader) -> None:
    from handrail.dataclasses import StreamingChunk

    chunks = [StreamingChunk(content="Hel", index=0, start=True), StreamingChunk(content="lo", index=0),
              StreamingChunk(finish_reason="stop", meta={"usage": USAGE})]  # fmt: skip
    seen: list[str] = []
    agent = Agent(chat_generator=_generator(chunks), observers=[metrics_observer_for(reader.provider)])
    agent.run([user("hi")], streaming_callback=lambda chunk: seen.append(chunk.content))
    assert "".join(seen) == "Hello"
    [point] = reader.points(c.METRIC_OPERATION_DURATION)
    assert point.count == 1
    tokens = {p.attributes[c.GEN_AI_TOKEN_TYPE]: p.sum for p in reader.points(c.METRIC_TOKEN_USAGE)}
    assert tokens == {"input": 12, "output": 3}


def test_the_global_providers_observer_is_made_once() -> None:
    assert metrics_observer_for() is metrics_observer_for(None)
