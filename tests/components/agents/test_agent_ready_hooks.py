"""The ready-made hooks, function hooks and hook serialization inside real Agent runs; the hooks pages of docs/.

Loop-level rules (order of points, stop/continue, rewrites) are in test_agent_hooks.py; the hooks'
own behaviour on a bare State is in tests/hooks/.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent, _machine
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationTypeError
from handrail.hooks import (
    FunctionHook,
    MaxToolCallsHook,
    RedactionHook,
    TokenBudgetHook,
    ToolResultTruncationHook,
    hook,
)
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.components.agents.hitl_helpers import ScriptedStrategy
from tests.docs_examples import code_blocks

SECRET = "sk-test0123456789abcdefghijkl"
LIMIT_TEXT = "Tool 'search' reached its limit of {n} in this run; the call was not run."
effects: list[str] = []
"""What the tools and function hooks did, in order (cleared before each test)."""


# ----------------------------------------------------------------------------- module-level tools and hooks


def search(query: str) -> str:
    """Search."""
    effects.append(f"search:{query}")
    return f"results for {query}"


def finish(answer: str) -> str:
    """Give the final answer."""
    effects.append("finish")
    if answer == "fail":
        raise ValueError("cannot finish: " + "e" * 500)
    return answer


def dump(size: int) -> str:
    """Return a long text."""
    effects.append("dump")
    return "H" * (size // 2) + "T" * (size - size // 2)


def read_env(name: str) -> str:
    """Read a configuration value."""
    effects.append(f"read_env:{name}")
    return f"{name}={SECRET}"


SEARCH = create_tool_from_function(search)
FINISH = create_tool_from_function(finish)
DUMP = create_tool_from_function(dump)
READ_ENV = create_tool_from_function(read_env)


@hook
def record_exit(state: State) -> None:
    effects.append(f"after_run:{state.data['exit_reason']}")


@hook
async def record_exit_async(state: State) -> None:
    await asyncio.sleep(0)
    effects.append(f"after_run_async:{state.data['exit_reason']}")


@hook
def note_step(state: State) -> None:
    effects.append(f"before_llm:{state.data['step_count']}")


def sync_side(state: State) -> None:
    effects.append("sync")


async def async_side(state: State) -> None:
    effects.append("async")


class PointRecorder:
    """A class hook (no to_dict) that records where it ran."""

    def __init__(self, label: str) -> None:
        self.label = label

    def run(self, state: State) -> None:
        effects.append(self.label)


@pytest.fixture(autouse=True)
def _clear() -> None:
    effects.clear()


# ----------------------------------------------------------------------------- helpers


def calls(*queries: str, tool: str = "search", usage: int | None = None) -> ChatMessage:
    meta = {"usage": {"prompt_tokens": usage - 10, "completion_tokens": 10, "total_tokens": usage}} if usage else None
    args = [{"query": q} if tool == "search" else {"answer": q} for q in queries]
    return ChatMessage.from_assistant(
        tool_calls=[ToolCall(tool, a, f"{tool}_{q}") for a, q in zip(args, queries, strict=True)], meta=meta
    )


def call(tool: str, args: dict[str, Any], cid: str, usage: int | None = None) -> ChatMessage:
    meta = {"usage": {"total_tokens": usage}} if usage else None
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool, args, cid)], meta=meta)


def text(t: str, usage: int | None = None) -> ChatMessage:
    return ChatMessage.from_assistant(t, meta={"usage": {"total_tokens": usage}} if usage else None)


def run(agent: Agent, mode: str, messages: list[ChatMessage] | None = None, **kwargs: Any) -> dict[str, Any]:
    messages = messages if messages is not None else [ChatMessage.from_user("go")]
    if mode == "sync":
        return agent.run(messages, **kwargs)
    return asyncio.run(agent.run_async(messages, **kwargs))


def results(messages: list[ChatMessage]) -> list[Any]:
    return [m.tool_call_result for m in messages if m.tool_call_result is not None]


def all_texts(messages: list[ChatMessage]) -> str:
    parts = [t for m in messages for t in m.texts]
    parts += [r.result for r in results(messages)]
    return "\n".join(parts)


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "messages": [m.to_dict() for m in result["messages"]],
            "last_message": result["last_message"].to_dict()}  # fmt: skip


MODES = pytest.mark.parametrize("mode", ["sync", "async"])


# ----------------------------------------------------------------------------- TokenBudgetHook


@MODES
def test_token_budget_stops_before_the_next_model_call_and_after_run_still_runs(mode: str) -> None:
    gen = ScriptedChatGenerator([calls("a", usage=60), calls("b", usage=50), text("never", usage=1)])
    agent = Agent(chat_generator=gen, tools=[SEARCH], hooks={
        "before_llm": [TokenBudgetHook(max_total_tokens=100)], "on_exit": [PointRecorder("on_exit")],
        "after_run": [record_exit]})  # fmt: skip
    result = run(agent, mode)
    assert len(gen.calls) == 2
    assert result["exit_reason"] == "token_budget_exceeded"
    assert result["step_count"] == 2
    assert result["token_usage"]["total_tokens"] == 110
    assert effects == ["search:a", "search:b", "after_run:token_budget_exceeded"]  # on_exit is skipped
    assert result["last_message"].tool_call_result.result == "results for b"


@MODES
def test_token_budget_add_final_message_becomes_the_last_message(mode: str) -> None:
    gen = ScriptedChatGenerator([calls("a", usage=150), text("never")])
    budget = TokenBudgetHook(max_total_tokens=100, add_final_message=True)
    result = run(Agent(chat_generator=gen, tools=[SEARCH], hooks={"before_llm": [budget]}), mode)
    assert len(gen.calls) == 1
    assert result["exit_reason"] == "token_budget_exceeded"
    assert result["last_message"].text == "Stopped: this run used 150 tokens, more than its budget of 100 tokens."


@pytest.mark.parametrize(
    ("usage", "stops"),
    [
        ({"total_tokens": 100}, False),  # equal to the budget is within it
        ({"total_tokens": 101}, True),
        ({"prompt_tokens": 70, "completion_tokens": 31}, True),  # no total_tokens: prompt + completion
        ({}, False),
    ],
)
def test_token_budget_reads_the_summed_usage_of_the_replies(usage: dict[str, int], stops: bool) -> None:
    first = ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "a"}, "c1")], meta={"usage": usage})
    gen = ScriptedChatGenerator([first, text("done")])
    result = Agent(chat_generator=gen, tools=[SEARCH], hooks={"before_llm": [TokenBudgetHook(100)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert result["exit_reason"] == ("token_budget_exceeded" if stops else "text")
    assert len(gen.calls) == (1 if stops else 2)


def test_token_budget_yields_to_max_steps_and_to_an_exit_tool() -> None:
    gen = ScriptedChatGenerator([calls("a", usage=500)])
    result = Agent(chat_generator=gen, tools=[SEARCH], max_agent_steps=1,
                   hooks={"before_llm": [TokenBudgetHook(100)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert result["exit_reason"] == "max_agent_steps"  # no model call is left to refuse
    gen2 = ScriptedChatGenerator([calls("x", tool="finish", usage=500)])
    result2 = Agent(chat_generator=gen2, tools=[FINISH], exit_conditions=["finish"],
                    hooks={"before_llm": [TokenBudgetHook(100)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert result2["exit_reason"] == "finish"


def test_token_budget_keeps_an_earlier_hooks_stop_reason() -> None:
    @hook
    def stop_first(state: State) -> None:
        state.data["stop_run"] = "mine"

    gen = ScriptedChatGenerator([calls("a", usage=500), text("never")])
    result = Agent(chat_generator=gen, tools=[SEARCH], hooks={"before_llm": [stop_first, TokenBudgetHook(100)]}).run(
        [ChatMessage.from_user("go")]
    )
    assert result["exit_reason"] == "mine" and gen.calls == []


# ----------------------------------------------------------------------------- ToolResultTruncationHook


@MODES
def test_truncation_the_next_model_input_holds_the_shortened_result(mode: str) -> None:
    gen = ScriptedChatGenerator([call("dump", {"size": 1000}, "c1"), call("search", {"query": "q"}, "c2"), text("ok")])
    agent = Agent(chat_generator=gen, tools=[DUMP, SEARCH], hooks={"after_tool": [ToolResultTruncationHook(100)]})
    result = run(agent, mode)
    seen = gen.calls[1]["messages"][-1].tool_call_result
    assert len(seen.result) == 100
    assert seen.result.startswith("H") and seen.result.endswith("T")
    assert re.search(r"\n\[\.\.\. \d+ characters cut \.\.\.\]\n", seen.result)
    assert seen.origin.id == "c1" and not seen.error
    assert result["messages"][2].tool_call_result.result == seen.result  # the run's history holds it too
    assert gen.calls[2]["messages"][-1].tool_call_result.result == "results for q"  # short results untouched


@MODES
def test_truncation_of_an_exit_tools_result_keeps_the_exit(mode: str) -> None:
    long_answer = "A" * 300
    gen = ScriptedChatGenerator([call("finish", {"answer": long_answer}, "c1")])
    agent = Agent(chat_generator=gen, tools=[FINISH], exit_conditions=["finish"],
                  hooks={"after_tool": [ToolResultTruncationHook(60)]})  # fmt: skip
    result = run(agent, mode)
    assert result["exit_reason"] == "finish"
    assert len(gen.calls) == 1
    assert len(result["last_message"].tool_call_result.result) == 60


def test_truncation_of_a_failed_exit_tools_error_still_cancels_the_exit() -> None:
    gen = ScriptedChatGenerator([call("finish", {"answer": "fail"}, "c1"), text("giving up")])
    result = Agent(chat_generator=gen, tools=[FINISH], exit_conditions=["finish", "text"],
                   hooks={"after_tool": [ToolResultTruncationHook(60)]}).run([ChatMessage.from_user("go")])  # fmt: skip
    error = gen.calls[1]["messages"][-1].tool_call_result
    assert error.error and len(error.result) == 60
    assert result["exit_reason"] == "text" and len(gen.calls) == 2


# ----------------------------------------------------------------------------- RedactionHook


@MODES
def test_redaction_secrets_in_user_input_and_tool_results_never_reach_the_model(mode: str) -> None:
    redact = RedactionHook()
    gen = ScriptedChatGenerator([call("read_env", {"name": "KEY"}, "c1"), text("configured")])
    agent = Agent(chat_generator=gen, tools=[READ_ENV], system_prompt=f"Never print {SECRET}.",
                  hooks={"before_llm": [redact], "after_tool": [redact]})  # fmt: skip
    user = ChatMessage.from_user(f"My key is {SECRET}; is KEY configured?")
    result = run(agent, mode, [user])
    assert effects == ["read_env:KEY"]  # the tool ran and returned the secret
    for sent in gen.calls:
        assert SECRET not in all_texts(sent["messages"])
    assert gen.calls[0]["messages"][1].text == "My key is [REDACTED]; is KEY configured?"
    assert gen.calls[1]["messages"][-1].tool_call_result.result == "KEY=[REDACTED]"
    assert SECRET not in all_texts(result["messages"])
    assert SECRET in user.text  # the caller's message is not changed in place


@MODES
def test_redaction_at_before_llm_alone_masks_tool_results_before_the_next_call(mode: str) -> None:
    gen = ScriptedChatGenerator([call("read_env", {"name": "KEY"}, "c1"), text("configured")])
    agent = Agent(chat_generator=gen, tools=[READ_ENV], hooks={"before_llm": [RedactionHook()]})
    run(agent, mode)
    assert gen.calls[1]["messages"][-1].tool_call_result.result == "KEY=[REDACTED]"


def test_redaction_covers_the_rendered_user_prompt_and_custom_patterns() -> None:
    gen = ScriptedChatGenerator([text("ok")])
    redact = RedactionHook([*RedactionHook.DEFAULT_PATTERNS, r"\b\d{4}-\d{4}-\d{4}-\d{4}\b"])
    agent = Agent(chat_generator=gen, user_prompt="Card {{ card }}, key {{ key }}.", hooks={"before_llm": [redact]})
    agent.run([], card="4111-1111-1111-1111", key=SECRET)
    assert gen.calls[0]["messages"][-1].text == "Card [REDACTED], key [REDACTED]."


# ----------------------------------------------------------------------------- MaxToolCallsHook


@MODES
def test_max_tool_calls_refuses_calls_beyond_the_limit(mode: str) -> None:
    gen = ScriptedChatGenerator([calls("a", "b", "c"), calls("d"), text("done")])
    agent = Agent(chat_generator=gen, tools=[SEARCH], hooks={"before_tool": [MaxToolCallsHook({"search": 2})]})
    result = run(agent, mode)
    assert effects == ["search:a", "search:b"]
    assert result["tool_call_counts"] == {"search": 2}
    assert result["exit_reason"] == "text"
    second_input = gen.calls[1]["messages"]
    refused = [r for r in results(second_input) if r.error]
    assert [r.origin.id for r in refused] == ["search_c"]
    assert refused[0].result == LIMIT_TEXT.format(n="2 calls")
    third = results(gen.calls[2]["messages"])[-1]
    assert third.origin.id == "search_d" and third.error and third.result == LIMIT_TEXT.format(n="2 calls")
    # every call the model made is answered exactly once, after the message that holds it
    history = result["messages"]
    for i, message in enumerate(history):
        for c in message.tool_calls:
            answers = [j for j, m in enumerate(history) if m.tool_call_result and m.tool_call_result.origin.id == c.id]
            assert len(answers) == 1 and answers[0] > i


@MODES
def test_max_tool_calls_a_refused_call_is_never_asked_about(mode: str) -> None:
    strategy = ScriptedStrategy({"search": ("confirm", None)})
    gen = ScriptedChatGenerator([calls("a", "b"), calls("c"), text("done")])
    agent = Agent(chat_generator=gen, tools=[SEARCH], confirmation_strategies={"search": strategy},
                  hooks={"before_tool": [MaxToolCallsHook({"search": 1})]})  # fmt: skip
    result = run(agent, mode)
    assert [a["tool_call_id"] for a in strategy.asked] == ["search_a"]
    assert effects == ["search:a"]
    assert result["tool_call_counts"] == {"search": 1}


class RejectFirst:
    """Rejects the first call it is asked about, confirms the rest."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def run(self, *, tool_name: str, tool_call_id: str | None = None, **_: Any) -> ToolExecutionDecision:
        self.asked.append(tool_call_id)
        first = len(self.asked) == 1
        return ToolExecutionDecision(tool_name, not first, tool_call_id, "no" if first else None)


