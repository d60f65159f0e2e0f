"""What the chat message stores and the memory stores share: serializing as their constructor's arguments."""

from __future__ import annotations

from typing import Any, Self

from handrail.core.serialization import default_from_dict, default_to_dict

__all__ = ["StoreBase"]


class StoreBase:
    """A store written as ``{"type": <class path>, "init_parameters": {...}}``.

    A backend lists its constructor's arguments in :meth:`_init_parameters` and, when one needs more than JSON
    to come back (a Secret), rebuilds it in :meth:`_read_envelope`.
    """

    def _init_parameters(self) -> dict[str, Any]:
        """The constructor's arguments, as JSON data (never a password)."""
        return {}

    @classmethod
    def _read_envelope(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` made ready for :func:`~handrail.core.serialization.default_from_dict`."""
        return data

    def to_dict(self) -> dict[str, Any]:
        """``{"type": <class path>, "init_parameters": {...}}``: the constructor's arguments, never a password.

        The stored messages or memories are not included. A PostgreSQL store writes a Secret DSN as its variable
        names and a string DSN as is.

        Raises:
            SerializationError: (PostgreSQL) The DSN is a string holding a password, or a token Secret: it would
                be written in plain text. Pass ``dsn=Secret.from_env_var(...)`` instead.
        """
        return default_to_dict(self, **self._init_parameters())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """A store built from :meth:`to_dict` output.

        It opens the same file or database (an in-memory store comes back empty); a Secret DSN is read from its
        variable now.

        Raises:
            SerializationError: ``data`` is not this class's envelope (for PostgreSQL also: unknown or missing
                parameters, or a bad secret).
        """
        store: Self = default_from_dict(cls, cls._read_envelope(data))
        return store
