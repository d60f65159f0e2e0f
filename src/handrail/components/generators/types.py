"""The chat generator protocols: what the Agent needs from a model backend.

A chat generator is any object with a sync ``run`` of the shape of :class:`ChatGenerator`; the Agent
calls it with keyword arguments only, so the order of the parameters after ``messages`` is free. An
async run uses ``run_async`` when the generator has one (:class:`AsyncChatGenerator`), and otherwise
sends the sync ``run`` to a worker thread. Optional as well, and called when present: ``warm_up()``
(once, before the first run), ``close()`` (by ``Agent.close()``) and ``to_dict()`` / ``from_dict(data)``
(to serialize an Agent holding the generator).

The Agent passes ``tools``, ``streaming_callback`` and ``generation_kwargs`` only when the run has them;
at run time a generator whose ``run`` lacks one of these parameters still works as long as the run never
needs to pass it (no tools, no callback, no generation settings), but type checkers see the full shape.

A generator may say what its model takes: ``accepts_tool_result_images = True`` (a class or instance attribute)
means it sends the images of a tool result (``ToolCallResult.result`` as content parts) to its model. Without
it, or when False, the images are not shown to the model (handrail's generators send a placeholder text in
their place), so a tool can return text instead; read it with :func:`accepts_tool_result_images`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import StreamingCallback
from handrail.tools.tool import Tool

__all__ = ["AsyncChatGenerator", "ChatGenerator", "accepts_tool_result_images"]


@runtime_checkable
class ChatGenerator(Protocol):
    """A model backend the Agent can call: ``run(messages, ...) -> {"replies": [ChatMessage, ...]}``.

    ``run`` must be a plain (sync) method; an ``async def run`` is refused when the Agent is built. Return
    at least one reply, each an assistant message (``ChatMessage.from_assistant``); tool calls go in the
    reply's ``tool_calls``. ``isinstance(obj, ChatGenerator)`` checks only that ``run`` exists.

    Examples:
        >>> class Echo:
        ...     def run(self, messages, *, tools=None, streaming_callback=None, generation_kwargs=None):
        ...         return {"replies": [ChatMessage.from_assistant(f"you said: {messages[-1].text}")]}
        >>> isinstance(Echo(), ChatGenerator)
        True
        >>> Echo().run([ChatMessage.from_user("hi")])["replies"][0].text
        'you said: hi'
    """

    def run(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[Tool] | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> Mapping[str, list[ChatMessage]]:
        """Answer the conversation.

        Args:
            messages: The model input, oldest first (a copy: the generator may keep it).
            tools: The tools the model may call, or None when the run has none.
            streaming_callback: Called with each :class:`~handrail.dataclasses.streaming.StreamingChunk` as it
                arrives, when the run streams; a sync run passes only a sync callback.
            generation_kwargs: Model settings for this call (temperature, max tokens, ...), to merge over the
                generator's own.

        Returns:
            ``{"replies": [ChatMessage, ...]}``: one or more assistant messages.
        """
        ...


@runtime_checkable
class AsyncChatGenerator(ChatGenerator, Protocol):
    """A :class:`ChatGenerator` that also has ``run_async``, which async runs await instead of ``run``.

    ``run_async`` takes and returns what ``run`` does, must be a coroutine function (``async def``) and must
    not block the event loop; an async streaming callback is awaited. ``isinstance(obj, AsyncChatGenerator)``
    is how to tell the two kinds apart (it checks that ``run`` and ``run_async`` exist).
    """

    async def run_async(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[Tool] | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> Mapping[str, list[ChatMessage]]:
        """Async twin of :meth:`ChatGenerator.run` (same arguments and result)."""
        ...


def accepts_tool_result_images(generator: object) -> bool:
    """Whether ``generator`` sends the images of a tool result to its model (its ``accepts_tool_result_images``).

    True only when the generator (its class or the object) sets ``accepts_tool_result_images = True``; False for
    a generator without the attribute, which is every generator written before it existed. handrail's
    ``OpenAIChatGenerator`` (OpenAI's Chat API takes text only in a tool message) and ``LlamaCppChatGenerator``
    (the embedded model reads text only) say False: each image reaches the model as a placeholder text,
    ``[image: image/png, 12,345 bytes, not shown to this model]``.

    Args:
        generator: A chat generator (any object).

    Examples:
        >>> class VisionModel:
        ...     accepts_tool_result_images = True
        >>> accepts_tool_result_images(VisionModel()), accepts_tool_result_images(object())
        (True, False)
    """
    return getattr(generator, "accepts_tool_result_images", False) is True


if TYPE_CHECKING:  # checked by mypy only: handrail's own generators have the protocols' shape
    from handrail.components.generators.chat.llama_cpp import LlamaCppChatGenerator
    from handrail.components.generators.chat.openai import OpenAIChatGenerator
    from handrail.testing.scripted import ScriptedChatGenerator

    def _conforming(
        openai: OpenAIChatGenerator, llama: LlamaCppChatGenerator, scripted: ScriptedChatGenerator
    ) -> list[AsyncChatGenerator]:
        return [openai, llama, scripted]
