"""Data types: messages, streaming chunks, State, breakpoints and snapshots."""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports
from handrail.dataclasses.chat_message import (
    ChatMessage,
    ChatRole,
    ImageContent,
    ReasoningContent,
    TextContent,
    ToolCall,
    ToolCallResult,
)
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import (
    ChunkAssembler,
    ComponentInfo,
    StreamingCallback,
    StreamingChunk,
    ToolCallDelta,
    assemble_chunks,
)

# Breakpoints and snapshots load on first use: a plain run never pays for their imports.
_EXPORTS = {
    "AgentBreakpoint": "handrail.dataclasses.breakpoints",
    "Breakpoint": "handrail.dataclasses.breakpoints",
    "BreakpointException": "handrail.dataclasses.breakpoints",
    "HITLBreakpointException": "handrail.dataclasses.breakpoints",
    "ToolBreakpoint": "handrail.dataclasses.breakpoints",
    "AgentSnapshot": "handrail.dataclasses.snapshot",
    "LedgerEntry": "handrail.dataclasses.snapshot",
    "load_snapshot": "handrail.dataclasses.snapshot",
    "PipelineSnapshot": "handrail.dataclasses.pipeline_snapshot",
    "PipelineState": "handrail.dataclasses.pipeline_snapshot",
    "load_pipeline_snapshot": "handrail.dataclasses.pipeline_snapshot",
}

if _typing.TYPE_CHECKING:
    from handrail.dataclasses.breakpoints import (
        AgentBreakpoint,
        Breakpoint,
        BreakpointException,
        HITLBreakpointException,
        ToolBreakpoint,
    )
    from handrail.dataclasses.pipeline_snapshot import PipelineSnapshot, PipelineState, load_pipeline_snapshot
    from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, load_snapshot

__all__ = [
    "AgentBreakpoint",
    "AgentSnapshot",
    "Breakpoint",
    "BreakpointException",
    "ChatMessage",
    "ChatRole",
    "ChunkAssembler",
    "ComponentInfo",
    "HITLBreakpointException",
    "ImageContent",
    "LedgerEntry",
    "PipelineSnapshot",
    "PipelineState",
    "ReasoningContent",
    "State",
    "StreamingCallback",
    "StreamingChunk",
    "TextContent",
    "ToolBreakpoint",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallResult",
    "assemble_chunks",
    "load_pipeline_snapshot",
    "load_snapshot",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
