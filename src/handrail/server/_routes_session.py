"""Logging in and out (the page's session cookie), who am I, and the unauthenticated liveness check."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from handrail.dataclasses.service import Principal, TokenInfo
from handrail.server._auth import COOKIE, authenticated, bearer_token, check_origin
from handrail.server._context import context_of
from handrail.server._problems import ApiProblem

__all__ = ["LoginBody", "health_router", "router", "session_router"]

health_router = APIRouter(tags=["service"])
session_router = APIRouter(tags=["session"])
"""Login: its own credentials (a token in the body or a bearer header), no cookie."""
router = APIRouter(tags=["session"])
"""The routes behind the usual authentication."""


class LoginBody(BaseModel):
    """The body of ``POST /api/v1/login`` (or send the token as ``Authorization: Bearer``, with no body)."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=500)
    """A token of ``handrail tokens add``."""


def principal_json(principal: Principal) -> dict[str, Any]:
    """A principal as JSON: name, role and tool patterns."""
    return {"name": principal.name, "role": principal.role, "tools": list(principal.tools)}


@health_router.get("/healthz", summary="Liveness (no authentication)")
def healthz() -> dict[str, str]:
    """``{"status": "ok"}`` while the server runs."""
    return {"status": "ok"}


@session_router.post("/login", summary="Exchange a token for a session cookie (the page's login)")
def login(request: Request, response: Response, body: Annotated[LoginBody | None, Body()] = None) -> dict[str, Any]:
    """Sets the ``handrail_session`` cookie (HttpOnly, SameSite=Strict); answers the principal and the expiry."""
    if request.headers.get("origin") is not None:
        check_origin(request)
    token = body.token if body is not None else bearer_token(request)
    ctx = context_of(request)
    info: TokenInfo | None = None if token is None else ctx.store.authenticate(token)
    if info is None:
        detail = "Log in with a token: a JSON body {\"token\": ...} or 'Authorization: Bearer <token>'."
        if token is not None:
            detail = "The token is unknown or revoked."
        raise ApiProblem(401, detail, slug="unauthenticated", headers={"WWW-Authenticate": 'Bearer realm="handrail"'})
    value, max_age = ctx.sessions.issue(info)
    response.set_cookie(COOKIE, value, max_age=max_age, path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")  # fmt: skip
    expires = ctx.clock().timestamp() + max_age
    return {"principal": principal_json(info.principal()), "expires_in": max_age, "expires_at_unix": int(expires)}


@router.post("/logout", summary="Clear the session cookie", status_code=204)
def logout(request: Request, principal: Annotated[Principal, Depends(authenticated)]) -> Response:
    """Clears the cookie in this browser (revoking the token ends every session made with it)."""
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return response


@router.get("/me", summary="Who the credentials belong to")
def me(principal: Annotated[Principal, Depends(authenticated)]) -> dict[str, Any]:
    """The principal: name, role and tool patterns."""
    return principal_json(principal)
