"""The span tree of a run (TR-T1 … TR-T5): names, kinds, parents, attributes, usage, errors and approvals."""

from __future__ import annotations

import asyncio
import importlib.metadata
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import handrail.tracing
from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, State, StreamingChunk, ToolCallDelta
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, NeverAskPolicy
from handrail.testing import ScriptedChatGenerator, call, reply, user
from tests.tracing._span_helpers import (
    USAGE_1,
    USAGE_2,
    WEATHER,
    Traced,
    assert_tree,
    shape,
    weather_agent,
    weather_script,
)


@pytest.fixture
def traced() -> Traced:
    return Traced()


def test_importing_handrail_and_running_an_agent_does_not_import_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from handrail import Agent\n"
        "from handrail.testing import ScriptedChatGenerator, reply, user\n"
        "Agent(chat_generator=ScriptedChatGenerator([reply('hi')])).run([user('hello')])\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_a_run_with_tracing_off_makes_no_spans(traced: Traced) -> None:
    from opentelemetry import trace

    tracer = traced.provider.get_tracer("probe")
    with trace.use_span(tracer.start_span("caller"), end_on_exit=True):  # an active span: handrail adds nothing
        Agent(chat_generator=ScriptedChatGenerator(weather_script()), tools=[WEATHER]).run([user("weather?")])
    assert traced.spans() == []
    assert [s.name for s in traced.exporter.get_finished_spans()] == ["caller"]


def test_a_two_step_run_is_one_agent_span_two_chat_spans_and_one_tool_span(traced: Traced) -> None:
    result = weather_agent(traced.provider).run([user("weather in Paris?")])
    assert result["exit_reason"] == "text"
    spans = traced.spans()
    assert [s.name for s in spans] == ["chat scripted-model", "execute_tool get_weather", "chat scripted-model",
                                       "invoke_agent"]  # fmt: skip
    assert_tree(traced)
    chat1, tool, chat2, agent = spans
    assert [s.kind for s in spans] == [SpanKind.CLIENT, SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.INTERNAL]
    assert chat1.start_time < tool.start_time < chat2.start_time  # in call order, siblings under the agent
    a = agent.attributes or {}
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.provider.name"] == "handrail.testing" and a["gen_ai.request.model"] == "scripted-model"
    assert a["gen_ai.conversation.id"] == a["handrail.run.id"]  # no chat store: the run id
    assert (a["handrail.run.status"], a["handrail.run.exit_reason"], a["handrail.run.steps"]) == ("done", "text", 2)
    assert a["handrail.usage.input_tokens"] == USAGE_1["prompt_tokens"] + USAGE_2["prompt_tokens"]
    assert a["handrail.usage.output_tokens"] == USAGE_1["completion_tokens"] + USAGE_2["completion_tokens"]
    assert not any(k.startswith("gen_ai.usage.") for k in a)  # run totals are not counted twice
    c1, c2 = chat1.attributes or {}, chat2.attributes or {}
    assert (c1["gen_ai.operation.name"], c1["gen_ai.request.model"], c1["gen_ai.request.stream"]) == (
        "chat", "scripted-model", False)  # fmt: skip
    assert (c1["gen_ai.usage.input_tokens"], c1["gen_ai.usage.output_tokens"]) == (11, 5)
    assert (c2["gen_ai.usage.input_tokens"], c2["gen_ai.usage.output_tokens"]) == (23, 7)
    assert c1["gen_ai.response.finish_reasons"] == ("tool_calls",) and c2["gen_ai.response.finish_reasons"] == ("stop",)
    assert c1["gen_ai.response.model"] == "m-1" and c2["gen_ai.response.id"] == "resp-2"
    assert "gen_ai.response.id" not in c1
    assert (c1["handrail.step"], c2["handrail.step"]) == (1, 2)
    t = tool.attributes or {}
    assert (t["gen_ai.operation.name"], t["gen_ai.tool.name"], t["gen_ai.tool.call.id"], t["gen_ai.tool.type"]) == (
        "execute_tool", "get_weather", "c1", "function")  # fmt: skip
    assert t["gen_ai.tool.description"].startswith("Get the weather")
    assert (t["handrail.tool.executed"], t["handrail.approval.required"], t["handrail.approval.decision"]) == (
        True, False, "auto")  # fmt: skip
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)
    assert agent.instrumentation_scope.version == importlib.metadata.version("handrail")


