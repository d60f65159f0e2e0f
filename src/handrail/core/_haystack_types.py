"""The table from Haystack 2.x's dotted type paths to handrail's, and the lookups that read it.

Pure data (strings only, nothing imported), so every layer may read it: ``object_from_dict`` (nested
``{"type": "haystack...."}`` envelopes), ``Tool.from_dict`` and :func:`~handrail.core.haystack_yaml.load_haystack`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["HAYSTACK_TYPES", "envelope_parameters", "haystack_paths_in", "is_haystack_path", "translate_haystack_path"]

_HS = "haystack"
_EXP_HITL = "haystack_experimental.components.agents.human_in_the_loop"

_TABLE: dict[str, str] = {
    # pipelines' building blocks
    f"{_HS}.core.pipeline.pipeline.Pipeline": "handrail.core.pipeline.Pipeline",
    f"{_HS}.components.agents.agent.Agent": "handrail.components.agents.agent.Agent",
    "haystack_experimental.components.agents.agent.Agent": "handrail.components.agents.agent.Agent",
    f"{_HS}.components.generators.chat.openai.OpenAIChatGenerator": (
        "handrail.components.generators.chat.openai.OpenAIChatGenerator"
    ),
    f"{_HS}.components.tools.tool_invoker.ToolInvoker": "handrail.components.tools.tool_invoker.ToolInvoker",
    f"{_HS}.components.routers.conditional_router.ConditionalRouter": (
        "handrail.components.routers.conditional_router.ConditionalRouter"
    ),
    f"{_HS}.core.pipeline.async_pipeline.AsyncPipeline": "handrail.core.async_pipeline.AsyncPipeline",
    f"{_HS}.core.super_component.super_component.SuperComponent": "handrail.core.super_component.SuperComponent",
    f"{_HS}.components.builders.prompt_builder.PromptBuilder": (
        "handrail.components.builders.prompt_builder.PromptBuilder"
    ),
    f"{_HS}.components.builders.chat_prompt_builder.ChatPromptBuilder": (
        "handrail.components.builders.chat_prompt_builder.ChatPromptBuilder"
    ),
    f"{_HS}.components.generators.utils.print_streaming_chunk": (
        "handrail.components.generators.utils.print_streaming_chunk"
    ),
    # tools
    f"{_HS}.tools.tool.Tool": "handrail.tools.tool.Tool",
    f"{_HS}.tools.pipeline_tool.PipelineTool": "handrail.tools.pipeline_tool.PipelineTool",
    f"{_HS}.tools.toolset.Toolset": "handrail.tools.toolset.Toolset",
    f"{_HS}.tools.component_tool.ComponentTool": "handrail.tools.component_tool.ComponentTool",
    # data types named in sockets, routes and state schemas
    f"{_HS}.dataclasses.chat_message.ChatMessage": "handrail.dataclasses.chat_message.ChatMessage",
    f"{_HS}.dataclasses.chat_message.ChatRole": "handrail.dataclasses.chat_message.ChatRole",
    f"{_HS}.dataclasses.chat_message.TextContent": "handrail.dataclasses.chat_message.TextContent",
    f"{_HS}.dataclasses.chat_message.ToolCall": "handrail.dataclasses.chat_message.ToolCall",
    f"{_HS}.dataclasses.chat_message.ToolCallResult": "handrail.dataclasses.chat_message.ToolCallResult",
    f"{_HS}.dataclasses.ChatMessage": "handrail.dataclasses.chat_message.ChatMessage",
    f"{_HS}.dataclasses.chat_message.ReasoningContent": "handrail.dataclasses.chat_message.ReasoningContent",
    f"{_HS}.dataclasses.image_content.ImageContent": "handrail.dataclasses.image_content.ImageContent",
    f"{_HS}.dataclasses.streaming_chunk.StreamingChunk": "handrail.dataclasses.streaming.StreamingChunk",
    f"{_HS}.dataclasses.streaming_chunk.ToolCallDelta": "handrail.dataclasses.streaming.ToolCallDelta",
    f"{_HS}.dataclasses.streaming_chunk.ComponentInfo": "handrail.dataclasses.streaming.ComponentInfo",
    # State merge handlers
    f"{_HS}.components.agents.state.state_utils.merge_lists": "handrail.dataclasses.state.merge_lists",
    f"{_HS}.components.agents.state.state_utils.replace_values": "handrail.dataclasses.state.replace_values",
    # human in the loop (haystack-experimental 0.14)
    f"{_EXP_HITL}.policies.AlwaysAskPolicy": "handrail.human_in_the_loop.policies.AlwaysAskPolicy",
    f"{_EXP_HITL}.policies.NeverAskPolicy": "handrail.human_in_the_loop.policies.NeverAskPolicy",
    f"{_EXP_HITL}.policies.AskOncePolicy": "handrail.human_in_the_loop.policies.AskOncePolicy",
    f"{_EXP_HITL}.user_interfaces.SimpleConsoleUI": "handrail.human_in_the_loop.user_interfaces.SimpleConsoleUI",
    f"{_EXP_HITL}.user_interfaces.RichConsoleUI": "handrail.human_in_the_loop.user_interfaces.RichConsoleUI",
    f"{_EXP_HITL}.strategies.BlockingConfirmationStrategy": (
        "handrail.human_in_the_loop.strategies.BlockingConfirmationStrategy"
    ),
    f"{_EXP_HITL}.strategies.BreakpointConfirmationStrategy": (
        "handrail.human_in_the_loop.breakpoint_strategy.BreakpointConfirmationStrategy"
    ),
}

HAYSTACK_TYPES: Mapping[str, str] = MappingProxyType(_TABLE)
"""Haystack 2.19 / haystack-experimental 0.14 dotted path → handrail's dotted path (read-only)."""

_PATH = re.compile(r"\bhaystack(?:_experimental)?(?:\.\w+)+")
"""A dotted path into Haystack, wherever it sits in a type string (``typing.List[haystack...ChatMessage]``)."""

_TYPE_LIKE = re.compile(r"[\w.\[\]]+(?:\s*[,|]\s*[\w.\[\]]+)*")
"""A type expression or a dotted path: no free text (a prompt that mentions Haystack is left alone)."""


def is_haystack_path(path: str) -> bool:
    """Whether ``path`` names something inside ``haystack`` or ``haystack_experimental``."""
    return path.split(".", 1)[0] in ("haystack", "haystack_experimental")


def translate_haystack_path(path: str) -> str | None:
    """The handrail path for Haystack's dotted ``path``, or None when the table has no entry for it."""
    return _TABLE.get(path)


def haystack_paths_in(text: str) -> list[str]:
    """The Haystack dotted paths a type string or dotted path holds (none for free text)."""
    if not _TYPE_LIKE.fullmatch(text.strip()):
        return []
    return _PATH.findall(text)


def envelope_parameters(data: object) -> object:
    """The parameters of a ``{"type", "init_parameters"}`` envelope, or of Haystack's ``{"type", "data"}`` one.

    Haystack 2.x writes Tools and Toolsets with ``data`` where every other object has ``init_parameters``.
    None when ``data`` is not a mapping or has neither key.
    """
    if not isinstance(data, Mapping):
        return None
    if "init_parameters" in data:
        return data["init_parameters"]
    return data.get("data")
