"""The HTTP API of the approval service: :func:`create_app` builds the FastAPI app over one store.

Routes (JSON under ``/api/v1``; every error a problem details object, see :mod:`handrail.server._problems`):

==========================================  ==============================================================
``GET /healthz``                            liveness, no authentication
``GET /``, ``GET /static/{name}``            the inbox page and its files, no authentication (no data)
``POST /api/v1/login`` / ``logout``         the page's session cookie
``GET /api/v1/me``                          who the credentials belong to
``GET /api/v1/approvals``                   list (filters, cursor, counts)
``GET /api/v1/approvals/{id}``              one, with context messages and an ``ETag``
``POST /api/v1/approvals/{id}/decision``    decide (``If-Match``, ``Idempotency-Key``)
``GET /api/v1/approvals/{id}/audit``        its audit trail
``GET /api/v1/approvals/{id}/preview``      the tool's preview of the call
``GET /api/v1/audit/export``                JSON Lines of a time range (admin)
``POST /api/v1/runs``, ``GET .../{id}``     start a run, read it
``GET /api/v1/runs``                        list (status, cursor)
``GET /api/v1/events``                      Server-Sent Events
``GET /api/v1/openapi.json``                the OpenAPI document
==========================================  ==============================================================

Every route but ``/healthz`` and the page's needs a principal (:func:`~handrail.server._auth.authenticated`): the
API router carries it as a dependency, so a route added there cannot forget it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

try:
    from fastapi import APIRouter, Depends, FastAPI
    from fastapi.responses import JSONResponse
except ImportError as exc:  # pragma: no cover - the server extra is not installed
    raise ImportError(f"The approval service's HTTP API needs fastapi: pip install 'handrail[server]' ({exc})") from exc

from handrail import __version__
from handrail.dataclasses.service import Principal
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop.service import ApprovalService
from handrail.server import _routes_approvals, _routes_page, _routes_preview, _routes_runs, _routes_session
from handrail.server._auth import HostCheckMiddleware, Sessions, authenticated, host_allowlist
from handrail.server._context import ServiceContext, Waker
from handrail.server._events_stream import EventHub
from handrail.server._events_stream import router as events_router
from handrail.server._previews import Previewer
from handrail.server._problems import CatchAllMiddleware, install, problem_schema
from handrail.server._registry import AgentFactory
from handrail.server._resumer import Resumer
from handrail.stores.approvals import ApprovalStore
from handrail.stores.service import ServiceStore

__all__ = ["API_PREFIX", "create_app"]

API_PREFIX = "/api/v1"
"""Where the API's routes are."""
_ERROR_CODES = (400, 401, 403, 404, 409, 410, 412, 421, 422, 500, 503)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_store(store: Any) -> None:
    missing = [name for name, kind in (("approval records", ApprovalStore), ("tokens and events", ServiceStore))
               if not isinstance(store, kind)]  # fmt: skip
    if missing:
        raise ConfigurationTypeError(
            f"The approval service needs a store that keeps {' and '.join(missing)} (a FileSnapshotStore, "
            f"SQLiteSnapshotStore or PostgresSnapshotStore); {type(store).__name__} does not."
        )


def _temporal_decisions(temporal: Any, namespace: str, tracing: Any = None) -> Any:
    """The deliverer of decisions on Temporal runs (None: none); an address makes one (traced with ``tracing``)."""
    if temporal is None:
        return None
    from handrail.server._temporal import TemporalDecisions

    if isinstance(temporal, str):
        if tracing is None:
            return TemporalDecisions(temporal, namespace=namespace)
        from handrail.temporal._tracing import interceptor

        given = interceptor(tracing.provider is None, tracing.provider)
        return TemporalDecisions(temporal, namespace=namespace, interceptors=[given])
    if not callable(temporal):
        raise ConfigurationTypeError(
            f"temporal must be HOST:PORT or a TemporalDecisions, got {type(temporal).__name__}."
        )
    return temporal


