"""Tools the model may call: :class:`Tool`, :class:`Toolset`, tools built from functions, and :class:`ComponentTool`.

``create_tool_from_function`` and ``@tool`` generate a tool's JSON Schema from type hints;
pydantic is imported only when such a tool is built.
"""

from handrail.tools.component_tool import ComponentTool
from handrail.tools.tool import Tool, ToolCallId
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

# Imported last: the ``tool`` decorator shadows the ``handrail.tools.tool`` submodule attribute
# (``import handrail.tools.tool`` and dotted paths still resolve through ``sys.modules``).
from handrail.tools.from_function import create_tool_from_function, tool  # isort: skip

__all__ = ["ComponentTool", "Tool", "ToolCallId", "Toolset", "create_tool_from_function", "flatten_tools", "tool"]