def test_max_tool_calls_a_rejected_call_does_not_use_up_the_limit() -> None:
    strategy = RejectFirst()
    gen = ScriptedChatGenerator([calls("a"), calls("b"), calls("c"), text("done")])
    agent = Agent(chat_generator=gen, tools=[SEARCH], confirmation_strategies={"search": strategy},
                  hooks={"before_tool": [MaxToolCallsHook({"search": 1})]})  # fmt: skip
    result = agent.run([ChatMessage.from_user("go")])
    assert strategy.asked == ["search_a", "search_b"]  # c is refused by the limit, so never asked about
    assert effects == ["search:b"]
    assert result["tool_call_counts"] == {"search": 1}
    assert results(result["messages"])[-1].result == LIMIT_TEXT.format(n="1 call")


@MODES
def test_max_tool_calls_with_max_agent_steps(mode: str) -> None:
    gen = ScriptedChatGenerator([calls(q) for q in "abcd"])
    agent = Agent(chat_generator=gen, tools=[SEARCH], max_agent_steps=4,
                  hooks={"before_tool": [MaxToolCallsHook({"search": 2})]})  # fmt: skip
    result = run(agent, mode)
    assert len(gen.calls) == 4 and result["step_count"] == 4
    assert result["exit_reason"] == "max_agent_steps"
    assert effects == ["search:a", "search:b"]
    assert result["tool_call_counts"] == {"search": 2}


