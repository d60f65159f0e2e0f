from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy
from handrail.human_in_the_loop.templates import (
    DEFAULT_MODIFY_TEMPLATE,
    DEFAULT_REJECT_TEMPLATE,
    DEFAULT_USER_FEEDBACK_TEMPLATE,
    check_template,
    format_params,
    render_modify,
    render_reject,
)

from ._helpers import ScriptedUI


def test_default_templates_are_exact() -> None:
    assert DEFAULT_REJECT_TEMPLATE == "Tool execution for '{tool_name}' was rejected by the user."
    assert DEFAULT_MODIFY_TEMPLATE == (
        "The parameters for tool '{tool_name}' were updated by the user to:\n{final_tool_params}"
    )
    assert DEFAULT_USER_FEEDBACK_TEMPLATE == "With user feedback: {feedback}"


def test_render_reject() -> None:
    assert render_reject("foo", None) == "Tool execution for 'foo' was rejected by the user."
    assert render_reject("foo", "") == "Tool execution for 'foo' was rejected by the user."
    assert render_reject("foo", "   ") == "Tool execution for 'foo' was rejected by the user."
    assert (
        render_reject("test_tool", "Not needed")
        == "Tool execution for 'test_tool' was rejected by the user. With user feedback: Not needed"
    )
    assert render_reject("foo", "  padded \n") == (
        "Tool execution for 'foo' was rejected by the user. With user feedback: padded"
    )


def test_render_modify_uses_json_and_keeps_non_ascii() -> None:
    assert (
        render_modify("bar", {"x": 99}, None)
        == "The parameters for tool 'bar' were updated by the user to:\n{\"x\": 99}"
    )
    assert render_modify("bar", {"city": "Zürich", "n": None, "ok": True}, "Use Zürich") == (
        "The parameters for tool 'bar' were updated by the user to:\n"
        '{"city": "Zürich", "n": null, "ok": true} With user feedback: Use Zürich'
    )
    assert format_params({"b": 1, "a": 2}) == '{"b": 1, "a": 2}'  # call order kept, not sorted
    assert format_params({"t": int}) == '{"t": "<class \'int\'>"}'  # str() fallback


def test_braces_in_values_are_not_placeholders() -> None:
    assert render_reject("{x}", "{feedback} {0}") == (
        "Tool execution for '{x}' was rejected by the user. With user feedback: {feedback} {0}"
    )
    assert render_modify("t", {"q": "{tool_name}"}, None).endswith('{"q": "{tool_name}"}')


def test_custom_templates() -> None:
    assert (
        render_reject("t", "why", reject_template="Denied {tool_name}.", user_feedback_template="({feedback})")
        == "Denied t. (why)"
    )
    assert render_reject("t", None, reject_template="Denied.") == "Denied."
    assert (
        render_modify("t", {"a": 1}, None, modify_template="{tool_name!r} -> {final_tool_params}")
        == "'t' -> {\"a\": 1}"
    )
    assert render_reject("t", None, reject_template="{{literal}} {tool_name:>3}") == "{literal}   t"


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"reject_template": "Rejected {tool}"}, "reject_template"),
        ({"reject_template": "Rejected {}"}, "reject_template"),
        ({"reject_template": "Rejected {0}"}, "reject_template"),
        ({"reject_template": "Rejected {tool_name.upper}"}, "reject_template"),
        ({"reject_template": "Rejected {tool_name[0]}"}, "reject_template"),
        ({"reject_template": "Rejected {tool_name"}, "reject_template"),
        ({"reject_template": "Rejected }"}, "reject_template"),
        ({"reject_template": "{final_tool_params}"}, "reject_template"),
        ({"modify_template": "{tool_name} {params}"}, "modify_template"),
        ({"modify_template": "{tool_name:{width}}"}, "modify_template"),
        ({"user_feedback_template": "Feedback: {text}"}, "user_feedback_template"),
        ({"user_feedback_template": "{feedback!z}"}, "user_feedback_template"),
    ],
)
def test_bad_templates_fail_at_strategy_construction(kwargs: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigurationError, match=name) as info:
        BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ScriptedUI(), **kwargs)
    assert isinstance(info.value, ValueError)
    assert "allowed placeholders" in str(info.value)


def test_template_must_be_a_str() -> None:
    with pytest.raises(ConfigurationTypeError, match="reject_template must be a str"):
        BlockingConfirmationStrategy(
            confirmation_policy=AlwaysAskPolicy(),
            confirmation_ui=ScriptedUI(),
            reject_template=None,  # type: ignore[arg-type]
        )


def test_render_with_a_bad_template_raises_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="reject_template"):
        render_reject("t", None, reject_template="{nope}")
    with pytest.raises(ConfigurationError, match="user_feedback_template"):
        render_reject("t", "x", user_feedback_template="{nope}")
    with pytest.raises(ConfigurationError, match="modify_template"):
        render_modify("t", {}, None, modify_template="{")


def test_check_template_returns_the_template() -> None:
    assert check_template("x", "{feedback}", frozenset({"feedback"})) == "{feedback}"
    assert check_template("x", "no placeholders", frozenset({"feedback"})) == "no placeholders"


@given(tool_name=st.text(), feedback=st.none() | st.text())
def test_render_reject_never_fails_and_appends_stripped_feedback(tool_name: str, feedback: str | None) -> None:
    text = render_reject(tool_name, feedback)
    assert text.startswith(f"Tool execution for '{tool_name}' was rejected by the user.")
    if feedback is not None and feedback.strip():
        assert text.endswith(f". With user feedback: {feedback.strip()}")
    else:
        assert text == f"Tool execution for '{tool_name}' was rejected by the user."
