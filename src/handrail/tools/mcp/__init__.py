"""Tools of Model Context Protocol servers: :class:`MCPToolset`, :class:`MCPTool` and the server descriptions.

Needs the ``mcp`` extra (``pip install 'handrail[mcp]'``). Importing this package does not import ``mcp``: the
SDK is loaded when a toolset first connects.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS = {  # load on first use
    "MCPServerTool": "handrail.tools.mcp.toolset",
    "MCPTool": "handrail.tools.mcp.toolset",
    "MCPToolset": "handrail.tools.mcp.toolset",
    "StdioServer": "handrail.tools.mcp._servers",
    "StreamableHttpServer": "handrail.tools.mcp._servers",
    "allow_commands": "handrail.tools.mcp._servers",
}

if _typing.TYPE_CHECKING:
    from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, allow_commands
    from handrail.tools.mcp.toolset import MCPServerTool, MCPTool, MCPToolset

__all__ = ["MCPServerTool", "MCPTool", "MCPToolset", "StdioServer", "StreamableHttpServer", "allow_commands"]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
