"""``deserialize_secrets_inplace``: Haystack's helper that turns secret dicts of init parameters into secrets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from handrail.core.secret import deserialize_secret
from handrail.errors import SerializationError

__all__ = ["deserialize_secrets_inplace"]


def deserialize_secrets_inplace(data: dict[str, Any], keys: Iterable[str], *, recursive: bool = False) -> None:
    """Replace each secret dict under ``keys`` of ``data`` with the :class:`Secret` it describes.

    Keys that are absent or hold ``None`` are left alone, as Haystack does. With ``recursive``, nested dicts are
    searched for the same keys.

    Args:
        data: A component's ``init_parameters`` (changed in place).
        keys: The names of the parameters that hold secrets.
        recursive: Also look inside nested dicts.

    Raises:
        SerializationError: A value under one of ``keys`` is not a secret dict (the message names the key).

    Examples:
        >>> params = {"api_key": {"type": "env_var", "env_vars": ["OPENAI_API_KEY"], "strict": False}}
        >>> deserialize_secrets_inplace(params, keys=["api_key"])
        >>> type(params["api_key"]).__name__
        'EnvVarSecret'
    """
    wanted = list(keys)
    for key in wanted:
        value = data.get(key)
        if value is None:
            continue
        try:
            data[key] = deserialize_secret(value)
        except SerializationError as error:
            raise SerializationError(f"Cannot read the secret under {key!r}: {error}") from None
    if recursive:
        for key, value in data.items():
            if key not in wanted and isinstance(value, dict):
                deserialize_secrets_inplace(value, wanted, recursive=True)
