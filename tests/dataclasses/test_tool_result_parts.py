"""Tool call results of content parts (Haystack 2.23's ``ToolCallResultContentT``): checks, dicts, text, storage.

Haystack 2.23 (``ecb30a7``, "support passing images in Tool results") widened ``ToolCallResult.result`` to a
``str`` or a list of ``TextContent`` / ``ImageContent`` and writes a list as part dicts (``{"text": ...}``,
``{"image": {...}}``); ``HAYSTACK_2_23_DICT`` is the dict its tests expect from ``to_dict``. Old results (a ``str``)
still load everywhere.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses import AgentSnapshot, ImageContent, StreamingChunk, TextContent
from handrail.dataclasses._message_json import MessageCache, dump_json, message_json
from handrail.dataclasses.chat_message import (
    ChatMessage,
    ToolCall,
    ToolCallResult,
    image_placeholder,
    result_text,
)
from handrail.dataclasses.snapshot import decode_snapshot, encode_snapshot
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError, SnapshotError
from handrail.stores.chat_memory import InMemoryChatMessageStore
from handrail.stores.chat_sqlite import SQLiteChatMessageStore
from tests.dataclasses.test_snapshot import tool_pause

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""A 1x1 PNG of 70 bytes."""
CALL = ToolCall(tool_name="chart", arguments={"month": "May"}, id="c1")

HAYSTACK_2_23_DICT: dict[str, Any] = {
    "result": [
        {"text": "Here is an image:"},
        {"image": {"base64_image": PNG, "mime_type": "image/png", "detail": None, "meta": {}, "validation": True}},
    ],
    "origin": {"tool_name": "chart", "arguments": {"month": "May"}, "id": "c1", "extra": None},
    "error": False,
}


def parts() -> list[TextContent | ImageContent]:
    return [TextContent("Here is an image:"), ImageContent(PNG, "image/png")]


def tool_message() -> ChatMessage:
    return ChatMessage.from_tool(parts(), CALL)


# -- the dataclass --------------------------------------------------------------------------------------


def test_a_result_holds_text_or_text_and_image_parts() -> None:
    assert ToolCallResult("ok", CALL, False).result == "ok"
    result = ToolCallResult(parts(), CALL, False)
    assert result.result == parts()
    assert ToolCallResult(tuple(parts()), CALL, False).result == parts()  # a tuple is kept as a list
    assert ToolCallResult([], CALL, False).result == []
    assert tool_message().tool_call_result == result


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (5, "got int 5"),
        (None, "got NoneType"),
        ({"text": "a"}, "got dict"),
        ([TextContent("a"), "b"], r"result\[1\] is a str 'b'"),
        ([{"text": "a"}], r"result\[0\] is a dict"),
        ([CALL], r"result\[0\] is a ToolCall"),
    ],
)
def test_a_result_of_another_kind_is_refused_naming_it(value: Any, fragment: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=r"must be a str or a list of TextContent / ImageContent.*"):
        ToolCallResult(value, CALL, False)
    with pytest.raises(ConfigurationTypeError, match=fragment):
        ChatMessage.from_tool(value, CALL)
    with pytest.raises(ValueError):  # Haystack raises ValueError (in to_dict); a ConfigurationTypeError is one
        ChatMessage.from_tool(value, CALL)


def test_result_text_joins_the_text_parts_and_can_stand_placeholders_for_images() -> None:
    many = [TextContent("a"), ImageContent(PNG, "image/png"), TextContent("b"), ImageContent(PNG, validation=False)]
    assert result_text("plain") == "plain" == ToolCallResult("plain", CALL, False).text
    assert result_text(many) == "a\nb" == ToolCallResult(many, CALL, False).text
    assert result_text(ToolCallResult(many, CALL, False), image_placeholders=True) == (
        "a\n[image: image/png, 70 bytes, not shown to this model]\nb\n"
        "[image: unknown type, 70 bytes, not shown to this model]"
    )
    assert result_text([]) == "" and result_text([ImageContent(PNG)]) == ""


