"""handrail: tool-using LLM agents whose tool calls people can approve, reject or edit.

The most used names are importable from here; each is loaded on first use so that
``from handrail import Agent`` stays fast.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Agent": "handrail.components.agents.agent",
    "State": "handrail.dataclasses.state",
    "ToolInvoker": "handrail.components.tools.tool_invoker",
    "ChatMessage": "handrail.dataclasses.chat_message",
    "ChatRole": "handrail.dataclasses.chat_message",
    "ToolCall": "handrail.dataclasses.chat_message",
    "ToolCallResult": "handrail.dataclasses.chat_message",
    "StreamingChunk": "handrail.dataclasses.streaming",
    "Tool": "handrail.tools.tool",
    "ToolCallId": "handrail.tools.tool",
    "Toolset": "handrail.tools.toolset",
    "create_tool_from_function": "handrail.tools.from_function",
    "tool": "handrail.tools.from_function",
    "HandrailError": "handrail.errors",
    "component": "handrail.core.component",
    "Pipeline": "handrail.core.pipeline",
    "AsyncPipeline": "handrail.core.async_pipeline",
    "ComponentTool": "handrail.tools.component_tool",
    "SuperComponent": "handrail.core.super_component",
    "super_component": "handrail.core.super_component",
    "resume": "handrail.specs._resume",
    "resume_async": "handrail.specs._resume",
    "register_snapshot_store": "handrail.stores._snapshot_locations",
}

__all__ = [
    "Agent",
    "AsyncPipeline",
    "ChatMessage",
    "ComponentTool",
    "ChatRole",
    "HandrailError",
    "Pipeline",
    "State",
    "StreamingChunk",
    "SuperComponent",
    "Tool",
    "ToolCall",
    "ToolCallId",
    "ToolCallResult",
    "ToolInvoker",
    "Toolset",
    "component",
    "create_tool_from_function",
    "register_snapshot_store",
    "resume",
    "resume_async",
    "super_component",
    "tool",
]

if _typing.TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.tools.tool_invoker import ToolInvoker
    from handrail.core.async_pipeline import AsyncPipeline
    from handrail.core.component import component
    from handrail.core.pipeline import Pipeline
    from handrail.core.super_component import SuperComponent, super_component
    from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall, ToolCallResult
    from handrail.dataclasses.state import State
    from handrail.dataclasses.streaming import StreamingChunk
    from handrail.errors import HandrailError
    from handrail.specs._resume import resume, resume_async
    from handrail.stores._snapshot_locations import register_snapshot_store
    from handrail.tools.component_tool import ComponentTool
    from handrail.tools.from_function import create_tool_from_function, tool
    from handrail.tools.tool import Tool, ToolCallId
    from handrail.tools.toolset import Toolset

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
