"""The MCP server every MCP test talks to: an ``MCPServer`` (mcp 2.x) with a few small tools.

In process: ``build_server()``. As a subprocess: ``python server_double.py stdio`` or
``python server_double.py http PORT`` (streamable HTTP on 127.0.0.1:PORT, path ``/mcp``).

With ``HANDRAIL_MCP_DOUBLE_LOG`` naming a file, a server process appends ``start PID`` to it when it starts, and
``delete_file PATH PID`` for each call of ``delete_file``: the tests count processes and executions there, across
processes.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Any, Literal

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

__all__ = ["INSTRUCTIONS", "LOG_ENV", "NAME", "PNG", "build_server", "log_lines"]

NAME = "double"
LOG_ENV = "HANDRAIL_MCP_DOUBLE_LOG"
INSTRUCTIONS = "A test double: add numbers, sleep, crash, fail."
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class Weather(BaseModel):
    """The structured result of ``structured()``."""

    city: str
    celsius: float


def _log(line: str) -> None:
    """Append ``line`` and this process's id to the file ``HANDRAIL_MCP_DOUBLE_LOG`` names (if it is set)."""
    path = os.environ.get(LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{line} {os.getpid()}\n")


def log_lines(path: str | os.PathLike[str]) -> list[list[str]]:
    """The log's lines, split into words (empty when nothing was logged)."""
    try:
        with open(path, encoding="utf-8") as log:
            return [line.split() for line in log.read().splitlines()]
    except FileNotFoundError:
        return []


def build_server() -> MCPServer:
    """A fresh server object (each has its own tool list, so ``enable_extra`` does not leak between tests)."""
    server = MCPServer(NAME, instructions=INSTRUCTIONS)
    _add_basic_tools(server)
    _add_process_tools(server)
    _add_protocol_tools(server)
    _add_annotated_tools(server)
    return server


def _add_basic_tools(server: MCPServer) -> None:
    """add, slow (and the count of its cancelled calls), big, fail."""
    cancelled_calls = [0]

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for some seconds, then say so."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:  # the client cancelled the call (notifications/cancelled, or in process)
            cancelled_calls[0] += 1
            raise
        return f"slept {seconds}"

    @server.tool()
    def cancelled() -> int:
        """How many calls of slow were cancelled so far."""
        return cancelled_calls[0]

    @server.tool()
    def big(n: int) -> str:
        """Return n characters of text."""
        return "x" * n

    @server.tool()
    def fail(msg: str) -> str:
        """Fail with the given message."""
        raise ToolError(msg)


def _add_process_tools(server: MCPServer) -> None:
    """crash, pid, env, echo_stderr: what the server's process is and does."""

    @server.tool()
    def crash() -> str:
        """End the server process at once (exit status 3)."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def env(name: str) -> str:
        """The value of an environment variable of the server process ('<unset>' when it is not set)."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def echo_stderr(text: str) -> str:
        """Write a line to the server's stderr."""
        print(text, file=sys.stderr, flush=True)
        return "written"


def _add_protocol_tools(server: MCPServer) -> None:
    """enable_extra and remove (list changes), protocol_error (a JSON-RPC error), bad_structured (structured content
    against its output schema), bogus_content (a malformed result), request_meta (the _meta)."""

    @server.tool()
    async def enable_extra(ctx: Context, announce: Literal["both", "listen", "legacy"] = "both") -> str:
        """Add the tool 'extra' and announce the change (to both protocol eras unless told one)."""

        def extra() -> str:
            """A tool added at run time."""
            return "extra"

        server.add_tool(extra)
        if announce in ("both", "listen"):
            await ctx.notify_tools_changed()  # 2026-07-28 connections: the subscriptions/listen stream
        if announce in ("both", "legacy"):
            await ctx.session.send_tool_list_changed()  # legacy connections: notifications/tools/list_changed
        return "enabled"

    @server.tool()
    async def remove(ctx: Context, name: str) -> str:
        """Remove a tool and announce the change to both protocol eras."""
        server.remove_tool(name)
        await ctx.notify_tools_changed()
        await ctx.session.send_tool_list_changed()
        return f"removed {name}"

    @server.tool()
    def protocol_error(code: int = -32099) -> str:
        """Answer with a JSON-RPC error (not a tool error) of the given code."""
        raise MCPError(code=code, message="the double refuses")

    @server.tool()
    def bad_structured() -> CallToolResult:
        """Structured content that breaks the tool's own output schema (the text is fine)."""
        return CallToolResult(content=[TextContent(type="text", text="n is seven")], structured_content={"n": "seven"})

    @server.tool()
    def bogus_content() -> CallToolResult:
        """A content block of a type no client knows (the server drops it when writing: a malformed result)."""
        return CallToolResult(content=[TextContent.model_construct(type="bogus", text="?")])

    # a published schema without a model is not checked by the server: only the client sees the mismatch
    server._tool_manager.get_tool("bad_structured").fn_metadata.output_schema = {  # type: ignore[union-attr]
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }

    @server.tool()
    def request_meta(ctx: Context) -> dict[str, Any]:
        """The _meta of this request, as the server got it (without the SDK's own keys)."""
        meta = dict(ctx.request_context.meta or {})
        return {key: value for key, value in meta.items() if "/" not in key and key != "traceparent"}


def _add_annotated_tools(server: MCPServer) -> None:
    """calendar.read (a dotted name, read-only), delete_file (destructive), image, structured."""

    @server.tool(name="calendar.read", annotations=ToolAnnotations(read_only_hint=True))
    def calendar_read(day: str) -> str:
        """Read the calendar of a day."""
        return f"nothing on {day}"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True))
    def delete_file(path: str) -> str:
        """Delete a file (pretends to)."""
        _log(f"delete_file {path}")
        return f"deleted {path}"

    @server.tool()
    def image() -> Image:
        """A 1x1 PNG image."""
        return Image(data=PNG, format="png")

    @server.tool()
    def structured(city: str) -> Weather:
        """The weather of a city, as structured content."""
        return Weather(city=city, celsius=21.5)


def main(argv: list[str]) -> None:
    """Run the server over stdio or streamable HTTP."""
    server = build_server()
    _log("start")
    if argv[:1] == ["stdio"]:
        server.run("stdio")
    elif argv[:1] == ["http"] and len(argv) == 2:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        raise SystemExit("usage: server_double.py stdio | http PORT")


if __name__ == "__main__":
    main(sys.argv[1:])
