"""``GET /api/v1/events``: the store's event log as Server-Sent Events, live and replayed.

One :class:`EventHub` per app holds one thread that waits on the store
(:meth:`~handrail.stores.service.ServiceStore.wait_for_events`: LISTEN/NOTIFY on PostgreSQL, a short poll
elsewhere) and hands each new batch to every open stream's queue; an idle stream is a coroutine waiting on its
queue, not a thread. The thread runs only while a stream is open. Events written by any process sharing the store
arrive, since they are read from the store.

A stream sends each event as ``id: <event id>`` / ``event: <kind>`` / ``data: <JSON>``. A client that reconnects
with ``Last-Event-ID`` (or ``?last_event_id=``) gets the events it missed first, from the store; when the log
no longer holds them (it is bounded) it gets ``event: reset`` and should list again. A comment line is sent
after every ``keepalive`` seconds of silence. Before it sends each chunk (a batch of events, a page of missed ones,
a ``reset``, a keep-alive) a stream asks the store whether its credentials still hold
(:func:`~handrail.server._auth.credentials_check`): once the token is revoked, or the session cookie expired, it
ends without sending anything more. Closing the hub (server shutdown) ends every stream at once, so a shutdown
never waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.types import Send

from handrail.dataclasses.approval import STATUSES
from handrail.dataclasses.service import RUN_STATUSES, Principal, ServiceEvent
from handrail.server._auth import authenticated, credentials_check
from handrail.server._context import context_of
from handrail.server._problems import ApiProblem

__all__ = ["EventHub", "router"]

router = APIRouter(tags=["events"])
_LOG = logging.getLogger("handrail.server")
_CLOSE: Any = object()
_RESET: Any = object()
_KEEPALIVE: Any = object()
_ENDED = ": the credentials were revoked or expired; the stream ends\n\n"
_EVENT_STATUSES = frozenset(STATUSES) | frozenset(RUN_STATUSES)
_QUEUE_BATCHES = 1000
_PAGE = 500
_WAIT = 1.0


@dataclass(eq=False)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Any] = field(default_factory=lambda: asyncio.Queue(_QUEUE_BATCHES))

    def offer(self, item: Any) -> None:
        """Runs on the loop: queue ``item``; a stream too slow to keep up is told to reset."""
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(_RESET)


class EventHub:
    """Fans the store's new events out to the app's open streams (see the module docstring).

    Args:
        store: The service store.
        keepalive: Seconds of silence after which a stream sends a comment.
    """

    def __init__(self, store: Any, *, keepalive: float = 15.0) -> None:
        self.store = store
        self.keepalive = keepalive
        self._lock = threading.RLock()
        self._deliver_lock = threading.Lock()
        self._subscribers: set[_Subscriber] = set()
        self._thread: threading.Thread | None = None
        self._last = 0
        self._closed = threading.Event()

    @property
    def last_id(self) -> int:
        """The id of the last event handed out to the streams."""
        with self._lock:
            return self._last

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed.is_set()

    def subscribe(self, loop: asyncio.AbstractEventLoop) -> tuple[_Subscriber, int]:
        """A new stream's queue, and the id of the last event the hub handed out (blocking: run it in a thread)."""
        subscriber = _Subscriber(loop)
        with self._lock:
            if self._closed.is_set():
                subscriber.queue.put_nowait(_CLOSE)
                return subscriber, self._last
            if self._thread is None:
                self._last = self.store.events_after(0, limit=1).last_id
                self._thread = threading.Thread(target=self._pump, name="handrail-events", daemon=True)
                self._thread.start()
            self._subscribers.add(subscriber)
            return subscriber, self._last

    def unsubscribe(self, subscriber: _Subscriber) -> None:
        """Forget a closed stream (the thread stops after the last one)."""
        with self._lock:
            self._subscribers.discard(subscriber)

    def _send(self, item: Any) -> None:
        with self._lock:
            targets = list(self._subscribers)
        for subscriber in targets:
            try:
                subscriber.loop.call_soon_threadsafe(subscriber.offer, item)
            except RuntimeError:  # its loop closed: the stream is gone
                self.unsubscribe(subscriber)

    def _pump(self) -> None:
        while not self._closed.is_set():
            with self._lock:
                if not self._subscribers:
                    self._thread = None
                    return
                after = self._last
            try:
                if not self.store.wait_for_events(after, timeout=_WAIT):
                    continue
                page = self.store.events_after(after, limit=_PAGE)
            except Exception as exc:  # a store failure must not end the hub: streams wait and it tries again
                _LOG.warning("The event stream cannot read the store (%s); retrying.", type(exc).__name__)
                self._closed.wait(_WAIT)
                continue
            self._deliver(page)

    def poke(self) -> None:
        """Read and hand out new events now (after a change made by this process: no wait for the next poll)."""
        with self._lock:
            if not self._subscribers or self._closed.is_set():
                return
            after = self._last
        try:
            page = self.store.events_after(after, limit=_PAGE)
        except Exception as exc:  # the pump reads them at its next wake
            _LOG.warning("The event stream cannot read the store (%s).", type(exc).__name__)
            return
        self._deliver(page)

    def _deliver(self, page: Any) -> None:
        """Hand out a page read after some id: only what is newer than what was handed out (pump and poke race)."""
        with self._deliver_lock:
            with self._lock:
                last = self._last
                fresh = tuple(e for e in page.events if e.id > last)
                if page.gap:
                    self._last = max(last, page.last_id)
                elif fresh:
                    self._last = fresh[-1].id
            if page.gap:
                self._send(_RESET)
            elif fresh:
                self._send(fresh)

    def close(self) -> None:
        """End every stream now and stop the thread (idempotent; safe from any thread)."""
        self._closed.set()
        self._send(_CLOSE)


