"""FunctionChatGenerator: replies computed from the messages, sync and async, streaming, records, serialization."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.core.serialization import restricted_imports
from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk
from handrail.errors import ConfigurationTypeError, GenerationError, RunError, SerializationError
from handrail.testing import FunctionChatGenerator, call, reply, user
from handrail.tools import create_tool_from_function

from ..common_tools import add


def adding_model(messages: list[ChatMessage], tools: list[Any] | None) -> ChatMessage:
    """A module-level reply function: call ``add`` on the user's two numbers, then answer with the result."""
    last = messages[-1]
    if last.role is ChatRole.TOOL:
        return reply(f"The sum is {last.tool_call_result.result}.")  # type: ignore[union-attr]
    a, b = (int(word) for word in (last.text or "").split() if word.isdigit())
    return reply(call("add", id=f"c{len(messages)}", a=a, b=b))


async def adding_model_async(messages: list[ChatMessage], tools: list[Any] | None) -> ChatMessage:
    await asyncio.sleep(0)
    return adding_model(messages, tools)


ADD = create_tool_from_function(add)


class TestInAnAgent:
    def test_a_run_is_computed_from_the_tool_results(self) -> None:
        generator = FunctionChatGenerator(adding_model)
        result = Agent(chat_generator=generator, tools=[ADD]).run([user("add 2 and 40")])
        assert result["last_message"].text == "The sum is 42."
        assert len(generator.calls) == 2
        assert [t.name for t in generator.calls[0]["tools"]] == ["add"]

    def test_an_async_function_serves_run_async(self) -> None:
        generator = FunctionChatGenerator(adding_model_async)
        result = asyncio.run(Agent(chat_generator=generator, tools=[ADD]).run_async([user("add 1 and 2")]))
        assert result["last_message"].text == "The sum is 3."

    def test_a_sync_function_serves_run_async(self) -> None:
        generator = FunctionChatGenerator(adding_model)
        result = asyncio.run(Agent(chat_generator=generator, tools=[ADD]).run_async([user("add 1 and 2")]))
        assert result["last_message"].text == "The sum is 3."


class TestReplies:
    def test_a_str_is_an_assistant_reply(self) -> None:
        generator = FunctionChatGenerator(lambda messages, tools: f"echo: {messages[-1].text}")
        [message] = generator.run([user("hi")])["replies"]
        assert message.role is ChatRole.ASSISTANT
        assert message.text == "echo: hi"

    def test_the_function_gets_the_messages_and_the_default_tools(self) -> None:
        seen: list[tuple[list[ChatMessage], Any]] = []

        def record(messages: list[ChatMessage], tools: Any) -> str:
            seen.append((messages, tools))
            return "ok"

        generator = FunctionChatGenerator(record, tools=[ADD])
        messages = [user("a"), reply("b"), user("c")]
        generator.run(messages, generation_kwargs={"temperature": 0})
        assert seen == [(messages, [ADD])]
        assert generator.calls == [{"messages": messages, "tools": [ADD], "generation_kwargs": {"temperature": 0}}]
        generator.run(messages, tools=[])
        assert seen[-1][1] == []

    def test_chunks_are_streamed_then_assembled(self) -> None:
        chunks = [StreamingChunk(content="Hel"), StreamingChunk(content="lo"), StreamingChunk(finish_reason="stop")]
        generator = FunctionChatGenerator(lambda messages, tools: list(chunks))
        got: list[StreamingChunk] = []
        [message] = generator.run([user("x")], streaming_callback=got.append)["replies"]
        assert got == chunks
        assert message.text == "Hello"

    def test_chunks_reach_an_async_callback_under_run_async(self) -> None:
        generator = FunctionChatGenerator(lambda messages, tools: [StreamingChunk(content="a")])
        got: list[StreamingChunk] = []

        async def callback(chunk: StreamingChunk) -> None:
            got.append(chunk)

        [message] = asyncio.run(generator.run_async([user("x")], streaming_callback=callback))["replies"]
        assert [c.content for c in got] == ["a"]
        assert message.text == "a"

    def test_what_the_function_raises_is_the_model_s_failure(self) -> None:
        def failing(messages: list[ChatMessage], tools: Any) -> str:
            raise TimeoutError("the model timed out")

        with pytest.raises(TimeoutError, match="timed out"):
            FunctionChatGenerator(failing).run([user("x")])

    @pytest.mark.parametrize("value", [None, {"replies": []}, [user("x")]], ids=["None", "dict", "messages"])
    def test_a_reply_of_another_kind_is_a_run_error_naming_it(self, value: Any) -> None:
        generator = FunctionChatGenerator(lambda messages, tools: value)
        with pytest.raises(GenerationError, match=f"returned {type(value).__name__} .*must return a ChatMessage"):
            generator.run([user("x")])
        with pytest.raises(RunError):
            asyncio.run(generator.run_async([user("x")]))


class TestRefusals:
    def test_a_function_is_needed(self) -> None:
        with pytest.raises(ConfigurationTypeError, match="needs a function"):
            FunctionChatGenerator("not a function")  # type: ignore[arg-type]

    def test_sync_run_refuses_an_async_function_before_recording(self) -> None:
        generator = FunctionChatGenerator(adding_model_async)
        with pytest.raises(ConfigurationTypeError, match="run_async"):
            generator.run([user("add 1 and 2")])
        assert generator.calls == []

    def test_sync_run_refuses_a_function_that_returns_an_awaitable(self) -> None:
        generator = FunctionChatGenerator(lambda messages, tools: adding_model_async(messages, tools))
        with pytest.raises(ConfigurationTypeError, match="returned an awaitable"):
            generator.run([user("add 1 and 2")])

    def test_sync_run_refuses_an_async_callback(self) -> None:
        async def callback(chunk: StreamingChunk) -> None:
            """Never called."""

        with pytest.raises(ConfigurationTypeError, match="sync streaming callback"):
            FunctionChatGenerator(adding_model).run([user("x")], streaming_callback=callback)


class TestSerialization:
    def test_round_trip_of_a_module_level_function(self) -> None:
        generator = FunctionChatGenerator(adding_model, tools=[ADD])
        data = generator.to_dict()
        assert data["init_parameters"]["function"] == f"{__name__}.adding_model"
        rebuilt = FunctionChatGenerator.from_dict(data)
        assert rebuilt.function is adding_model
        assert rebuilt.to_dict() == data

    def test_a_lambda_cannot_be_written(self) -> None:
        with pytest.raises(SerializationError, match="lambda"):
            FunctionChatGenerator(lambda messages, tools: "x").to_dict()

    def test_under_an_allowlist_a_handrail_function_is_refused(self) -> None:
        data = {"type": "x", "init_parameters": {"function": "handrail.core.serialization.import_object"}}
        with restricted_imports(()), pytest.raises(SerializationError, match="handrail's own functions"):
            FunctionChatGenerator.from_dict(data)

    def test_a_function_that_is_not_a_path_is_refused(self) -> None:
        with pytest.raises(SerializationError, match="must be a dotted path"):
            FunctionChatGenerator.from_dict({"type": "x", "init_parameters": {"function": 3}})
