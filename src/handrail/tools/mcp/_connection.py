"""``MCPConnection``: one MCP server connection, for sync and async callers alike.

Everything runs on the private MCP loop (:mod:`handrail.tools.mcp._loop`); the live connection is owned by one task
there (:class:`~handrail.tools.mcp._owner.Owner`). This module imports ``mcp`` only when a connection is created.

Reconnects: after a connection is lost (or a connect failed), the next request connects again, and that counts as
one reconnect. The budget (``max_reconnects``) bounds the reconnects over the connection's whole life, whether
requests worked in between or not: a server that crashes on every call is started at most ``1 + max_reconnects``
times; after that every request fails fast (naming the count and the last error) until
:meth:`MCPConnection.close` is called, which starts the count over. A tool call is never sent twice: one whose
connection was lost raises, and only the next request reconnects.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from handrail.errors import ConfigurationError, ConfigurationTypeError, MCPConnectionError, MCPTimeoutError
from handrail.tools.mcp._loop import run_async, run_sync
from handrail.tools.mcp._servers import StdioServer, StreamableHttpServer, server_label

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

    from handrail.tools.mcp._requests import Requests

__all__ = ["MCPConnection", "require_mcp"]

_T = TypeVar("_T")
_SLACK = 15.0
"""Added to a request's own timeouts for the blocking wait of a sync caller (a bound against a hang, not a timer)."""
_CLOSE_BOUND = 20.0
"""Closing waits up to 10 s for the owner to end, then 10 s more after cancelling it."""


def require_mcp() -> None:
    """Import the MCP SDK, or say how to install it.

    Raises:
        ConfigurationError: When the ``mcp`` package cannot be imported (names ``pip install 'handrail[mcp]'``).
    """
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            f"MCP tools need the MCP SDK (mcp>=2.3,<3): pip install 'handrail[mcp]' ({exc})."
        ) from exc