def _frame(event: ServiceEvent) -> str:
    data = json.dumps({**event.data, "at": event.at.isoformat()}, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n"


def _reset(last_id: int) -> str:
    return f'id: {last_id}\nevent: reset\ndata: {{"last_id":{last_id}}}\n\n'


@dataclass(frozen=True)
class _Filters:
    run_id: str | None
    status: str | None
    tool_name: str | None

    def matches(self, event: ServiceEvent) -> bool:
        pairs = (("run_id", self.run_id), ("status", self.status), ("tool_name", self.tool_name))
        return all(want is None or event.data.get(key) == want for key, want in pairs)


async def _replay(store: Any, since: int, filters: _Filters) -> AsyncIterator[tuple[str, int]]:
    """The stored events after ``since``, a page at a time: ``(frames, the id the stream has covered)``.

    A ``reset`` frame, covering up to the log's newest id, when the log lost some of them or never gave ``since``
    (an id above its newest: another store's).
    """
    after = since
    while True:
        page = await anyio.to_thread.run_sync(functools.partial(store.events_after, after, limit=_PAGE))
        if page.gap or page.last_id < since:
            yield _reset(page.last_id), page.last_id
            return
        if page.events:
            yield "".join(_frame(e) for e in page.events if filters.matches(e)), page.events[-1].id
        if len(page.events) < _PAGE:
            return
        after = page.events[-1].id


class _EventStreamResponse(StreamingResponse):
    """A stream that subscribes to the hub before it sends its headers.

    So an event written once the client has its response (it is "connected") is never missed: StreamingResponse
    would send the headers first and only then start the generator.
    """

    def __init__(self, hub: EventHub, since: int | None, filters: _Filters, valid: Callable[[], bool],
                 headers: dict[str, str]) -> None:  # fmt: skip
        super().__init__(_nothing(), media_type="text/event-stream", headers=headers)
        self.hub, self.since, self.filters, self.valid = hub, since, filters, valid

    async def stream_response(self, send: Send) -> None:
        subscriber, last = await anyio.to_thread.run_sync(self.hub.subscribe, asyncio.get_running_loop())
        try:
            self.body_iterator = _stream(self.hub, subscriber, last, self.since, self.filters, self.valid)
            await super().stream_response(send)
        finally:
            self.hub.unsubscribe(subscriber)


async def _nothing() -> AsyncIterator[str]:
    return
    yield  # pragma: no cover - makes this an async generator


async def _stream(hub: EventHub, subscriber: _Subscriber, last: int, since: int | None, filters: _Filters,
                  valid: Callable[[], bool]) -> AsyncIterator[str]:  # fmt: skip
    """The text of one stream: ``retry``, then its chunks while its credentials are valid (asked before each one)."""
    yield "retry: 2000\n\n"
    async with contextlib.aclosing(_chunks(hub, subscriber, last, since, filters)) as chunks:
        async for chunk in chunks:
            if not await anyio.to_thread.run_sync(valid):
                yield _ENDED
                return
            yield chunk


async def _chunks(hub: EventHub, subscriber: _Subscriber, last: int, since: int | None,
                  filters: _Filters) -> AsyncGenerator[str, None]:  # fmt: skip
    """What one stream sends, a chunk at a time.

    The missed events (``since``) a page at a time, then the frames of each batch the hub hands out, a ``reset``,
    or a keep-alive comment after ``keepalive`` seconds without a chunk.
    """
    sent = last if since is None else since
    if since is not None:
        async for chunk, covered in _replay(hub.store, since, filters):
            sent = covered
            if chunk:
                yield chunk
    loop = asyncio.get_running_loop()
    quiet_until = loop.time() + hub.keepalive
    while True:
        try:
            item = await asyncio.wait_for(subscriber.queue.get(), timeout=max(0.0, quiet_until - loop.time()))
        except TimeoutError:
            item = _KEEPALIVE
        if item is _CLOSE:
            return
        if item is _KEEPALIVE:
            chunk = ": keep-alive\n\n"
        elif item is _RESET:
            sent = hub.last_id
            chunk = _reset(sent)
        else:
            chunk = "".join(_frame(e) for e in item if e.id > sent and filters.matches(e))
            sent = max(sent, item[-1].id)
        if chunk:
            yield chunk
            quiet_until = loop.time() + hub.keepalive


def _since(header: str | None, query: int | None) -> int | None:
    if header is not None:
        text = header.strip()
        if not text.isdigit() or len(text) > 18:
            raise ApiProblem(400, "Last-Event-ID must be an event id (digits) this stream sent.", slug="bad-request")
        return int(text)
    return query


def _status(status: str | None) -> str | None:
    if status is not None and status not in _EVENT_STATUSES:
        known = ", ".join(sorted(_EVENT_STATUSES))
        error = {"parameter": "status", "in": "query", "detail": f"an approval or run status: {known}"}
        raise ApiProblem(422, f"status matches no event; it is one of {known}.", slug="invalid-request",
                         extra={"errors": [error]})  # fmt: skip
    return status


@router.get(
    "/events",
    summary="Server-Sent Events: approvals and runs as they change",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def events(
    request: Request,
    principal: Annotated[Principal, Depends(authenticated)],
    run_id: Annotated[str | None, Query(min_length=1, max_length=500)] = None,
    status: Annotated[str | None, Query(min_length=1, max_length=50, description="An approval or run status")] = None,
    tool_name: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    last_event_id: Annotated[int | None, Query(ge=0, lt=10**18, description="As the Last-Event-ID header")] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """The store's events as ``text/event-stream``.

    ``approval.created`` / ``voted`` / ``decided`` / ``expired`` / ``cancelled`` and ``run.*`` events (``id``
    increasing, ``data`` JSON), the missed ones first after a reconnect, ``reset`` when they are gone, a
    keep-alive comment in silences. The credentials are checked again before each batch and at each keep-alive:
    once the token is revoked (or the session cookie expired) the stream ends, sending no further event.
    """
    hub: EventHub = context_of(request).events
    since = _since(last_event_id_header, last_event_id)
    filters = _Filters(run_id, _status(status), tool_name)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return _EventStreamResponse(hub, since, filters, credentials_check(request), headers)
