"""The owner of one live MCP connection: one task on the MCP loop that enters the ``mcp.Client`` and exits it.

The SDK's anyio cancel scopes and task groups must be exited by the task that entered them; the owner task is
that task, for the connection's whole life. Requests do not run inside it: each runs in its own task on the same
loop (the SDK supports concurrent requests from several tasks on one session: each waits on its own response
stream). So when a streamable HTTP transport fails and cancels the scope it opened around the owner's body, only
the owner sees that cancellation (and the exception group behind it); a request in flight gets the SDK's
``MCPError(-32000, "Connection closed")`` instead, never a stray ``CancelledError``.

Lifecycle: ``connecting`` → ``ready`` (``error`` set when it never connected) → ``ended`` (``lost`` set when it
ended without being asked to: the server went away, or a request saw the connection close).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack

import anyio
import mcp
from anyio.abc import TaskGroup
from mcp.client import IncomingMessage
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from handrail.tools.mcp._loop import at_exit
from handrail.tools.mcp._servers import StdioServer
from handrail.tools.mcp._transport import Target, open_client

__all__ = ["CLOSED", "Owner", "describe"]

CLOSED = "the connection closed"
"""How :func:`describe` tells the SDK's ``MCPError(-32000, "Connection closed")``."""

_logger = logging.getLogger("handrail.tools.mcp")
_STOP_TIMEOUT = 10.0
"""How long stopping waits for the owner to exit the client (a stdio process gets ~4 s to end, then is killed)."""
_ALL: set[Owner] = set()
"""The owners whose task is running: stopped at interpreter exit."""
_exit_registered = False


