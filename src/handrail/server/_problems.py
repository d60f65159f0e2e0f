"""Errors as RFC 9457 problem details: every error the HTTP API answers is ``application/problem+json``.

A problem is ``{"type", "title", "status", "detail", "instance"}`` plus, where they apply, ``errors`` (422: one
``{"pointer": JSON Pointer into the request body, "detail"}`` or ``{"parameter": name, "in": "query" | "header" |
"path", "detail"}`` per problem), ``current`` (409 / 410 / 412: the approval as it is now: status, version,
decision, decider, time) and ``approval_id``.

:func:`install` makes every error one: handrail's errors (mapped by :func:`status_of`), FastAPI's request
validation errors, Starlette's HTTP errors (an unknown route 404, a wrong method 405, a body too large 413) and
any unexpected exception (500 with a generic detail; the exception is logged server-side, never sent).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from handrail.errors import (
    ApprovalClosedError,
    ApprovalConflictError,
    ApprovalDecisionError,
    ApprovalExpiredError,
    ApprovalNotFoundError,
    ConfigurationError,
    ConfigurationTypeError,
    CorruptRecordError,
    HandrailError,
    IdempotencyKeyReusedError,
    PermissionDeniedError,
    RunNotFoundError,
    SnapshotUnavailableError,
    StoreError,
    UnknownAgentError,
)
from handrail.server._temporal import _TemporalNotAnswering

__all__ = ["PROBLEM_JSON", "ApiProblem", "CatchAllMiddleware", "install", "problem", "problem_schema", "status_of"]

PROBLEM_JSON = "application/problem+json"
"""The media type of every error response."""
_TYPE_PREFIX = "urn:handrail:problem:"
_LOG = logging.getLogger("handrail.server")

# Most specific first: the first class an error is an instance of decides (status, type slug).
_MAPPING: tuple[tuple[type[BaseException], int, str], ...] = (
    (PermissionDeniedError, 403, "permission-denied"),
    (ApprovalNotFoundError, 404, "approval-not-found"),
    (RunNotFoundError, 404, "run-not-found"),
    (UnknownAgentError, 404, "unknown-agent"),
    (ApprovalExpiredError, 410, "approval-expired"),
    (ApprovalClosedError, 409, "approval-decided"),
    (ApprovalConflictError, 412, "approval-changed"),
    (IdempotencyKeyReusedError, 422, "idempotency-key-reused"),
    (ApprovalDecisionError, 422, "decision-refused"),
    (SnapshotUnavailableError, 503, "snapshot-busy"),
    (CorruptRecordError, 500, "damaged-record"),
    (_TemporalNotAnswering, 503, "temporal-unavailable"),
    (StoreError, 503, "store-unavailable"),
    (ConfigurationError, 400, "bad-request"),
    (ConfigurationTypeError, 400, "bad-request"),
)
# What an error's message may not say to a client (it may name a database host): a fixed detail instead.
_GENERIC_DETAIL: dict[str, str] = {
    "store-unavailable": "The store is unavailable right now; try again later.",
    "temporal-unavailable": "Temporal did not answer; nothing was recorded. The same request again may decide it.",
    "damaged-record": "A record this request needs is damaged in the store; an administrator must repair it.",
}

_NOT_FOUND = {"approval-not-found": ("approval", "approval_id"), "run-not-found": ("run", "run_id")}


class ApiProblem(Exception):
    """Raised by a route to answer with a problem (the handler :func:`install` adds turns it into one).

    Args:
        status: The HTTP status.
        detail: A sentence for the client (never a secret, never a traceback).
        slug: The last part of the problem ``type`` (None: ``about:blank``).
        headers: Extra response headers (``WWW-Authenticate``, ``Retry-After``).
        extra: Extension members of the problem object.
    """

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        slug: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.slug = slug
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


class _ProblemResponse(JSONResponse):
    """A problem's JSON, ASCII-escaped: a detail quoting a client's text with a lone surrogate still encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def problem(
    status: int,
    detail: str,
    *,
    slug: str | None = None,
    instance: str | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> JSONResponse:
    """A problem details response (RFC 9457): ``type`` is ``about:blank`` unless a ``slug`` names a handrail one."""
    body: dict[str, Any] = {
        "type": "about:blank" if slug is None else _TYPE_PREFIX + slug,
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance is not None:
        body["instance"] = instance
    body.update(extra or {})
    return _ProblemResponse(body, status_code=status, headers=dict(headers or {}), media_type=PROBLEM_JSON)


def problem_schema() -> dict[str, Any]:
    """The OpenAPI ``responses`` entry every route shares for its errors (a problem details object)."""
    schema = {
        "type": "object",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "instance": {"type": "string"},
            "errors": {"type": "array", "items": {"type": "object"}},
            "current": {"type": "object"},
        },
    }
    return {"description": "A problem details object (RFC 9457)", "content": {PROBLEM_JSON: {"schema": schema}}}


def status_of(exc: BaseException) -> tuple[int, str] | None:
    """The HTTP status and problem slug of a handrail error (None: not one the API maps)."""
    for cls, status, slug in _MAPPING:
        if isinstance(exc, cls):
            if slug == "approval-decided" and getattr(getattr(exc, "current", None), "status", None) == "cancelled":
                return 410, "approval-cancelled"
            return status, slug
    return None


def _current(approval: Any) -> dict[str, Any]:
    """What a conflict says about the approval now (who decided what, when)."""
    decided_at = getattr(approval, "decided_at", None)
    return {
        "status": getattr(approval, "status", None),
        "version": getattr(approval, "version", None),
        "decision": getattr(approval, "decision", None),
        "decided_by": getattr(approval, "decided_by", None),
        "decided_at": None if decided_at is None else decided_at.isoformat(),
    }


def _handrail_problem(request: Request, exc: HandrailError) -> JSONResponse:
    mapped = status_of(exc)
    if mapped is None:
        _LOG.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__, exc_info=exc)
        return problem(500, "The server failed to handle this request.", instance=request.url.path)
    status, slug = mapped
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(exc, ApprovalConflictError):
        extra = {"approval_id": exc.approval_id, "current": _current(exc.current)}
    elif isinstance(exc, ApprovalDecisionError):
        extra = {"approval_id": exc.approval_id, "errors": [_argument_error(e) for e in exc.errors]}
    elif isinstance(exc, SnapshotUnavailableError):
        headers["Retry-After"] = "1"
    detail = _GENERIC_DETAIL.get(slug, str(exc))
    if slug in _NOT_FOUND:  # the store's message names the store (a path, a database host): not the client's
        noun, key = _NOT_FOUND[slug]
        detail = f"No {noun} {str(request.path_params.get(key, ''))[:120]!r}."
    if slug in _GENERIC_DETAIL:
        _LOG.error("%s %s: %s", request.method, request.url.path, type(exc).__name__, exc_info=exc)
    return problem(status, detail, slug=slug, instance=request.url.path, headers=headers, extra=extra)


