"""Tools from MCP (Model Context Protocol) servers: a stdio command, a streamable HTTP URL, or an in-process server.

Install the SDK with ``pip install 'handrail[mcp]'``; it is imported only once a connection is made, never by
``import handrail``.
"""

__all__: list[str] = []
