"""Tools the model may call: Tool, Toolset, tools built from functions, ComponentTool, PipelineTool and MCP tools.

``create_tool_from_function`` and ``@tool`` generate a tool's JSON Schema from type hints;
pydantic is imported only when such a tool is built.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports
from handrail.core._tool_threads import set_tool_thread_limit, tool_thread_limit
from handrail.tools.preview import Preview
from handrail.tools.tool import Tool, ToolCallId
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

# Imported last: the ``tool`` decorator shadows the ``handrail.tools.tool`` submodule attribute
# (``import handrail.tools.tool`` and dotted paths still resolve through ``sys.modules``).
from handrail.tools.from_function import create_tool_from_function, tool  # isort: skip

_EXPORTS = {  # load on first use
    "ComponentTool": "handrail.tools.component_tool",
    "MCPTool": "handrail.tools.mcp",
    "MCPToolset": "handrail.tools.mcp",
    "PipelineTool": "handrail.tools.pipeline_tool",
    "StdioServer": "handrail.tools.mcp",
    "StreamableHttpServer": "handrail.tools.mcp",
}

if _typing.TYPE_CHECKING:
    from handrail.tools.component_tool import ComponentTool
    from handrail.tools.mcp import MCPTool, MCPToolset, StdioServer, StreamableHttpServer
    from handrail.tools.pipeline_tool import PipelineTool

__all__ = [
    "ComponentTool",
    "MCPTool",
    "MCPToolset",
    "PipelineTool",
    "Preview",
    "StdioServer",
    "StreamableHttpServer",
    "Tool",
    "ToolCallId",
    "Toolset",
    "create_tool_from_function",
    "flatten_tools",
    "set_tool_thread_limit",
    "tool",
    "tool_thread_limit",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
