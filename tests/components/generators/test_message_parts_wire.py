"""Images and reasoning on the generators' wire: OpenAI gets ``image_url`` parts, llama.cpp refuses images.

A tool result's images (a result of content parts) reach OpenAI's Chat API as placeholder text parts: it takes
text only in a tool message, and Haystack 2.23 raises there instead.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.components.generators.chat._openai_wire import messages_to_wire
from handrail.dataclasses import ChatMessage, ChatRole, ImageContent, ReasoningContent, TextContent, ToolCall
from handrail.errors import ConfigurationError, HandrailError
from tests.components.generators._openai_server import RecordedServer, recorded

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
IMAGE = ImageContent(PNG_B64, detail="low")
PICTURE = ChatMessage.from_user(content_parts=["What is this?", IMAGE, "Be brief."])


def test_a_user_image_is_an_image_url_part_with_a_data_url() -> None:
    (wire,) = messages_to_wire([PICTURE])
    assert wire == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "low"}},
            {"type": "text", "text": "Be brief."},
        ],
    }
    assert wire == PICTURE.to_openai_dict_format()  # the same shape as Haystack's to_openai_dict_format


def test_an_image_without_mime_type_is_sent_as_jpeg() -> None:
    unknown = ImageContent(base64.b64encode(b"raw").decode(), validation=False)
    (wire,) = messages_to_wire([ChatMessage.from_user(content_parts=[unknown])])
    assert wire["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{unknown.base64_image}"}}
    ]


def test_reasoning_is_not_sent_back() -> None:
    call = ToolCall("weather", {"city": "Oslo"}, "c1")
    reply = ChatMessage.from_assistant(
        "Checking.", reasoning=ReasoningContent("hidden", {"sig": "s"}), tool_calls=[call]
    )
    (wire,) = messages_to_wire([reply])
    assert "hidden" not in str(wire)
    assert wire["content"] == "Checking." and wire["tool_calls"][0]["id"] == "c1"
    (only_reasoning,) = messages_to_wire([ChatMessage.from_assistant(reasoning="hidden", tool_calls=[call])])
    assert "content" not in only_reasoning


def test_an_image_outside_a_user_message_is_refused_naming_it() -> None:
    odd = ChatMessage(ChatRole.ASSISTANT, [IMAGE])
    with pytest.raises(ConfigurationError, match=r"messages\[1\] \(assistant\).*images in user messages only"):
        messages_to_wire([ChatMessage.from_user("hi"), odd])


def test_the_generator_sends_the_image_in_its_request() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    server.generator().run([PICTURE])
    content = server.bodies[0]["messages"][0]["content"]
    assert content[1]["image_url"]["url"] == f"data:image/png;base64,{PNG_B64}"


CALL = ToolCall("chart", {"month": "May"}, "c1")
CHART = ChatMessage.from_tool([TextContent("Sales in May:"), ImageContent(PNG_B64, "image/png")], CALL)
PLACEHOLDER = "[image: image/png, 70 bytes, not shown to this model]"


def test_a_tool_result_of_parts_is_text_parts_with_a_placeholder_per_image() -> None:
    wire = messages_to_wire([ChatMessage.from_assistant(tool_calls=[CALL]), CHART])
    assert wire[1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [{"type": "text", "text": "Sales in May:"}, {"type": "text", "text": PLACEHOLDER}],
    }
    assert wire[1] == CHART.to_openai_dict_format()
    texts = ChatMessage.from_tool([TextContent("a"), TextContent("b")], CALL)
    assert messages_to_wire([texts])[0]["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert messages_to_wire([ChatMessage.from_tool([], CALL)])[0]["content"] == ""


def test_the_generator_sends_a_tool_result_of_parts_and_says_it_takes_no_images() -> None:
    server = RecordedServer(recorded("completion_text.json"))
    generator = server.generator()
    assert generator.accepts_tool_result_images is False
    generator.run([ChatMessage.from_user("May?"), ChatMessage.from_assistant(tool_calls=[CALL]), CHART])
    tool_message = server.bodies[0]["messages"][2]
    assert tool_message["role"] == "tool" and tool_message["content"][1] == {"type": "text", "text": PLACEHOLDER}
    assert PNG_B64 not in str(server.bodies[0])


def _never_loads(gen: LlamaCppChatGenerator, monkeypatch: pytest.MonkeyPatch) -> None:
    def load() -> Any:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(gen, "_load", load)


def test_llama_cpp_refuses_images_before_loading_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = LlamaCppChatGenerator(model_path=str(tmp_path / "absent.gguf"))
    _never_loads(gen, monkeypatch)
    messages = [ChatMessage.from_system("s"), PICTURE]
    with pytest.raises(ConfigurationError, match=r"does not accept images: messages\[1\] \(user\)") as info:
        gen.run(messages)
    assert isinstance(info.value, ValueError) and isinstance(info.value, HandrailError)
    with pytest.raises(ConfigurationError, match="does not accept images"):
        asyncio.run(gen.run_async(messages))
