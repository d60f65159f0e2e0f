"""Every error is an RFC 9457 problem: unknown routes, wrong methods, validation, a crash (without a traceback)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import bearer

PROBLEM_KEYS = {"type", "title", "status", "detail"}


def _problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert set(body) >= PROBLEM_KEYS and body["status"] == status
    return body


async def test_an_unknown_route_is_a_404_problem(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    body = _problem(await client.get("/api/v1/nothing", headers=bearer(tokens["viewer"])), 404)
    assert body["title"] == "Not Found" and body["type"] == "about:blank"


async def test_a_wrong_method_is_a_405_problem(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    body = _problem(await client.put("/api/v1/approvals", headers=bearer(tokens["approver"])), 405)
    assert "PUT" in body["detail"]


@pytest.mark.parametrize(
    ("content", "pointer"),
    [
        (b"{not json", ""),
        (b'{"decision": "maybe"}', "/decision"),
        (b'{"decision": "edit", "arguments": 5}', "/arguments"),
        (b"[]", ""),
    ],
)
async def test_a_body_that_fails_validation_is_422_with_pointers(
    client: httpx.AsyncClient, tokens: dict[str, str], content: bytes, pointer: str
) -> None:
    response = await client.post(
        f"/api/v1/approvals/ap_{'0' * 32}/decision",
        content=content,
        headers={**bearer(tokens["approver"]), "Content-Type": "application/json"},
    )
    body = _problem(response, 422)
    assert pointer in [e["pointer"] for e in body["errors"]]
    assert "maybe" not in response.text  # the value sent is not echoed


async def test_a_body_too_large_is_413(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    huge = b'{"decision": "reject", "feedback": "' + b"x" * (2 << 20) + b'"}'
    response = await client.post(
        f"/api/v1/approvals/ap_{'0' * 32}/decision",
        content=huge,
        headers={**bearer(tokens["approver"]), "Content-Type": "application/json"},
    )
    _problem(response, 413)


async def test_a_crash_is_a_500_problem_without_traceback_and_the_log_has_no_token(
    store: Any,
    client: httpx.AsyncClient,
    tokens: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("internal detail /srv/secret-path")

    monkeypatch.setattr(store, "list_approvals", broken)
    with caplog.at_level(logging.ERROR, logger="handrail.server"):
        response = await client.get("/api/v1/approvals", headers=bearer(tokens["viewer"]))
    body = _problem(response, 500)
    assert body["detail"] == "The server failed to handle this request."
    assert (
        "Traceback" not in response.text and "secret-path" not in response.text and "RuntimeError" not in response.text
    )
    assert any("RuntimeError" in r.getMessage() for r in caplog.records)
    logged = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    assert tokens["viewer"] not in logged and tokens["viewer"].partition(".")[2] not in logged


def test_the_http_api_page_lists_every_problem_type_the_server_answers() -> None:
    from handrail.server import _problems

    root = Path(__file__).resolve().parents[2]
    sources = (root / "src" / "handrail" / "server").glob("*.py")
    raised = {m for path in sources for m in re.findall(r'slug="([a-z-]+)"', path.read_text(encoding="utf-8"))}
    mapped = {slug for _, _, slug in _problems._MAPPING} | {"approval-cancelled"}
    page = (root / "docs" / "http-api.md").read_text(encoding="utf-8")
    errors = page[page.index("## Errors") : page.index("## Authentication")]
    listed = set(re.findall(r"^\| `([a-z-]+)`(?:, `([a-z-]+)`)? \|", errors, flags=re.MULTILINE))
    documented = {slug for pair in listed for slug in pair if slug}
    assert raised and mapped <= documented and raised <= documented, sorted((raised | mapped) - documented)
