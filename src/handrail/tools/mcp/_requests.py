"""The requests of one MCP connection, run on the MCP loop: connect (and reconnect), list the tools, call a tool.

Each request runs in its own task and reaches the server through the live :class:`Owner`'s client. What the SDK
raises becomes one of handrail's three MCP errors here: ``MCPError(-32001)`` (the SDK's timeout, after it sent
``notifications/cancelled``) an :class:`MCPTimeoutError`; ``MCPError(-32000)`` (the connection closed) an
:class:`MCPConnectionError`, and the connection is marked lost; any other JSON-RPC error an
:class:`MCPProtocolError`. No exception group and no transport's ``CancelledError`` gets past it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, NoReturn, cast

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, RequestParamsMeta, Tool
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from handrail.errors import MCPConnectionError, MCPProtocolError, MCPTimeoutError
from handrail.tools.mcp._owner import Owner, describe
from handrail.tools.mcp._transport import Target

__all__ = ["Requests"]

_GRACE = 2.0
"""Seconds past a call's timeout before handrail cancels it itself (the SDK's own timeout comes first)."""
_LOST_CAUSE_WAIT = 1.0
"""How long a request that saw the connection close waits for the owner to learn the cause (for the message)."""
_MAX_PAGES = 1000
"""A server whose tool list has more pages than this is not listed (a cursor that never ends)."""


class Requests:
    """The connection state and the requests of one :class:`~handrail.tools.mcp.MCPConnection` (MCP loop only).

    Args:
        server: The server, as given to the connection.
        label: Its label.
        mode: ``"auto"`` or ``"legacy"``.
        connect_timeout: Seconds a connect may take.
        list_timeout: Seconds listing the tools may take.
        max_reconnects: Reconnects in a row without a request that worked.
        on_tools_changed: The connection's callback.
    """

    def __init__(
        self,
        server: object,
        label: str,
        *,
        mode: str,
        connect_timeout: float,
        list_timeout: float,
        max_reconnects: int,
        on_tools_changed: Callable[[], None] | None,
    ) -> None:
        self._server = server
        self._label = label
        self._mode = mode
        self._connect_timeout = connect_timeout
        self._list_timeout = list_timeout
        self._max_reconnects = max_reconnects
        self._on_tools_changed = on_tools_changed
        self._owner: Owner | None = None
        self._reconnects = 0
        self._failed = False
        """The last connection was lost, or the last connect failed: the next connect is a reconnect."""
        self._last_error: str | None = None
        self.protocol_version: str | None = None
        self.instructions: str | None = None

    @property
    def connected(self) -> bool:
        """Whether a live connection is open now."""
        return self._owner is not None and self._owner.usable

    async def ensure(self) -> Owner:
        """The live connection: the current one, the one being made, or a new one (a reconnect after a failure).

        Raises:
            MCPConnectionError: The connect failed or timed out, or reconnects are used up.
        """
        owner = self._owner
        if owner is not None and owner.usable:
            return owner
        if owner is None or not owner.connecting:
            if owner is not None:  # lost (it is ending, or has ended, on its own) or failed
                self._failed = True
                self._last_error = owner.lost or owner.error or self._last_error
            owner = self._start()
        return await self._wait_connected(owner)

    async def list_tools(self) -> list[Tool]:
        """Every tool, all pages; a connection lost while listing is reconnected once (listing is a read).

        Raises:
            MCPConnectionError: See :meth:`ensure`; or the connection was lost twice.
            MCPTimeoutError: Listing took longer than ``list_timeout``.
            MCPProtocolError: The server answered with an error.
        """
        try:
            return await self._list_once()
        except MCPConnectionError:
            if self._owner is None or self._owner.usable or self._reconnects >= self._max_reconnects:
                raise
            return await self._list_once()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], timeout: float, meta: dict[str, Any] | None
    ) -> CallToolResult:
        """Call a tool once; see :meth:`~handrail.tools.mcp.MCPConnection.call_tool`.

        Raises:
            MCPConnectionError: No connection, or it was lost during the call.
            MCPTimeoutError: No result within ``timeout``.
            MCPProtocolError: A JSON-RPC error, or a result that breaks the protocol.
        """
        owner = await self.ensure()
        what = f"the call of {name!r}"
        result: CallToolResult | None = None
        try:
            async with asyncio.timeout(timeout + _GRACE):
                client = _client(owner, what)
                with owner.request():
                    result = await client.call_tool(
                        name, arguments, read_timeout_seconds=timeout, meta=cast(RequestParamsMeta | None, meta)
                    )
        except TimeoutError:
            raise _timeout(self._label, name, timeout) from None
        except Exception as exc:
            await self._fail(owner, exc, what, tool=name, timeout=timeout)
        if result is None:  # the connection ended under the call
            raise _ended(owner, what, tool=name)
        self._worked()
        return result

    async def close(self) -> None:
        """End the connection (and its process) and start over: a fresh reconnect budget."""
        owner, self._owner = self._owner, None
        self._reconnects, self._failed, self._last_error = 0, False, None
        if owner is not None:
            await owner.stop()

    async def _list_once(self) -> list[Tool]:
        owner = await self.ensure()
        what = "listing the tools"
        tools: list[Tool] = []
        try:
            async with asyncio.timeout(self._list_timeout):
                cursor: str | None = None
                for _ in range(_MAX_PAGES):
                    with owner.request():
                        page = await _client(owner, what).list_tools(cursor=cursor)
                        tools.extend(page.tools)
                        cursor = page.next_cursor
                    if not owner.usable:
                        raise _ended(owner, what, tool=None)
                    if cursor is None:
                        break
                else:
                    raise MCPProtocolError(
                        f"MCP server {self._label}: its tool list has more than {_MAX_PAGES} pages.",
                        server=self._label,
                        code=None,
                    )
        except TimeoutError:
            raise MCPTimeoutError(
                f"MCP server {self._label}: listing the tools took longer than {self._list_timeout:g} s; "
                f"it was cancelled.",
                server=self._label,
                tool=None,
                timeout=self._list_timeout,
            ) from None
        except MCPProtocolError:
            raise
        except Exception as exc:
            await self._fail(owner, exc, what, tool=None, timeout=self._list_timeout)
        self._worked()
        return tools

    def _start(self) -> Owner:
        if self._failed:
            if self._reconnects >= self._max_reconnects:
                reconnects = f"{self._reconnects} reconnect{'' if self._reconnects == 1 else 's'}"
                raise MCPConnectionError(
                    f"MCP server {self._label}: gave up after {reconnects}; last error: "
                    f"{self._last_error}. Close the connection to start over.",
                    server=self._label,
                )
            self._reconnects += 1
        target = Target(self._server, self._label)  # resolves the secrets: a ConfigurationError starts nothing
        self._owner = Owner(
            target, mode=self._mode, connect_timeout=self._connect_timeout, on_tools_changed=self._on_tools_changed
        )
        return self._owner

    async def _wait_connected(self, owner: Owner) -> Owner:
        try:
            await asyncio.wait_for(asyncio.shield(owner.ready), self._connect_timeout)
        except TimeoutError:
            owner.fail_connect(f"it did not connect within {self._connect_timeout:g} s")
        if owner.client is None:
            self._failed = True
            self._last_error = owner.error or "the connection ended"
            if self._owner is owner:
                self._owner = None
            retry = f" (reconnect {self._reconnects} of {self._max_reconnects})" if self._reconnects else ""
            raise MCPConnectionError(
                f"Cannot connect to MCP server {self._label}: {self._last_error}{retry}.", server=self._label
            )
        self.protocol_version, self.instructions = owner.protocol_version, owner.instructions
        return owner

    def _worked(self) -> None:
        self._reconnects, self._failed = 0, False

    async def _fail(self, owner: Owner, exc: Exception, what: str, *, tool: str | None, timeout: float) -> NoReturn:
        """Raise what ``exc`` (raised by the SDK during ``what``) means for the caller."""
        if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
            raise _timeout(self._label, tool, timeout) from None
        if isinstance(exc, MCPConnectionError):
            raise exc
        closed = isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
        if closed or isinstance(exc, BaseExceptionGroup) or not owner.usable:
            if owner.stopping:
                raise _ended(owner, what, tool=tool) from None
            # the owner usually learns the cause (a process that exited, the transport's error) at once: wait
            # for it a moment, for the message
            if not await owner.wait_gone(_LOST_CAUSE_WAIT):
                owner.mark_lost(f"{describe(exc)} during {what}")
            outcome = "; it was not sent again: its outcome is unknown" if tool is not None else ""
            cause = owner.lost or describe(exc)
            raise MCPConnectionError(
                f"MCP server {self._label}: the connection was lost during {what} ({cause}){outcome}.",
                server=self._label,
            ) from None
        if isinstance(exc, MCPError):
            raise MCPProtocolError(
                f"MCP server {self._label} answered {what} with error {exc.code}: {exc.message}",
                server=self._label,
                code=exc.code,
            ) from None
        # RuntimeError (structured content that does not match the output schema), ValidationError (a malformed
        # result), or what else the SDK may raise: never passed on raw (an exception group above all).
        kind = "breaks the protocol" if isinstance(exc, RuntimeError | ValidationError) else "failed"
        raise MCPProtocolError(
            f"MCP server {self._label}: {what} {kind}: {describe(exc)}", server=self._label, code=None
        ) from exc


def _client(owner: Owner, what: str) -> Client:
    client = owner.client
    if client is None:
        raise MCPConnectionError(
            f"MCP server {owner.target.label}: the connection ended before {what} ({owner.lost or owner.error}).",
            server=owner.target.label,
        )
    return client


def _ended(owner: Owner, what: str, *, tool: str | None) -> MCPConnectionError:
    label = owner.target.label
    why = owner.lost or ("the connection was closed" if owner.stopping else "the connection ended")
    outcome = "; it was not sent again: its outcome is unknown" if tool is not None else ""
    return MCPConnectionError(f"MCP server {label}: {why} during {what}{outcome}.", server=label)


def _timeout(label: str, tool: str | None, timeout: float) -> MCPTimeoutError:
    what = f"the call of {tool!r}" if tool is not None else "listing the tools"
    return MCPTimeoutError(
        f"MCP server {label}: {what} took longer than {timeout:g} s; it was cancelled on the server.",
        server=label,
        tool=tool,
        timeout=timeout,
    )
