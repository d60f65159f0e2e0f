"""ChatPromptBuilder, checked against Haystack 2.19's behaviour (run there and recorded here)."""

from __future__ import annotations

import logging

import pytest
from jinja2 import TemplateSyntaxError

from handrail.components.builders import ChatPromptBuilder
from handrail.core.component import MISSING, input_sockets
from handrail.core.pipeline import Pipeline
from handrail.dataclasses import ChatMessage, ChatRole, ToolCall
from handrail.errors import ComponentError, ConfigurationError

TEMPLATE = [
    ChatMessage.from_system("S {{a}}"),
    ChatMessage.from_user("U {{b}}"),
    ChatMessage.from_assistant("A {{c}}"),
]

STRING_TEMPLATE = """{% message role="system" %}Sys {{a}}{% endmessage %}
{% message role="user" name="bob" meta={"k": 1} %}Hello {{b}}{% endmessage %}"""


def test_list_template_renders_user_and_system_messages_only() -> None:
    prompt = ChatPromptBuilder(TEMPLATE, required_variables=[]).run(a=1, b=2, c=3)["prompt"]
    assert [(m.role, m.text) for m in prompt] == [
        (ChatRole.SYSTEM, "S 1"),
        (ChatRole.USER, "U 2"),
        (ChatRole.ASSISTANT, "A {{c}}"),
    ]
    assert TEMPLATE[0].text == "S {{a}}"  # the template is not changed


def test_list_template_variables_come_from_user_and_system_messages() -> None:
    builder = ChatPromptBuilder(TEMPLATE, required_variables=["a"])
    assert builder.variables == ["a", "b"]
    assert input_sockets(builder)["a"].default is MISSING
    assert input_sockets(builder)["b"].default == ""


def test_string_template_with_message_blocks() -> None:
    builder = ChatPromptBuilder(STRING_TEMPLATE, required_variables="*")
    assert builder.variables == ["a", "b"]
    system, user = builder.run(a=1, b=2)["prompt"]
    assert (system.role, system.text) == (ChatRole.SYSTEM, "Sys 1")
    assert (user.role, user.text, user.name, user.meta) == (ChatRole.USER, "Hello 2", "bob", {"k": 1})


def test_string_template_keeps_newlines_inside_a_message() -> None:
    text = '{% message role="user" %}line one\n{{ x }}\nline three{% endmessage %}'
    (message,) = ChatPromptBuilder(text, required_variables=[]).run(x="two")["prompt"]
    assert message.text == "line one\ntwo\nline three"


def test_templatize_part_places_a_tool_call_in_an_assistant_message() -> None:
    text = '{% message role="assistant" %}Calling.{{ call | templatize_part }}{% endmessage %}'
    call = ToolCall("add", {"a": 1}, "c1")
    (message,) = ChatPromptBuilder(text, required_variables=[]).run(call=call)["prompt"]
    assert message.text == "Calling."
    assert message.tool_calls == [call]


def test_templatize_part_is_refused_in_a_list_template() -> None:
    with pytest.raises(ComponentError, match="templatize_part filter cannot be used"):
        ChatPromptBuilder([ChatMessage.from_user("{{ x | templatize_part }}")])


def test_a_block_of_parts_its_role_cannot_hold_is_refused() -> None:
    call = ToolCall("add", {}, "c1")
    text = '{% message role="system" %}{{ call | templatize_part }}{% endmessage %}'
    with pytest.raises(ValueError, match="System message must contain a text part"):
        ChatPromptBuilder(text, required_variables=[]).run(call=call)
    with pytest.raises(ValueError, match="Tool message must contain only one tool call result"):
        ChatPromptBuilder('{% message role="tool" %}text{% endmessage %}', required_variables=[]).run()


def test_unknown_role_does_not_parse() -> None:
    with pytest.raises(ComponentError, match="Role must be one of: user, system, assistant, tool") as info:
        ChatPromptBuilder("{% message role='robot' %}x{% endmessage %}")
    assert isinstance(info.value.__cause__, TemplateSyntaxError)


def test_empty_message_block_is_refused() -> None:
    with pytest.raises(ValueError, match="empty or contains only whitespace"):
        ChatPromptBuilder("{% message role='user' %}  {% endmessage %}").run()