def test_max_tool_calls_a_refused_exit_tool_does_not_end_the_run_and_after_tool_still_runs() -> None:
    gen = ScriptedChatGenerator([calls("x", tool="finish"), text("fine, no finish")])
    result = Agent(chat_generator=gen, tools=[FINISH, SEARCH], exit_conditions=["finish", "text"],
                   hooks={"before_tool": [MaxToolCallsHook({"search": 5, "*": 0})],
                          "after_tool": [PointRecorder("after_tool")]}).run([ChatMessage.from_user("go")])  # fmt: skip
    assert effects == ["after_tool"]  # finish never ran; after_tool ran although nothing did
    assert result["exit_reason"] == "text"
    assert result["tool_call_counts"] == {"finish": 0, "search": 0}
    assert results(gen.calls[1]["messages"])[-1].result == (
        "Tool 'finish' reached its limit of 0 calls in this run; the call was not run."
    )


# ----------------------------------------------------------------------------- function hooks


@MODES
def test_a_sync_function_hook_runs_in_sync_and_async_runs(mode: str) -> None:
    gen = ScriptedChatGenerator([calls("a"), text("done")])
    agent = Agent(chat_generator=gen, tools=[SEARCH], hooks={"before_llm": [note_step], "after_run": [record_exit]})
    run(agent, mode)
    assert effects == ["before_llm:0", "search:a", "before_llm:1", "after_run:text"]


