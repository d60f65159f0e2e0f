"""Secrets (API keys, tokens): read from the environment on use, never written out in plain text.

A :class:`Secret` is either a token held in memory (:meth:`Secret.from_token`) or the names
of environment variables to read when the value is needed (:meth:`Secret.from_env_var`).
Only the second kind serializes, and it serializes to the variable names, never the value::

    {"type": "env_var", "env_vars": ["OPENAI_API_KEY"], "strict": true}

A token secret refuses to serialize, so a configuration file or a snapshot can never
hold a key. Neither kind shows its value in ``repr``. Every value a secret holds or resolves to is
remembered, and :func:`mask_secrets` masks it out of error messages, tool results and what the CLI
prints (see :mod:`handrail.core._secret_values`).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from handrail.core._secret_values import holds_secret, holds_secret_value, mask_secrets, register_secret_value
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError

__all__ = [
    "EnvVarSecret",
    "Secret",
    "SecretType",
    "TokenSecret",
    "deserialize_secret",
    "holds_secret",
    "holds_secret_value",
    "mask_secrets",
    "register_secret_value",
]


class SecretType(StrEnum):
    """The kind of a secret: ``"token"`` (held in memory) or ``"env_var"`` (read from the environment)."""

    TOKEN = "token"
    ENV_VAR = "env_var"


class Secret(ABC):
    """A secret value such as an API key; build it with :meth:`from_token` or :meth:`from_env_var`.

    Examples:
        >>> key = Secret.from_env_var("HANDRAIL_DOCTEST_KEY", strict=False)
        >>> key.to_dict()
        {'type': 'env_var', 'env_vars': ['HANDRAIL_DOCTEST_KEY'], 'strict': False}
        >>> Secret.from_token("sk-123")
        Secret.from_token('***')
    """

    @staticmethod
    def from_token(token: str) -> TokenSecret:
        """Hold ``token`` in memory (it cannot be serialized).

        Args:
            token: The secret value, non-empty. For a local server that needs no key, any
                placeholder such as ``"none"`` works.

        Returns:
            A :class:`TokenSecret`.

        Raises:
            ConfigurationTypeError: When ``token`` is not a string.
            ConfigurationError: When ``token`` is empty.
        """
        return TokenSecret(token)

    @staticmethod
    def from_env_var(env_vars: str | list[str], *, strict: bool = True) -> EnvVarSecret:
        """Read the value from environment variables when it is needed (not now).

        Args:
            env_vars: One variable name, or names tried in order; the first one that is set to a
                non-empty value wins.
            strict: When True, resolving raises if none is set; when False it returns None.

        Returns:
            An :class:`EnvVarSecret`.

        Raises:
            ConfigurationTypeError: When ``env_vars`` is not a string or a list of strings.
            ConfigurationError: When no name, or an empty name, is given.
        """
        names = [env_vars] if isinstance(env_vars, str) else env_vars
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            raise ConfigurationTypeError(
                f"Secret.from_env_var needs a variable name or a list of names, got {env_vars!r}."
            )
        return EnvVarSecret(tuple(names), strict=strict)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Secret:
        """Rebuild a secret written by :meth:`to_dict` (``data`` is not modified).

        Raises:
            SerializationError: For a token secret (never serialized), an unknown ``type`` or
                missing ``env_vars``.
        """
        kind = data.get("type")
        if kind == SecretType.ENV_VAR:
            env_vars = data.get("env_vars")
            if not isinstance(env_vars, list) or not env_vars:
                raise SerializationError(f"An env_var secret needs a non-empty 'env_vars' list, got {data!r}.")
            return Secret.from_env_var(list(env_vars), strict=bool(data.get("strict", True)))
        if kind == SecretType.TOKEN:
            raise SerializationError(
                "Cannot deserialize a token secret: tokens are never serialized. Use Secret.from_env_var(...)."
            )
        raise SerializationError(f"Unknown secret type {kind!r}; expected 'env_var'. Data keys: {sorted(data)}.")

    @property
    @abstractmethod
    def type(self) -> SecretType:
        """The kind of this secret."""

    @abstractmethod
    def resolve_value(self) -> str | None:
        """Return the secret's value now.

        Returns:
            The value, or None for a non-strict env-var secret whose variables are all unset.

        Raises:
            ConfigurationError: For a strict env-var secret whose variables are all unset (the
                message names them).
        """

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-compatible dict that never holds the value.

        Raises:
            SerializationError: For a token secret.
        """


