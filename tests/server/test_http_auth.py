"""Authentication and its guards: every route needs credentials, roles, session cookies, Origin and Host checks."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import fastapi.routing
import httpx
import pytest
from fastapi.routing import APIRoute

from handrail.server import create_app
from tests.server._helpers import pause
from tests.server.conftest import BASE, bearer, client_for

OPEN_ROUTES = {
    ("GET", "/healthz"): "/healthz",
    ("GET", "/"): "/",
    ("HEAD", "/"): "/",
    ("GET", "/static/{name}"): "/static/app.js",
    ("HEAD", "/static/{name}"): "/static/app.js",
}
"""The routes that need no principal (the inbox page holds no data), each with a path that answers 200."""


def _routes(app: Any) -> list[tuple[str, str]]:
    """Every (method, path) the app serves; FastAPI >= 0.16x keeps included routers nested in ``app.routes``."""
    contexts = getattr(fastapi.routing, "iter_route_contexts", None)
    routes = list(app.routes) if contexts is None else list(contexts(app.routes))
    found = []
    for route in routes:
        path, methods = getattr(route, "path", None), getattr(route, "methods", None)
        if path and methods and (contexts is not None or isinstance(route, APIRoute)):
            found += [(method, path) for method in sorted(methods)]
    return found


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "ap_" + "0" * 32, path)


async def test_every_route_but_healthz_and_the_page_answers_401_without_credentials(
    app: Any, client: httpx.AsyncClient
) -> None:
    routes = _routes(app)
    assert set(OPEN_ROUTES) <= set(routes)
    assert ("POST", "/api/v1/approvals/{approval_id}/decision") in routes and ("GET", "/api/v1/events") in routes
    assert ("GET", "/api/v1/openapi.json") in routes
    for method, path in routes:
        if (method, path) in OPEN_ROUTES:
            response = await client.request(method, OPEN_ROUTES[method, path])
            assert response.status_code == 200, path
            continue
        response = await client.request(method, _concrete(path))
        assert response.status_code == 401, (method, path, response.text)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["status"] == 401


@pytest.mark.parametrize("header", ["Bearer", "Bearer nope", "Basic YTpi", "Bearer tk_0123456789abcdef.wrong"])
async def test_a_bad_or_unknown_token_is_401(client: httpx.AsyncClient, tokens: dict[str, str], header: str) -> None:
    response = await client.get("/api/v1/approvals", headers={"Authorization": header})
    assert response.status_code == 401 and response.json()["type"].endswith("unauthenticated")


async def test_a_revoked_token_is_refused_at_once(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    assert (await client.get("/api/v1/me", headers=bearer(tokens["viewer"]))).json()["name"] == "vera"
    store.revoke_token("vera", at=datetime.now(UTC))
    assert (await client.get("/api/v1/me", headers=bearer(tokens["viewer"]))).status_code == 401


async def test_the_openapi_document_is_served_to_a_principal(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    document = (await client.get("/api/v1/openapi.json", headers=bearer(tokens["viewer"]))).json()
    assert "/api/v1/approvals/{approval_id}/decision" in document["paths"]
    assert document["info"]["title"] == "handrail approval service"


async def test_a_viewer_deciding_is_403_and_nothing_changes(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = (await client.get("/api/v1/approvals", headers=bearer(tokens["viewer"]))).json()["items"]
    response = await client.post(
        f"/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"}, headers=bearer(tokens["viewer"])
    )
    assert response.status_code == 403 and response.json()["type"].endswith("permission-denied")
    assert "vera" in response.json()["detail"]
    detail = (await client.get(f"/api/v1/approvals/{approval['id']}", headers=bearer(tokens["viewer"]))).json()
    assert detail["approval"]["status"] == "pending"


async def test_an_approver_limited_to_read_tools_may_not_decide_another(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "read_file", {"path": "a.txt"})])
    items = (await client.get("/api/v1/approvals", headers=bearer(tokens["reader"]))).json()["items"]
    by_tool = {item["tool_name"]: item["id"] for item in items}
    refused = await client.post(
        f"/api/v1/approvals/{by_tool['transfer']}/decision",
        json={"decision": "approve"},
        headers=bearer(tokens["reader"]),
    )
    assert refused.status_code == 403 and "read_*" in refused.json()["detail"]
    allowed = await client.post(
        f"/api/v1/approvals/{by_tool['read_file']}/decision",
        json={"decision": "approve"},
        headers=bearer(tokens["reader"]),
    )
    assert allowed.status_code == 200 and allowed.json()["approval"]["decided_by"] == "rita"


async def test_only_an_admin_exports_the_audit_log(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    refused = await client.get("/api/v1/audit/export", headers=bearer(tokens["approver"]))
    assert refused.status_code == 403
    assert (await client.get("/api/v1/audit/export", headers=bearer(tokens["admin"]))).status_code == 200


def _cookie_header(response: httpx.Response) -> str:
    return response.headers["set-cookie"]


async def test_login_sets_a_strict_http_only_cookie_that_is_not_the_token(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    response = await client.post("/api/v1/login", json={"token": tokens["approver"]})
    assert response.status_code == 200 and response.json()["principal"]["name"] == "ann"
    header = _cookie_header(response)
    assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/" in header and "Secure" not in header
    value = client.cookies["handrail_session"]
    assert tokens["approver"] not in value and tokens["approver"].partition(".")[2] not in value
    assert (await client.get("/api/v1/me")).json()["name"] == "ann"


async def test_login_over_https_marks_the_cookie_secure(app: Any, tokens: dict[str, str]) -> None:
    async with client_for(app, "https://localhost") as https:
        response = await https.post("/api/v1/login", headers=bearer(tokens["viewer"]))
    assert response.status_code == 200 and "Secure" in _cookie_header(response)


async def test_login_without_or_with_a_bad_token_is_401(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    assert (await client.post("/api/v1/login")).status_code == 401
    response = await client.post("/api/v1/login", json={"token": tokens["viewer"] + "x"})
    assert response.status_code == 401 and "handrail_session" not in response.headers.get("set-cookie", "")


async def test_a_cookie_dies_with_its_token_and_cannot_be_forged(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    await client.post("/api/v1/login", json={"token": tokens["viewer"]})
    value = client.cookies["handrail_session"]
    token_id, expires, mac = value.split(".")
    for forged in (f"{token_id}.{int(expires) + 1000}.{mac}", f"{token_id}.{expires}.{mac[:-2]}AA", "x", "a.b.c"):
        client.cookies.clear()
        client.cookies["handrail_session"] = forged
        assert (await client.get("/api/v1/me")).status_code == 401, forged
    client.cookies.clear()
    client.cookies["handrail_session"] = value
    assert (await client.get("/api/v1/me")).status_code == 200
    store.revoke_token("vera", at=datetime.now(UTC))
    assert (await client.get("/api/v1/me")).status_code == 401


async def test_a_cookie_expires(store: Any, tokens: dict[str, str]) -> None:
    now = [datetime.now(UTC)]
    app = create_app(store, clock=lambda: now[0], session_ttl=timedelta(minutes=5))
    async with client_for(app) as client:
        await client.post("/api/v1/login", json={"token": tokens["viewer"]})
        assert (await client.get("/api/v1/me")).status_code == 200
        now[0] += timedelta(minutes=6)
        response = await client.get("/api/v1/me")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


async def test_a_cookie_decision_needs_this_servers_origin(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    await client.post("/api/v1/login", json={"token": tokens["approver"]})
    (approval,) = (await client.get("/api/v1/approvals")).json()["items"]
    url = f"/api/v1/approvals/{approval['id']}/decision"
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "http://localhost:3000"},
        {"Origin": "null"},
        {},
        {"Referer": "http://evil.example/page"},
    ):
        response = await client.post(url, json={"decision": "approve"}, headers=headers)
        assert response.status_code == 403, headers
        assert response.json()["type"].endswith("cross-origin")
    assert (await client.get(f"/api/v1/approvals/{approval['id']}")).json()["approval"]["status"] == "pending"
    same = await client.post(url, json={"decision": "approve"}, headers={"Origin": BASE})
    assert same.status_code == 200 and same.json()["approval"]["decided_by"] == "ann"


async def test_a_bearer_request_is_exempt_from_the_origin_check(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    (approval,) = (await client.get("/api/v1/approvals", headers=bearer(tokens["approver"]))).json()["items"]
    response = await client.post(
        f"/api/v1/approvals/{approval['id']}/decision",
        json={"decision": "approve"},
        headers={**bearer(tokens["approver"]), "Origin": "http://evil.example"},
    )
    assert response.status_code == 200


async def test_logout_clears_the_cookie(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    await client.post("/api/v1/login", json={"token": tokens["viewer"]})
    response = await client.post("/api/v1/logout", headers={"Origin": BASE})
    assert response.status_code == 204 and "Max-Age=0" in _cookie_header(response)
    assert (await client.get("/api/v1/me")).status_code == 401


@pytest.mark.parametrize("host", ["evil.example", "localhost.evil.example", "127.0.0.2"])
async def test_a_host_not_allowed_is_421(client: httpx.AsyncClient, tokens: dict[str, str], host: str) -> None:
    response = await client.get("/api/v1/me", headers={**bearer(tokens["viewer"]), "Host": host})
    assert response.status_code == 421 and response.headers["content-type"] == "application/problem+json"
    assert "--allowed-host" in response.json()["detail"]
    assert (await client.get("/healthz", headers={"Host": host})).status_code == 421


async def test_an_allowed_host_and_the_loopback_names_are_served(store: Any, tokens: dict[str, str]) -> None:
    app = create_app(store, allowed_hosts=["inbox.example.com"])
    async with client_for(app) as client:
        for host in ("inbox.example.com", "INBOX.example.com:8700", "127.0.0.1:8700", "[::1]:8700", "localhost"):
            response = await client.get("/api/v1/me", headers={**bearer(tokens["viewer"]), "Host": host})
            assert response.status_code == 200, host
