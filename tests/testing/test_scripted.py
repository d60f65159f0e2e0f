"""ScriptedChatGenerator: scripted replies, call records, exhaustion, streaming and serialization."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, ChatRole, StreamingChunk, ToolCall, ToolCallDelta
from handrail.errors import HandrailError, ScriptExhaustedError
from handrail.testing import ScriptedChatGenerator

from ..components._helpers import ECHO_TOOL, WEATHER_TOOL


class ScriptedBoom(Exception):
    """An importable exception class for serialization."""


def chunks_for_text(*parts: str) -> list[StreamingChunk]:
    return [StreamingChunk(content=p) for p in parts] + [
        StreamingChunk(finish_reason="stop", meta={"model": "fake", "usage": {"total_tokens": 3}})
    ]


def chunks_for_call() -> list[StreamingChunk]:
    return [
        StreamingChunk(index=0, start=True, tool_calls=[ToolCallDelta(index=0, tool_name="weather", id="c1")]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='{"city": ')]),
        StreamingChunk(index=0, tool_calls=[ToolCallDelta(index=0, arguments='"Oslo"}')]),
        StreamingChunk(finish_reason="tool_calls"),
    ]


class TestReplies:
    def test_messages_are_returned_in_order(self) -> None:
        first, second = ChatMessage.from_assistant("one"), ChatMessage.from_assistant("two")
        gen = ScriptedChatGenerator([first, second])
        assert gen.run([ChatMessage.from_user("a")]) == {"replies": [first]}
        assert gen.run([ChatMessage.from_user("b")]) == {"replies": [second]}
        gen.assert_complete()

    def test_exceptions_are_raised(self) -> None:
        gen = ScriptedChatGenerator([ValueError("rate limited"), ChatMessage.from_assistant("ok")])
        with pytest.raises(ValueError, match="rate limited"):
            gen.run([ChatMessage.from_user("a")])
        assert gen.run([ChatMessage.from_user("b")])["replies"][0].text == "ok"
        assert len(gen.calls) == 2

    def test_chunks_are_streamed_then_assembled(self) -> None:
        seen: list[StreamingChunk] = []
        script = chunks_for_text("Hel", "lo")
        gen = ScriptedChatGenerator([script])
        [message] = gen.run([ChatMessage.from_user("a")], streaming_callback=seen.append)["replies"]
        assert seen == script
        assert message.role is ChatRole.ASSISTANT
        assert message.text == "Hello"
        assert message.meta["finish_reason"] == "stop"
        assert message.meta["usage"] == {"total_tokens": 3}

    def test_chunks_without_callback_are_still_assembled(self) -> None:
        gen = ScriptedChatGenerator([chunks_for_call()])
        [message] = gen.run([ChatMessage.from_user("a")])["replies"]
        assert message.tool_calls == [ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="c1")]
        assert message.text is None

    def test_bad_item_is_a_type_error(self) -> None:
        for bad in ("text", 5, [ChatMessage.from_assistant("x")], {"replies": []}):
            with pytest.raises(TypeError):
                ScriptedChatGenerator([bad])  # type: ignore[list-item]

    def test_empty_script(self) -> None:
        gen = ScriptedChatGenerator([])
        gen.assert_complete()
        with pytest.raises(ScriptExhaustedError):
            gen.run([ChatMessage.from_user("a")])


class TestCalls:
    def test_calls_record_copies(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("x"), ChatMessage.from_assistant("y")])
        messages = [ChatMessage.from_user("a")]
        tools = [ECHO_TOOL]
        kwargs = {"temperature": 0.5}
        gen.run(messages, tools=tools, generation_kwargs=kwargs)
        messages.append(ChatMessage.from_user("later"))
        tools.append(WEATHER_TOOL)
        kwargs["temperature"] = 9
        [record] = gen.calls
        assert set(record) == {"messages", "tools", "generation_kwargs"}
        assert record["messages"] == [ChatMessage.from_user("a")]
        assert record["tools"] == [ECHO_TOOL]
        assert record["generation_kwargs"] == {"temperature": 0.5}

    def test_calls_record_nested_generation_kwargs_as_they_were(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("x")])
        kwargs: dict[str, Any] = {"stop": ["a"], "extra": {"n": 1}}
        gen.run([ChatMessage.from_user("a")], generation_kwargs=kwargs)
        kwargs["stop"].append("b")
        kwargs["extra"]["n"] = 2
        assert gen.calls[0]["generation_kwargs"] == {"stop": ["a"], "extra": {"n": 1}}

    def test_call_without_tools_or_kwargs(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("x")])
        gen.run([ChatMessage.from_user("a")])
        assert gen.calls[0]["tools"] is None
        assert not gen.calls[0]["generation_kwargs"]

    def test_every_call_is_recorded_even_when_it_raises(self) -> None:
        gen = ScriptedChatGenerator([RuntimeError("x")])
        with pytest.raises(RuntimeError):
            gen.run([ChatMessage.from_user("a")])
        with pytest.raises(ScriptExhaustedError):
            gen.run([ChatMessage.from_user("b")])
        assert [c["messages"][0].text for c in gen.calls] == ["a", "b"]


class TestExhaustion:
    def test_exhausted_raises(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("only")])
        gen.run([ChatMessage.from_user("a")])
        with pytest.raises(ScriptExhaustedError, match="1") as info:
            gen.run([ChatMessage.from_user("b")])
        assert isinstance(info.value, HandrailError)

    async def test_exhausted_raises_async(self) -> None:
        gen = ScriptedChatGenerator([])
        with pytest.raises(ScriptExhaustedError):
            await gen.run_async([ChatMessage.from_user("b")])

    def test_assert_complete_fails_with_unused_replies(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("a"), ChatMessage.from_assistant("b")])
        gen.run([ChatMessage.from_user("x")])
        with pytest.raises(AssertionError, match="1 of 2"):
            gen.assert_complete()
        gen.run([ChatMessage.from_user("y")])
        gen.assert_complete()


class TestAsync:
    async def test_run_async_returns_and_records(self) -> None:
        gen = ScriptedChatGenerator([ChatMessage.from_assistant("x")])
        out = await gen.run_async([ChatMessage.from_user("a")], tools=[ECHO_TOOL], generation_kwargs={"k": 1})
        assert out["replies"][0].text == "x"
        assert gen.calls[0]["tools"] == [ECHO_TOOL]
        assert gen.calls[0]["generation_kwargs"] == {"k": 1}

    async def test_run_async_raises_scripted_exception(self) -> None:
        gen = ScriptedChatGenerator([ScriptedBoom("boom")])
        with pytest.raises(ScriptedBoom):
            await gen.run_async([ChatMessage.from_user("a")])

    async def test_run_async_streams_to_async_callback(self) -> None:
        seen: list[StreamingChunk] = []

        async def cb(chunk: StreamingChunk) -> None:
            seen.append(chunk)

        script = chunks_for_text("a", "b")
        gen = ScriptedChatGenerator([script])
        out = await gen.run_async([ChatMessage.from_user("a")], streaming_callback=cb)
        assert seen == script
        assert out["replies"][0].text == "ab"

    async def test_run_async_streams_to_sync_callback(self) -> None:
        seen: list[StreamingChunk] = []
        gen = ScriptedChatGenerator([chunks_for_text("z")])
        await gen.run_async([ChatMessage.from_user("a")], streaming_callback=seen.append)
        assert [c.content for c in seen] == ["z", ""]

    def test_run_refuses_an_async_callback(self) -> None:
        async def cb(chunk: StreamingChunk) -> None:
            pass

        gen = ScriptedChatGenerator([chunks_for_text("z")])
        with pytest.raises(TypeError):
            gen.run([ChatMessage.from_user("a")], streaming_callback=cb)


class TestSerialization:
    def _script(self) -> list[Any]:
        return [
            ChatMessage.from_assistant("città 🍎", meta={"usage": {"total_tokens": 2}}),
            ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="echo", arguments={"text": "x"}, id="1")]),
            ScriptedBoom("boom"),
            ValueError("bad"),
            chunks_for_call(),
            chunks_for_text("a"),
        ]

    def test_to_dict_includes_replies(self) -> None:
        data = ScriptedChatGenerator(self._script()).to_dict()
        assert data["type"] == "handrail.testing.scripted.ScriptedChatGenerator"
        replies = data["init_parameters"]["replies"]
        assert len(replies) == 6
        assert (
            replies[0]["message"]
            == ChatMessage.from_assistant("città 🍎", meta={"usage": {"total_tokens": 2}}).to_dict()
        )
        assert replies[2]["exception"] == f"{__name__}.ScriptedBoom"
        assert replies[2]["text"] == "boom"
        assert replies[3]["exception"] == "builtins.ValueError"
        json.dumps(data)

    def test_round_trip(self) -> None:
        data = ScriptedChatGenerator(self._script()).to_dict()
        frozen = copy.deepcopy(data)
        back = ScriptedChatGenerator.from_dict(data)
        assert data == frozen
        assert back.to_dict() == data
        assert back.calls == []
        out = back.run([ChatMessage.from_user("a")])
        assert out["replies"][0].text == "città 🍎"
        back.run([ChatMessage.from_user("b")])
        with pytest.raises(ScriptedBoom, match="boom"):
            back.run([ChatMessage.from_user("c")])
        with pytest.raises(ValueError, match="bad"):
            back.run([ChatMessage.from_user("d")])
        seen: list[StreamingChunk] = []
        [message] = back.run([ChatMessage.from_user("e")], streaming_callback=seen.append)["replies"]
        assert message.tool_calls[0].arguments == {"city": "Oslo"}
        assert len(seen) == 4
        assert back.run([ChatMessage.from_user("f")])["replies"][0].text == "a"
        back.assert_complete()


def test_tools_given_at_init_are_offered_by_default() -> None:
    from handrail.tools import create_tool_from_function

    def ping(x: str) -> str:
        """Ping.

        Args:
            x: Anything.
        """
        return x

    tool = create_tool_from_function(ping)
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("a"), ChatMessage.from_assistant("b")], tools=[tool])
    gen.run([ChatMessage.from_user("hi")])
    gen.run([ChatMessage.from_user("hi")], tools=[])
    assert [c["tools"] for c in gen.calls] == [[tool], []]


def test_arguments_nested_past_the_recursion_limit_are_recorded_without_a_crash() -> None:
    deep: Any = 1
    for _ in range(2_000):
        deep = {"a": deep}
    message = ChatMessage.from_assistant(tool_calls=[ToolCall("echo", {"x": deep}, "c1")])
    gen = ScriptedChatGenerator([ChatMessage.from_assistant("ok")])
    assert gen.run([ChatMessage.from_user("hi"), message])["replies"][0].text == "ok"
    assert gen.calls[0]["messages"][1] is message  # kept by reference: a deep copy cannot be made


@pytest.mark.parametrize(
    ("item", "fragment", "path"),
    [
        ({"chunk": []}, r"replies\[0\] must hold 'message', 'exception' or 'chunks'", ()),
        ("plain", r"replies\[0\] must hold 'message', 'exception' or 'chunks'", ()),
        ({"message": {}, "chunks": []}, r"replies\[0\] must hold 'message', 'exception' or 'chunks'", ()),
        ({"chunks": "text"}, r"replies\[0\]\.chunks must be a list, got str", ("chunks",)),
        ({"message": {"role": "user", "content": "hi"}, "bogus": 5}, r"replies\[0\] has unknown keys \['bogus'\]",
         ("bogus",)),
        ({"exception": "handrail.errors.RunError", "text": "t", "note": 1}, r"unknown keys \['note'\]", ("note",)),
        ({"exception": {"type": "x"}, "text": "t"}, r"replies\[0\]\['exception'\]: Cannot import", ("exception",)),
        ({"chunks": [{"content": "x", "bogus": 1}]}, r"chunks\[0\] has unknown keys \['bogus'\]",
         ("chunks", 0, "bogus")),
        ({"message": {"role": "assistant", "content": [{"tool_call": {"tool_name": 5, "arguments": {}}}]}},
         r"replies\[0\]\.message: ChatMessage 'content\[0\]\.tool_call\.tool_name' must be a str, got int",
         ("message", "content", 0, "tool_call", "tool_name")),
    ],
)  # fmt: skip
def test_from_dict_names_a_reply_item_it_does_not_know_by_its_path(
    item: Any, fragment: str, path: tuple[str | int, ...]
) -> None:
    from handrail.errors import SerializationError

    data = {"type": "handrail.testing.ScriptedChatGenerator", "init_parameters": {"replies": [item]}}
    with pytest.raises(SerializationError, match=fragment) as info:
        ScriptedChatGenerator.from_dict(data)
    assert info.value.path == ("init_parameters", "replies", 0, *path)


@pytest.mark.parametrize(
    ("replies", "fragment"),
    [
        ({"a": 1}, r"'replies' must be a list, got dict"),
        ([{"message": 5}], r"replies\[0\]\.message: ChatMessage data must be a mapping"),
        ([{"exception": "handrail.errors.RunError", "text": 5}], r"replies\[0\]\['text'\] must be a str"),
        ([{"exception": "handrail.errors.ToolNotFoundException", "text": "x"}], r"replies\[0\]: ToolNotFound.*alone"),
        ([{"chunks": [{"content": ["x"]}]}], r"replies\[0\]\.chunks\[0\]\.content holds list"),
        ([{"chunks": [{"content": "x", "start": 1}]}], r"replies\[0\]\.chunks\[0\]\.start holds int"),
        ([{"chunks": [{"finish_reason": "done"}]}], r"replies\[0\]\.chunks\[0\]\.finish_reason is 'done'"),
        ([{"chunks": [{"index": 0, "tool_calls": [{"tool_name": "t"}]}]}], r"chunks\[0\]\.tool_calls\[0\] needs"),
        ([{"chunks": [{"colour": "red"}]}], r"replies\[0\]\.chunks\[0\] has unknown keys \['colour'\]"),
    ],
)
def test_from_dict_names_a_reply_of_the_wrong_type(replies: Any, fragment: str) -> None:
    from handrail.errors import SerializationError

    data = {"type": "handrail.testing.ScriptedChatGenerator", "init_parameters": {"replies": replies}}
    with pytest.raises(SerializationError, match=fragment):
        ScriptedChatGenerator.from_dict(data)
