"""Image and reasoning parts, Haystack 2.19's dict layouts (current and pre-2.12), and OpenAI's message dicts.

The fixture was written by Haystack 2.19 (``tests/fixtures/haystack/chat_messages_2_19.json``): its
``to_dict`` output, the same messages in the 2.9-2.11 layout (which Haystack 2.19 reads back to the same
messages), their ``to_openai_dict_format`` output and ``from_openai_dict_format`` of that.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses import AgentSnapshot, ImageContent, ReasoningContent, TextContent
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import decode_snapshot, encode_snapshot
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.stores.chat_sqlite import SQLiteChatMessageStore
from tests.dataclasses.test_snapshot import tool_pause

FIXTURE = json.loads((Path(__file__).parent.parent / "fixtures" / "haystack" / "chat_messages_2_19.json").read_text())
PNG = base64.b64decode(FIXTURE["current"][0]["content"][1]["image"]["base64_image"])
PNG_B64 = base64.b64encode(PNG).decode()


def with_extra(data: Any) -> Any:
    """Haystack's ToolCall dict without ``extra``, as handrail writes it (``"extra": null``)."""
    if isinstance(data, list):
        return [with_extra(v) for v in data]
    if isinstance(data, dict):
        out = {k: with_extra(v) for k, v in data.items()}
        if "tool_name" in out:
            out.setdefault("extra", None)
        return out
    return data


def messages() -> list[ChatMessage]:
    return [ChatMessage.from_dict(d) for d in FIXTURE["current"]]


def test_haystack_dicts_load_and_are_written_back_the_same() -> None:
    loaded = messages()
    assert [m.to_dict() for m in loaded] == with_extra(FIXTURE["current"])
    user, assistant = loaded[0], loaded[1]
    assert user.image == ImageContent(PNG_B64, "image/png", "low", {"file": "a.png"})
    assert user.images == [user.image] and user.texts == ["Describe ☀"] and user.name == "ana"
    assert assistant.reasoning == ReasoningContent("Look at sky", {"sig": "x"})
    assert assistant.reasonings == [assistant.reasoning] and assistant.text == "It rains."
    assert assistant.tool_call == ToolCall("weather", {"city": "Zürich"}, "call_1")
    assert assistant.image is None and user.reasoning is None and user.images[0].validation is True


def test_the_pre_2_12_layout_loads_as_haystack_2_19_reads_it() -> None:
    old = [ChatMessage.from_dict(d) for d in FIXTURE["pre_2_12"]]
    assert old == messages()
    assert old[0].role.value == "user" and old[0].name == "ana" and old[1].meta == {"model": "m"}


def test_a_dict_mixing_both_layouts_is_refused_naming_the_key() -> None:
    with pytest.raises(SerializationError, match="_content"):
        ChatMessage.from_dict({"role": "user", "_content": [{"text": "x"}]})
    with pytest.raises(SerializationError, match="role"):
        ChatMessage.from_dict({"_content": [{"text": "x"}]})


def test_bad_image_and_reasoning_dicts_are_refused_by_path() -> None:
    base = {"role": "user", "content": [{"image": {"base64_image": PNG_B64, "detail": 3}}]}
    with pytest.raises(SerializationError, match=r"content\[0\]\.image\.detail") as info:
        ChatMessage.from_dict(base)
    assert info.value.path == ("content", 0, "image", "detail")
    with pytest.raises(SerializationError, match=r"content\[0\]\.reasoning.*missing"):
        ChatMessage.from_dict({"role": "assistant", "content": [{"reasoning": {"extra": {}}}]})
    with pytest.raises(ConfigurationError, match="not a valid image MIME type"):
        ChatMessage.from_dict(
            {"role": "user", "content": [{"image": {"base64_image": PNG_B64, "mime_type": "text/x"}}]}
        )


def test_part_from_dicts() -> None:
    assert TextContent.from_dict({"text": "hé"}) == TextContent("hé")
    with pytest.raises(SerializationError, match="TextContent"):
        TextContent.from_dict({"txt": "x"})
    assert ReasoningContent.from_dict({"reasoning_text": "r"}) == ReasoningContent("r", {})
    assert ImageContent.from_dict(ImageContent(PNG_B64, detail="high").to_dict()) == ImageContent(
        PNG_B64, detail="high"
    )
    with pytest.raises(SerializationError, match="ImageContent 'size' is not a known key"):
        ImageContent.from_dict({"base64_image": PNG_B64, "size": 1})


