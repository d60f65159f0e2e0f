"""Running blocking code from async code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["to_thread"]

T = TypeVar("T")


async def to_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``function`` in a worker thread (like ``asyncio.to_thread``, context variables included).

    A ``StopIteration`` raised by ``function`` cannot cross an asyncio Future (the awaiting
    task would hang), so it is re-raised as ``RuntimeError`` with the original as its cause.

    Raises:
        RuntimeError: When ``function`` raised StopIteration.
        Exception: Whatever else ``function`` raised.
    """

    def call() -> T:
        try:
            return function(*args, **kwargs)
        except StopIteration as exc:
            name = getattr(function, "__qualname__", repr(function))
            raise RuntimeError(f"{name} raised StopIteration (e.g. next() on an exhausted iterator)") from exc

    import asyncio  # imported on first use: keeps `import handrail` fast

    return await asyncio.to_thread(call)