def test_the_placeholder_gives_the_decoded_size_with_thousands_separators() -> None:
    big = ImageContent("A" * 16_460, "image/jpeg", validation=False)
    assert image_placeholder(big) == "[image: image/jpeg, 12,345 bytes, not shown to this model]"
    assert image_placeholder(ImageContent("AAA=", "image/gif", validation=False)).startswith("[image: image/gif, 2 ")


# -- dicts ------------------------------------------------------------------------------------------------


def test_to_dict_writes_haystack_2_23s_layout() -> None:
    assert ToolCallResult(parts(), CALL, False).to_dict() == HAYSTACK_2_23_DICT
    assert tool_message().to_dict()["content"] == [{"tool_call_result": HAYSTACK_2_23_DICT}]


def test_from_dict_reads_haystack_2_23s_layout_and_round_trips() -> None:
    assert ToolCallResult.from_dict(HAYSTACK_2_23_DICT) == ToolCallResult(parts(), CALL, False)
    message = tool_message()
    assert ChatMessage.from_dict(message.to_dict()) == message
    assert ChatMessage.from_dict(json.loads(message.to_json())) == message
    without_extra = {**HAYSTACK_2_23_DICT, "origin": {"tool_name": "chart", "arguments": {"month": "May"}, "id": "c1"}}
    assert ToolCallResult.from_dict(without_extra).result == parts()


def test_a_str_result_loads_and_is_written_as_before() -> None:
    old = {"result": "14 °C", "origin": {"tool_name": "weather", "arguments": {}, "id": "c1"}, "error": False}
    result = ToolCallResult.from_dict(old)
    assert result.result == "14 °C" and result.text == "14 °C"
    assert result.to_dict()["result"] == "14 °C"


@pytest.mark.parametrize(
    ("result", "path"),
    [
        ([{"tool_call": {"tool_name": "t", "arguments": {}}}], r"result\[0\]' is an unknown content part"),
        ([{"text": 5}], r"result\[0\]\.text' must be a str, got int"),
        ([{"text": "a", "image": {"base64_image": PNG}}], r"result\[0\]"),
        (["a"], r"result\[0\]' must be a mapping, got str"),
        ([{"image": {"base64_image": 5}}], r"result\[0\]\.image\.base64_image' must be a str"),
        ({"text": "a"}, r"result' must be a str or a list of text and image parts, got dict"),
    ],
)
def test_bad_result_parts_are_refused_by_path(result: Any, path: str) -> None:
    data = {**HAYSTACK_2_23_DICT, "result": result}
    with pytest.raises(SerializationError, match=path):
        ToolCallResult.from_dict(data)
    with pytest.raises(SerializationError, match=r"content\[0\]\.tool_call_result\." + path):
        ChatMessage.from_dict({"role": "tool", "content": [{"tool_call_result": data}]})


def test_an_image_part_that_is_not_an_image_is_refused_naming_the_part() -> None:
    data = {**HAYSTACK_2_23_DICT, "result": [{"image": {"base64_image": "not base64!"}}]}
    with pytest.raises(SerializationError, match=r"content\[0\].*base64"):
        ChatMessage.from_dict({"role": "tool", "content": [{"tool_call_result": data}]})
    with pytest.raises(ConfigurationError, match="base64"):
        ToolCallResult.from_dict(data)


def test_the_fast_json_writer_gives_the_plain_text_for_a_result_of_parts() -> None:
    message = tool_message()
    assert message_json(message) == dump_json(message.to_dict())
    plain = ChatMessage.from_tool("ok", CALL)
    assert MessageCache().encode_all([message, plain]) == [dump_json(m.to_dict()).encode() for m in (message, plain)]


