"""Data types: messages, streaming chunks, State, breakpoints and snapshots."""

from handrail.dataclasses.breakpoints import (
    AgentBreakpoint,
    Breakpoint,
    BreakpointException,
    HITLBreakpointException,
    ToolBreakpoint,
)
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, TextContent, ToolCall, ToolCallResult
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, load_snapshot
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import (
    ChunkAssembler,
    StreamingCallback,
    StreamingChunk,
    ToolCallDelta,
    assemble_chunks,
)

__all__ = [
    "AgentBreakpoint",
    "AgentSnapshot",
    "Breakpoint",
    "BreakpointException",
    "ChatMessage",
    "ChatRole",
    "ChunkAssembler",
    "HITLBreakpointException",
    "LedgerEntry",
    "State",
    "StreamingCallback",
    "StreamingChunk",
    "TextContent",
    "ToolBreakpoint",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallResult",
    "assemble_chunks",
    "load_snapshot",
]