def _telemetry(tracer_provider: Any) -> Any:
    """FastAPI's own telemetry: no logs; its request spans to the service's tracer provider when one is given."""
    return {"logs": False} if tracer_provider is None else {"logs": False, "tracer_provider": tracer_provider}


def _end_streams_on_signal(hub: EventHub, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Chain SIGINT / SIGTERM handlers that close the hub first (uvicorn waits for open streams otherwise).

    Returns the function that puts the previous handlers back. Only the main thread may set handlers; elsewhere
    (an app served from a thread) nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        before = signal.getsignal(sig)
        if not callable(before):
            continue

        def chained(number: int, frame: Any, before: Any = before) -> None:
            loop.call_soon_threadsafe(hub.close)
            before(number, frame)

        previous[sig] = before
        signal.signal(sig, chained)

    def restore() -> None:
        for sig, before in previous.items():
            signal.signal(sig, before)

    return restore


def _api_router(app: FastAPI) -> APIRouter:
    api = APIRouter(dependencies=[Depends(authenticated)], responses={c: problem_schema() for c in _ERROR_CODES})
    api.include_router(_routes_approvals.router)
    api.include_router(_routes_preview.router)
    api.include_router(_routes_runs.router)
    api.include_router(events_router)
    api.include_router(_routes_session.router)

    @api.get("/openapi.json", include_in_schema=False)
    def openapi(principal: Annotated[Principal, Depends(authenticated)]) -> JSONResponse:
        return JSONResponse(app.openapi())

    return api


def create_app(
    store: Any,
    *,
    agents: Mapping[str, AgentFactory] | None = None,
    agents_dir: str | os.PathLike[str] | None = None,
    allow_modules: Iterable[str] = (),
    allow_commands: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    clock: Callable[[], datetime] | None = None,
    resume: bool = True,
    unknown_outcome: str = "fail",
    keepalive: float = 15.0,
    session_ttl: timedelta = timedelta(hours=12),
    context_messages: int = 6,
    max_body_size: int = 1 << 20,
    preview_timeout: float = 2.0,
    temporal: Any = None,
    namespace: str = "default",
    tracing: bool = False,
    tracer_provider: Any = None,
) -> FastAPI:
    """The approval service's HTTP API over ``store`` (needs ``pip install 'handrail[server]'``).

    Args:
        store: A snapshot store that keeps approvals, tokens and events (the built-in ones).
        agents: ``{name: factory}``, ``factory(store) -> Agent``: the agents ``POST /api/v1/runs`` starts and the
            resumer continues (see :class:`~handrail.server.AgentRegistry`).
        agents_dir: A directory of agent files (``<name>.yaml``), another source of agents.
        allow_modules: Module prefixes agent files (and snapshots) may import from.
        allow_commands: Programs the agent files' stdio MCP servers may run, besides those each file allows.
        allowed_hosts: Host names the server answers to besides the loopback names (its public name, the bound
            address); any other ``Host`` gets 421.
        clock: Returns now (timezone-aware); tests inject one to judge expiry.
        resume: Run the :class:`~handrail.server.Resumer` in the app's process while it is served (its lifespan):
            paused runs continue once their calls are decided or expired; a decision through the app wakes it.
            False: resuming is left to ``handrail worker`` processes (runs started here are still driven to their
            first pause by this process).
        unknown_outcome: The resumer's rule for a call found ``running`` (``fail`` or ``retry``).
        keepalive: Seconds of silence after which an event stream sends a comment.
        session_ttl: How long a login's session cookie lasts.
        context_messages: How many conversation messages an approval's detail shows by default.
        max_body_size: The largest request body accepted, in bytes (413 beyond).
        preview_timeout: Seconds ``GET /api/v1/approvals/{id}/preview`` waits for a tool's preview before it
            answers "preview unavailable" (the preview goes on in its thread; what it returns is kept).
        temporal: ``HOST:PORT`` of Temporal (or a :class:`~handrail.server._temporal.TemporalDecisions`): the
            approvals of Temporal runs (recorded into ``store`` by their workers) are decided by ``decide``
            Updates to their workflows (docs/approval-service.md, "Temporal runs"). None: such approvals are listed but
            take no decision here.
        namespace: The Temporal namespace (with ``temporal`` given as an address).
        tracing: Trace with OpenTelemetry (``pip install 'handrail[tracing]'``) to the global tracer provider: the
            runs the service drives (:func:`handrail.tracing.enable` is called, for the process) and a
            ``handrail.approval.decide`` span per decision, in the trace of the paused run; a resumed run continues
            that trace (docs/approval-service.md, "Tracing in the service"). Off: OpenTelemetry is never imported.
        tracer_provider: Trace to this ``TracerProvider`` instead (each agent the service builds gets it, unless it
            has one of its own; FastAPI's spans of the requests go there too); implies ``tracing``.

    Returns:
        A FastAPI app; serve it with uvicorn (or :func:`handrail.server.serve`).

    Raises:
        ConfigurationTypeError: ``store`` keeps no approvals, tokens or events.
        ConfigurationError: A non-positive ``keepalive``, ``session_ttl`` or ``preview_timeout``, a negative
            ``context_messages``; an agent that does not pause into ``store`` (named).
    """
    _check_store(store)
    if not keepalive > 0 or not session_ttl.total_seconds() > 0:
        raise ConfigurationError(f"keepalive and session_ttl must be positive, got {keepalive} and {session_ttl}.")
    if type(context_messages) is not int or context_messages < 0:
        raise ConfigurationError(f"context_messages must be an int >= 0, got {context_messages!r:.40}.")
    now = clock or _utc_now
    hub = EventHub(store, keepalive=keepalive)
    resumer = Resumer(store, agents=agents, agents_dir=agents_dir, allowed_modules=allow_modules,
                      allowed_commands=allow_commands, clock=now, unknown_outcome=unknown_outcome, tracing=tracing,
                      tracer_provider=tracer_provider)  # fmt: skip
    deliver = _temporal_decisions(temporal, namespace, resumer.launcher.tracing)
    waker = Waker(hub.poke, resumer.wake) if resume else Waker(hub.poke)
    previews = Previewer(store, resumer.launcher.registry, timeout=preview_timeout)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        restore = _end_streams_on_signal(hub, asyncio.get_running_loop())
        if resume:
            resumer.start()
        try:
            yield
        finally:
            restore()
            hub.close()
            await asyncio.to_thread(waker.close)
            await asyncio.to_thread(resumer.stop)  # the runs under way finish (or pause) first
            if isinstance(temporal, str):  # made here: closed here
                await asyncio.to_thread(deliver.close)

    app = FastAPI(
        title="handrail approval service", version=__version__, openapi_url=None, docs_url=None, redoc_url=None,
        lifespan=lifespan, telemetry=_telemetry(tracer_provider),
    )  # fmt: skip
    hosts = host_allowlist(allowed_hosts)
    app.state.handrail = ServiceContext(
        store=store, service=ApprovalService(store, clock=now, backends={"temporal": deliver} if deliver else None),
        clock=now,
        sessions=Sessions(store, session_ttl, now), hosts=hosts, events=hub, runs=resumer.launcher,
        resumer=resumer if resume else None, wake=waker, context_messages=context_messages, previews=previews,
        tracing=resumer.launcher.tracing,
    )  # fmt: skip
    install(app)
    app.include_router(_routes_session.health_router)
    app.include_router(_routes_page.router)
    app.include_router(_routes_session.session_router, prefix=API_PREFIX)
    app.include_router(_api_router(app), prefix=API_PREFIX)
    app.add_middleware(HostCheckMiddleware, hosts=hosts)
    app.add_middleware(CatchAllMiddleware, max_body_size=max_body_size)
    return app