def test_image_validation() -> None:
    assert ImageContent(PNG_B64).mime_type == "image/png"  # guessed from the bytes
    with pytest.raises(ConfigurationError, match="The base64 string is not valid"):
        ImageContent("not base64!")
    with pytest.raises(ValueError, match="text/plain is not a valid image MIME type"):
        ImageContent(PNG_B64, mime_type="text/plain")
    with pytest.raises(ConfigurationError, match="detail"):
        ImageContent(PNG_B64, detail="max")  # type: ignore[arg-type]
    assert ImageContent("not base64!", validation=False).mime_type is None
    assert "..." in repr(ImageContent(base64.b64encode(PNG * 5).decode()))


def test_an_unknown_image_kind_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="handrail.dataclasses.image_content"):
        assert ImageContent(base64.b64encode(b"plain bytes").decode()).mime_type is None
    assert "Failed to guess the MIME type" in caplog.text


def test_from_file_path(tmp_path: Path) -> None:
    path = tmp_path / "pixel.png"
    path.write_bytes(PNG)
    image = ImageContent.from_file_path(path, detail="auto", meta={"k": 1})
    assert image == ImageContent(PNG_B64, "image/png", "auto", {"file_path": str(path), "k": 1})
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4")
    with pytest.raises(ConfigurationError, match="PDF files are not supported"):
        ImageContent.from_file_path(tmp_path / "doc.pdf")
    (tmp_path / "a.txt").write_text("hi")
    with pytest.raises(ConfigurationError, match="not an image file"):
        ImageContent.from_file_path(tmp_path / "a.txt")
    with pytest.raises(ConfigurationError, match="cannot read"):
        ImageContent.from_file_path(tmp_path / "missing.png")


def test_from_user_content_parts() -> None:
    image = ImageContent(PNG_B64)
    m = ChatMessage.from_user(content_parts=["a", TextContent("b"), image])
    assert m.texts == ["a", "b"] and m.images == [image]
    with pytest.raises(ValueError, match="Either text or content_parts must be provided"):
        ChatMessage.from_user()
    with pytest.raises(ValueError, match="Only one of text or content_parts can be provided"):
        ChatMessage.from_user("a", content_parts=["b"])
    with pytest.raises(ValueError, match=r"only text or image parts.*content_parts\[0\] is a ToolCall"):
        ChatMessage.from_user(content_parts=[ToolCall("t", {})])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one textual or image part"):
        ChatMessage.from_user(content_parts=[])


def test_from_assistant_reasoning() -> None:
    m = ChatMessage.from_assistant("answer", reasoning="because", tool_calls=[ToolCall("t", {}, "c")])
    assert [type(p).__name__ for p in m._content] == ["ReasoningContent", "TextContent", "ToolCall"]
    assert m.reasoning == ReasoningContent("because")
    assert ChatMessage.from_assistant("x", reasoning=ReasoningContent("r", {"s": 1})).reasoning == ReasoningContent(
        "r", {"s": 1}
    )
    assert ChatMessage.from_assistant("x", reasoning="").reasoning is None
    with pytest.raises(ConfigurationTypeError, match="reasoning must be a string or a ReasoningContent"):
        ChatMessage.from_assistant("x", reasoning=3)  # type: ignore[arg-type]


def test_the_accessors_match_haystacks() -> None:
    wanted = {"from_assistant", "from_dict", "from_openai_dict_format", "from_system", "from_tool", "from_user",
              "image", "images", "is_from", "meta", "name", "reasoning", "reasonings", "role", "text", "texts",
              "to_dict", "to_openai_dict_format", "tool_call", "tool_call_result", "tool_call_results",
              "tool_calls"}  # fmt: skip
    assert wanted <= set(dir(ChatMessage))


def test_to_openai_dict_format_gives_haystacks_dicts() -> None:
    assert [m.to_openai_dict_format() for m in messages()] == FIXTURE["openai"]


