"""The message and tool-call builders of handrail.testing: user, reply, call, tool_reply."""

from __future__ import annotations

import pytest

from handrail.dataclasses import ChatMessage, ChatRole, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.testing import call, reply, tool_reply, user


def test_user_is_a_user_message() -> None:
    assert user("hi") == ChatMessage.from_user("hi")


class TestCall:
    def test_keywords_are_the_arguments(self) -> None:
        assert call("add", id="c1", a=1, b=2) == ToolCall(tool_name="add", arguments={"a": 1, "b": 2}, id="c1")

    def test_a_dict_after_the_name_holds_arguments_keywords_cannot(self) -> None:
        made = call("lookup", {"id": 7, "tool_name": "x"}, "c1")
        assert made == ToolCall(tool_name="lookup", arguments={"id": 7, "tool_name": "x"}, id="c1")

    def test_a_str_is_the_raw_text_a_model_sent(self) -> None:
        assert call("add", "{not json", id="c1").arguments == "{not json"

    def test_no_id_and_no_arguments(self) -> None:
        assert call("ping") == ToolCall(tool_name="ping", arguments={}, id=None)

    def test_a_dict_and_keywords_together_are_refused(self) -> None:
        with pytest.raises(ConfigurationError, match=r"call\('add'\) takes its arguments either as one dict"):
            call("add", {"a": 1}, b=2)

    def test_the_call_id_rule_of_tool_call_holds(self) -> None:
        with pytest.raises(ConfigurationTypeError, match="id must be a str"):
            call("add", id=3)  # type: ignore[arg-type]


class TestReply:
    def test_a_text_reply(self) -> None:
        assert reply("done") == ChatMessage.from_assistant("done")

    def test_calls_and_text_and_meta(self) -> None:
        first, second = call("a", id="c1"), call("b", id="c2", x=1)
        message = reply(first, "Let me look.", second, finish_reason="tool_calls")
        assert message == ChatMessage.from_assistant(
            "Let me look.", meta={"finish_reason": "tool_calls"}, tool_calls=[first, second]
        )
        assert message.role is ChatRole.ASSISTANT

    def test_no_parts_is_an_empty_assistant_message(self) -> None:
        assert reply() == ChatMessage.from_assistant()

    def test_two_texts_are_refused(self) -> None:
        with pytest.raises(ConfigurationTypeError, match="at most one text, got 2"):
            reply("a", "b")

    def test_a_part_of_another_kind_is_refused(self) -> None:
        with pytest.raises(ConfigurationTypeError, match="got dict"):
            reply({"text": "a"})  # type: ignore[arg-type]


def test_tool_reply_answers_its_call() -> None:
    origin = call("add", id="c1", a=1)
    assert tool_reply("2", origin) == ChatMessage.from_tool("2", origin)
    failed = tool_reply("boom", origin, error=True)
    assert failed.tool_call_result is not None and failed.tool_call_result.error is True