def _streamed(text: str, **meta: Any) -> list[StreamingChunk]:
    return [StreamingChunk(content=text[:4], start=True), StreamingChunk(content=text[4:]),
            StreamingChunk(finish_reason="stop", meta=meta)]  # fmt: skip


def test_run_async_makes_the_same_spans_as_run(traced: Traced) -> None:
    weather_agent(traced.provider).run([user("weather?")])
    sync = shape(traced.spans())
    traced.exporter.clear()
    asyncio.run(weather_agent(traced.provider).run_async([user("weather?")]))
    assert shape(traced.spans()) == sync
    assert_tree(traced)


def test_a_streamed_run_makes_the_same_spans_with_stream_true(traced: Traced) -> None:
    def script() -> list[Any]:
        first = [StreamingChunk(index=0, start=True, tool_calls=[ToolCallDelta(0, "get_weather", '{"city": "Paris"}',
                                                                                "c1")]),
                 StreamingChunk(finish_reason="tool_calls")]  # fmt: skip
        return [first, _streamed("It is sunny.")]

    chunks: list[StreamingChunk] = []
    weather_agent(traced.provider, script()).run([user("weather?")], streaming_callback=chunks.append)
    sync = shape(traced.spans())
    assert chunks and [n for n, _, _ in sync] == ["chat scripted-model", "execute_tool get_weather",
                                                 "chat scripted-model", "invoke_agent"]  # fmt: skip
    assert all(a["gen_ai.request.stream"] is True for n, _, a in sync if n.startswith("chat"))
    traced.exporter.clear()

    async def collect(chunk: StreamingChunk) -> None:
        chunks.append(chunk)

    asyncio.run(weather_agent(traced.provider, script()).run_async([user("weather?")], streaming_callback=collect))
    assert shape(traced.spans()) == sync


def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(traced: Traced) -> None:
    replies = [reply(call("explode", id="c9", x=3)), reply("It failed.")]
    result = weather_agent(traced.provider, replies).run([user("go")])
    assert result["exit_reason"] == "text"
    tool = traced.one("execute_tool explode")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "ValueError"
    [event] = [e for e in tool.events if e.name == "exception"]
    assert (event.attributes or {})["exception.type"].endswith("ValueError")
    assert "cannot handle 3" in (event.attributes or {})["exception.message"]
    agent = traced.agent()
    assert agent.status.status_code is StatusCode.UNSET and (agent.attributes or {})["handrail.run.status"] == "done"


def test_a_failing_model_call_fails_the_chat_span_and_the_agent_span(traced: Traced) -> None:
    with pytest.raises(ConnectionError):
        weather_agent(traced.provider, [ConnectionError("model down")]).run([user("go")])
    chat = traced.one("chat scripted-model")
    agent = traced.agent()
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "ConnectionError"
    assert (agent.attributes or {})["handrail.run.status"] == "failed"


class _Answers:
    """A confirmation UI answering each tool call from a table of answers by call id."""

    label = "reviewer-ana"

    def __init__(self, answers: dict[str, ConfirmationUIResult]) -> None:
        self.answers = answers

    def get_user_confirmation(self, tool_name: str, tool_description: str, tool_params: dict[str, Any],
                              **kwargs: Any) -> ConfirmationUIResult:  # fmt: skip
        return self.answers[tool_params["city"]]


def test_approved_rejected_and_edited_calls_carry_their_decisions(traced: Traced) -> None:
    ui = _Answers({"Paris": ConfirmationUIResult("confirm"),
                   "Oslo": ConfirmationUIResult("reject", feedback="not Oslo"),
                   "Rome": ConfirmationUIResult("modify", new_tool_params={"city": "Milan"})})  # fmt: skip
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ui)
    step = reply(call("get_weather", id="a", city="Paris"), call("get_weather", id="b", city="Oslo"),
                 call("get_weather", id="c", city="Rome"))  # fmt: skip
    agent = weather_agent(traced.provider, [step, reply("done")],
                          confirmation_strategies={"get_weather": strategy})  # fmt: skip
    result = agent.run([user("weather?")])
    assert result["exit_reason"] == "text"
    assert_tree(traced)
    tools = {(s.attributes or {})["gen_ai.tool.call.id"]: s.attributes or {} for s in traced.named(
        "execute_tool get_weather")}  # fmt: skip
    assert set(tools) == {"a", "b", "c"}
    decisions = {k: (a["handrail.approval.decision"], a["handrail.tool.executed"]) for k, a in tools.items()}
    assert decisions == {"a": ("approved", True), "b": ("rejected", False), "c": ("edited", True)}
    for attributes in tools.values():
        assert attributes["handrail.approval.required"] is True
        assert attributes["handrail.approval.decided_by"] == "reviewer-ana"
        assert attributes["handrail.approval.wait_ms"] >= 0
        assert attributes["handrail.approval.args_digest"].startswith("sha256:")
    assert tools["a"]["handrail.approval.args_digest"] != tools["b"]["handrail.approval.args_digest"]
    wait = traced.one("handrail.await_approval get_weather")
    assert (wait.attributes or {})["handrail.pending.call_ids"] == ("a", "b", "c")


