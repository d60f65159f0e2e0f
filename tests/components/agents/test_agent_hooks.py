from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function

EVENTS: list[str] = []


def echo(text: str) -> str:
    EVENTS.append(f"tool:{text}")
    return text


def finish(answer: str) -> str:
    EVENTS.append("tool:finish")
    return answer


ECHO = create_tool_from_function(echo)
FINISH = create_tool_from_function(finish)


class Recorder:
    """A hook that records each call and optionally acts on State."""

    def __init__(self, name: str, action: Any = None) -> None:
        self.name = name
        self.action = action
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    def run(self, state: State) -> None:
        EVENTS.append(self.name)
        if self.action is not None:
            self.action(state)


class AsyncRecorder(Recorder):
    async def run_async(self, state: State) -> None:
        EVENTS.append(f"{self.name}:async")
        if self.action is not None:
            self.action(state)


def call(name: str, args: dict[str, Any], cid: str) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(name, args, cid)])


def text(t: str) -> ChatMessage:
    return ChatMessage.from_assistant(t)


@pytest.fixture(autouse=True)
def _clear() -> None:
    EVENTS.clear()


def run(agent: Agent, mode: str = "sync", **kwargs: Any) -> dict[str, Any]:
    messages = [ChatMessage.from_user("go")]
    if mode == "sync":
        return agent.run(messages, **kwargs)
    return asyncio.run(agent.run_async(messages, **kwargs))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_points_run_in_order_around_a_tool_step(mode: str) -> None:
    hooks = {
        p: [Recorder(p)] for p in ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")
    }
    agent = Agent(chat_generator=ScriptedChatGenerator([call("echo", {"text": "a"}, "c1"), text("done")]),
                  tools=[ECHO], hooks=hooks)  # fmt: skip
    run(agent, mode)
    assert EVENTS == ["before_run", "before_llm", "before_tool", "tool:a", "after_tool", "before_llm", "on_exit",
                      "after_run"]  # fmt: skip


