"""GET /api/v1/approvals/{id}/preview over real stores: the tool's preview of a paused call, or why there is none.

The approvals come from runs started over HTTP (the agent of tests/server/_preview_agents.py, one call per run);
the preview is computed by the app's Previewer, in a thread of its own, under the app's ``preview_timeout``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.errors import ConfigurationError
from handrail.server import create_app
from handrail.server._previews import Previewer
from tests.server import _preview_agents as agents
from tests.server._helpers import pause
from tests.server._processes import serving
from tests.server.conftest import bearer, client_for
from tests.server.test_http_auth import _routes

API = "/api/v1/approvals"
TIMEOUT = 0.3


@pytest.fixture
def app(store: Any) -> Any:
    return create_app(store, agents={"toolbox": agents.toolbox}, preview_timeout=TIMEOUT)


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    agents.CALLS.clear()
    agents.GATE.clear()
    async with client_for(app) as made:
        yield made
    agents.GATE.set()  # a slow preview still waiting ends


async def _paused(
    app: Any, client: httpx.AsyncClient, token: str, tool: str, arguments: dict[str, Any], **state: Any
) -> dict[str, Any]:
    """The pending approval of a run whose one call is ``tool(arguments)``."""
    body: dict[str, Any] = {"agent_name": "toolbox", "messages": [json.dumps({"tool": tool, "arguments": arguments})]}
    if state:
        body["state"] = state
    started = await client.post("/api/v1/runs", json=body, headers=bearer(token))
    assert started.status_code == 201, started.text
    run_id = started.json()["run"]["run_id"]
    deadline = time.monotonic() + 60
    while True:
        assert app.state.handrail.runs.wait(60), "the run did not settle"
        run = (await client.get(f"/api/v1/runs/{run_id}", headers=bearer(token))).json()
        if run["run"]["status"] == "paused":
            (approval,) = run["pending"]
            return approval  # type: ignore[no-any-return]
        assert run["run"]["status"] in ("queued", "running") and time.monotonic() < deadline, run
        await asyncio.sleep(0.01)


async def _preview(client: httpx.AsyncClient, token: str, approval_id: str) -> dict[str, Any]:
    response = await client.get(f"{API}/{approval_id}/preview", headers=bearer(token))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert set(body) == {"preview", "unavailable"} and (body["preview"] is None) != (body["unavailable"] is None)
    return body


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("send_email", {"to": "ann@example.com", "body": "Hello"},
         {"kind": "markdown", "content": "**To:** ann@example.com\n\nHello", "title": "Email to ann@example.com"}),
        ("write_file", {"path": "a.txt", "text": "new"},
         {"kind": "diff", "content": "--- a.txt\n+++ a.txt\n-old\n+new", "title": None}),
        ("order", {"items": ["a", "b"]}, {"kind": "json", "content": '{"items": 2, "total_eur": 6}', "title": None}),
        ("run_sql", {"query": "select 1"}, {"kind": "text", "content": "SELECT 1", "title": None}),  # in a Toolset
    ],
)  # fmt: skip
async def test_a_tools_preview_of_the_call_is_served(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str], tool: str, arguments: dict[str, Any],
    expected: dict[str, Any],
) -> None:  # fmt: skip
    approval = await _paused(app, client, tokens["approver"], tool, arguments)
    assert await _preview(client, tokens["viewer"], approval["id"]) == {"preview": expected, "unavailable": None}


async def test_a_tool_without_a_preview_says_so(app: Any, client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    approval = await _paused(app, client, tokens["approver"], "plain", {"x": 1})
    assert await _preview(client, tokens["viewer"], approval["id"]) == {
        "preview": None, "unavailable": "this tool has no preview"
    }  # fmt: skip


async def test_a_preview_that_raises_is_unavailable_naming_only_the_errors_type(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    approval = await _paused(app, client, tokens["approver"], "failing", {"secret": "<b>hunter2</b>"})
    with caplog.at_level(logging.WARNING, logger="handrail.server"):
        body = await _preview(client, tokens["viewer"], approval["id"])
    assert body["unavailable"] == "preview unavailable: it failed (ValueError)"
    (record,) = [r for r in caplog.records if "failed" in r.getMessage()]
    logged = record.getMessage()
    assert record.levelno == logging.WARNING and "ValueError" in logged and "failing_preview" in logged
    assert approval["id"] in logged and "hunter2" not in logged and record.exc_info is None


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("bad_kind", "preview unavailable: it failed (ConfigurationError)"),
        ("wrong_type", "preview unavailable: the tool's preview returned int, not a Preview or a str"),
    ],
)
async def test_a_preview_of_a_bad_kind_or_type_is_unavailable(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str], tool: str, why: str
) -> None:
    approval = await _paused(app, client, tokens["approver"], tool, {"x": 1})
    assert (await _preview(client, tokens["viewer"], approval["id"]))["unavailable"] == why


async def test_a_slow_preview_is_unavailable_at_the_limit_and_what_it_returns_later_is_kept(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    approval = await _paused(app, client, tokens["approver"], "slow", {"x": 7})
    slow = await _preview(client, tokens["viewer"], approval["id"])
    assert slow == {"preview": None, "unavailable": f"preview unavailable: it took longer than {TIMEOUT:g} s"}
    again = await _preview(client, tokens["viewer"], approval["id"])  # waits for the same thread, not a new one
    assert again["unavailable"] == slow["unavailable"] and agents.CALLS == ["slow"]
    agents.GATE.set()
    deadline = time.monotonic() + 30
    while (body := await _preview(client, tokens["viewer"], approval["id"]))["preview"] is None:
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.01)
    assert body["preview"] == {"kind": "text", "content": "late 7", "title": None} and agents.CALLS == ["slow"]


async def test_a_decision_is_made_while_a_preview_hangs(store: Any, tokens: dict[str, str]) -> None:
    app = create_app(store, agents={"toolbox": agents.toolbox}, preview_timeout=30)
    agents.GATE.clear()
    try:
        async with client_for(app) as client:
            approval = await _paused(app, client, tokens["approver"], "slow", {"x": 1})
            waiting = asyncio.create_task(_preview(client, tokens["viewer"], approval["id"]))
            decided = await client.post(f"{API}/{approval['id']}/decision", json={"decision": "reject"},
                                        headers=bearer(tokens["other"]))  # fmt: skip
            assert decided.status_code == 200 and decided.json()["approval"]["status"] == "rejected"
            listed = await client.get(API, headers=bearer(tokens["viewer"]))
            assert listed.status_code == 200 and not waiting.done()  # the preview still waits; nothing else did
            agents.GATE.set()
            assert (await waiting)["preview"] == {"kind": "text", "content": "late 1", "title": None}
    finally:
        agents.GATE.set()


async def test_model_made_html_in_the_arguments_is_returned_as_given(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    body = "<img src=x onerror=\"document.title='pwned'\"> [click](javascript:alert(1)) <script>x()</script>"
    approval = await _paused(app, client, tokens["approver"], "send_email", {"to": "<b>ann</b>", "body": body})
    preview = (await _preview(client, tokens["viewer"], approval["id"]))["preview"]
    assert preview["content"] == f"**To:** <b>ann</b>\n\n{body}" and preview["title"] == "Email to <b>ann</b>"


async def test_a_preview_is_computed_once_per_version_of_the_approval(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    approval = await _paused(app, client, tokens["approver"], "run_sql", {"query": "delete from t"})
    first = await _preview(client, tokens["viewer"], approval["id"])
    assert await _preview(client, tokens["admin"], approval["id"]) == first and agents.CALLS == ["run_sql"]
    edited = await client.post(f"{API}/{approval['id']}/decision", headers=bearer(tokens["other"]),
                               json={"decision": "edit", "arguments": {"query": "select 1"}})  # fmt: skip
    assert edited.status_code == 200 and edited.json()["approval"]["version"] == 2
    after = await _preview(client, tokens["viewer"], approval["id"])
    assert after["preview"]["content"] == "SELECT 1" and agents.CALLS == ["run_sql", "run_sql"]


async def test_the_preview_gets_the_arguments_as_stored_state_injected_ones_included(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    approval = await _paused(app, client, tokens["approver"], "sign", {"document": "lease.pdf"}, signer="Ann")
    assert approval["arguments"] == {"document": "lease.pdf", "signer": "Ann"}
    assert (await _preview(client, tokens["viewer"], approval["id"]))["preview"]["content"] == "Ann signs lease.pdf"


async def test_beyond_the_running_previews_the_answer_is_busy(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    ctx = app.state.handrail
    ctx.previews = Previewer(ctx.store, ctx.runs.registry, timeout=TIMEOUT, max_running=1)
    hanging = await _paused(app, client, tokens["approver"], "slow", {"x": 1})
    other = await _paused(app, client, tokens["approver"], "send_email", {"to": "a", "body": "b"})
    assert (await _preview(client, tokens["viewer"], hanging["id"]))["unavailable"].endswith("longer than 0.3 s")
    busy = await _preview(client, tokens["viewer"], other["id"])
    assert busy["unavailable"].startswith("preview unavailable: the server is busy")
    agents.GATE.set()  # the slot comes back once the slow preview returns
    deadline = time.monotonic() + 30
    while (body := await _preview(client, tokens["viewer"], other["id"]))["preview"] is None:
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.01)
    assert body["preview"]["kind"] == "markdown"


async def test_an_agent_this_server_does_not_know_has_no_preview(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])  # paused from Python, by an agent the server was not given
    (item,) = (await client.get(API, headers=bearer(tokens["viewer"]))).json()["items"]
    body = await _preview(client, tokens["viewer"], item["id"])
    assert body["unavailable"] == f"preview unavailable: the agent {item['agent_name']!r} is not known to this server"


async def test_an_unknown_approval_is_404_and_no_credentials_401(app: Any, client: httpx.AsyncClient,
                                                                 tokens: dict[str, str]) -> None:  # fmt: skip
    assert ("GET", "/api/v1/approvals/{approval_id}/preview") in _routes(app)  # the 401 sweep of every route covers it
    missing = await client.get(f"{API}/ap_{'0' * 32}/preview", headers=bearer(tokens["viewer"]))
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
    assert missing.json()["detail"] == f"No approval 'ap_{'0' * 32}'."
    anonymous = await client.get(f"{API}/ap_{'0' * 32}/preview")
    assert anonymous.status_code == 401 and anonymous.json()["status"] == 401


@pytest.mark.parametrize("timeout", [0, -1, "2", True, float("nan"), 1e9])
def test_a_bad_preview_timeout_is_refused(store: Any, timeout: Any) -> None:
    with pytest.raises(ConfigurationError, match="preview_timeout"):
        create_app(store, preview_timeout=timeout)


def test_a_real_server_previews_an_agent_files_tool_and_abandons_a_hanging_preview(
    tmp_path: Path, tokens_url: tuple[str, str]
) -> None:
    url, token = tokens_url
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "mailer.yaml").write_text(agents.AGENT_FILE, encoding="utf-8")
    with (
        serving(url, "--agents", str(folder), "--preview-timeout", "0.5") as server,
        httpx.Client(base_url=server.url, headers=bearer(token), timeout=30) as http,
    ):
        ids = {}
        for tool, arguments in (("mail", {"to": "ann@example.com", "body": "Hi"}), ("hang", {"x": 3})):
            message = json.dumps({"tool": tool, "arguments": arguments})
            started = http.post("/api/v1/runs", json={"agent_name": "mailer", "messages": [message]})
            assert started.status_code == 201, started.text
            ids[tool] = _pending_over_http(http, started.json()["run"]["run_id"])
        mail = http.get(f"{API}/{ids['mail']}/preview").json()
        assert mail["preview"] == {"kind": "markdown", "content": "**To:** ann@example.com\n\nHi",
                                   "title": "Email to ann@example.com"}  # fmt: skip
        hang = http.get(f"{API}/{ids['hang']}/preview").json()
        assert hang == {"preview": None, "unavailable": "preview unavailable: it took longer than 0.5 s"}
        decided = http.post(f"{API}/{ids['hang']}/decision", json={"decision": "reject", "feedback": "no"})
        assert decided.status_code == 200
    # stopped by SIGTERM (in time: serving() kills a server that does not) with the preview's thread still waiting
    assert server.process.returncode in (0, -signal.SIGTERM)


def _pending_over_http(http: httpx.Client, run_id: str) -> str:
    """The id of the run's pending approval, once it paused (a generous deadline)."""
    deadline = time.monotonic() + 60
    while True:
        run = http.get(f"/api/v1/runs/{run_id}").json()
        if run["run"]["status"] == "paused":
            (approval,) = run["pending"]
            return approval["id"]  # type: ignore[no-any-return]
        assert run["run"]["status"] in ("queued", "running") and time.monotonic() < deadline, run
        time.sleep(0.02)


@pytest.fixture
def tokens_url(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store URL with an admin token in it."""
    from datetime import UTC, datetime

    from handrail.stores import SQLiteSnapshotStore

    path = tmp_path / "service.db"
    made = SQLiteSnapshotStore(path)
    try:
        token = made.add_token("ada", "admin", at=datetime.now(UTC))[1]
    finally:
        made.close()
    return f"sqlite:///{path}", token
