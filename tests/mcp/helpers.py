"""How a test drives an MCPConnection: through its sync methods, or its async ones from a loop of the test's own."""

from __future__ import annotations

import asyncio
from typing import Any

from handrail.tools.mcp._connection import MCPConnection

APIS = ("sync", "async")


class Api:
    """Calls a connection's sync method, or runs its ``_async`` twin (``aclose`` for ``close``) with asyncio.run.

    Each async call runs on a new event loop of the test's thread: the connection's own loop is another one.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _run(self, conn: MCPConnection, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.kind == "sync":
            return getattr(conn, method)(*args, **kwargs)
        name = "aclose" if method == "close" else f"{method}_async"
        return asyncio.run(getattr(conn, name)(*args, **kwargs))

    def connect(self, conn: MCPConnection) -> None:
        self._run(conn, "connect")

    def list_tools(self, conn: MCPConnection) -> Any:
        return self._run(conn, "list_tools")

    def call(self, conn: MCPConnection, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", 20.0)
        return self._run(conn, "call_tool", name, arguments or {}, **kwargs)

    def close(self, conn: MCPConnection) -> None:
        self._run(conn, "close")


def text(result: Any) -> str:
    """The text of a CallToolResult's first block."""
    return str(result.content[0].text)
