"""Secret: token and env-var secrets, resolved on use, never serialized in plain text."""

from __future__ import annotations

import json

import pytest

import handrail.core
from handrail.core import Secret
from handrail.core.secret import EnvVarSecret, SecretType, TokenSecret, deserialize_secret
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HR_TEST_KEY", "HR_TEST_KEY_2"):
        monkeypatch.delenv(name, raising=False)


def test_exported_from_core() -> None:
    assert "Secret" in handrail.core.__all__
    assert handrail.core.Secret is Secret


def test_token_secret_resolves_and_hides_its_value() -> None:
    secret = Secret.from_token("sk-abc123")
    assert isinstance(secret, TokenSecret)
    assert secret.type is SecretType.TOKEN
    assert secret.resolve_value() == "sk-abc123"
    for text in (repr(secret), str(secret), repr([secret]), f"{secret}"):
        assert "sk-abc123" not in text
    assert secret == Secret.from_token("sk-abc123")
    assert secret != Secret.from_token("other")


def test_token_secret_refuses_to_serialize() -> None:
    with pytest.raises(SerializationError, match="plain text") as info:
        Secret.from_token("sk-abc123").to_dict()
    assert "sk-abc123" not in str(info.value)


@pytest.mark.parametrize(
    ("token", "error"),
    [("", ConfigurationError), (None, ConfigurationTypeError), (b"sk", ConfigurationTypeError)],
)
def test_token_must_be_a_non_empty_string(token: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        Secret.from_token(token)  # type: ignore[arg-type]


def test_env_var_secret_is_read_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = Secret.from_env_var("HR_TEST_KEY")  # built while the variable is unset
    assert isinstance(secret, EnvVarSecret)
    assert secret.type is SecretType.ENV_VAR
    monkeypatch.setenv("HR_TEST_KEY", "sk-late")
    assert secret.resolve_value() == "sk-late"
    monkeypatch.setenv("HR_TEST_KEY", "sk-changed")
    assert secret.resolve_value() == "sk-changed"
    assert "sk-changed" not in repr(secret)
    assert repr(secret) == "Secret.from_env_var('HR_TEST_KEY', strict=True)"


def test_first_set_variable_wins_and_empty_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = Secret.from_env_var(["HR_TEST_KEY", "HR_TEST_KEY_2"])
    monkeypatch.setenv("HR_TEST_KEY_2", "second")
    assert secret.resolve_value() == "second"
    monkeypatch.setenv("HR_TEST_KEY", "")
    assert secret.resolve_value() == "second"
    monkeypatch.setenv("HR_TEST_KEY", "first")
    assert secret.resolve_value() == "first"


def test_strict_secret_names_the_missing_variables() -> None:
    with pytest.raises(ConfigurationError, match="HR_TEST_KEY, HR_TEST_KEY_2"):
        Secret.from_env_var(["HR_TEST_KEY", "HR_TEST_KEY_2"]).resolve_value()
    assert Secret.from_env_var("HR_TEST_KEY", strict=False).resolve_value() is None


@pytest.mark.parametrize(
    ("names", "error"),
    [
        ([], ConfigurationError),
        ("", ConfigurationError),
        (["A", ""], ConfigurationError),
        (5, ConfigurationTypeError),
        ([1], ConfigurationTypeError),
    ],
)
def test_env_var_names_are_checked(names: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        Secret.from_env_var(names)  # type: ignore[arg-type]


def test_env_var_secret_round_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HR_TEST_KEY", "sk-never-written")
    secret = Secret.from_env_var(["HR_TEST_KEY", "HR_TEST_KEY_2"], strict=False)
    data = secret.to_dict()
    assert data == {"type": "env_var", "env_vars": ["HR_TEST_KEY", "HR_TEST_KEY_2"], "strict": False}
    assert "sk-never-written" not in json.dumps(data)
    copy = json.loads(json.dumps(data))
    assert Secret.from_dict(copy) == secret
    assert copy == data  # not modified
    assert deserialize_secret(data) == secret
    assert hash(Secret.from_dict(data)) == hash(secret)


def test_deserialize_secret_passes_none_and_secrets_through() -> None:
    secret = Secret.from_token("sk")
    assert deserialize_secret(None) is None
    assert deserialize_secret(secret) is secret
    with pytest.raises(SerializationError):
        deserialize_secret("HR_TEST_KEY")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        {"type": "token", "token": "sk-abc"},
        {"type": "env_var"},
        {"type": "env_var", "env_vars": []},
        {"type": "vault", "path": "x"},
        {},
    ],
)
def test_bad_secret_dicts_are_refused(data: dict[str, object]) -> None:
    with pytest.raises(SerializationError):
        Secret.from_dict(data)


def test_secret_is_abstract() -> None:
    with pytest.raises(TypeError):
        Secret()  # type: ignore[abstract]