def test_before_llm_rewrites_the_model_input() -> None:
    def add_note(state: State) -> None:
        state.data["messages"] = [*state.data["messages"], ChatMessage.from_user("note")]

    gen = ScriptedChatGenerator([text("ok")])
    Agent(chat_generator=gen, hooks={"before_llm": [Recorder("n", add_note)]}).run([ChatMessage.from_user("hi")])
    assert [m.text for m in gen.calls[0]["messages"]] == ["hi", "note"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_stop_run_before_llm_ends_the_run_without_a_model_call(mode: str) -> None:
    def stop(state: State) -> None:
        state.data["stop_run"] = "budget"

    gen = ScriptedChatGenerator([text("never")])
    agent = Agent(chat_generator=gen, hooks={"before_llm": [Recorder("stop", stop)], "on_exit": [Recorder("exit")],
                                             "after_run": [Recorder("after")]})  # fmt: skip
    result = run(agent, mode)
    assert result["exit_reason"] == "budget"
    assert gen.calls == []
    assert "exit" not in EVENTS and "after" in EVENTS
    assert result["step_count"] == 0


def test_before_tool_rewrites_the_pending_call() -> None:
    def rewrite(state: State) -> None:
        last = state.data["messages"][-1]
        edited = ToolCall("echo", {"text": "rewritten"}, last.tool_calls[0].id)
        state.data["messages"][-1] = ChatMessage.from_assistant(tool_calls=[edited])

    gen = ScriptedChatGenerator([call("echo", {"text": "a"}, "c1"), text("done")])
    result = Agent(chat_generator=gen, tools=[ECHO], hooks={"before_tool": [Recorder("rw", rewrite)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert "tool:rewritten" in EVENTS and "tool:a" not in EVENTS
    assert result["messages"][2].tool_call_result.origin.arguments == {"text": "rewritten"}
    assert result["tool_call_counts"]["echo"] == 1


def test_before_tool_may_remove_every_call() -> None:
    def drop(state: State) -> None:
        state.data["messages"][-1] = ChatMessage.from_assistant("I will not call tools.")

    gen = ScriptedChatGenerator([call("echo", {"text": "a"}, "c1"), text("done")])
    result = Agent(chat_generator=gen, tools=[ECHO], hooks={"before_tool": [Recorder("d", drop)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert EVENTS == ["d"]
    assert result["tool_call_counts"]["echo"] == 0
    assert result["last_message"].text == "done"


def test_approval_sees_the_arguments_after_before_tool_hooks() -> None:
    seen: list[dict[str, Any]] = []

    class Strategy:
        def run(self, **kw: Any) -> ToolExecutionDecision:
            EVENTS.append("approve")
            seen.append(kw["tool_params"])
            return ToolExecutionDecision(kw["tool_name"], True, kw["tool_call_id"])

    def rewrite(state: State) -> None:
        cid = state.data["messages"][-1].tool_calls[0].id
        state.data["messages"][-1] = ChatMessage.from_assistant(tool_calls=[ToolCall("echo", {"text": "b"}, cid)])

    hooks = {"before_tool": [Recorder("before_tool", rewrite)], "after_tool": [Recorder("after_tool")]}
    gen = ScriptedChatGenerator([call("echo", {"text": "a"}, "c1"), text("done")])
    Agent(chat_generator=gen, tools=[ECHO], hooks=hooks, confirmation_strategies={"echo": Strategy()}).run(
        [ChatMessage.from_user("go")]
    )
    assert EVENTS == ["before_tool", "approve", "tool:b", "after_tool"]
    assert seen == [{"text": "b"}]


def test_after_tool_rewrites_results_but_exit_is_judged_on_name_and_error() -> None:
    def redact(state: State) -> None:
        msgs = state.data["messages"]
        last = msgs[-1].tool_call_result
        msgs[-1] = ChatMessage.from_tool("[hidden]", last.origin, last.error)

    gen = ScriptedChatGenerator([call("finish", {"answer": "secret"}, "c1")])
    result = Agent(chat_generator=gen, tools=[FINISH], exit_conditions=["finish"],
                   hooks={"after_tool": [Recorder("r", redact)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert result["exit_reason"] == "finish"
    assert result["last_message"].tool_call_result.result == "[hidden]"


def test_on_exit_continue_run_keeps_going_bounded_by_max_steps() -> None:
    def again(state: State) -> None:
        state.data["continue_run"] = True

    gen = ScriptedChatGenerator([text("one"), text("two"), text("three")])
    result = Agent(chat_generator=gen, max_agent_steps=2, hooks={"on_exit": [Recorder("again", again)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert len(gen.calls) == 2
    assert result["exit_reason"] == "max_agent_steps"
    assert EVENTS == ["again", "again"]  # both replies were exits; the second continuation hits the step limit


def test_continue_run_outside_on_exit_is_ignored() -> None:
    def again(state: State) -> None:
        state.data["continue_run"] = True

    gen = ScriptedChatGenerator([text("one"), text("two")])
    hooks = {p: [Recorder(p, again)] for p in ("before_llm", "after_run")}
    result = Agent(chat_generator=gen, hooks=hooks).run([ChatMessage.from_user("go")])
    assert len(gen.calls) == 1 and result["exit_reason"] == "text"


def test_mid_step_stop_lets_the_step_finish_and_an_exit_tool_wins() -> None:
    def stop(state: State) -> None:
        state.data["stop_run"] = "halt"

    gen = ScriptedChatGenerator([call("echo", {"text": "a"}, "c1"), text("never")])
    result = Agent(chat_generator=gen, tools=[ECHO], hooks={"before_tool": [Recorder("s", stop)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert result["exit_reason"] == "halt"
    assert "tool:a" in EVENTS and len(gen.calls) == 1
    gen2 = ScriptedChatGenerator([call("finish", {"answer": "x"}, "c1")])
    result2 = Agent(chat_generator=gen2, tools=[FINISH], exit_conditions=["finish"],
                    hooks={"after_tool": [Recorder("s", stop)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert result2["exit_reason"] == "finish"


def test_after_run_changes_appear_in_the_result_even_at_max_steps() -> None:
    def note(state: State) -> None:
        state.set("summary", "written by after_run")

    gen = ScriptedChatGenerator([call("echo", {"text": "a"}, "c1")])
    result = Agent(chat_generator=gen, tools=[ECHO], max_agent_steps=1, state_schema={"summary": {"type": str}},
                   hooks={"after_run": [Recorder("n", note)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert result["exit_reason"] == "max_agent_steps"
    assert result["summary"] == "written by after_run"


def test_one_object_at_several_points_is_warmed_once_and_async_prefers_run_async() -> None:
    shared = AsyncRecorder("shared")
    agent = Agent(chat_generator=ScriptedChatGenerator([text("a"), text("b")]),
                  hooks={"before_llm": [shared], "after_run": [shared]})  # fmt: skip
    agent.run([ChatMessage.from_user("x")])
    asyncio.run(agent.run_async([ChatMessage.from_user("y")]))
    assert shared.warm_ups == 1
    assert EVENTS == ["shared", "shared", "shared:async", "shared:async"]


@pytest.mark.parametrize(
    ("hooks", "fragment"),
    [
        ({"sometime": [Recorder("x")]}, "sometime"),
        ({"before_llm": [lambda state: None]}, "@hook"),
        ({"before_llm": [object()]}, "run"),
    ],
)
def test_bad_hooks_are_refused_at_construction(hooks: dict[str, Any], fragment: str) -> None:
    with pytest.raises((ConfigurationError, TypeError), match=fragment):
        Agent(chat_generator=ScriptedChatGenerator([]), hooks=hooks)


def test_a_hook_at_a_point_it_does_not_allow_is_refused() -> None:
    class OnlyBeforeTool(Recorder):
        allowed_hook_points = ("before_tool",)

    with pytest.raises(ConfigurationError, match="before_tool"):
        Agent(chat_generator=ScriptedChatGenerator([]), hooks={"after_run": [OnlyBeforeTool("x")]})


# ------------------------------------------------------------------ user prompts


def test_user_prompt_is_rendered_into_one_user_message() -> None:
    gen = ScriptedChatGenerator([text("ok")])
    agent = Agent(chat_generator=gen, user_prompt="Translate {{ word }} into {{ language }}.",
                  required_variables=["word"], state_schema={"lang_used": {"type": str}})  # fmt: skip
    result = agent.run([ChatMessage.from_system("sys")], word="Haus", language="English", lang_used="en")
    assert [m.text for m in gen.calls[0]["messages"]] == ["sys", "Translate Haus into English."]
    assert result["lang_used"] == "en"


def test_missing_required_variable_is_refused_before_any_model_call() -> None:
    gen = ScriptedChatGenerator([text("ok")])
    agent = Agent(chat_generator=gen, user_prompt="Hi {{ name }} {{ other }}", required_variables="*")
    with pytest.raises(ConfigurationError, match="other"):
        agent.run([], name="Ana")
    assert gen.calls == []


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"user_prompt": "{{ notes }}", "state_schema": {"notes": {"type": str}}}, "state schema"),
        ({"user_prompt": "{{ tools }}"}, "Agent.run"),
        ({"user_prompt": "{{ a }}", "required_variables": ["b"]}, "not used"),
        ({"required_variables": ["a"]}, "no user_prompt"),
        ({"user_prompt": "{% if %}"}, "Jinja2"),
    ],
)
def test_user_prompt_misuse_is_refused_at_construction(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Agent(chat_generator=ScriptedChatGenerator([]), **kwargs)


def test_unknown_run_keyword_names_the_state_keys_and_variables() -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([]), user_prompt="{{ a }}")
    with pytest.raises(ConfigurationError, match=r"\['zzz'\].*variables of user_prompt \(\['a'\]\)"):
        agent.run([], zzz=1)


def test_user_prompt_is_sandboxed() -> None:
    gen = ScriptedChatGenerator([text("ok")])
    agent = Agent(chat_generator=gen, user_prompt="{{ obj.__class__.__mro__ }}")
    with pytest.raises(ConfigurationError, match="rendered"):
        agent.run([], obj=object())