class Owner:
    """One connection attempt and, once connected, the live connection; created on the MCP loop.

    Args:
        target: What to connect to (secrets resolved).
        mode: ``"auto"`` or ``"legacy"``.
        connect_timeout: Seconds the connection (handshake included) may take.
        on_tools_changed: Called (on the MCP loop) when the server says its tool list changed.
    """

    def __init__(
        self, target: Target, *, mode: str, connect_timeout: float, on_tools_changed: Callable[[], None] | None
    ) -> None:
        self.target = target
        self.client: mcp.Client | None = None
        """The entered client while connected; None before and after."""
        self.protocol_version: str | None = None
        self.instructions: str | None = None
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done once connected, or once connecting failed (then ``error`` says why)."""
        self.error: str | None = None
        """Why connecting failed."""
        self.lost: str | None = None
        """Why the connection ended without being asked to."""
        self.stopping = False
        self._mode = mode
        self._connect_timeout = connect_timeout
        self._on_tools_changed = on_tools_changed
        self._stop = asyncio.Event()
        self._ended = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._abandoned = False
        self._deadline = math.inf
        self._in_flight: set[anyio.CancelScope] = set()
        self._gone = asyncio.Event()  # set once the connection is known to be lost, or has ended
        if not _ALL:
            _register_exit()
        _ALL.add(self)
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"handrail-mcp {target.label}")

    @property
    def usable(self) -> bool:
        """Connected, not lost, not being stopped."""
        return self.client is not None and self.lost is None and not self.stopping

    @property
    def connecting(self) -> bool:
        """Still connecting."""
        return not self.ready.done()

    def fail_connect(self, error: str) -> None:
        """Give up connecting (a waiter's timeout ran out): record ``error`` and cancel the attempt."""
        if self.client is None:
            if self.error is None:
                self.error = error
            self._cancel()

    def mark_lost(self, reason: str) -> None:
        """The connection is dead (a request saw it close): record ``reason`` and let the owner exit the client."""
        if self.lost is None and not self.stopping:
            self.lost = reason
            _logger.warning("MCP server %s: connection lost: %s", self.target.label, reason)
        self._gone.set()
        self._stop.set()

    @contextlib.contextmanager
    def request(self) -> Iterator[anyio.CancelScope]:
        """A scope for one request, in the requesting task: cancelled when the connection ends before it does.

        Over stdio and HTTP the SDK ends a pending request itself (``Connection closed``); an in-process server
        runs the tool in the requesting task, so only this scope stops it. Check ``cancelled_caught`` after it.
        """
        scope = anyio.CancelScope()
        if self.client is None or self.stopping:
            scope.cancel()
        self._in_flight.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._in_flight.discard(scope)

    async def stop(self) -> None:
        """End the connection (the stdio process too) and wait, bounded, until it has ended; idempotent."""
        self.stopping = True
        if self.client is None:
            self._cancel()  # still connecting: abandon the handshake
        self._cancel_requests()
        self._stop.set()
        done, _ = await asyncio.wait({self.task}, timeout=_STOP_TIMEOUT)
        if not done:  # pragma: no cover - the SDK bounds its own shutdown; a last resort
            _logger.warning("MCP server %s did not close within %s s; cancelling it", self.target.label, _STOP_TIMEOUT)
            self.task.cancel()
            await asyncio.wait({self.task}, timeout=_STOP_TIMEOUT)

    async def wait_gone(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` seconds) until the connection is known to be lost, or has ended.

        Returns:
            Whether it is.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._gone.wait(), timeout)
        return self._gone.is_set()

    def _cancel_requests(self) -> None:
        for scope in list(self._in_flight):
            scope.cancel()

    def _cancel(self) -> None:
        self._abandoned = True  # read by _serve when it has not started yet
        if self._scope is not None:
            self._scope.cancel()

    async def _run(self) -> None:
        reason: str | None = None
        try:
            await self._serve()
        except asyncio.CancelledError:
            reason = "it was cancelled"
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the owner task itself was cancelled (stop()'s last resort)
        except BaseException as exc:  # what ends a connection: an exception group from the transport, an OSError...
            reason = describe(exc)
        finally:
            self._end(reason)

    async def _serve(self) -> None:
        self._deadline = anyio.current_time() + self._connect_timeout
        with anyio.CancelScope(deadline=self._deadline) as scope:
            self._scope = scope
            if self._abandoned:
                scope.cancel()
            async with AsyncExitStack() as stack:
                client = await open_client(
                    stack, self.target, mode=self._mode, message_handler=self._on_message, ended=self._ended
                )
                connect_deadline, scope.deadline, self._deadline = self._deadline, math.inf, math.inf
                self.protocol_version, self.instructions = client.protocol_version, client.instructions
                async with anyio.create_task_group() as tasks:
                    if self.target.watched:
                        tasks.start_soon(self._watch_transport)
                    if self._on_tools_changed is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        await self._start_listening(tasks, client, connect_deadline)
                    self.client = client
                    self._set_ready()
                    _logger.info("MCP server %s connected (protocol %s)", self.target.label, self.protocol_version)
                    await self._stop.wait()
                    tasks.cancel_scope.cancel()

    def _set_ready(self) -> None:
        if not self.ready.done():
            self.ready.set_result(None)

    def _end(self, reason: str | None) -> None:
        _ALL.discard(self)
        was_connected = self.client is not None
        self.client = None
        self._cancel_requests()
        if not was_connected and self.error is None and not self.stopping and anyio.current_time() >= self._deadline:
            self.error = f"it did not connect within {self._connect_timeout:g} s"
        if not was_connected and self.error is None:
            if reason == CLOSED:
                reason = (
                    "the server closed the connection before the handshake ended (did it exit? its stderr goes to "
                    "the logger handrail.tools.mcp.stderr)"
                )
            self.error = reason or self.lost or ("it was closed before it connected" if self.stopping else "it ended")
        elif was_connected and not self.stopping and self.lost is None:
            self.lost = reason or "the server ended the connection"
            _logger.warning("MCP server %s: connection lost: %s", self.target.label, self.lost)
        _logger.debug("MCP server %s: connection ended", self.target.label)
        self._gone.set()
        self._set_ready()

    async def _watch_transport(self) -> None:
        await self._ended.wait()
        process = "; its process may have exited" if isinstance(self.target.server, StdioServer) else ""
        self.mark_lost(f"the server closed the connection{process}")

    async def _start_listening(self, tasks: TaskGroup, client: mcp.Client, connect_deadline: float) -> None:
        """Open the listen stream and wait, within the connect time, for its ack (so no change is missed).

        A server that does not ack by then is used without it: its changes come by notification, if at all.
        """
        acked = anyio.Event()
        tasks.start_soon(self._listen, client, acked)
        margin = min(0.5, self._connect_timeout / 10)
        with anyio.move_on_after(max(0.0, connect_deadline - margin - anyio.current_time())):
            await acked.wait()

    async def _listen(self, client: mcp.Client, acked: anyio.Event) -> None:
        """Follow the 2026-07-28 ``subscriptions/listen`` stream of tool-list changes until the connection ends."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                acked.set()
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._tools_changed()
        except Exception as exc:  # a server without listen, a lost stream: changes then come by notification only
            if acked.is_set():
                _logger.debug("MCP server %s: the tool-list subscription ended (%s)", self.target.label, describe(exc))
            else:
                _logger.info("MCP server %s: no tool-list subscription (%s)", self.target.label, describe(exc))
        finally:
            acked.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, mcp.types.ToolListChangedNotification):
            self._tools_changed()
        elif isinstance(message, Exception) and not isinstance(message, ValidationError):  # those: one WARNING each
            _logger.debug("MCP server %s: transport reported %s", self.target.label, describe(message))

    def _tools_changed(self) -> None:
        if self._on_tools_changed is None:
            return
        try:
            self._on_tools_changed()
        except Exception:
            _logger.exception("on_tools_changed of MCP server %s raised", self.target.label)


def describe(exc: BaseException) -> str:
    """A one-line account of ``exc``: the first leaf of an exception group, with its type.

    Args:
        exc: What ended a connection or a request.

    Returns:
        ``"RemoteProtocolError: Server disconnected ..."``, ``"the connection closed"``, ...
    """
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return CLOSED
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _stop_all() -> None:
    await asyncio.gather(*(owner.stop() for owner in list(_ALL)), return_exceptions=True)


def _register_exit() -> None:
    global _exit_registered
    if not _exit_registered:
        _exit_registered = True
        at_exit(_stop_all)
