"""The agent's two thin drivers: they execute effects and hold no loop logic.

Tool effects are executed by the shared drivers of the tool step; this module adds the
model call, sync and async. Both run a ``RunHooks`` effect's hooks in order and check the reserved
State keys after each one (:func:`~handrail.components.agents._hook_checks.check_after_hook`).
"""

from __future__ import annotations

import inspect
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.components.agents._confirm import ConfirmCalls, confirm_async, confirm_sync
from handrail.components.agents._hook_checks import check_after_hook
from handrail.components.agents._machine import CallModel, Effect, RunHooks
from handrail.components.agents._pause_effects import Finish, Pause
from handrail.components.tools._execution import drive_async, drive_sync
from handrail.core._threads import to_thread
from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.dataclasses.streaming import StreamingCallback, StreamingChunk, is_async_callback
from handrail.errors import RunError

if TYPE_CHECKING:
    import asyncio

__all__ = ["ModelCall", "run_machine_async", "run_machine_sync"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """How to call the chat generator in this run."""

    generator: Any
    """The chat generator."""
    extra: dict[str, Any]
    """Keyword arguments besides messages and tools (streaming_callback, generation_kwargs)."""
    pass_tools: bool
    """True when the generator's run accepts ``tools``."""
    callback: StreamingCallback | None
    """The run's streaming callback (also receives the tool-result chunks)."""


_ASSISTANT = ChatRole.ASSISTANT


def _replies(output: Any, generator: Any) -> list[ChatMessage]:
    replies = output.get("replies") if type(output) is dict else None
    if (
        type(replies) is list
        and len(replies) == 1
        and type(replies[0]) is ChatMessage
        and replies[0].role is _ASSISTANT
    ):
        return replies  # the common case, checked cheaply
    if not isinstance(replies, list) or not all(isinstance(r, ChatMessage) for r in replies):
        raise RunError(
            f"{type(generator).__name__}.run must return {{'replies': [ChatMessage, ...]}}, got {output!r:.200}"
        )
    if not replies:  # nothing to append, answer or run: the run would end on the user's own message or loop
        raise RunError(f"{type(generator).__name__}.run returned no replies ({{'replies': []}}); it must return one.")
    for i, reply in enumerate(replies):
        if reply.role is not _ASSISTANT:  # a user or tool "reply" would be taken as the answer, or loop
            raise RunError(
                f"{type(generator).__name__}.run returned a {reply.role.value} message as replies[{i}]; "
                f"replies must be assistant messages (ChatMessage.from_assistant)."
            )
    return replies


def run_machine_sync(machine: Generator[Effect, Any, None], model: ModelCall) -> None:
    """Drive the step machine synchronously."""
    run, extra, generator = model.generator.run, model.extra, model.generator

    def call_model(effect: CallModel | ConfirmCalls | RunHooks | Pause | Finish) -> Any:
        if type(effect) is RunHooks:
            for hook in effect.hooks:
                hook.run(effect.state)
                check_after_hook(hook, effect.point, effect.state.data)
            return None
        if type(effect) is Pause or type(effect) is Finish:
            return effect.execute()
        if type(effect) is ConfirmCalls:
            return confirm_sync(effect)
        assert type(effect) is CallModel
        if model.pass_tools:
            return _replies(run(messages=effect.messages, tools=effect.tools, **extra), generator)
        return _replies(run(messages=effect.messages, **extra), generator)

    drive_sync(machine, call_model, model.callback)


def _threadsafe_callback(callback: StreamingCallback, loop: asyncio.AbstractEventLoop) -> StreamingCallback:
    """Wrap an async callback so a sync-only generator running in a worker thread can call it."""
    import asyncio

    def call(chunk: StreamingChunk) -> None:
        result = callback(chunk)
        if inspect.isawaitable(result):
            asyncio.run_coroutine_threadsafe(_await(result), loop).result()

    return call


async def _await(awaitable: Any) -> None:
    await awaitable


async def run_machine_async(machine: Generator[Effect, Any, None], model: ModelCall) -> None:
    """Drive the step machine on the running event loop."""
    generator = model.generator
    run_async = getattr(generator, "run_async", None)

    async def call_model(effect: CallModel | ConfirmCalls | RunHooks | Pause | Finish) -> Any:
        if type(effect) is Pause or type(effect) is Finish:
            return effect.execute()  # synchronous on purpose: a cancellation cannot split a snapshot write
        if type(effect) is RunHooks:
            for hook in effect.hooks:
                run_hook_async = getattr(hook, "run_async", None)
                if run_hook_async is not None:
                    await run_hook_async(effect.state)
                else:
                    hook.run(effect.state)
                check_after_hook(hook, effect.point, effect.state.data)
            return None
        if type(effect) is ConfirmCalls:
            return await confirm_async(effect)
        assert type(effect) is CallModel
        kwargs = dict(model.extra)
        if model.pass_tools:
            kwargs["tools"] = effect.tools
        if run_async is not None:
            return _replies(await run_async(messages=effect.messages, **kwargs), generator)
        callback = kwargs.get("streaming_callback")
        if callback is not None and is_async_callback(callback):
            import asyncio

            kwargs["streaming_callback"] = _threadsafe_callback(callback, asyncio.get_running_loop())
        return _replies(await to_thread(generator.run, messages=effect.messages, **kwargs), generator)

    await drive_async(machine, call_model, model.callback)
