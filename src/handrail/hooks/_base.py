"""Plumbing shared by the ready-made hooks: serialization, ``run_async``, ``repr``."""

from __future__ import annotations

from typing import Any, ClassVar, Self

from handrail.core.serialization import default_from_dict, default_to_dict, init_parameters
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks.types import HookPoint

__all__ = ["ReadyMadeHook", "check_int"]


def check_int(owner: str, name: str, value: Any, minimum: int) -> int:
    """Return ``value`` when it is an int (not a bool) of at least ``minimum``.

    Raises:
        ConfigurationTypeError: When ``value`` is not an int.
        ConfigurationError: When it is below ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationTypeError(f"{owner}: {name} must be an int, got {type(value).__name__}.")
    if value < minimum:
        raise ConfigurationError(f"{owner}: {name} must be at least {minimum}, got {value}.")
    return value


class ReadyMadeHook:
    """Base of the ready-made hooks: subclasses define ``run`` and ``_init_parameters``."""

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]]
    """The points the hook may be placed at."""

    def run(self, state: State) -> None:
        """Read and change the run's State (defined by each hook).

        Args:
            state: The run's live State.
        """
        raise NotImplementedError

    async def run_async(self, state: State) -> None:
        """Run :meth:`run` directly: the ready-made hooks do no I/O.

        Args:
            state: The run's live State.
        """
        self.run(state)

    def _init_parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type": <class path>, "init_parameters": {...}}``."""
        return default_to_dict(self, **self._init_parameters())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is missing, names an unknown parameter or
                lacks a required one, or ``type`` names another class.
            ConfigurationError: When a value is out of range (as the constructor checks it).
        """
        init_parameters(data, cls)
        hook: Self = default_from_dict(cls, data)
        return hook

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._init_parameters().items())
        return f"{type(self).__name__}({params})"
