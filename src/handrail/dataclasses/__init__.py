"""Data types: messages, streaming chunks, State."""

from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent, ToolCall, ToolCallResult
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import (
    ChunkAssembler,
    StreamingCallback,
    StreamingChunk,
    ToolCallDelta,
    assemble_chunks,
)

__all__ = [
    "ChatMessage",
    "ChatRole",
    "ChunkAssembler",
    "State",
    "StreamingCallback",
    "StreamingChunk",
    "TextContent",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallResult",
    "assemble_chunks",
]