class MCPConnection:
    """One connection to one MCP server, shared by sync and async callers; it connects on first use.

    Args:
        server: A :class:`StdioServer`, a :class:`StreamableHttpServer`, or an in-process
            ``mcp.server.mcpserver.MCPServer`` (or low-level ``mcp.server.Server``) object.
        connect_timeout: Seconds a connect (start, handshake) may take.
        list_timeout: Seconds listing the tools (every page) may take.
        mode: ``"auto"`` (the 2026-07-28 protocol when the server speaks it, else the older handshake) or
            ``"legacy"`` (always the older handshake).
        max_reconnects: How many times a lost (or failed) connection is made again over the connection's life,
            until :meth:`close`; then requests fail at once with MCPConnectionError. A request that works does not
            reset the count.
        on_tools_changed: Called, on the MCP loop's thread, when the server says its tool list changed (through
            the 2026-07-28 listen stream or the older notification); it should only set a flag.

    Raises:
        ConfigurationError: When ``mcp`` is not installed, or for a bad timeout, mode or count.
        ConfigurationTypeError: When ``server`` is not a server, or ``on_tools_changed`` not callable.

    Examples:
        An in-process server here; ``StdioServer("python", ["-m", "my_server"])`` or
        ``StreamableHttpServer("http://127.0.0.1:8000/mcp")`` are used the same way.

        >>> from mcp.server.mcpserver import MCPServer
        >>> server = MCPServer("demo")
        >>> @server.tool()
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> conn = MCPConnection(server)
        >>> [tool.name for tool in conn.list_tools()]
        ['add']
        >>> conn.call_tool("add", {"a": 1, "b": 2}, timeout=30).content[0].text
        '3'
        >>> conn.close()
    """

    def __init__(
        self,
        server: StdioServer | StreamableHttpServer | Any,
        *,
        connect_timeout: float = 10.0,
        list_timeout: float = 10.0,
        mode: Literal["auto", "legacy"] = "auto",
        max_reconnects: int = 3,
        on_tools_changed: Callable[[], None] | None = None,
    ) -> None:
        require_mcp()
        _check_server(server)
        self._connect_timeout = _seconds(connect_timeout, "connect_timeout")
        self._list_timeout = _seconds(list_timeout, "list_timeout")
        if mode not in ("auto", "legacy"):
            raise ConfigurationError(f"MCPConnection mode must be 'auto' or 'legacy', got {mode!r}.")
        if isinstance(max_reconnects, bool) or not isinstance(max_reconnects, int) or max_reconnects < 0:
            raise ConfigurationError(f"MCPConnection max_reconnects must be an int >= 0, got {max_reconnects!r}.")
        if on_tools_changed is not None and not callable(on_tools_changed):
            raise ConfigurationTypeError(f"on_tools_changed must be callable, got {type(on_tools_changed).__name__}.")
        from handrail.tools.mcp import _requests  # imports mcp

        self.server = server
        """The server, as given."""
        self.label: str = server_label(server)
        """A short name of the server for messages and logs."""
        self._requests: Requests = _requests.Requests(
            server,
            self.label,
            mode=mode,
            connect_timeout=self._connect_timeout,
            list_timeout=self._list_timeout,
            max_reconnects=max_reconnects,
            on_tools_changed=on_tools_changed,
        )

    def __repr__(self) -> str:
        return f"MCPConnection({self.label!r}, connected={self.connected})"

    @property
    def connected(self) -> bool:
        """Whether a live connection is open now."""
        return self._requests.connected

    @property
    def protocol_version(self) -> str | None:
        """The protocol version negotiated by the last connect (``"2026-07-28"``, ``"2025-11-25"``, ...)."""
        return self._requests.protocol_version

    @property
    def instructions(self) -> str | None:
        """The server's instructions, from the last connect."""
        return self._requests.instructions

    def connect(self) -> None:
        """Connect now, unless connected already (blocks).

        Raises:
            MCPConnectionError: The server could not be started or reached, the handshake failed, it took longer
                than ``connect_timeout``, or reconnects are used up.
            ConfigurationError: A strict Secret of the server's env or headers is not set.
        """
        self._sync(self._connect(), self._connect_timeout)

    async def connect_async(self) -> None:
        """Connect now, unless connected already; see :meth:`connect`.

        Raises:
            MCPConnectionError: See :meth:`connect`.
            ConfigurationError: See :meth:`connect`.
        """
        await run_async(self._connect())

    def list_tools(self) -> list[Tool]:
        """Every tool of the server (all pages), connecting first if needed.

        Returns:
            The SDK's ``mcp.types.Tool`` objects, in the server's order.

        Raises:
            MCPConnectionError: No connection could be made, or it was lost (after one reconnect to list again).
            MCPTimeoutError: Listing took longer than ``list_timeout``.
            MCPProtocolError: The server answered with an error.
        """
        return self._sync(self._list_tools(), self._connect_timeout * 2 + self._list_timeout * 2)

    async def list_tools_async(self) -> list[Tool]:
        """Every tool of the server; see :meth:`list_tools`.

        Returns:
            The SDK's ``mcp.types.Tool`` objects.

        Raises:
            MCPConnectionError: See :meth:`list_tools`.
            MCPTimeoutError: See :meth:`list_tools`.
            MCPProtocolError: See :meth:`list_tools`.
        """
        return await run_async(self._list_tools())

    def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout: float, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        """Call a tool once (never again on its own), connecting first if needed.

        A tool that failed, an unknown tool and invalid arguments are results with ``is_error`` set, not errors.

        Args:
            name: The tool's name on the server.
            arguments: Its arguments (JSON-compatible).
            timeout: Seconds to wait for the result; then the server is asked to cancel the call (it may have run
                anyway). Connecting first, when needed, is bounded by ``connect_timeout`` on its own.
            meta: The request's ``_meta`` (ids for the server); None for none.

        Returns:
            The SDK's ``mcp.types.CallToolResult``.

        Raises:
            MCPConnectionError: No connection could be made, or it was lost during the call (its outcome is
                unknown: it is not sent again).
            MCPTimeoutError: No result within ``timeout``; the server was asked to cancel the call, and its outcome
                is unknown (it is not sent again).
            MCPProtocolError: The server answered with a JSON-RPC error (any code), or with a result that cannot
                be parsed. Structured content that fails the tool's output schema is no error: the result comes
                with ``structured_content`` set to None (and a WARNING on ``handrail.tools.mcp``).
        """
        limit = _seconds(timeout, "timeout")
        return self._sync(self._call_tool(name, arguments, limit, meta), self._connect_timeout + limit)

    async def call_tool_async(
        self, name: str, arguments: dict[str, Any], *, timeout: float, meta: dict[str, Any] | None = None
    ) -> CallToolResult:
        """Call a tool once; see :meth:`call_tool`. Cancelling the awaiting task cancels the call on the server.

        Args:
            name: The tool's name on the server.
            arguments: Its arguments.
            timeout: Seconds to wait for the result.
            meta: The request's ``_meta``.

        Returns:
            The SDK's ``mcp.types.CallToolResult``.

        Raises:
            MCPConnectionError: See :meth:`call_tool`.
            MCPTimeoutError: See :meth:`call_tool`.
            MCPProtocolError: See :meth:`call_tool`.
        """
        limit = _seconds(timeout, "timeout")
        return await run_async(self._call_tool(name, arguments, limit, meta))

    def close(self) -> None:
        """End the connection and, for a stdio server, its process; idempotent.

        A request in flight fails with MCPConnectionError. A later request connects again, with a fresh
        reconnect budget. A stdio process is waited for (bounded) until it has ended.
        """
        self._sync(self._close(), _CLOSE_BOUND)

    async def aclose(self) -> None:
        """End the connection (and the stdio process); idempotent, see :meth:`close`.

        Shielded: when the awaiting task is cancelled meanwhile, closing still finishes (bounded) before the
        cancellation goes on, so no process is left behind.
        """
        closing = asyncio.ensure_future(run_async(self._close()))
        cancelled = False
        while not closing.done():
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        closing.result()

    def __enter__(self) -> MCPConnection:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> MCPConnection:
        await self.connect_async()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _sync(self, coro: Coroutine[Any, Any, _T], timeouts: float) -> _T:
        bound = timeouts + self._connect_timeout + _SLACK
        try:
            return run_sync(coro, bound)
        except TimeoutError as exc:
            if isinstance(exc, MCPTimeoutError):
                raise
        # raised here, outside the except clause: the future's bare TimeoutError is no cause worth showing
        raise MCPConnectionError(
            f"MCP server {self.label}: no answer within {bound:g} s (a hang in the connection)", server=self.label
        )

    async def _connect(self) -> None:
        await self._requests.ensure()

    async def _list_tools(self) -> list[Tool]:
        return await self._requests.list_tools()

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float, meta: dict[str, Any] | None
    ) -> CallToolResult:
        return await self._requests.call_tool(name, arguments, timeout, meta)

    async def _close(self) -> None:
        await self._requests.close()


def _check_server(server: object) -> None:
    if isinstance(server, StdioServer | StreamableHttpServer):
        return
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if not isinstance(server, MCPServer | Server):
        raise ConfigurationTypeError(
            f"An MCP server must be a StdioServer, a StreamableHttpServer or an in-process MCPServer object, got "
            f"{type(server).__name__}."
        )


def _seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigurationError(f"MCPConnection {name} must be a number of seconds > 0, got {value!r}.")
    return float(value)