def test_a_streaming_chunk_carries_a_result_of_parts() -> None:
    chunk = StreamingChunk(index=0, tool_call_result=ToolCallResult(parts(), CALL, False), start=True)
    again = StreamingChunk.from_dict(json.loads(json.dumps(chunk.to_dict())))
    assert again.tool_call_result == chunk.tool_call_result


# -- OpenAI dicts -----------------------------------------------------------------------------------------


def test_to_openai_dict_format_sends_text_parts_and_a_placeholder_for_each_image() -> None:
    texts = ChatMessage.from_tool([TextContent("first"), TextContent("second")], CALL)
    assert texts.to_openai_dict_format() == {  # Haystack 2.23's dict for a result of text parts
        "role": "tool",
        "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        "tool_call_id": "c1",
    }
    # Haystack 2.23 raises a ValueError here ("use OpenAI Responses API"); handrail sends a placeholder.
    assert tool_message().to_openai_dict_format()["content"] == [
        {"type": "text", "text": "Here is an image:"},
        {"type": "text", "text": "[image: image/png, 70 bytes, not shown to this model]"},
    ]
    assert ChatMessage.from_tool([], CALL).to_openai_dict_format()["content"] == ""


def test_from_openai_dict_format_reads_a_list_of_text_parts_as_haystack_2_23_does() -> None:
    message = ChatMessage.from_openai_dict_format(
        {
            "role": "tool",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "tool_call_id": "c1",
        }
    )
    result = message.tool_call_result
    assert result is not None and result.result == [TextContent("a"), TextContent("b")] and result.origin.id == "c1"
    image = {"image": {"base64_image": PNG, "mime_type": "image/png"}}
    with pytest.raises(ConfigurationError, match=r"must be a string or a list of TextContent: content\[1\]"):
        ChatMessage.from_openai_dict_format({"role": "tool", "content": [{"text": "a"}, image], "tool_call_id": "c1"})


# -- snapshots and stores ---------------------------------------------------------------------------------


def test_a_snapshot_keeps_a_result_of_parts() -> None:
    snap: AgentSnapshot = tool_pause()
    snap = dataclasses.replace(snap, messages=[*snap.messages, tool_message()])
    again = decode_snapshot(encode_snapshot(snap), source="test")
    assert again.messages == snap.messages
    assert again.messages[-1].tool_call_result == ToolCallResult(parts(), CALL, False)


def test_a_snapshot_with_a_bad_result_part_is_refused_by_path() -> None:
    data = json.loads(encode_snapshot(dataclasses.replace(tool_pause(), messages=[tool_message()])))
    data["messages"][0]["content"][0]["tool_call_result"]["result"].append({"reasoning": {"reasoning_text": "x"}})
    with pytest.raises(SnapshotError, match=r"messages\[0\]\.content\[0\]\.tool_call_result\.result\[2\]"):
        decode_snapshot(json.dumps(data).encode(), source="test")


def test_a_snapshot_with_str_results_is_written_and_read_as_before() -> None:
    snap = dataclasses.replace(tool_pause(), messages=[*tool_pause().messages, ChatMessage.from_tool("done", CALL)])
    data = json.loads(encode_snapshot(snap))
    assert data["messages"][-1]["content"][0]["tool_call_result"]["result"] == "done"
    assert decode_snapshot(json.dumps(data).encode(), source="test").messages == snap.messages


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_chat_stores_keep_a_result_of_parts(kind: str, tmp_path: Path) -> None:
    store = SQLiteChatMessageStore(tmp_path / "chat.db") if kind == "sqlite" else InMemoryChatMessageStore()
    history = [ChatMessage.from_assistant(tool_calls=[CALL]), tool_message(), ChatMessage.from_tool("old", CALL)]
    store.write_messages("h", history)
    read = store.retrieve_messages("h")
    if isinstance(store, SQLiteChatMessageStore):
        store.close()
    assert [m.tool_call_result for m in read[1:]] == [m.tool_call_result for m in history[1:]]
