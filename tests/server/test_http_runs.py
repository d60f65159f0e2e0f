"""Runs over HTTP, in-process: started by a principal, paused durably, approved over HTTP, finished with the result."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.server import create_app
from tests.server import _agents
from tests.server.conftest import bearer, client_for


@pytest.fixture
def app(store: Any) -> Any:
    return create_app(store, agents={"payer": _agents.payer})


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as made:
        yield made


async def _settled(app: Any, client: httpx.AsyncClient, token: str, run_id: str, *statuses: str) -> dict[str, Any]:
    """The run once its status is one of ``statuses`` and this process drives it no more (a generous deadline)."""
    deadline = time.monotonic() + 60
    while True:
        assert app.state.handrail.runs.wait(60), "the run did not settle"
        response = await client.get(f"/api/v1/runs/{run_id}", headers=bearer(token))
        assert response.status_code == 200, response.text
        if response.json()["run"]["status"] in statuses:
            return response.json()  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, response.json()
        await asyncio.sleep(0.01)  # the decision's wake sends the run from another thread


async def test_a_run_started_over_http_pauses_is_approved_over_http_and_finishes(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    started = await client.post("/api/v1/runs", json={"agent_name": "payer", "messages": ["pay 5"]},
                                headers=bearer(tokens["approver"]))  # fmt: skip
    assert started.status_code == 201, started.text
    run = started.json()["run"]
    assert run["initiator"] == "ann" and run["agent_name"] == "payer"
    assert started.headers["location"] == f"/api/v1/runs/{run['run_id']}"
    paused = await _settled(app, client, tokens["viewer"], run["run_id"], "paused")
    assert paused["run"]["status"] == "paused" and _agents.SENT == []
    (approval,) = paused["pending"]
    assert approval["tool_name"] == "transfer" and approval["arguments"] == {"amount": 5}
    assert approval["run_id"] == run["run_id"]
    decided = await client.post(f"/api/v1/approvals/{approval['id']}/decision", json={"decision": "approve"},
                                headers=bearer(tokens["other"]))  # fmt: skip
    assert decided.status_code == 200
    finished = await _settled(app, client, tokens["viewer"], run["run_id"], "finished", "failed")
    assert finished["run"]["status"] == "finished" and finished["pending"] == []
    assert finished["run"]["result"]["last_message"]["content"][0]["text"] == "paid: sent 5"
    assert _agents.SENT == [5]
    trail = (await client.get(f"/api/v1/approvals/{approval['id']}/audit", headers=bearer(tokens["admin"]))).json()
    assert [e["kind"] for e in trail["entries"]] == ["created", "decided", "executed"]


async def test_the_runs_are_listed_newest_first_a_page_at_a_time(
    app: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    ids = []
    for text in ("pay 1", "pay 2", "pay 3"):
        response = await client.post("/api/v1/runs", json={"agent_name": "payer", "messages": [text]},
                                     headers=bearer(tokens["admin"]))  # fmt: skip
        ids.append(response.json()["run"]["run_id"])
    assert app.state.handrail.runs.wait(60)
    listed = (await client.get("/api/v1/runs", params={"status": "paused"}, headers=bearer(tokens["viewer"]))).json()
    assert [r["run_id"] for r in listed["items"]] == ids[::-1] and listed["next_cursor"] is None
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        page = (await client.get("/api/v1/runs", params=params, headers=bearer(tokens["viewer"]))).json()
        seen += [r["run_id"] for r in page["items"]]
        if page["next_cursor"] is None:
            break
        params["cursor"] = page["next_cursor"]
    assert seen == ids[::-1]


@pytest.mark.parametrize("cursor", ["not-a-cursor", "WzEwMDAwMDAwMDAwMDAwMDAwMDAwMDAwLCJ4Il0"])
async def test_a_runs_cursor_this_server_did_not_give_is_400(
    client: httpx.AsyncClient, tokens: dict[str, str], cursor: str
) -> None:
    response = await client.get("/api/v1/runs", params={"cursor": cursor}, headers=bearer(tokens["viewer"]))
    assert response.status_code == 400 and response.json()["type"].endswith("bad-request"), response.text


_TOOL_RESULT = {"role": "tool", "content": []}
_BAD_DICT = {"role": "user"}


@pytest.mark.parametrize(
    ("token", "body", "status", "slug", "pointers"),
    [
        ("viewer", {"agent_name": "payer", "messages": ["pay 5"]}, 403, "permission-denied", None),
        ("approver", {"agent_name": "nobody", "messages": ["pay 5"]}, 404, "unknown-agent", None),
        ("approver", {"agent_name": "payer", "messages": []}, 422, "invalid-request", ["/messages"]),
        ("approver", {"agent_name": " ", "messages": ["pay 5"]}, 422, "invalid-request", ["/agent_name"]),
        ("approver", {"agent_name": "payer", "messages": ["pay 5"], "initiator": "boss"}, 422, "invalid-request",
         ["/initiator"]),
        ("approver", {"agent_name": "payer", "messages": ["pay 5", _TOOL_RESULT, _BAD_DICT]}, 422, "invalid-request",
         ["/messages/1", "/messages/2"]),
        ("approver", {"agent_name": "payer", "messages": ["pay 5"], "state": {"step_count": 3}}, 422,
         "invalid-request", ["/state/step_count"]),
        ("approver", {"agent_name": "payer", "messages": ["pay 5"], "state": {"colour": "red"}}, 422,
         "invalid-request", ["/state"]),
    ],
)  # fmt: skip
async def test_a_run_refused_is_a_problem_and_nothing_starts(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str], token: str, body: dict[str, Any], status: int,
    slug: str, pointers: list[str] | None,
) -> None:  # fmt: skip
    response = await client.post("/api/v1/runs", json=body, headers=bearer(tokens[token]))
    assert response.status_code == status, response.text
    assert response.json()["type"].endswith(slug) and "Traceback" not in response.text
    if pointers is not None:
        assert [e["pointer"] for e in response.json()["errors"]] == pointers, response.text
    assert store.list_runs() == []


async def test_a_broken_agent_file_is_a_500_naming_the_agent_not_the_file(
    store: Any, tokens: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "broken.yaml").write_text("generator: {type: handrail.testing.NoSuchModel}\ntools: [\n")
    async with client_for(create_app(store, agents_dir=folder)) as client:
        with caplog.at_level(logging.ERROR, logger="handrail.server"):
            response = await client.post("/api/v1/runs", json={"agent_name": "broken", "messages": ["hi"]},
                                         headers=bearer(tokens["approver"]))  # fmt: skip
    assert response.status_code == 500 and response.json()["type"].endswith("agent-broken"), response.text
    assert "'broken'" in response.json()["detail"] and str(folder) not in response.text
    assert any(str(folder) in r.getMessage() for r in caplog.records)  # the server's log says which file, and why
    assert store.list_runs() == []


async def test_an_unknown_run_is_404(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    response = await client.get("/api/v1/runs/nope", headers=bearer(tokens["viewer"]))
    assert response.status_code == 404 and response.json()["detail"] == "No run 'nope'."
