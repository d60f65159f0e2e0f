"""Streaming helpers, where Haystack code imports them from (``haystack.components.generators.utils``)."""

from __future__ import annotations

import sys
from typing import TextIO

from handrail.core.serialization import file_safe
from handrail.dataclasses.chat_message import result_text
from handrail.dataclasses.streaming import StreamingChunk

__all__ = ["print_streaming_chunk"]


@file_safe  # a file may name it as a streaming_callback: it only prints
def print_streaming_chunk(chunk: StreamingChunk, *, file: TextIO | None = None) -> None:
    """Print a streamed reply as it arrives: text, tool calls and tool results, each block under a label.

    A streaming callback for any chat generator, the Agent or the ToolInvoker. Text is printed under
    ``[ASSISTANT]``, a tool call under ``[TOOL CALL]`` with its name and its arguments as they stream, a tool
    result under ``[TOOL RESULT]`` (a result of content parts as its text, each image as its placeholder text,
    where Haystack prints the list); a blank line ends each reply. Output is flushed at once.

    The text is the model's: it is printed as it came, so a terminal shows control characters the model sent.
    Pass ``file`` to print somewhere other than standard output.

    Args:
        chunk: One chunk of the stream.
        file: Where to print (default: ``sys.stdout`` at call time).

    Examples:
        >>> print_streaming_chunk(StreamingChunk(content="Hi", start=True, index=0))
        [ASSISTANT]
        Hi
    """
    out = file if file is not None else sys.stdout
    if chunk.start and chunk.index:
        out.write("\n\n")  # a new block after the first one
    for delta in chunk.tool_calls or ():
        if chunk.start:
            if chunk.index is not None and delta.index > chunk.index:
                out.write("\n\n")
            out.write(f"[TOOL CALL]\nTool: {delta.tool_name} \nArguments: ")
        if delta.arguments:
            out.write(delta.arguments)
    if chunk.tool_call_result is not None:
        out.write(f"[TOOL RESULT]\n{result_text(chunk.tool_call_result, image_placeholders=True)}")
    if chunk.content:
        if chunk.start:
            out.write("[ASSISTANT]\n")
        out.write(chunk.content)
    if chunk.finish_reason is not None:
        out.write("\n\n")
    out.flush()
