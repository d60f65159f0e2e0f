"""The ToolInvoker component."""

from handrail.components.tools.tool_invoker import ToolInvoker

__all__ = ["ToolInvoker"]