def test_an_async_function_hook_is_awaited_in_async_runs() -> None:
    agent = Agent(chat_generator=ScriptedChatGenerator([text("done")]), hooks={"after_run": [record_exit_async]})
    asyncio.run(agent.run_async([ChatMessage.from_user("go")]))
    assert effects == ["after_run_async:text"]


@MODES
def test_a_function_hook_with_both_forms_uses_the_one_matching_the_run(mode: str) -> None:
    both = FunctionHook(function=sync_side, async_function=async_side)
    run(Agent(chat_generator=ScriptedChatGenerator([text("done")]), hooks={"before_run": [both]}), mode)
    assert effects == [mode]


def test_an_async_only_hook_in_a_sync_run_is_refused_before_any_model_call() -> None:
    gen = ScriptedChatGenerator([text("done")])
    agent = Agent(chat_generator=gen, hooks={"after_run": [record_exit_async]})
    with pytest.raises(ConfigurationTypeError, match="async"):
        agent.run([ChatMessage.from_user("go")])
    assert gen.calls == []


def test_stop_run_set_at_before_run_ends_the_run_before_any_model_call() -> None:
    @hook
    def refuse(state: State) -> None:
        state.data["stop_run"] = "refused"

    gen = ScriptedChatGenerator([text("never")])
    result = Agent(chat_generator=gen, hooks={"before_run": [refuse]}).run([ChatMessage.from_user("go")])
    assert result["exit_reason"] == "refused"
    assert gen.calls == []


