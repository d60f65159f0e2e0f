"""FunctionChatGenerator: a fake chat model whose replies a function computes from the messages, for tests."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from handrail.core.component import component
from handrail.core.serialization import deserialize_callable, init_parameters, qualified_name, serialize_callable
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import StreamingCallback, StreamingChunk, is_async_callback
from handrail.errors import ConfigurationTypeError, GenerationError, SerializationError
from handrail.testing._replies import deliver, deliver_async

__all__ = ["FunctionChatGenerator", "Reply", "ReplyFunction"]

Reply = ChatMessage | str | list[StreamingChunk]
"""What the function returns: the reply, its text (an assistant message), or chunks to stream."""

ReplyFunction = Callable[[list[ChatMessage], list[Any] | None], Reply | Awaitable[Reply]]
"""``function(messages, tools) -> Reply``, sync or ``async def``."""


@component
class FunctionChatGenerator:
    """A chat generator whose every reply is ``function(messages, tools)``; it records what it was sent.

    The function sees the whole conversation of each call (the system prompt, the user's messages, the model's
    earlier replies, the tool results) and the tools offered, so a test can answer a tool result, refuse a
    call or count the steps without scripting every turn in advance. It returns a ChatMessage (the reply), a
    str (the text of an assistant reply), or a list of StreamingChunk (sent to the streaming callback one by
    one, then assembled into one message). What it raises is the model's failure, as a server error would be.

    The function may be ``async def``: :meth:`run_async` awaits it, and :meth:`run` refuses it (nothing is
    recorded). A sync function serves both.

    Args:
        function: Computes each reply from ``(messages, tools)``; ``tools`` is the list offered, or None.
        tools: Tools offered by default (used when a run passes none), as ``OpenAIChatGenerator(tools=...)``
            takes them.

    Raises:
        ConfigurationTypeError: ``function`` is not callable.

    Examples:
        >>> gen = FunctionChatGenerator(lambda messages, tools: f"you said {messages[-1].text}")
        >>> gen.run([ChatMessage.from_user("hello")])["replies"][0].text
        'you said hello'
    """

    accepts_tool_result_images: bool = False
    """Whether the fake stands for a generator whose model takes a tool result's images
    (:func:`~handrail.components.generators.types.accepts_tool_result_images`); set it to True on an instance to
    test a tool that returns images only to such models. The fake records messages as they were sent either way."""

    def __init__(self, function: ReplyFunction, tools: Any = None) -> None:
        if not callable(function):
            raise ConfigurationTypeError(
                f"FunctionChatGenerator needs a function (messages, tools) -> reply, got {type(function).__name__}."
            )
        self.function = function
        self.tools = tools
        """Tools offered by default (a list of Tool / Toolset, or None)."""
        self.calls: list[dict[str, Any]] = []
        """One dict per call with keys "messages", "tools", "generation_kwargs" (copies)."""

    def _record(self, messages: list[ChatMessage], tools: Any, generation_kwargs: dict[str, Any] | None) -> Any:
        """Record the call (as ScriptedChatGenerator does) and return the tools the function sees."""
        tools = tools if tools is not None else self.tools
        try:
            recorded = copy.deepcopy(list(messages))
        except RecursionError:  # arguments nested past the recursion limit: recorded by reference
            recorded = list(messages)
        offered = list(tools) if tools is not None else None
        self.calls.append(
            {
                "messages": recorded,
                "tools": offered,
                "generation_kwargs": copy.deepcopy(generation_kwargs) if generation_kwargs is not None else None,
            }
        )
        return offered

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Return ``{"replies": [function(messages, tools)]}``.

        Args:
            messages: The model input (recorded; the function gets the list as given).
            tools: The tools offered (recorded); None: the default ``tools``.
            streaming_callback: A sync callback that receives the chunks the function returns.
            generation_kwargs: Generation settings (recorded, not passed to the function).

        Raises:
            ConfigurationTypeError: The function is ``async def`` (use :meth:`run_async`), or the callback is a
                coroutine function.
            GenerationError: The function returned none of the three kinds of reply (a RunError: the run
                is under way; the message names what it returned).
            Exception: What the function raised.
        """
        if inspect.iscoroutinefunction(self.function) or is_async_callback(self.function):
            raise ConfigurationTypeError(
                "FunctionChatGenerator.run needs a sync function; this one is async def: call run_async "
                "(Agent.run_async) or give a sync function."
            )
        if streaming_callback is not None and is_async_callback(streaming_callback):
            raise ConfigurationTypeError("FunctionChatGenerator.run needs a sync streaming callback.")
        offered = self._record(messages, tools, generation_kwargs)
        value = self.function(messages, offered)
        if inspect.isawaitable(value):
            if inspect.iscoroutine(value):
                value.close()  # never awaited: close it so Python does not warn
            raise ConfigurationTypeError(
                "FunctionChatGenerator's function returned an awaitable under run; call run_async instead."
            )
        return deliver(_checked(value), streaming_callback)

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Any = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async twin of :meth:`run`: the function may be ``async def`` (awaited); the callback sync or async."""
        offered = self._record(messages, tools, generation_kwargs)
        value = self.function(messages, offered)
        if inspect.isawaitable(value):
            value = await value
        return await deliver_async(_checked(value), streaming_callback)

    def to_dict(self) -> dict[str, Any]:
        """Serialize: the function by its dotted path (a module-level function; a lambda cannot be written).

        Raises:
            SerializationError: The function is a lambda, a closure or a bound method.
        """
        params: dict[str, Any] = {"function": serialize_callable(self.function)}
        if self.tools is not None:
            from handrail.tools.utils import serialize_tools

            params["tools"] = serialize_tools(self.tools)
        return {"type": qualified_name(self), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FunctionChatGenerator:
        """Rebuild from :meth:`to_dict` output; under an allowlist (an agent file) the function must be in it.

        Raises:
            SerializationError: No ``function``, or a path that cannot be imported (or is not allowed).
        """
        params = init_parameters(data, cls)
        path = params.get("function")
        if not isinstance(path, str):
            raise SerializationError(
                f"FunctionChatGenerator: 'function' must be a dotted path, got {type(path).__name__} {path!r:.80}.",
                path=("init_parameters", "function"),
            )
        function = deserialize_callable(path, where="FunctionChatGenerator.function")
        tools = params.get("tools")
        if tools is not None:
            from handrail.tools.utils import deserialize_tools

            tools = deserialize_tools(tools)
        return cls(function, tools=tools)


def _checked(value: Any) -> ChatMessage | list[StreamingChunk]:
    """The function's reply as a message or chunks; a str becomes an assistant message."""
    if isinstance(value, str):
        return ChatMessage.from_assistant(value)
    if isinstance(value, ChatMessage):
        return value
    if isinstance(value, list) and all(isinstance(chunk, StreamingChunk) for chunk in value):
        return value
    raise GenerationError(
        f"FunctionChatGenerator's function returned {type(value).__name__} {value!r:.80}; it must return a "
        f"ChatMessage, a str or a list of StreamingChunk."
    )
