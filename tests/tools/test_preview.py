"""Tool previews: the Preview record's rules, ``Tool(preview=...)`` / ``@tool(preview=...)``, and serialization."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handrail.core.component import component
from handrail.core.serialization import object_from_dict, restricted_imports
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools import ComponentTool, Preview, Tool, create_tool_from_function, tool
from handrail.tools.from_function import FunctionTool
from handrail.tools.preview import MAX_PREVIEW_CHARS, as_preview

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}


def send_email(to: str, body: str = "") -> str:
    """Send an email.

    Args:
        to: The address.
        body: The text.
    """
    return f"sent to {to}"


def email_preview(arguments: dict[str, Any]) -> Preview:
    return Preview("markdown", f"**To:** {arguments['to']}\n\n{arguments.get('body', '')}", title="Email")


def text_preview(arguments: dict[str, Any]) -> str:
    arguments["to"] = "changed"  # a preview that writes into its arguments changes nothing stored
    return "plain"


@tool(preview=email_preview)
def decorated_send(to: str) -> str:
    """Send."""
    return to


def _email_tool(**extra: Any) -> Tool:
    return Tool(name="send_email", description="Send.", parameters=SCHEMA, function=send_email, **extra)


# -- the Preview record --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["text", "markdown", "json", "diff"])
def test_every_kind_is_kept_with_its_content_and_title(kind: str) -> None:
    content = '{"a": 1}' if kind == "json" else "--- a\n+++ b\n-x\n+y"
    made = Preview(kind, content, title="T")  # type: ignore[arg-type]
    assert made.to_dict() == {"kind": kind, "content": content, "title": "T"}


@pytest.mark.parametrize("kind", ["html", "", "TEXT", None, 3])
def test_an_unknown_kind_is_refused_naming_the_kinds(kind: Any) -> None:
    with pytest.raises(ConfigurationError, match="text, markdown, json, diff"):
        Preview(kind, "x")


@pytest.mark.parametrize("content", [None, 3, b"bytes", {"a": 1}])
def test_content_that_is_not_a_str_is_refused(content: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="content must be a str"):
        Preview("text", content)


def test_a_title_that_is_not_a_str_is_refused_and_a_long_one_is_cut() -> None:
    with pytest.raises(ConfigurationTypeError, match="title"):
        Preview("text", "x", title=3)  # type: ignore[arg-type]
    title = Preview("text", "x", title="t" * 500).title
    assert title is not None and len(title) == 200 and title.endswith("…")


def test_a_json_preview_must_be_json_text() -> None:
    with pytest.raises(ConfigurationError, match=r"json\.dumps"):
        Preview("json", "{not json")


def test_long_content_is_cut_with_a_mark_saying_how_much_was_left_out() -> None:
    made = Preview("markdown", "x" * (MAX_PREVIEW_CHARS + 1234))
    assert made.content.startswith("x" * MAX_PREVIEW_CHARS)
    assert made.content.endswith("[preview truncated: 1,234 more characters not shown]")
    assert made.kind == "markdown"
    cut_json = Preview("json", json.dumps(["y" * MAX_PREVIEW_CHARS]))
    assert cut_json.kind == "text" and "preview truncated" in cut_json.content  # no longer JSON


def test_lone_surrogates_become_replacement_characters() -> None:
    made = Preview("text", "a\ud800b", title="\udfff")
    assert made.content == "a\ufffdb" and made.title == "\ufffd"
    made.content.encode("utf-8")  # the API can send it


def test_html_in_content_is_kept_as_given() -> None:
    payload = '<img src=x onerror="alert(1)"> [x](javascript:alert(1))'
    assert Preview("markdown", payload).content == payload  # the page escapes; the record keeps the text


def test_as_preview_takes_a_preview_or_a_str() -> None:
    made = Preview("diff", "-a\n+b")
    assert as_preview(made) is made
    assert as_preview("hello") == Preview("text", "hello")
    with pytest.raises(ConfigurationTypeError, match="Preview or a str, got dict"):
        as_preview({"kind": "text", "content": "x"})


# -- tools with previews -------------------------------------------------------------------------------------------


def test_a_tool_has_no_preview_by_default() -> None:
    made = _email_tool()
    assert made.preview is None and made.preview_of({"to": "a"}) is None


def test_preview_of_runs_the_function_on_a_copy_of_the_arguments() -> None:
    arguments = {"to": "ann@example.com", "body": "hi"}
    made = _email_tool(preview=email_preview)
    assert made.preview_of(arguments) == Preview("markdown", "**To:** ann@example.com\n\nhi", title="Email")
    plain = _email_tool(preview=text_preview)
    assert plain.preview_of(arguments) == Preview("text", "plain")
    assert arguments == {"to": "ann@example.com", "body": "hi"}


def test_a_preview_is_not_sent_to_the_model() -> None:
    assert _email_tool(preview=email_preview).tool_spec == _email_tool().tool_spec


def test_what_a_preview_function_raises_or_returns_wrongly_reaches_the_caller() -> None:
    def broken(arguments: dict[str, Any]) -> str:
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        _email_tool(preview=broken).preview_of({"to": "a"})
    with pytest.raises(ConfigurationTypeError, match="got int"):
        _email_tool(preview=lambda arguments: 3).preview_of({"to": "a"})
    with pytest.raises(ConfigurationError, match="kind"):
        _email_tool(preview=lambda arguments: Preview("html", "x")).preview_of({"to": "a"})  # type: ignore[arg-type]


async def _async_preview(arguments: dict[str, Any]) -> str:
    return "x"


@pytest.mark.parametrize("value", ["email_preview", 3, _async_preview])
def test_a_preview_must_be_a_sync_callable(value: Any) -> None:
    with pytest.raises(ConfigurationTypeError, match="`preview` must be a sync function"):
        _email_tool(preview=value)


def test_the_decorator_and_create_tool_from_function_take_a_preview() -> None:
    assert decorated_send.preview is email_preview
    made = create_tool_from_function(send_email, preview=text_preview)
    assert made.preview is text_preview and "preview" not in json.dumps(made.parameters)

    def with_point(to: str, when: tuple[int, int]) -> str:  # a FunctionTool: its arguments are converted
        return to

    converted = create_tool_from_function(with_point, preview=email_preview)
    assert isinstance(converted, FunctionTool) and converted.preview_of({"to": "b", "when": [1, 2]}) is not None


@component
class Mailer:
    """Mail."""

    @component.output_types(sent=str)
    def run(self, to: str) -> dict[str, Any]:
        return {"sent": to}


def test_a_component_tool_takes_a_preview_and_serializes_it() -> None:
    made = ComponentTool(Mailer(), preview=email_preview)
    assert made.preview_of({"to": "x"}) is not None
    data = made.to_dict()
    assert data["init_parameters"]["preview"] == f"{__name__}.email_preview"
    assert ComponentTool.from_dict(data).preview is email_preview
    assert "preview" not in ComponentTool(Mailer()).to_dict()["init_parameters"]


# -- serialization -------------------------------------------------------------------------------------------------


def test_a_preview_is_serialized_as_its_dotted_path_and_read_back() -> None:
    data = _email_tool(preview=email_preview).to_dict()
    assert data["init_parameters"]["preview"] == f"{__name__}.email_preview"
    rebuilt = Tool.from_dict(data)
    assert rebuilt.preview is email_preview and rebuilt == _email_tool(preview=email_preview)
    decorated = object_from_dict(decorated_send.to_dict())
    assert isinstance(decorated, Tool) and decorated.preview is email_preview


def test_a_tool_without_a_preview_serializes_as_before() -> None:
    assert "preview" not in _email_tool().to_dict()["init_parameters"]


def test_a_lambda_preview_cannot_be_serialized_and_the_error_names_the_field() -> None:
    with pytest.raises(SerializationError, match=r"preview.*lambda"):
        _email_tool(preview=lambda arguments: "x").to_dict()


def test_a_preview_path_from_a_file_is_held_to_the_allowlist() -> None:
    data = _email_tool().to_dict()
    data["init_parameters"]["function"] = f"{__name__}.send_email"
    data["init_parameters"]["preview"] = "handrail.core.serialization.object_from_dict"
    with restricted_imports(["tests"]), pytest.raises(SerializationError, match="preview"):
        Tool.from_dict(data)
    data["init_parameters"]["preview"] = "os.system"
    with restricted_imports(["tests"]), pytest.raises(SerializationError, match="preview"):
        Tool.from_dict(data)