# ----------------------------------------------------------------------------- serialization


def _serializable_agent(mode: str) -> Agent:
    redact = RedactionHook()  # one object at two points
    script = [
        calls("a", "b", "c", usage=40),
        call("dump", {"size": 500}, "d1", usage=40),
        call("read_env", {"name": "KEY"}, "e1", usage=40),
        text("never", usage=1),
    ]
    return Agent(
        chat_generator=ScriptedChatGenerator(script),
        tools=[SEARCH, DUMP, READ_ENV],
        confirmation_strategies={"read_env": ScriptedStrategy()},
        hooks={
            "before_run": [FunctionHook(function=sync_side, async_function=async_side)],
            "before_llm": [note_step, TokenBudgetHook(max_total_tokens=100, add_final_message=True), redact],
            "before_tool": [MaxToolCallsHook({"search": 2, "*": 5})],
            "after_tool": [redact, ToolResultTruncationHook(max_chars=80)],
            "after_run": [record_exit, record_exit_async] if mode == "async" else [record_exit],
        },
    )


@MODES
def test_agent_with_hooks_round_trips_through_json_and_behaves_the_same(mode: str) -> None:
    agent = _serializable_agent(mode)
    data = agent.to_dict()
    hooks = data["init_parameters"]["hooks"]
    assert list(hooks) == ["before_run", "before_llm", "before_tool", "after_tool", "after_run"]
    assert hooks["after_run"][0] == {
        "type": "handrail.hooks.function_hook.FunctionHook",
        "init_parameters": {"function": f"{__name__}.record_exit", "async_function": None},
    }
    assert hooks["before_run"][0]["init_parameters"] == {
        "function": f"{__name__}.sync_side", "async_function": f"{__name__}.async_side"}  # fmt: skip
    if mode == "async":
        assert hooks["after_run"][1]["init_parameters"] == {
            "function": None, "async_function": f"{__name__}.record_exit_async"}  # fmt: skip
    rebuilt = Agent.from_dict(json.loads(json.dumps(data)))
    assert rebuilt.to_dict() == data
    assert rebuilt.hooks["before_llm"][2] is not rebuilt.hooks["after_tool"][0]  # one object per point

    original_result = run(agent, mode)
    original_side = list(effects)
    effects.clear()
    rebuilt_result = run(rebuilt, mode)
    assert effects == original_side
    assert comparable(rebuilt_result) == comparable(original_result)
    assert rebuilt.chat_generator.calls == agent.chat_generator.calls
    # the run exercised every hook
    assert original_result["exit_reason"] == "token_budget_exceeded"
    assert original_result["tool_call_counts"] == {"search": 2, "dump": 1, "read_env": 1}
    assert SECRET not in all_texts(original_result["messages"])
    assert len(results(original_result["messages"])[3].result) == 80
    assert original_side[0] == mode
    last = "after_run_async" if mode == "async" else "after_run"
    assert original_side[-1] == f"{last}:token_budget_exceeded"


