"""Haystack's import paths for its helpers: ``handrail.utils`` and ``handrail.components.generators.utils``."""

from __future__ import annotations

import io

import pytest

from handrail.components.agents import Agent
from handrail.components.generators.utils import print_streaming_chunk
from handrail.core.secret import EnvVarSecret, Secret
from handrail.dataclasses import ChatMessage, ImageContent, TextContent, ToolCall, ToolCallResult
from handrail.dataclasses.streaming import StreamingChunk, ToolCallDelta
from handrail.errors import SerializationError
from handrail.testing import ScriptedChatGenerator
from handrail.tools import tool
from handrail.utils import deserialize_secrets_inplace


def test_secret_is_the_same_class_under_both_paths() -> None:
    from handrail import utils

    assert utils.Secret is Secret


def test_deserialize_secrets_inplace_reads_the_named_keys_only() -> None:
    data = {
        "api_key": {"type": "env_var", "env_vars": ["OPENAI_API_KEY"], "strict": False},
        "missing": None,
        "other": {"type": "env_var", "env_vars": ["X"], "strict": False},
    }
    deserialize_secrets_inplace(data, keys=["api_key", "missing", "absent"])
    assert isinstance(data["api_key"], EnvVarSecret)
    assert data["api_key"].env_vars == ("OPENAI_API_KEY",)
    assert data["missing"] is None
    assert isinstance(data["other"], dict)  # not named: left alone


def test_deserialize_secrets_inplace_recursive_finds_nested_keys() -> None:
    data = {"generator": {"init_parameters": {"api_key": {"type": "env_var", "env_vars": ["K"], "strict": False}}}}
    deserialize_secrets_inplace(data, keys=["api_key"], recursive=True)
    assert isinstance(data["generator"]["init_parameters"]["api_key"], Secret)


def test_deserialize_secrets_inplace_names_the_bad_key() -> None:
    with pytest.raises(SerializationError, match="'api_key'"):
        deserialize_secrets_inplace({"api_key": "sk-plain-text"}, keys=["api_key"])


def _printed(*chunks: StreamingChunk) -> str:
    out = io.StringIO()
    for chunk in chunks:
        print_streaming_chunk(chunk, file=out)
    return out.getvalue()


def test_print_streaming_chunk_labels_text_tool_calls_and_results() -> None:
    text = _printed(
        StreamingChunk(content="Let me", start=True, index=0),
        StreamingChunk(content=" check.", index=0),
        StreamingChunk(tool_calls=[ToolCallDelta(index=1, tool_name="weather", id="c1")], start=True, index=1),
        StreamingChunk(tool_calls=[ToolCallDelta(index=1, arguments='{"city": "Bern"}')], index=1),
        StreamingChunk(finish_reason="tool_calls"),
    )
    assert text == '[ASSISTANT]\nLet me check.\n\n[TOOL CALL]\nTool: weather \nArguments: {"city": "Bern"}\n\n'


def test_print_streaming_chunk_prints_a_result_of_parts_as_text_with_placeholders() -> None:
    parts = [TextContent("The chart:"), ImageContent("iVBORw0KGgo=", "image/png")]
    result = ToolCallResult(parts, ToolCall(tool_name="chart", arguments={}, id="c1"), error=False)
    text = _printed(StreamingChunk(index=0, tool_call_result=result, start=True))
    assert text == "[TOOL RESULT]\nThe chart:\n[image: image/png, 8 bytes, not shown to this model]"


def test_print_streaming_chunk_as_the_agents_callback(capsys: pytest.CaptureFixture[str]) -> None:
    @tool
    def weather(city: str) -> str:
        """Get the weather of a city."""
        return f"sunny in {city}"

    call = ToolCall(tool_name="weather", arguments={"city": "Bern"}, id="c1")
    model = ScriptedChatGenerator([ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_assistant("Sunny.")])
    agent = Agent(chat_generator=model, tools=[weather], streaming_callback=print_streaming_chunk)
    result = agent.run([ChatMessage.from_user("Weather in Bern?")])
    assert result["last_message"].text == "Sunny."
    printed = capsys.readouterr().out
    assert "[TOOL RESULT]\nsunny in Bern" in printed
