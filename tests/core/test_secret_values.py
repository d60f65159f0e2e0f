"""Known secret values are masked out of text: whole, JSON-escaped, cut short, or echoed with stars."""

from __future__ import annotations

import secrets

import pytest

from handrail.core import Secret
from handrail.core._secret_values import mask_data
from handrail.core.secret import holds_secret, mask_secrets, register_secret_value
from handrail.errors import ConfigurationError, GenerationError, HandrailError, ToolInvocationError


def _key(prefix: str = "sk-proj-") -> str:
    """A fresh key-like value (each test its own: the registry lasts for the process)."""
    return prefix + secrets.token_urlsafe(40)


def test_a_token_secret_is_masked_whole_and_json_escaped() -> None:
    key = _key() + '"\\x'
    Secret.from_token(key)
    assert mask_secrets(f"Incorrect API key provided: {key}.") == "Incorrect API key provided: ***."
    escaped = '{"key": "' + key.replace("\\", "\\\\").replace('"', '\\"') + '"}'
    assert mask_secrets(escaped) == '{"key": "***"}'
    assert holds_secret(f"x{key}x") and not holds_secret("nothing secret here")


def test_an_env_var_secret_is_masked_once_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    key = _key()
    monkeypatch.setenv("HR_TEST_MASKED_KEY", key)
    secret = Secret.from_env_var("HR_TEST_MASKED_KEY")
    assert not holds_secret(key)  # not read yet: nothing known
    assert secret.resolve_value() == key
    assert mask_secrets(f"<{key}>") == "<***>"


def test_a_key_cut_short_or_echoed_with_stars_is_masked() -> None:
    key = _key()
    register_secret_value(key)
    assert mask_secrets(f"key: {key[:30]}…") == "key: ***…"  # cut by a length limit
    assert mask_secrets(f"mid {key[10:26]} end") == "mid *** end"  # any 16 characters of it
    starred = f"Incorrect API key provided: {key[:8]}{'*' * 30}{key[-4:]}. See the docs."
    assert mask_secrets(starred) == "Incorrect API key provided: ***. See the docs."
    assert mask_secrets(f"ends {'*' * 20}{key[-4:]}") == "ends ***"
    assert mask_secrets(f"short {key[10:20]} stays") == f"short {key[10:20]} stays"  # 10 characters: too short


def test_short_values_and_unrelated_stars_are_left_alone() -> None:
    Secret.from_token("none")  # a placeholder for a local server: masking it would mask the word everywhere
    assert mask_secrets("none of these") == "none of these"
    register_secret_value(_key())
    assert mask_secrets("a *** b, pass****word") == "a *** b, pass****word"


def test_a_dsn_is_masked_whole_but_not_piece_by_piece() -> None:
    dsn = "postgresql://ann:pw-" + secrets.token_hex(6) + "@db.example:5432/app"
    Secret.from_token(dsn)
    assert mask_secrets(f"cannot reach {dsn}") == "cannot reach ***"
    assert mask_secrets("cannot reach postgresql://ann:***@db.example:5432/app") == (
        "cannot reach postgresql://ann:***@db.example:5432/app"
    )


@pytest.mark.parametrize(
    "error",
    [
        lambda key: HandrailError(f"echo {key}"),
        lambda key: ConfigurationError(f"echo {key}"),
        lambda key: GenerationError(f"answered HTTP 401: {key}", url="http://x", status_code=401),
        lambda key: ToolInvocationError(f"failed: {key}", "tool", "c1"),
    ],
)
def test_every_handrail_error_masks_known_secrets(error: object) -> None:
    key = _key()
    Secret.from_token(key)
    exc = error(key)  # type: ignore[operator]
    assert key not in str(exc) and key not in repr(exc) and "***" in str(exc)
    assert all(key not in str(arg) for arg in exc.args)


def test_a_key_cut_short_with_dots_or_an_ellipsis_is_masked() -> None:
    key = "sk-proj-Zq81LmN0pQrStUvWxYz" + secrets.token_hex(8)
    Secret.from_token(key)
    for shown in (f"{key[:12]}...", f"...{key[-12:]}", f"sk-proj-...{key[-4:]}", f"sk-proj...{key[-4:]}",
                  f"sk-proj…{key[-4:]}", f"{key[:12]}…", f"…{key[-4:]}"):  # fmt: skip
        assert mask_secrets(f"Incorrect API key provided: {shown} (see the docs).") == (
            "Incorrect API key provided: *** (see the docs)."
        ), shown
    assert mask_secrets(f"key:{key[:12]}...") == "key:***"


def test_a_cut_echo_that_reveals_little_or_is_not_the_key_is_left_alone() -> None:
    key = "sk-proj-Zq81LmN0pQrStUvWxYz" + secrets.token_hex(8)
    Secret.from_token(key)
    for text in (
        "keys look like sk-proj-... here",  # the public prefix only
        f"{key[:11]}... shows 3 characters",  # fewer than MIN_REVEALED beyond the prefix
        f"...{key[-3:]} ends it",
        f"...{key[-6:]}abc goes on",  # the key's end inside a longer word
        "Loading... done",
    ):
        assert mask_secrets(text) == text


def test_mask_data_masks_every_string_and_keeps_what_it_did_not_change() -> None:
    key = _key()
    Secret.from_token(key)
    data = {"q": [f"use {key}", {"deep": (key, 1)}], key: None, "n": 3}
    assert mask_data(data) == {"q": ["use ***", {"deep": ("***", 1)}], "***": None, "n": 3}
    clean = {"q": ["nothing", {"deep": ("x", 1)}]}
    assert mask_data(clean) is clean


def test_masking_returns_the_text_itself_when_nothing_is_masked() -> None:
    Secret.from_token(_key())
    text = "An ordinary reply... with *** stars and dots, " * 20
    assert mask_secrets(text) is text
