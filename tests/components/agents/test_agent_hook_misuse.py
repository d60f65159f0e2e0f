"""Misused hooks and prompt settings are refused with errors that name what was wrong."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError, RunError
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.common_tools import echo

ECHO = create_tool_from_function(echo)


def run(agent: Agent, mode: str) -> dict[str, Any]:
    messages = [ChatMessage.from_user("go")]
    if mode == "sync":
        return agent.run(messages)
    return asyncio.run(agent.run_async(messages))


class Setter:
    """A hook that writes one State key."""

    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self.value = value

    def run(self, state: State) -> None:
        state.data[self.key] = self.value


# ------------------------------------------------------------------ hooks whose run cannot work


class AsyncRun:
    async def run(self, state: State) -> None:
        state.data["stop_run"] = "nope"


class SyncRunAsync:
    def run(self, state: State) -> None:
        pass

    def run_async(self, state: State) -> int:
        return 5


class NotCallableRunAsync:
    run_async = 5

    def run(self, state: State) -> None:
        pass


@pytest.mark.parametrize(
    ("hook", "fragment"),
    [
        (AsyncRun(), r"AsyncRun\.run is a coroutine function.*run_async.*@hook"),
        (SyncRunAsync(), r"SyncRunAsync\.run_async is not a coroutine function.*async def run_async"),
        (NotCallableRunAsync(), r"NotCallableRunAsync\.run_async is not a coroutine function"),
    ],
)
def test_a_hook_whose_run_or_run_async_would_never_run_is_refused_at_construction(hook: Any, fragment: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=r"hooks\['before_llm'\]\[0\]: " + fragment):
        Agent(chat_generator=ScriptedChatGenerator([]), hooks={"before_llm": [hook]})


# ------------------------------------------------------------------ hooks that break reserved State keys


class Plain(ChatMessage):
    """A ChatMessage subclass: allowed in ``messages``."""


def _steps() -> ScriptedChatGenerator:
    return ScriptedChatGenerator(
        [
            ChatMessage.from_assistant(tool_calls=[ToolCall("echo", {"text": "a"}, "c1")]),
            ChatMessage.from_assistant("done"),
        ]
    )


BAD_VALUES = [
    ("before_llm", "messages", None, r"'messages'\] holds None \(NoneType\); it must be a list of ChatMessage"),
    ("before_llm", "messages", (), r"'messages'\] holds \(\) \(tuple\); it must be a list of ChatMessage"),
    ("before_llm", "messages", ["hello"], r"'messages'\]\[0\] holds 'hello' \(str\); it must be a ChatMessage"),
    ("before_tool", "messages", ["hello"], r"'messages'\]\[0\] holds 'hello' \(str\)"),
    ("after_run", "messages", None, r"'messages'\] holds None"),
    ("before_run", "messages", [ChatMessage.from_user("a"), 7], r"'messages'\]\[1\] holds 7 \(int\)"),
    ("after_tool", "tool_call_counts", None, r"'tool_call_counts'\] holds None.*dict of tool name to int"),
    ("after_tool", "tool_call_counts", {"echo": "1"}, r"'tool_call_counts'\] holds \{'echo': '1'\}"),
    ("before_llm", "step_count", "many", r"'step_count'\] holds 'many' \(str\); it must be an int"),
    ("before_llm", "step_count", True, r"'step_count'\] holds True \(bool\)"),
    ("before_llm", "stop_run", True, r"'stop_run'\] holds True \(bool\); it must be None or a str that is not blank"),
    ("before_tool", "stop_run", 5, r"'stop_run'\] holds 5 \(int\)"),
    ("after_tool", "stop_run", "", r"'stop_run'\] holds '' \(str\)"),
    ("before_llm", "stop_run", "   ", r"'stop_run'\] holds '   ' \(str\)"),
    ("after_tool", "tool_call_counts", {"echo": -1}, r"'tool_call_counts'\] holds \{'echo': -1\}.*int ≥ 0"),
    ("on_exit", "continue_run", "no", r"'continue_run'\] holds 'no' \(str\); it must be a bool"),
    ("before_run", "token_usage", None, r"'token_usage'\] holds None \(NoneType\); it must be a dict"),
    ("on_exit", "exit_reason", 3, r"'exit_reason'\] holds 3 \(int\); it must be None or a str"),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("point", "key", "value", "fragment"), BAD_VALUES)
def test_a_hook_that_puts_a_bad_value_into_a_reserved_key_is_named(
    mode: str, point: str, key: str, value: Any, fragment: str
) -> None:
    agent = Agent(chat_generator=_steps(), tools=[ECHO], hooks={point: [Setter(key, value)]})
    with pytest.raises(RunError, match=rf"After the {point} hook Setter ran, state\.data\[" + fragment):
        run(agent, mode)


def test_a_bad_value_set_before_the_model_call_stops_the_run_before_the_model_is_called() -> None:
    gen = _steps()
    agent = Agent(chat_generator=gen, tools=[ECHO], hooks={"before_llm": [Setter("messages", ["hello"])]})
    with pytest.raises(RunError, match="before_llm"):
        agent.run([ChatMessage.from_user("go")])
    assert gen.calls == []


def test_the_error_names_the_hook_that_broke_the_key_not_the_ones_before_it() -> None:
    first = Setter("step_count", 0)  # a valid value
    agent = Agent(chat_generator=_steps(), hooks={"before_llm": [first, Setter("continue_run", None)]})
    with pytest.raises(RunError, match=r"before_llm hook Setter ran, state\.data\['continue_run'\] holds None"):
        agent.run([ChatMessage.from_user("go")])


def test_a_hook_that_removes_a_reserved_key_is_named() -> None:
    class Remover:
        def run(self, state: State) -> None:
            del state.data["tool_call_counts"]

    agent = Agent(chat_generator=_steps(), tools=[ECHO], hooks={"after_tool": [Remover()]})
    with pytest.raises(
        RunError, match=r"After the after_tool hook Remover ran, state\.data\['tool_call_counts'\] is missing"
    ):
        agent.run([ChatMessage.from_user("go")])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_valid_values_in_reserved_keys_pass(mode: str) -> None:
    def good(state: State) -> None:
        state.data["messages"] = [*state.data["messages"], Plain.from_user("note")]
        state.data["tool_call_counts"] = dict(state.data["tool_call_counts"])

    class Good:
        def run(self, state: State) -> None:
            good(state)

        async def run_async(self, state: State) -> None:
            good(state)

    hooks = {p: [Good()] for p in ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")}
    result = run(Agent(chat_generator=_steps(), tools=[ECHO], hooks=hooks), mode)
    assert result["exit_reason"] == "text"
    assert result["last_message"].text == "note"


# ------------------------------------------------------------------ confirmation strategies


def test_a_strategy_class_instead_of_an_instance_is_refused_at_construction() -> None:
    gen = ScriptedChatGenerator([])
    with pytest.raises(
        ConfigurationTypeError,
        match=r"confirmation_strategies\['echo'\] is the class 'BlockingConfirmationStrategy', not a strategy "
        r"object; pass an instance \(BlockingConfirmationStrategy\(\.\.\.\)\)",
    ):
        Agent(chat_generator=gen, tools=[ECHO], confirmation_strategies={"echo": BlockingConfirmationStrategy})
    assert gen.calls == []


def test_a_strategy_without_run_is_named_in_a_grammatical_message() -> None:
    class AsyncOnlyStrategy:
        async def run_async(self, **kwargs: Any) -> None:
            pass

    with pytest.raises(ConfigurationTypeError) as caught:
        Agent(chat_generator=ScriptedChatGenerator([]), tools=[ECHO],
              confirmation_strategies={"echo": AsyncOnlyStrategy()})  # fmt: skip
    assert "a AsyncOnlyStrategy" not in str(caught.value)
    assert "confirmation_strategies['echo']: AsyncOnlyStrategy has no callable run() method" in str(caught.value)


def test_a_confirmation_strategy_context_that_is_not_a_dict_is_refused_before_the_model_is_called() -> None:
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("hi")])

    class UI:
        def get_user_confirmation(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("never asked")

    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=UI())
    agent = Agent(chat_generator=gen, tools=[ECHO], confirmation_strategies={"echo": strategy})
    with pytest.raises(ConfigurationTypeError, match=r"confirmation_strategy_context must be a dict or None, got list"):
        agent.run([ChatMessage.from_user("go")], confirmation_strategy_context=[1])
    assert gen.calls == []


# ------------------------------------------------------------------ user prompt variables


@pytest.mark.parametrize(
    "name",
    ["step_count", "token_usage", "tool_call_counts", "exit_reason", "stop_run", "continue_run", "last_message"],
)
def test_user_prompt_variables_may_not_reuse_reserved_state_or_result_keys(name: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"user_prompt variables \['{name}'\] are reserved"):
        Agent(chat_generator=ScriptedChatGenerator([]), user_prompt=f"v={{{{ {name} }}}}")


def test_a_required_variable_given_as_none_is_named_as_such() -> None:
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("ok")])
    agent = Agent(chat_generator=gen, user_prompt="{{ a }} {{ b }}", required_variables="*")
    with pytest.raises(ConfigurationError) as caught:
        agent.run([], a=None)
    message = str(caught.value)
    assert "['a'] were given as None" in message
    assert "Missing required user_prompt variables ['b']" in message
    assert gen.calls == []


def test_an_optional_variable_given_as_none_still_renders_as_empty_text() -> None:
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("ok")])
    Agent(chat_generator=gen, user_prompt="[{{ a }}]").run([], a=None)
    assert gen.calls[0]["messages"][-1].text == "[]"


def test_an_async_only_confirmation_ui_is_refused_in_a_sync_run_before_the_model_is_called() -> None:
    from tests.human_in_the_loop._helpers import QueueUI

    generator = ScriptedChatGenerator([ChatMessage.from_assistant("never reached")])
    strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=QueueUI())
    agent = Agent(chat_generator=generator, tools=[ECHO], confirmation_strategies={"echo": strategy})
    with pytest.raises(ConfigurationTypeError, match=r"confirmation_strategies\['echo'\] asks through QueueUI"):
        agent.run([ChatMessage.from_user("hi")])
    assert generator.calls == []
