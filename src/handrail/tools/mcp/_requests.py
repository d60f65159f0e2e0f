"""The requests of one MCP connection, run on the MCP loop: connect (and reconnect), list the tools, call a tool.

Each request runs in its own task and reaches the server through the live :class:`Owner`'s client. What the SDK
raises becomes one of handrail's three MCP errors here: the SDK's own timeout (``MCPError(-32001)`` raised on the
client, after it sent ``notifications/cancelled``) an :class:`MCPTimeoutError`; the SDK's own "connection closed"
(``MCPError(-32000)``) an :class:`MCPConnectionError`, and the connection is marked lost; any JSON-RPC error
response of the server (whatever its code: a server's ``-32001`` is not a timeout) and any result the SDK cannot
parse an :class:`MCPProtocolError`, and the connection stays. No exception group, no transport's
``CancelledError`` and no anyio internal gets past it (the errors raised here carry no such context).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, RequestParamsMeta, Tool
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from handrail.errors import MCPConnectionError, MCPProtocolError, MCPTimeoutError
from handrail.tools.mcp._owner import Owner, describe
from handrail.tools.mcp._transport import Target

__all__ = ["Requests"]

_logger = logging.getLogger("handrail.tools.mcp")
_GRACE = 2.0
"""Seconds past a call's timeout before handrail cancels it itself (the SDK's own timeout comes first)."""
_LOST_CAUSE_WAIT = 1.0
"""How long a request that saw the connection close waits for the owner to learn the cause (for the message)."""
_TEXT_LIMIT = 300
"""A server's error message (or a parse error) is cut to this many characters in an error's text."""
_SDK_STREAM_ENDS = ("SSE stream", "server answered a request with 202 Accepted")
"""How the SDK's HTTP transport words the ``-32000`` errors it makes up itself for a request whose stream ended."""
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
        max_reconnects: Reconnects over the connection's life (until :meth:`close`).
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
        self._ending: set[Owner] = set()
        """Owners whose connect failed and that are still ending (a stdio process being stopped)."""
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
        error: Exception | None = None
        started = anyio.current_time()
        try:
            async with asyncio.timeout(timeout + _GRACE):
                client = _client(owner, what)
                with owner.request():
                    result = await client.call_tool(
                        name, arguments, read_timeout_seconds=timeout, meta=cast(RequestParamsMeta | None, meta)
                    )
        except TimeoutError:
            error = _timeout(self._label, name, timeout)
        except Exception as exc:
            error = await self._fail(owner, exc, what, tool=name, timeout=timeout, started=started)
        except (SystemExit, KeyboardInterrupt) as exc:  # an in-process tool raised it: it must not end the loop
            error = self._escaped(owner, exc, what)
        if error is not None:
            raise error  # outside the except clauses: no SDK or anyio internals chained as its context
        if result is None:  # the connection ended under the call
            raise _ended(owner, what, tool=name)
        return result

    async def close(self) -> None:
        """End the connection (and its process) and start over: a fresh reconnect budget."""
        owner, self._owner = self._owner, None
        self._reconnects, self._failed, self._last_error = 0, False, None
        owners = set(self._ending) if owner is None else {owner, *self._ending}
        self._ending.clear()
        await asyncio.gather(*(each.stop() for each in owners))

    async def _list_once(self) -> list[Tool]:
        owner = await self.ensure()
        what = "listing the tools"
        tools: list[Tool] = []
        error: Exception | None = None
        started = anyio.current_time()
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
            error = _timeout(self._label, None, self._list_timeout)
        except MCPProtocolError as exc:
            error = exc
        except Exception as exc:
            error = await self._fail(owner, exc, what, tool=None, timeout=self._list_timeout, started=started)
        if error is not None:
            raise error
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
            exited = owner.task.done()
            if not exited:
                self._ending.add(owner)  # still ending its process: close() waits for it
                owner.task.add_done_callback(lambda _: self._ending.discard(owner))
            hint = await owner.target.diagnosis(exited=exited)
            retry = f" (reconnect {self._reconnects} of {self._max_reconnects})" if self._reconnects else ""
            raise MCPConnectionError(
                f"Cannot connect to MCP server {self._label}: {self._last_error}{hint}{retry}.", server=self._label
            )
        self.protocol_version, self.instructions = owner.protocol_version, owner.instructions
        return owner

    def _escaped(self, owner: Owner, exc: BaseException, what: str) -> MCPConnectionError:
        """An in-process server's tool raised ``SystemExit`` or ``KeyboardInterrupt``: the connection is dropped."""
        reason = f"the in-process server raised {describe(exc)} during {what}"
        owner.mark_lost(reason)
        return MCPConnectionError(
            f"MCP server {self._label}: {reason} (the connection is dropped; the next request connects again).",
            server=self._label,
        )

    async def _fail(
        self, owner: Owner, exc: Exception, what: str, *, tool: str | None, timeout: float, started: float
    ) -> Exception:
        """What ``exc`` (raised by the SDK during ``what``, begun at ``started``) means for the caller."""
        if isinstance(exc, MCPConnectionError | MCPProtocolError):
            return exc
        if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT and _timed_out(exc, started, timeout):
            return _timeout(self._label, tool, timeout)
        closed = isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED and _sdk_closed(exc)
        if closed or isinstance(exc, BaseExceptionGroup) or not owner.usable:
            if owner.stopping:
                return _ended(owner, what, tool=tool)
            # the owner usually learns the cause (a process that exited, the transport's error) at once: wait
            # for it a moment, for the message
            if not await owner.wait_gone(_LOST_CAUSE_WAIT):
                owner.mark_lost(f"{describe(exc)} during {what}")
            outcome = "; it was not sent again: its outcome is unknown" if tool is not None else ""
            cause = owner.lost or describe(exc)
            return MCPConnectionError(
                f"MCP server {self._label}: the connection was lost during {what} ({cause}){outcome}.",
                server=self._label,
            )
        if isinstance(exc, MCPError):  # the server's own JSON-RPC error response: the connection stays
            return MCPProtocolError(
                f"MCP server {self._label} answered {what} with error {exc.code}: {_cut(exc.message)}",
                server=self._label,
                code=exc.code,
            )
        if isinstance(exc, ValidationError):  # a result (a content block, say) the SDK could not parse
            first = exc.errors(include_url=False, include_input=False)[:1]
            detail = f"{'.'.join(str(part) for part in first[0]['loc'])}: {first[0]['msg']}" if first else describe(exc)
            count = exc.error_count()
            more = f" (and {count - 1} more error{'' if count == 2 else 's'})" if count > 1 else ""
            error = MCPProtocolError(
                f"MCP server {self._label}: {what} returned a malformed result: {_cut(detail)}{more}",
                server=self._label,
                code=None,
            )
        else:  # what else the SDK may raise: never passed on raw (an exception group above all)
            kind = "breaks the protocol" if isinstance(exc, RuntimeError) else "failed"
            error = MCPProtocolError(
                f"MCP server {self._label}: {what} {kind}: {_cut(describe(exc))}", server=self._label, code=None
            )
        # no cause chained: a pydantic dump or the SDK's internals would be shown again after the short text
        _logger.debug("MCP server %s: %s failed in the SDK", self._label, what, exc_info=exc)
        return error


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
    if tool is None:
        text = f"listing the tools took longer than {timeout:g} s; the server was asked to cancel it."
    else:
        text = (
            f"the call of {tool!r} took longer than {timeout:g} s; the server was asked to cancel it, and its "
            f"outcome is unknown (it may have run); it is not sent again."
        )
    return MCPTimeoutError(f"MCP server {label}: {text}", server=label, tool=tool, timeout=timeout)


def _timed_out(exc: MCPError, started: float, timeout: float) -> bool:
    """Whether ``MCPError(-32001)`` is the SDK's own timeout, not a server's error response with that code.

    The SDK raises its own while handling a TimeoutError, and only once the time is up.
    """
    return isinstance(exc.__context__, TimeoutError) or anyio.current_time() - started >= timeout


def _sdk_closed(exc: MCPError) -> bool:
    """Whether ``MCPError(-32000)`` is the SDK's own "connection closed", not a server's error response.

    The SDK's HTTP transport also makes up ``-32000`` errors for a request whose stream ended.
    """
    message = exc.message
    return message == "Connection closed" or message.startswith(_SDK_STREAM_ENDS)


def _cut(text: str, limit: int = _TEXT_LIMIT) -> str:
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