@dataclass(frozen=True, eq=True)
class TokenSecret(Secret):
    """A secret held in memory. It cannot be serialized and its ``repr`` hides it."""

    _token: str = field(repr=False)
    """The value."""

    def __post_init__(self) -> None:
        if not isinstance(self._token, str):
            raise ConfigurationTypeError(f"Secret.from_token needs a str, got {type(self._token).__name__}.")
        if not self._token:
            raise ConfigurationError("Secret.from_token needs a non-empty token.")
        register_secret_value(self._token)

    def __repr__(self) -> str:
        return "Secret.from_token('***')"

    @property
    def type(self) -> SecretType:
        """Always :attr:`SecretType.TOKEN`."""
        return SecretType.TOKEN

    def resolve_value(self) -> str:
        """Return the token."""
        return self._token

    def to_dict(self) -> dict[str, Any]:
        """Refuse: a token would be written in plain text.

        Raises:
            SerializationError: Always.
        """
        raise SerializationError(
            "Cannot serialize a token secret: the key would be written in plain text. "
            "Use Secret.from_env_var('NAME') so only the variable name is written."
        )


@dataclass(frozen=True, eq=True)
class EnvVarSecret(Secret):
    """A secret read from environment variables each time it is resolved."""

    env_vars: tuple[str, ...]
    """Variable names, tried in order."""
    strict: bool = True
    """Raise when resolving finds none of them set (else resolve to None)."""

    def __post_init__(self) -> None:
        if not self.env_vars or not all(self.env_vars):
            raise ConfigurationError(f"Secret.from_env_var needs at least one non-empty name, got {self.env_vars!r}.")
        if not isinstance(self.strict, bool):
            raise ConfigurationTypeError(f"Secret.from_env_var: strict must be a bool, got {self.strict!r}.")

    def __repr__(self) -> str:
        names = self.env_vars[0] if len(self.env_vars) == 1 else list(self.env_vars)
        return f"Secret.from_env_var({names!r}, strict={self.strict})"

    @property
    def type(self) -> SecretType:
        """Always :attr:`SecretType.ENV_VAR`."""
        return SecretType.ENV_VAR

    def resolve_value(self) -> str | None:
        """Return the value of the first variable set to a non-empty value.

        Returns:
            The value, or None when none is set and the secret is not strict.

        Raises:
            ConfigurationError: When none is set and the secret is strict (the message names them).
        """
        for name in self.env_vars:
            value = os.environ.get(name)
            if value:
                register_secret_value(value)
                return value
        if self.strict:
            listed = ", ".join(self.env_vars)
            raise ConfigurationError(f"None of the environment variables holding the secret is set: {listed}.")
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"type": "env_var", "env_vars": [...], "strict": bool}``."""
        return {"type": SecretType.ENV_VAR.value, "env_vars": list(self.env_vars), "strict": self.strict}


def deserialize_secret(data: Mapping[str, Any] | Secret | None) -> Secret | None:
    """Rebuild a secret from :meth:`Secret.to_dict` output; a Secret or None passes through.

    Raises:
        SerializationError: See :meth:`Secret.from_dict`.
    """
    if data is None or isinstance(data, Secret):
        return data
    if not isinstance(data, Mapping):
        raise SerializationError(f"Expected a secret dict, got {type(data).__name__}.")
    return Secret.from_dict(data)