def _argument_error(error: Mapping[str, str]) -> dict[str, str]:
    """An edit's error (a pointer into the arguments) as a pointer into the request body."""
    return {"pointer": "/arguments" + str(error.get("pointer", "")), "detail": str(error.get("message", ""))}


def _escape(part: object) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def validation_errors(errors: Sequence[Any]) -> list[dict[str, str]]:
    """FastAPI's validation errors as problem ``errors``: body ones by JSON Pointer, others by parameter name.

    The value sent is never echoed (it may be a token).
    """
    out: list[dict[str, str]] = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        where, rest = (loc[0], loc[1:]) if loc else ("body", ())
        message = str(error.get("msg", "invalid"))
        if where == "body":
            parts = [p for p in rest if not isinstance(p, int) or error.get("type") != "json_invalid"]
            out.append({"pointer": "".join("/" + _escape(p) for p in parts), "detail": message})
        else:
            out.append({"parameter": ".".join(str(p) for p in rest), "in": str(where), "detail": message})
    return out


def install(app: FastAPI) -> None:
    """Answer every error of ``app`` as a problem (see the module docstring)."""

    async def on_api_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiProblem)
        return problem(exc.status, exc.detail, slug=exc.slug, instance=request.url.path, headers=exc.headers,
                       extra=exc.extra)  # fmt: skip

    async def on_handrail(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HandrailError)
        return _handrail_problem(request, exc)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = validation_errors(exc.errors())
        where = ", ".join(e.get("pointer") or e.get("parameter") or "the body" for e in errors)
        detail = f"The request is invalid: {where or 'the body'}."
        return problem(422, detail, slug="invalid-request", instance=request.url.path, extra={"errors": errors})

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        detail = exc.detail if isinstance(exc.detail, str) and exc.detail else HTTPStatus(exc.status_code).phrase
        if exc.status_code == 404:
            detail = f"No route {request.url.path}."
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}."
        return problem(exc.status_code, detail, instance=request.url.path, headers=exc.headers)

    app.add_exception_handler(ApiProblem, on_api_problem)
    app.add_exception_handler(HandrailError, on_handrail)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"The request body is larger than {limit} bytes.")


class CatchAllMiddleware:
    """Outermost ASGI middleware: an unexpected exception becomes a 500 problem without its traceback.

    The exception is logged (its type, the method and path, and the traceback; never headers, so never a token
    or cookie). When the response had started already, the connection is closed instead. It also refuses a body
    larger than ``max_body_size`` bytes (413): at once when ``Content-Length`` says so, else when reading passes it.
    """

    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_size
        length = [v for k, v in scope.get("headers", ()) if k == b"content-length"]
        if length and (not length[0].isdigit() or int(length[0]) > limit):
            await problem(413, f"The request body is larger than {limit} bytes.", instance=scope.get("path"))(
                scope, receive, send
            )
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise _too_large(limit)
            return message

        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except Exception as exc:  # the boundary: nothing unexpected reaches the client as a traceback
            _LOG.error("%s %s failed: %s", scope.get("method"), scope.get("path"), type(exc).__name__, exc_info=exc)
            if started:
                return
            response = problem(500, "The server failed to handle this request.", instance=scope.get("path"))
            await response(scope, receive, send)
