"""Who is calling: bearer tokens, session cookies, and the Host / Origin checks in front of them.

* **Bearer tokens** (``Authorization: Bearer <token>``) are checked by the store
  (:meth:`~handrail.stores.service.ServiceStore.authenticate`: hashed, shared by every process on the store).
* **Session cookies** (``handrail_session``), for the page: ``POST /api/v1/login`` with a token sets one. Its
  value is not the token: it is ``<token_id>.<expires unix seconds>.<MAC>``, the MAC an HMAC-SHA256 of the first
  two parts keyed by :meth:`~handrail.stores.service.ServiceStore.session_key` (a key the store derives from the
  token's stored hash). So every server process sharing the store can verify it, nobody without the store can
  forge one, and revoking the token kills every session made with it at once. It is ``HttpOnly``,
  ``SameSite=Strict``, ``Path=/``, ``Secure`` when the request came over https.
* **Origin**: a state-changing request authenticated by the cookie must carry an ``Origin`` (or ``Referer``) of
  the server's own host and port, else 403; any cookie request whose ``Origin`` is foreign is refused too. Bearer
  requests are exempt (a browser never adds the header by itself).
* **Host** (:class:`HostCheckMiddleware`): the ``Host`` header must name the server (loopback names, the bound
  host, ``--allowed-host``), else 421: a page on another name that resolves to this address (DNS rebinding)
  gets nothing.

Nothing here logs a token or a cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from handrail.dataclasses.service import Principal, TokenInfo
from handrail.server._problems import ApiProblem, problem

__all__ = [
    "COOKIE",
    "LOOPBACK_HOSTS",
    "HostCheckMiddleware",
    "Sessions",
    "authenticated",
    "bearer_token",
    "check_origin",
    "credentials_check",
    "host_allowlist",
]

COOKIE = "handrail_session"
"""The session cookie's name."""
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names every server answers to."""
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_BEARER_HINT = "Send 'Authorization: Bearer <token>' (handrail tokens add) or log in (POST /api/v1/login)."


def _unauthorized(detail: str) -> ApiProblem:
    return ApiProblem(401, detail, slug="unauthenticated", headers={"WWW-Authenticate": 'Bearer realm="handrail"'})


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class Sessions:
    """Issues and verifies session cookies (see the module docstring)."""

    store: Any
    """The service store (its :meth:`session_key` keys the MACs)."""
    ttl: timedelta
    """How long a session lasts."""
    clock: Callable[[], datetime]
    """Returns now."""

    def _mac(self, key: bytes, token_id: str, expires: int) -> str:
        return _b64(hmac.new(key, f"{token_id}.{expires}".encode("ascii"), hashlib.sha256).digest())

    def issue(self, info: TokenInfo) -> tuple[str, int]:
        """A cookie value for a session of ``info``'s token, and its max age in seconds.

        Raises:
            ApiProblem: 401 when the token was revoked meanwhile.
        """
        found = self.store.session_key(info.token_id)
        if found is None:
            raise _unauthorized("The token is unknown or revoked.")
        max_age = int(self.ttl.total_seconds())
        expires = int(self.clock().timestamp()) + max_age
        return f"{info.token_id}.{expires}.{self._mac(found[1], info.token_id, expires)}", max_age

    def verify(self, value: str) -> Principal:
        """The principal of a session cookie.

        Raises:
            ApiProblem: 401 for a malformed, forged or expired cookie, or one whose token was revoked.
        """
        token_id, _, rest = value.partition(".")
        expires_text, _, mac = rest.partition(".")
        if not token_id or not expires_text.isdigit() or not mac or len(value) > 300:
            raise _unauthorized("The session cookie is malformed; log in again.")
        expires = int(expires_text)
        if expires <= self.clock().timestamp():
            raise _unauthorized("The session expired; log in again.")
        found = self.store.session_key(token_id)
        if found is None or not hmac.compare_digest(mac, self._mac(found[1], token_id, expires)):
            raise _unauthorized("The session is not valid (its token was revoked, or the cookie was changed).")
        info: TokenInfo = found[0]
        return info.principal()


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header (None: no header).

    Raises:
        ApiProblem: 401 for another scheme or an empty token.
    """
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("The Authorization header must be 'Bearer <token>'.")
    return token.strip()