def test_hooks_that_cannot_be_serialized_are_reported() -> None:
    from handrail.errors import SerializationError

    agent = Agent(chat_generator=ScriptedChatGenerator([]), hooks={"after_run": [PointRecorder("x")]})
    with pytest.raises(SerializationError):
        agent.to_dict()

    def local(state: State) -> None:
        pass

    with pytest.raises(SerializationError, match="module level"):
        Agent(chat_generator=ScriptedChatGenerator([]), hooks={"after_run": [hook(local)]}).to_dict()


# ----------------------------------------------------------------------------- no hooks: nothing observable


class _NoRunHooks:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("a RunHooks effect was built although no hook is configured")


def _plain_script() -> list[ChatMessage]:
    return [calls("a", "b", usage=10), call("finish", {"answer": "42"}, "f1", usage=5)]


@MODES
@pytest.mark.parametrize("empty", [{}, {"before_llm": [], "after_run": []}], ids=["empty-dict", "empty-lists"])
def test_hooks_configured_as_empty_cost_nothing_observable(
    mode: str, empty: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_machine, "RunHooks", _NoRunHooks)
    plain = Agent(chat_generator=ScriptedChatGenerator(_plain_script()), tools=[SEARCH, FINISH],
                  exit_conditions=["finish"])  # fmt: skip
    hooked = Agent(chat_generator=ScriptedChatGenerator(_plain_script()), tools=[SEARCH, FINISH],
                   exit_conditions=["finish"], hooks=empty)  # fmt: skip
    expected = comparable(run(plain, mode))
    assert comparable(run(hooked, mode)) == expected
    assert expected["exit_reason"] == "finish"
    assert hooked.chat_generator.calls == plain.chat_generator.calls
    assert hooked._hook_table == _machine.HookTable()
    assert hooked.to_dict() == plain.to_dict()
    assert hooked.to_dict()["init_parameters"]["hooks"] is None


# ----------------------------------------------------------------------------- the hooks pages of docs/

# The guide, the ready-made hooks and the reference; their examples run in tests/test_docs_pages.py.
_DOCS_DIR = Path(__file__).resolve().parents[3] / "docs"
HOOK_PAGES = [_DOCS_DIR / name for name in ("hooks.md", "ready-made-hooks.md", "hooks-reference.md")]


def _blocks(language: str) -> list[tuple[int, str]]:
    return [block for page in HOOK_PAGES for block in code_blocks(page, language)]


def test_docs_cover_every_hook_point_and_ready_made_hook() -> None:
    sources = [page.read_text(encoding="utf-8") for page in HOOK_PAGES]
    for point in ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"):
        assert any(f"### `{point}`:" in source for source in sources), point
    for name in ("TokenBudgetHook", "ToolResultTruncationHook", "RedactionHook", "MaxToolCallsHook"):
        assert any(f"### `{name}`:" in source for source in sources), name
    assert len(_blocks("python")) >= 12
    for _, block in _blocks("json"):
        json.loads(block)


def test_docs_rule_stop_run_set_at_on_exit_or_after_run_is_ignored() -> None:
    @hook
    def stop(state: State) -> None:
        state.data["stop_run"] = "ignored"

    gen = ScriptedChatGenerator([calls("a"), text("done")])
    result = Agent(chat_generator=gen, tools=[SEARCH], hooks={"on_exit": [stop], "after_run": [stop]}).run(
        [ChatMessage.from_user("go")]
    )
    assert result["exit_reason"] == "text" and len(gen.calls) == 2
