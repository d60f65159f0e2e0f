"""Running blocking code from async code, and locks that survive copying."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["FreshLockOnCopy", "to_thread"]

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


class FreshLockOnCopy:
    """For objects that keep a ``threading.Lock`` in ``_warm_lock``: a copy gets a new lock.

    A lock cannot be copied or pickled, so ``copy.copy``, ``copy.deepcopy`` and pickle leave it out of the
    state and :meth:`__setstate__` makes the copy its own. Used by the Agent and the Pipeline.
    """

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state.pop("_warm_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        vars(self)["_warm_lock"] = threading.Lock()