def _host_port(netloc: str, scheme: str) -> tuple[str, int | None]:
    """``(host, port)`` of ``host[:port]`` (IPv6 in brackets), lower case; the scheme's default port if none."""
    try:
        parts = urlsplit(f"//{netloc}")
        host, port = (parts.hostname or ""), parts.port
    except ValueError:
        return "", None
    return host.rstrip("."), port if port is not None else _DEFAULT_PORTS.get(scheme)


def _same_origin(origin: tuple[str, int | None], own: tuple[str, int | None]) -> bool:
    if origin[0] != own[0] or not origin[0]:
        return False
    # 80 and 443 stand for each other: a proxy that ends TLS forwards https://name to http://name.
    return origin[1] == own[1] or {origin[1], own[1]} <= {80, 443}


def check_origin(request: Request) -> None:
    """For a cookie request: refuse a foreign ``Origin``, and a state-changing request without a same-origin one.

    Raises:
        ApiProblem: 403 naming the problem.
    """
    own = _host_port(request.headers.get("host", ""), request.url.scheme)
    origin = request.headers.get("origin")
    source = origin
    if origin is None and request.method in _UNSAFE:
        source = request.headers.get("referer")
    if source is None:
        if request.method in _UNSAFE:
            raise ApiProblem(403, "A request authenticated by the session cookie must carry an Origin header of "
                                  "this server.", slug="cross-origin")  # fmt: skip
        return
    parts = urlsplit(source) if source != "null" else None
    if parts is None or not parts.netloc or not _same_origin(_host_port(parts.netloc, parts.scheme), own):
        raise ApiProblem(403, "The request comes from another origin; a session cookie is accepted only from "
                              "this server's own pages.", slug="cross-origin")  # fmt: skip


def authenticated(request: Request) -> Principal:
    """The route dependency every route but ``/healthz`` has: the caller's principal (bearer first, then cookie).

    Raises:
        ApiProblem: 401 without valid credentials; 403 for a cookie request from another origin.
    """
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    context = request.app.state.handrail
    token = bearer_token(request)
    if token is not None:
        info = context.store.authenticate(token)
        if info is None:
            raise _unauthorized("The bearer token is unknown or revoked.")
        principal: Principal = info.principal()
        request.state.via = "bearer"
    else:
        cookie = request.cookies.get(COOKIE)
        if not cookie:
            raise _unauthorized(f"This route needs credentials. {_BEARER_HINT}")
        principal = context.sessions.verify(cookie)
        check_origin(request)
        request.state.via = "cookie"
    request.state.principal = principal
    return principal


def credentials_check(request: Request) -> Callable[[], bool]:
    """For a request :func:`authenticated` let in: a function telling whether its credentials are still valid.

    It asks the store again each time it is called (blocking: call it in a thread): False once the bearer token
    is revoked, or once the session cookie expired or its token was revoked. An open event stream calls it
    before each batch of events and at each keep-alive.
    """
    context = request.app.state.handrail
    token = bearer_token(request)
    if token is not None:
        store = context.store
        return lambda: store.authenticate(token) is not None
    cookie = request.cookies.get(COOKIE, "")
    sessions: Sessions = context.sessions

    def cookie_valid() -> bool:
        try:
            sessions.verify(cookie)
        except ApiProblem:
            return False
        return True

    return cookie_valid


def host_allowlist(extra: Iterable[str]) -> frozenset[str]:
    """The host names a server answers to: the loopback names and ``extra`` (lower case, without a port)."""
    names = set(LOOPBACK_HOSTS)
    for item in extra:
        name = str(item).strip().lower().rstrip(".")
        if name.startswith("[") and name.endswith("]"):
            name = name[1:-1]
        if name and name not in ("0.0.0.0", "::"):
            names.add(name)
    return frozenset(names)


class HostCheckMiddleware:
    """Answers 421 (a problem) to a request whose ``Host`` is not in ``hosts``; 400 when it has none."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = [v for k, v in scope.get("headers", ()) if k == b"host"]
        text = raw[0].decode("latin-1") if len(raw) == 1 else ""
        host, _ = _host_port(text, "http")
        if host in self.hosts:
            await self.app(scope, receive, send)
            return
        if not host:
            response = problem(400, "The request needs exactly one valid Host header.", slug="bad-host")
        else:
            shown = "".join(c for c in host if c.isprintable())[:100]
            response = problem(421, f"This server does not answer to the host {shown!r}; start it with "
                                    f"--allowed-host {shown} to allow that name.", slug="unknown-host")  # fmt: skip
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await response(scope, receive, send)
