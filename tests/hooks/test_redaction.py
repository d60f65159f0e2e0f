from __future__ import annotations

from typing import Any

import pytest

from handrail.dataclasses import ChatMessage, ChatRole, ImageContent, TextContent
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks import RedactionHook
from handrail.testing import call
from tests.hooks._helpers import state_with

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0"
GITHUB = "ghp_" + "a" * 36


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {OPENAI} end", "key [REDACTED] end"),
        ("sk-ant-api03-abcdefghijklmnopqrstuv", "[REDACTED]"),
        ("Authorization: Bearer eyJhbGciOi.J9.x-y_z", "Authorization: Bearer [REDACTED]"),
        ("authorization: bearer abcdefgh12345678", "authorization: bearer [REDACTED]"),
        ("AWS AKIAIOSFODNN7EXAMPLE here", "AWS [REDACTED] here"),
        (f"token={GITHUB}", "token=[REDACTED]"),
        ("gho_" + "Z9" * 18, "[REDACTED]"),
        ("github_pat_" + "x1_" * 10, "[REDACTED]"),
        ("xoxb-1234567890-abcdef", "[REDACTED]"),
        ('api_key="abcdef123456"', 'api_key="[REDACTED]"'),
        ("API-KEY: abcdef123456", "API-KEY: [REDACTED]"),
        ('{"apiKey": "abcdef123456"}', '{"apiKey": "[REDACTED]"}'),
        ("OPENAI_API_KEY=abcdef123456", "OPENAI_API_KEY=[REDACTED]"),
    ],
)
def test_default_patterns_mask_common_secret_shapes(text: str, expected: str) -> None:
    assert RedactionHook().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the task-list is short",
        "sk-short",
        "Bearer abc",
        "AKIA123",
        "read the api key documentation",
        "api_key=short",
        "ghp_tooShort",
        "Ciao, città 🍎",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert RedactionHook().redact(text) == text


def test_several_secrets_in_one_text() -> None:
    out = RedactionHook().redact(f"a {OPENAI} b {GITHUB} c AKIAIOSFODNN7EXAMPLE")
    assert out == "a [REDACTED] b [REDACTED] c [REDACTED]"


def test_custom_patterns_replace_the_defaults() -> None:
    hook = RedactionHook([r"\d{3}-\d{4}", r"(?i)password: (?P<secret>\S+)"])
    assert hook.redact("call 555-1234, Password: hunter2") == "call [REDACTED], Password: [REDACTED]"
    assert hook.redact(OPENAI) == OPENAI


def test_defaults_can_be_extended() -> None:
    hook = RedactionHook([*RedactionHook.DEFAULT_PATTERNS, r"internal-\w+"])
    assert hook.redact(f"{OPENAI} internal-host") == "[REDACTED] [REDACTED]"


def test_patterns_matching_nothing_do_not_insert_masks() -> None:
    hook = RedactionHook([r"x*"])
    assert hook.redact("abc") == "abc"
    assert hook.redact("axxb") == "a[REDACTED]b"


def history() -> list[ChatMessage]:
    c = call("fetch", id="c1", url="https://x")
    return [
        ChatMessage.from_system(f"system {OPENAI}"),
        ChatMessage.from_user("my key is AKIAIOSFODNN7EXAMPLE", name="ana"),
        ChatMessage.from_assistant("plain", tool_calls=[c]),
        ChatMessage.from_tool(f"headers: Authorization: Bearer {'t' * 20}", c, error=True, meta={"m": 1}),
        ChatMessage.from_assistant(f"found {GITHUB}", meta={"usage": {"total_tokens": 3}}),
    ]


def test_run_masks_every_message_text_without_mutating_the_originals() -> None:
    original = history()
    state = state_with(original)
    live = state.data["messages"]
    RedactionHook().run(state)
    out = state.data["messages"]
    assert out is not live
    assert [m.role for m in out] == [m.role for m in original]
    assert out[0].text == "system [REDACTED]"
    assert (out[1].text, out[1].name) == ("my key is [REDACTED]", "ana")
    assert out[2] is original[2]  # nothing to mask: same object
    result = out[3].tool_call_result
    assert result is not None
    assert result.result == "headers: Authorization: Bearer [REDACTED]"
    assert result.error is True
    assert result.origin is original[3].tool_call_result.origin  # type: ignore[union-attr]
    assert out[3].meta == {"m": 1}
    assert out[4].text == "found [REDACTED]" and out[4].meta == {"usage": {"total_tokens": 3}}
    assert original[0].text == f"system {OPENAI}"
    assert original[3].tool_call_result.result.endswith("t" * 20)  # type: ignore[union-attr]


def test_the_text_parts_of_a_result_are_masked_and_its_images_kept() -> None:
    image = ImageContent("iVBORw0KGgo=", "image/png")
    c = call("fetch", id="c1")
    state = state_with(
        [ChatMessage.from_assistant(tool_calls=[c]), ChatMessage.from_tool([TextContent(OPENAI), image], c)]
    )
    RedactionHook().run(state)
    result = state.data["messages"][1].tool_call_result
    assert result is not None and result.result == [TextContent("[REDACTED]"), image]


def test_run_leaves_a_clean_history_alone() -> None:
    state = state_with([ChatMessage.from_user("hello"), ChatMessage.from_assistant("hi")])
    before = state.data["messages"]
    RedactionHook().run(state)
    assert state.data["messages"] is before


def test_run_is_idempotent() -> None:
    state = state_with(history())
    hook = RedactionHook()
    hook.run(state)
    once = state.data["messages"]
    hook.run(state)
    assert state.data["messages"] is once


def test_tool_call_arguments_are_not_rewritten() -> None:
    c = call("login", id="c1", token=OPENAI)
    state = state_with([ChatMessage.from_assistant(f"using {OPENAI}", tool_calls=[c])])
    RedactionHook().run(state)
    message = state.data["messages"][0]
    assert message.role is ChatRole.ASSISTANT
    assert message.text == "using [REDACTED]"
    assert message.tool_calls[0].arguments == {"token": OPENAI}


async def test_run_async() -> None:
    state = state_with([ChatMessage.from_user(OPENAI)])
    await RedactionHook().run_async(state)
    assert state.data["messages"][0].text == "[REDACTED]"


@pytest.mark.parametrize(
    ("patterns", "error", "match"),
    [
        ([], ConfigurationError, "patterns is empty"),
        ([""], ConfigurationError, r"patterns\[0\] is empty"),
        ([r"sk-\w+", ""], ConfigurationError, r"patterns\[1\] is empty.*nothing"),
        (["("], ConfigurationError, r"the pattern '\(' does not compile"),
        ("sk-.*", ConfigurationTypeError, "must be a list of strings"),
        ([1], ConfigurationTypeError, "must be a list of strings"),
    ],
)
def test_bad_patterns_are_refused(patterns: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        RedactionHook(patterns)


def test_round_trip() -> None:
    assert RedactionHook().to_dict() == {
        "type": "handrail.hooks.redaction.RedactionHook",
        "init_parameters": {"patterns": None},
    }
    custom = RedactionHook([r"a+b"])
    back = RedactionHook.from_dict(custom.to_dict())
    assert back.patterns == [r"a+b"]
    assert back.redact("xaab") == "x[REDACTED]"
    assert RedactionHook.from_dict(RedactionHook().to_dict()).redact(OPENAI) == "[REDACTED]"
