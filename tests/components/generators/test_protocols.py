"""The ChatGenerator / AsyncChatGenerator protocols, the Agent's typed signature, and docs/chat-generators.md."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import handrail.components.generators as generators
from handrail import Agent, ChatMessage
from handrail.components.generators import AsyncChatGenerator, ChatGenerator
from handrail.components.generators import types as generator_types
from handrail.components.generators.chat.llama_cpp import LlamaCppChatGenerator
from handrail.components.generators.chat.openai import OpenAIChatGenerator
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint
from handrail.errors import ConfigurationTypeError, SerializationError
from handrail.hooks import Hook
from handrail.human_in_the_loop import ConfirmationStrategy
from handrail.stores import ChatMessageStore, MemoryStore
from handrail.testing import FunctionChatGenerator, ScriptedChatGenerator
from tests.docs_examples import code_blocks


class SyncOnly:
    def run(self, messages: list[ChatMessage], **kwargs: Any) -> dict[str, list[ChatMessage]]:
        return {"replies": [ChatMessage.from_assistant("sync")]}


class WithAsync(SyncOnly):
    async def run_async(self, messages: list[ChatMessage], **kwargs: Any) -> dict[str, list[ChatMessage]]:
        return {"replies": [ChatMessage.from_assistant("async")]}


def test_the_package_exports_the_two_protocols() -> None:
    assert sorted(generators.__all__) == ["AsyncChatGenerator", "ChatGenerator", "accepts_tool_result_images"]
    assert generators.ChatGenerator is generator_types.ChatGenerator
    assert generators.AsyncChatGenerator is generator_types.AsyncChatGenerator


def test_accepts_tool_result_images_is_false_unless_a_generator_says_true() -> None:
    class Vision(SyncOnly):
        accepts_tool_result_images = True

    class Truthy(SyncOnly):
        accepts_tool_result_images = 1  # not True: a capability is said with True

    for cls in (OpenAIChatGenerator, LlamaCppChatGenerator, ScriptedChatGenerator, FunctionChatGenerator):
        assert cls.accepts_tool_result_images is False
        assert generators.accepts_tool_result_images(cls) is False
    assert generators.accepts_tool_result_images(Vision()) is True
    assert generators.accepts_tool_result_images(SyncOnly()) is False
    assert generators.accepts_tool_result_images(Truthy()) is False
    fake = ScriptedChatGenerator([])
    fake.accepts_tool_result_images = True  # a test stands it in for a generator whose model takes images
    assert generators.accepts_tool_result_images(fake) is True
    assert ScriptedChatGenerator([]).accepts_tool_result_images is False


@pytest.mark.parametrize("cls", [OpenAIChatGenerator, LlamaCppChatGenerator, ScriptedChatGenerator, WithAsync])
def test_generators_with_run_async_are_async_chat_generators(cls: type) -> None:
    assert issubclass(cls, ChatGenerator)
    assert issubclass(cls, AsyncChatGenerator)


def test_a_generator_with_only_run_is_a_chat_generator_but_not_an_async_one() -> None:
    assert isinstance(SyncOnly(), ChatGenerator)
    assert not isinstance(SyncOnly(), AsyncChatGenerator)


@pytest.mark.parametrize("value", [object(), "gpt-4o", 42])
def test_objects_without_a_run_method_are_not_chat_generators(value: object) -> None:
    assert not isinstance(value, ChatGenerator)


@pytest.mark.parametrize("value", [object(), "gpt-4o", 42])
def test_the_agent_refuses_a_non_generator_with_the_same_message_as_before(value: object) -> None:
    with pytest.raises(ConfigurationTypeError, match=r"chat_generator must have a run\(messages, \.\.\.\) method; got"):
        Agent(chat_generator=value)  # type: ignore[arg-type]


def test_run_async_awaits_run_async_when_the_generator_has_it() -> None:
    import asyncio

    async def both() -> tuple[str | None, str | None]:
        with_async = await Agent(chat_generator=WithAsync()).run_async([ChatMessage.from_user("hi")])
        sync_only = await Agent(chat_generator=SyncOnly()).run_async([ChatMessage.from_user("hi")])
        return with_async["last_message"].text, sync_only["last_message"].text

    assert asyncio.run(both()) == ("async", "sync")


def test_agent_init_and_run_are_typed_with_the_protocols() -> None:
    init = typing.get_type_hints(Agent.__init__)
    assert init["chat_generator"] is ChatGenerator
    assert init["chat_message_store"] == ChatMessageStore | None
    assert init["memory_store"] == MemoryStore | None
    assert init["confirmation_strategies"] == Mapping[Any, ConfirmationStrategy] | None
    assert init["hooks"] == Mapping[str, Sequence[Hook]] | None
    assert init["user_prompt"] == str | None
    for method in (Agent.run, Agent.run_async):
        assert typing.get_type_hints(method)["break_point"] == AgentBreakpoint | Breakpoint | None


def test_a_user_prompt_that_is_not_a_string_is_refused_by_from_dict_naming_the_field() -> None:
    data = Agent(chat_generator=ScriptedChatGenerator([])).to_dict()
    data["init_parameters"]["user_prompt"] = 5
    with pytest.raises(SerializationError, match="'user_prompt': expected a string or null"):
        Agent.from_dict(data)


# ----------------------------------------------------------------------------- docs/chat-generators.md


def test_the_docs_page_has_its_examples() -> None:
    assert len(code_blocks("chat-generators.md")) == 4  # they run in tests/test_docs_pages.py (one: progress chunks)
