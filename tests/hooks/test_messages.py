from __future__ import annotations

import pytest

from handrail.dataclasses import ChatMessage, ChatRole, ImageContent, ReasoningContent, TextContent
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks._messages import map_texts, pending_calls, refuse_calls, replace_result, step_results
from handrail.testing import call

A, B, C = call("a", id="1"), call("b", id="2"), call("c", id="3")


def test_pending_calls_are_those_of_a_last_assistant_message() -> None:
    assert pending_calls([]) == []
    assert pending_calls([ChatMessage.from_user("hi")]) == []
    assert pending_calls([ChatMessage.from_assistant("text only")]) == []
    assert pending_calls([ChatMessage.from_user("hi"), ChatMessage.from_assistant(tool_calls=[A, B])]) == [A, B]
    assert pending_calls([ChatMessage.from_assistant(tool_calls=[A]), ChatMessage.from_tool("r", A)]) == []


def test_step_results_follow_the_last_assistant_message_with_calls() -> None:
    history = [
        ChatMessage.from_user("go"),
        ChatMessage.from_assistant(tool_calls=[A]),
        ChatMessage.from_tool("ra", A),
        ChatMessage.from_assistant("thinking", tool_calls=[B, C]),
        ChatMessage.from_tool("rb", B),
        ChatMessage.from_tool("rc", C, error=True),
    ]
    start, results = step_results(history)
    assert start == 4
    assert results == history[4:]
    assert all(history[start + k] is r for k, r in enumerate(results))


def test_step_results_without_a_tool_step() -> None:
    history = [ChatMessage.from_user("go"), ChatMessage.from_assistant("done")]
    assert step_results(history) == (2, [])
    assert step_results([]) == (0, [])


def test_step_results_when_the_calls_have_no_results_yet() -> None:
    history = [ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=[A])]
    assert step_results(history) == (2, [])


def test_step_results_stop_at_a_non_tool_message() -> None:
    history = [ChatMessage.from_assistant(tool_calls=[A]), ChatMessage.from_tool("ra", A), ChatMessage.from_user("x")]
    assert step_results(history) == (1, [history[1]])


def test_replace_result_keeps_origin_error_and_meta() -> None:
    original = ChatMessage.from_tool("long text", A, error=True, meta={"k": 1})
    new = replace_result(original, "short")
    assert new.tool_call_result is not None
    assert new.tool_call_result.result == "short"
    assert new.tool_call_result.origin is A
    assert new.tool_call_result.error is True
    assert new.meta == {"k": 1}
    assert new.meta is not original.meta
    assert original.tool_call_result is not None and original.tool_call_result.result == "long text"


def test_replace_result_refuses_other_messages() -> None:
    with pytest.raises(ConfigurationTypeError, match="got a user one"):
        replace_result(ChatMessage.from_user("x"), "y")


def test_map_texts_returns_the_same_object_when_nothing_changes() -> None:
    message = ChatMessage.from_assistant("hello", tool_calls=[A])
    assert map_texts(message, str) is message


def test_map_texts_rewrites_texts_and_results_but_not_calls() -> None:
    message = ChatMessage.from_assistant("hello", meta={"usage": {}}, name="bot", tool_calls=[A])
    new = map_texts(message, str.upper)
    assert new is not message
    assert (new.role, new.text, new.tool_calls, new.name, new.meta) == (
        ChatRole.ASSISTANT,
        "HELLO",
        [A],
        "bot",
        {"usage": {}},
    )
    assert message.text == "hello"
    result = map_texts(ChatMessage.from_tool("ok", A, error=True), str.upper).tool_call_result
    assert result is not None and (result.result, result.origin, result.error) == ("OK", A, True)


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def test_map_texts_rewrites_the_text_parts_of_a_result_and_keeps_its_images() -> None:
    image = ImageContent(PNG, "image/png")
    message = ChatMessage.from_tool([TextContent("a"), image, TextContent("b")], A)
    new = map_texts(message, str.upper).tool_call_result
    assert new is not None and new.result == [TextContent("A"), image, TextContent("B")]
    assert new.result[1] is image  # type: ignore[index]
    assert map_texts(message, str) is message  # nothing changed: the same object
    assert map_texts(ChatMessage.from_tool([image], A), str.upper).tool_call_result.result == [image]  # type: ignore[union-attr]


def test_replace_result_takes_content_parts() -> None:
    parts = [TextContent("short"), ImageContent(PNG, "image/png")]
    new = replace_result(ChatMessage.from_tool("long text", A, error=True), parts)
    assert new.tool_call_result is not None and new.tool_call_result.result == parts and new.tool_call_result.error


def test_refuse_calls_lays_out_pairs_before_the_remaining_calls() -> None:
    head = [ChatMessage.from_user("go")]
    last = ChatMessage.from_assistant("I will call three tools", meta={"m": 1}, tool_calls=[A, B, C])
    out = refuse_calls([*head, last], {0: "no a", 2: "no c"})
    assert out[0] is head[0]
    roles = [m.role.value for m in out[1:]]
    assert roles == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert out[1].tool_calls == [A] and out[1].text is None and out[1].meta == {"m": 1}
    assert out[2].tool_call_result is not None and (out[2].tool_call_result.result, out[2].tool_call_result.error) == (
        "no a",
        True,
    )
    assert out[2].tool_call_result.origin is A
    assert out[3].tool_calls == [C]
    assert out[5].tool_calls == [B]
    assert out[5].text == "I will call three tools"
    assert out[5].meta == {"m": 1} and out[5].meta is not last.meta
    assert last.tool_calls == [A, B, C]  # the original is untouched


def test_refusing_every_call_ends_with_the_last_error_and_keeps_the_text_once() -> None:
    last = ChatMessage.from_assistant("Let me look", tool_calls=[A, B])
    out = refuse_calls([last], {0: "no a", 1: "no b"})
    assert [m.role.value for m in out] == ["assistant", "tool", "assistant", "tool"]
    assert out[0].text == "Let me look" and out[0].tool_calls == [A]
    assert out[2].text is None and out[2].tool_calls == [B]
    assert pending_calls(out) == []
    assert step_results(out) == (3, [out[3]])


def test_refusing_every_call_of_a_textless_message() -> None:
    out = refuse_calls([ChatMessage.from_assistant("  ", tool_calls=[A])], {0: "no"})
    assert out[0].texts == [] and out[0].tool_calls == [A]


def test_refuse_calls_needs_pending_calls_and_valid_positions() -> None:
    with pytest.raises(ConfigurationError, match="no pending tool calls"):
        refuse_calls([ChatMessage.from_user("x")], {0: "no"})
    with pytest.raises(ConfigurationError, match=r"positions \[2\] are out of range for 1"):
        refuse_calls([ChatMessage.from_assistant(tool_calls=[A])], {2: "no"})


def test_refuse_calls_keeps_the_models_reasoning() -> None:
    c1, c2 = call("t", id="c1"), call("t", id="c2")
    last = ChatMessage.from_assistant(reasoning="think", tool_calls=[c1, c2])
    kept = refuse_calls([last], {0: "no"})
    assert kept[0].reasoning is None and kept[2].reasoning == ReasoningContent("think")
    every = refuse_calls([last], {0: "no", 1: "no"})  # no call remains: the reasoning goes with the first refusal
    assert every[0].reasoning == ReasoningContent("think") and every[2].reasoning is None