def test_from_openai_dict_format_gives_haystacks_messages() -> None:
    built = [ChatMessage.from_openai_dict_format(o) for o in FIXTURE["openai"]]
    expected = with_extra(FIXTURE["from_openai"])
    expected[0] = ChatMessage.from_user(
        content_parts=[*messages()[0].texts, dataclasses.replace(messages()[0].images[0], meta={})], name="ana"
    ).to_dict()
    # Haystack 2.19 keeps a list content as the text of one part; handrail reads its text and image parts.
    assert [m.to_dict() for m in built[1:]] == expected[1:]
    assert built[0].to_dict() == expected[0]
    developer = ChatMessage.from_openai_dict_format({"role": "developer", "content": "d"})
    assert developer == ChatMessage.from_system("d")


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"content": "x"}, "The `role` field is required in the message dictionary"),
        ({"role": "bot", "content": "x"}, "Unsupported role: 'bot'"),
        ({"role": "assistant"}, "For assistant messages, either `content` or `tool_calls` must be present."),
        ({"role": "user"}, "The `content` field is required for user messages."),
        ({"role": "assistant", "tool_calls": [{"id": "1"}]}, "Tool calls must contain the `function` field"),
        (
            {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "t", "arguments": "{"}}]},
            r"tool_calls\[0\]\.function\.arguments is not JSON",
        ),
        ({"role": "user", "content": [{"type": "audio"}]}, r"content\[0\] of an OpenAI user message"),
    ],
)
def test_from_openai_dict_format_errors(message: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        ChatMessage.from_openai_dict_format(message)


def test_to_openai_dict_format_tool_call_ids() -> None:
    no_id = ChatMessage.from_assistant(tool_calls=[ToolCall("t", {})])
    assert no_id.to_openai_dict_format(require_tool_call_ids=False) == {
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "t", "arguments": "{}"}}],
    }
    with pytest.raises(
        ValueError, match=re.escape("`ToolCall` must have a non-null `id` attribute to be used with OpenAI.")
    ):
        no_id.to_openai_dict_format()
    result = ChatMessage.from_tool("r", ToolCall("t", {}))
    assert result.to_openai_dict_format(require_tool_call_ids=False) == {"role": "tool", "content": "r"}
    with pytest.raises(ValueError, match="non-null `id`"):
        result.to_openai_dict_format()
    with pytest.raises(ValueError, match="must contain at least one `TextContent`"):
        ChatMessage.from_assistant().to_openai_dict_format()
    mixed = ChatMessage(result.role, [*result._content, TextContent("x")])
    with pytest.raises(ValueError, match="cannot contain any other content"):
        mixed.to_openai_dict_format()
    raw = ChatMessage.from_assistant(tool_calls=[ToolCall("t", "not json", "c")])
    assert raw.to_openai_dict_format()["tool_calls"][0]["function"]["arguments"] == "not json"


def test_a_snapshot_with_images_and_reasoning_round_trips(tmp_path: Path) -> None:
    snap: AgentSnapshot = tool_pause()
    snap = dataclasses.replace(snap, messages=[*messages()[:2], *snap.messages])
    again = decode_snapshot(encode_snapshot(snap), source="test")
    assert again.messages == snap.messages
    assert again.messages[0].image == snap.messages[0].image and again.messages[1].reasoning is not None


def test_a_snapshot_with_a_bad_image_part_is_refused_by_path() -> None:
    data = json.loads(encode_snapshot(tool_pause()))
    data["messages"][0]["content"].append({"image": {"base64_image": 5}})
    with pytest.raises(ValueError, match=r"messages\[0\]\.content\[1\]\.image\.base64_image"):
        decode_snapshot(json.dumps(data).encode(), source="test")


def test_the_sqlite_chat_store_round_trips_images_and_reasoning(tmp_path: Path) -> None:
    store = SQLiteChatMessageStore(tmp_path / "chat.db")
    try:
        store.write_messages("h", messages()[:3])
        read = store.retrieve_messages("h")
    finally:
        store.close()
    assert read[0].image == messages()[0].image
    assert read[1].reasoning == ReasoningContent("Look at sky", {"sig": "x"})
    assert [m.texts for m in read] == [m.texts for m in messages()[:3]]