def test_a_policy_that_does_not_ask_is_auto(traced: Traced) -> None:
    strategy = BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui=_Answers({}))
    agent = weather_agent(traced.provider, confirmation_strategies={"get_weather": strategy})
    agent.run([user("weather?")])
    tool = traced.one("execute_tool get_weather").attributes or {}
    assert (tool["handrail.approval.decision"], tool["handrail.approval.decided_by"]) == ("auto", "policy")
    assert tool["handrail.approval.required"] is True  # a strategy was asked; its policy said: nobody


def _noop(state: State) -> None:
    """A hook that does nothing."""


def test_hooks_make_hook_spans(traced: Traced) -> None:
    from handrail.hooks import FunctionHook

    weather_agent(traced.provider, hooks={"before_llm": [FunctionHook(_noop)]}).run([user("weather?")])
    hooks = traced.named("handrail.hook before_llm")
    assert len(hooks) == 2 and all((h.attributes or {})["handrail.hook.point"] == "before_llm" for h in hooks)
    assert_tree(traced)


def test_enable_traces_every_run_until_disable(traced: Traced) -> None:
    handrail.tracing.enable(traced.provider)
    try:
        assert handrail.tracing.is_enabled()
        Agent(chat_generator=ScriptedChatGenerator([reply("hi")])).run([user("hello")])
        assert [s.name for s in traced.spans()] == ["chat scripted-model", "invoke_agent"]
    finally:
        handrail.tracing.disable()
    assert not handrail.tracing.is_enabled()
    traced.exporter.clear()
    Agent(chat_generator=ScriptedChatGenerator([reply("hi")])).run([user("hello")])
    assert traced.spans() == []


def test_an_agent_with_its_own_provider_is_traced_there_once_with_enables_content_settings(traced: Traced) -> None:
    elsewhere = Traced()
    handrail.tracing.enable(elsewhere.provider, capture_content=True)
    try:
        weather_agent(traced.provider, [reply("hi")]).run([user("hello")])
    finally:
        handrail.tracing.disable()
    assert elsewhere.spans() == []
    assert [s.name for s in traced.spans()] == ["chat scripted-model", "invoke_agent"]
    assert "gen_ai.input.messages" in (traced.one("chat scripted-model").attributes or {})


def test_the_conversation_id_is_the_chat_history_id_with_a_chat_store(traced: Traced) -> None:
    from handrail.stores import InMemoryChatMessageStore

    agent = weather_agent(traced.provider, [reply("hi")], chat_message_store=InMemoryChatMessageStore())
    agent.run([user("hello")], chat_message_store_kwargs={"chat_history_id": "conv-7"})
    run = traced.agent().attributes or {}
    assert run["gen_ai.conversation.id"] == "conv-7" and run["handrail.run.id"] != "conv-7"
    assert [s.name for s in traced.spans()] == ["handrail.load_stores", "chat scripted-model", "handrail.finish",
                                                "invoke_agent"]  # fmt: skip
    assert_tree(traced)


def test_enable_refuses_bad_settings() -> None:
    from handrail.errors import ConfigurationError, ConfigurationTypeError

    with pytest.raises(ConfigurationError):
        handrail.tracing.enable(max_content_chars=0)
    with pytest.raises(ConfigurationTypeError):
        handrail.tracing.enable(redact="no")  # type: ignore[arg-type]
    assert not handrail.tracing.is_enabled()


def test_a_message_with_no_tools_is_one_chat_span(traced: Traced) -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")]),
                  tracer_provider=traced.provider)  # fmt: skip
    agent.run([user("hello")])
    assert [s.name for s in traced.spans()] == ["chat scripted-model", "invoke_agent"]