def test_text_outside_message_blocks_is_refused_clearly() -> None:
    with pytest.raises(ConfigurationError, match="outside them: 'plain text 1'"):
        ChatPromptBuilder("plain text {{a}}", required_variables=[]).run(a=1)


def test_no_template_at_all_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="requires a non-empty list of ChatMessage instances"):
        ChatPromptBuilder().run()


def test_a_list_holding_other_things_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only ChatMessage instances; template\[1\] is a str"):
        ChatPromptBuilder().run(template=[ChatMessage.from_user("hi"), "x"])  # type: ignore[list-item]


def test_user_message_without_text_is_refused() -> None:
    empty = ChatMessage(ChatRole.USER, [])
    with pytest.raises(ValueError, match="ChatMessages from user role must contain text"):
        ChatPromptBuilder([empty])


def test_run_time_template_with_declared_variables() -> None:
    builder = ChatPromptBuilder(variables=["q"], required_variables=[])
    assert input_sockets(builder)["q"].default == ""
    (message,) = builder.run(template=[ChatMessage.from_user("q={{q}}")], q=5)["prompt"]
    assert message.text == "q=5"


def test_template_variables_win_over_inputs() -> None:
    builder = ChatPromptBuilder([ChatMessage.from_user("{{ q }}")], required_variables=[])
    assert builder.run(q="input", template_variables={"q": "override"})["prompt"][0].text == "override"


def test_missing_required_variable() -> None:
    builder = ChatPromptBuilder(STRING_TEMPLATE, required_variables=["a", "b"])
    with pytest.raises(ConfigurationError, match=r"Missing required input variables in ChatPromptBuilder: b\."):
        builder.run(a=1)


def test_warning_when_required_variables_is_not_set(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="handrail"):
        ChatPromptBuilder(TEMPLATE)
    (record,) = caplog.records
    assert record.name == "handrail.components.builders.chat_prompt_builder"
    assert "ChatPromptBuilder has 2 prompt variables" in record.getMessage()


@pytest.mark.parametrize("template", [TEMPLATE, STRING_TEMPLATE, None])
def test_to_dict_and_from_dict_round_trip(template: list[ChatMessage] | str | None) -> None:
    builder = ChatPromptBuilder(template, required_variables=["a"], variables=["a", "b"])
    data = builder.to_dict()
    assert data["type"] == "handrail.components.builders.chat_prompt_builder.ChatPromptBuilder"
    params = data["init_parameters"]
    assert (params["variables"], params["required_variables"]) == (["a", "b"], ["a"])
    if isinstance(template, list):
        assert params["template"][0] == {"role": "system", "meta": {}, "name": None, "content": [{"text": "S {{a}}"}]}
    else:
        assert params["template"] == template
    again = ChatPromptBuilder.from_dict(data)
    assert again.to_dict() == data
    assert again.template == template


def test_feeds_a_chat_generator_in_a_pipeline() -> None:
    from handrail.testing import ScriptedChatGenerator

    generator = ScriptedChatGenerator([ChatMessage.from_assistant("Paris")])
    pipeline = Pipeline()
    pipeline.add_component("prompt", ChatPromptBuilder(STRING_TEMPLATE, required_variables="*"))
    pipeline.add_component("llm", generator)
    pipeline.connect("prompt.prompt", "llm.messages")
    result = pipeline.run({"prompt": {"a": "Be brief.", "b": "capital of France?"}})
    assert result["llm"]["replies"][0].text == "Paris"
    assert [m.text for m in generator.calls[0]["messages"]] == ["Sys Be brief.", "Hello capital of France?"]


def test_templatize_part_places_a_tool_result_in_a_tool_message() -> None:
    from handrail.dataclasses import ToolCallResult

    result = ToolCallResult("3", ToolCall("add", {"a": 1}, "c1"), False)
    text = '{% message role="tool" %}{{ result | templatize_part }}{% endmessage %}'
    (message,) = ChatPromptBuilder(text, required_variables=[]).run(result=result)["prompt"]
    assert message.role == ChatRole.TOOL
    assert message.tool_call_results == [result]


def test_templatize_part_refuses_what_is_no_part() -> None:
    text = '{% message role="user" %}{{ thing | templatize_part }}{% endmessage %}'
    with pytest.raises(ConfigurationError, match="templatize_part needs a content part"):
        ChatPromptBuilder(text, required_variables=[]).run(thing=object())
