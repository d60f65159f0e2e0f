"""Module-level hook functions and builders used by the hook tests (importable by dotted path)."""

from __future__ import annotations

from typing import Any

from handrail.dataclasses import ChatMessage, State
from handrail.hooks import hook

recorded: list[tuple[str, Any]] = []


def record(state: State) -> None:
    recorded.append(("sync", state))


async def record_async(state: State) -> None:
    recorded.append(("async", state))


@hook
def decorated(state: State) -> None:
    state.data["stop_run"] = "decorated"


@hook
async def decorated_async(state: State) -> None:
    state.data["stop_run"] = "decorated_async"


def state_with(messages: list[ChatMessage], **data: Any) -> State:
    state = State()
    state.data["messages"] = list(messages)
    state.data.update(data)
    return state
