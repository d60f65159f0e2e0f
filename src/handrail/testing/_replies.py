"""How a fake chat model hands over one reply: a message as it is, chunks streamed then assembled."""

from __future__ import annotations

import inspect

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import ChunkAssembler, StreamingCallback, StreamingChunk

__all__ = ["deliver", "deliver_async"]


def deliver(
    item: ChatMessage | list[StreamingChunk], callback: StreamingCallback | None
) -> dict[str, list[ChatMessage]]:
    """``{"replies": [message]}``: a message as it is, or chunks sent to the sync ``callback`` and assembled.

    The chunks go to the callback one by one, in order, then become one assistant message.
    """
    if isinstance(item, ChatMessage):
        return {"replies": [item]}
    assembler = ChunkAssembler()
    for chunk in item:
        if callback is not None:
            callback(chunk)
        assembler.add(chunk)
    return {"replies": [assembler.message()]}


async def deliver_async(
    item: ChatMessage | list[StreamingChunk], callback: StreamingCallback | None
) -> dict[str, list[ChatMessage]]:
    """Async twin of :func:`deliver`; the callback may be sync or async."""
    if isinstance(item, ChatMessage):
        return {"replies": [item]}
    assembler = ChunkAssembler()
    for chunk in item:
        if callback is not None:
            result = callback(chunk)
            if inspect.isawaitable(result):
                await result
        assembler.add(chunk)
    return {"replies": [assembler.message()]}
