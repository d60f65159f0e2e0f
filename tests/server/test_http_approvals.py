"""The approval routes over real stores: list, detail, decisions and their rules, the audit trail and export."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from handrail.dataclasses import ChatRole
from handrail.server import create_app
from tests.cases._helpers import result_for
from tests.common_tools import SENT
from tests.server._helpers import finish, pause
from tests.server.conftest import bearer, client_for

API = "/api/v1/approvals"


async def _only(client: httpx.AsyncClient, token: str) -> dict[str, Any]:
    (item,) = (await client.get(API, headers=bearer(token))).json()["items"]
    return item  # type: ignore[no-any-return]


async def _decide(
    client: httpx.AsyncClient, token: str, approval_id: str, body: dict[str, Any], **headers: str
) -> httpx.Response:
    return await client.post(f"{API}/{approval_id}/decision", json=body, headers={**bearer(token), **headers})


async def test_the_list_filters_pages_and_counts(store: Any, client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    calls = [(f"c{i}", "transfer", {"amount": i}) for i in range(5)] + [("r1", "read_file", {"path": "x"})]
    pause(store, calls)
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2, "tool_name": "transfer", **({"cursor": cursor} if cursor else {})}
        page = (await client.get(API, params=params, headers=bearer(tokens["viewer"]))).json()
        seen += [item["id"] for item in page["items"]]
        assert page["counts"]["pending"] == 5
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 5
    reads = (await client.get(API, params={"tool_name": "read_file"}, headers=bearer(tokens["viewer"]))).json()
    assert [item["arguments"] for item in reads["items"]] == [{"path": "x"}]
    none = (await client.get(API, params={"status": "approved"}, headers=bearer(tokens["viewer"]))).json()
    assert none["items"] == [] and none["counts"]["pending"] == 6


@pytest.mark.parametrize(
    ("params", "status", "where"),
    [
        ({"status": "maybe"}, 422, "status"),
        ({"limit": 0}, 422, "limit"),
        ({"limit": 101}, 422, "limit"),
        ({"created_after": "yesterday"}, 422, "created_after"),
        ({"created_after": "2026-01-02T03:04:05"}, 422, "created_after"),
        ({"created_before": "9999-12-31T23:59:59-14:00"}, 422, "created_before"),
        ({"created_after": "0001-01-01T00:00:00+14:00"}, 422, "created_after"),
        ({"expires_before": "9999-12-31T23:59:59-14:00"}, 422, "expires_before"),
        ({"cursor": "not-a-cursor"}, 400, None),
        ({"cursor": base64.urlsafe_b64encode(b'[1000000000000000000000000000,"ap_x"]').decode()}, 400, None),
    ],
)
async def test_a_bad_filter_is_a_problem_naming_it(
    client: httpx.AsyncClient, tokens: dict[str, str], params: dict[str, Any], status: int, where: str | None
) -> None:
    response = await client.get(API, params=params, headers=bearer(tokens["viewer"]))
    assert response.status_code == status and response.headers["content-type"] == "application/problem+json"
    if where is not None:
        assert [e["parameter"] for e in response.json()["errors"]] == [where]


async def test_the_detail_has_context_messages_and_an_etag(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})], description="Pay **5**?")
    item = await _only(client, tokens["viewer"])
    response = await client.get(f"{API}/{item['id']}", headers=bearer(tokens["viewer"]))
    assert response.status_code == 200 and response.headers["etag"] == '"v1"'
    body = response.json()
    assert body["approval"]["description"] == "Pay **5**?" and body["approval"]["arguments_schema"]["type"] == "object"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    one = (await client.get(f"{API}/{item['id']}", params={"context": 1}, headers=bearer(tokens["viewer"]))).json()
    assert len(one["messages"]) == 1
    missing = await client.get(f"{API}/ap_{'0' * 32}", headers=bearer(tokens["viewer"]))
    assert missing.status_code == 404 and missing.json()["detail"] == f"No approval 'ap_{'0' * 32}'."


async def test_client_arguments_on_an_approve_are_ignored(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    snapshot_id = pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    response = await _decide(
        client, tokens["approver"], item["id"], {"decision": "approve", "arguments": {"amount": 999}}
    )
    assert response.status_code == 200 and response.json()["approval"]["arguments"] == {"amount": 5}
    finish(store, snapshot_id)
    assert SENT == [5]


async def test_the_decider_is_the_principal_never_the_body(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    forged = await _decide(client, tokens["approver"], item["id"], {"decision": "approve", "decided_by": "boss"})
    assert forged.status_code == 422 and forged.json()["errors"][0]["pointer"] == "/decided_by"
    done = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"}, **{"User-Agent": "inbox/1"})
    assert done.json()["approval"]["decided_by"] == "ann"
    trail = (await client.get(f"{API}/{item['id']}/audit", headers=bearer(tokens["viewer"]))).json()["entries"]
    decided = [e for e in trail if e["kind"] == "decided"]
    assert len(decided) == 1 and decided[0]["principal"] == "ann"
    assert decided[0]["details"]["user_agent"] == "inbox/1" and decided[0]["details"]["client_ip"]


async def test_two_concurrent_deciders_one_200_one_409_and_the_tool_ran_once(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    snapshot_id = pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    first, second = await asyncio.gather(
        _decide(client, tokens["approver"], item["id"], {"decision": "approve"}, **{"If-Match": '"v1"'}),
        _decide(client, tokens["other"], item["id"], {"decision": "reject", "feedback": "no"}, **{"If-Match": '"v1"'}),
    )
    codes = sorted([first.status_code, second.status_code])
    assert codes in ([200, 409], [200, 412]), (first.text, second.text)
    won, lost = (first, second) if first.status_code == 200 else (second, first)
    current = lost.json()["current"]
    assert current["decided_by"] == won.json()["approval"]["decided_by"] and current["decided_at"]
    assert current["decision"] == won.json()["approval"]["decision"]
    finish(store, snapshot_id)
    assert len(SENT) == (1 if won.json()["approval"]["decision"] == "approve" else 0)
    trail = (await client.get(f"{API}/{item['id']}/audit", headers=bearer(tokens["viewer"]))).json()["entries"]
    assert [e["kind"] for e in trail].count("decided") == 1


async def test_a_later_different_decision_is_409_naming_the_winner(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    await _decide(client, tokens["approver"], item["id"], {"decision": "approve"})
    late = await _decide(client, tokens["other"], item["id"], {"decision": "reject"})
    assert late.status_code == 409 and late.json()["type"].endswith("approval-decided")
    assert late.json()["current"]["decided_by"] == "ann" and late.json()["current"]["decision"] == "approve"
    assert "ann" in late.json()["detail"]


async def test_an_identical_retry_is_200_with_one_audit_entry(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    body = {"decision": "reject", "feedback": "too much"}
    first = await _decide(client, tokens["approver"], item["id"], body, **{"Idempotency-Key": "k-1"})
    again = await _decide(client, tokens["approver"], item["id"], body, **{"Idempotency-Key": "k-1"})
    plain = await _decide(client, tokens["approver"], item["id"], body)
    assert [r.status_code for r in (first, again, plain)] == [200, 200, 200]
    assert [r.json()["replayed"] for r in (first, again, plain)] == [False, True, True]
    assert again.json()["approval"] == first.json()["approval"]
    reused = await _decide(
        client, tokens["approver"], item["id"], {"decision": "approve"}, **{"Idempotency-Key": "k-1"}
    )
    assert reused.status_code == 422 and reused.json()["type"].endswith("idempotency-key-reused")
    trail = (await client.get(f"{API}/{item['id']}/audit", headers=bearer(tokens["viewer"]))).json()["entries"]
    assert [e["kind"] for e in trail] == ["created", "decided"]


@pytest.mark.parametrize("if_match", ['"v7"', "v1", '"1"', 'W/"v1"'])
async def test_a_stale_if_match_is_412_and_nothing_changes(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str], if_match: str
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    response = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"}, **{"If-Match": if_match})
    assert response.status_code == 412 and response.headers["content-type"] == "application/problem+json"
    assert (await _only(client, tokens["viewer"]))["status"] == "pending"
    fresh = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"}, **{"If-Match": '"v1"'})
    assert fresh.status_code == 200 and fresh.headers["etag"] == '"v2"'


async def test_a_bad_edit_is_422_at_the_field_then_a_good_one_runs_and_the_model_is_told(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    snapshot_id = pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    bad = await _decide(client, tokens["approver"], item["id"], {"decision": "edit", "arguments": {"amount": "five"}})
    assert bad.status_code == 422 and "/arguments/amount" in [e["pointer"] for e in bad.json()["errors"]]
    renamed = await _decide(
        client, tokens["approver"], item["id"], {"decision": "edit", "arguments": {"amount": 3}, "tool_name": "other"}
    )
    assert renamed.status_code == 422 and "rename" in renamed.json()["detail"]
    good = await _decide(client, tokens["approver"], item["id"], {"decision": "edit", "arguments": {"amount": 3}})
    assert good.status_code == 200 and good.json()["approval"]["status"] == "edited"
    result, model = finish(store, snapshot_id)
    assert SENT == [3] and result_for(result["messages"], "c1").result == "sent 3"
    told = [m.text for m in model.calls[0]["messages"] if m.role is ChatRole.USER and m.text]
    assert any("updated by the user" in text and "3" in text for text in told)


async def test_a_rejections_feedback_reaches_the_model(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    snapshot_id = pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    await _decide(client, tokens["approver"], item["id"], {"decision": "reject", "feedback": "ask the owner first"})
    _, model = finish(store, snapshot_id)
    sent = json.dumps([m.to_dict() for m in model.calls[0]["messages"]])
    assert "ask the owner first" in sent and SENT == []


async def test_a_decision_not_allowed_is_422(store: Any, client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})], allowed_decisions=["approve", "reject"])
    item = await _only(client, tokens["approver"])
    response = await _decide(client, tokens["approver"], item["id"], {"decision": "edit", "arguments": {"amount": 1}})
    assert response.status_code == 422 and response.json()["type"].endswith("decision-refused")


async def test_expiry_with_an_injected_clock_survives_a_restart_then_410(store: Any, tokens: dict[str, str]) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})], expires_after=timedelta(minutes=10))
    now = [datetime.now(UTC)]
    async with client_for(create_app(store, clock=lambda: now[0])) as client:
        item = await _only(client, tokens["approver"])
        assert item["expires_at"] is not None and item["status"] == "pending"
    now[0] += timedelta(minutes=11)  # the first server is gone; a new one on the same store judges the time
    async with client_for(create_app(store, clock=lambda: now[0])) as client:
        late = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"})
        assert late.status_code == 410 and late.json()["type"].endswith("approval-expired")
        assert late.json()["current"]["status"] == "expired"
        assert (await _only(client, tokens["viewer"]))["status"] == "expired"


async def test_the_audit_export_of_a_full_run_shows_created_decided_executed(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    start = datetime.now(UTC) - timedelta(seconds=1)
    snapshot_id = pause(store, [("c1", "transfer", {"amount": 5}), ("c2", "transfer", {"amount": 7})])
    items = (await client.get(API, headers=bearer(tokens["viewer"]))).json()["items"]
    for item in items:
        assert (await _decide(client, tokens["approver"], item["id"], {"decision": "approve"})).status_code == 200
    finish(store, snapshot_id)
    response = await client.get(
        "/api/v1/audit/export", params={"from": start.isoformat()}, headers=bearer(tokens["admin"])
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/jsonl")
    lines = [json.loads(line) for line in response.text.splitlines()]
    for item in items:
        mine = [e for e in lines if e["approval_id"] == item["id"]]
        assert [e["kind"] for e in mine] == ["created", "decided", "executed"]
        assert {e["args_digest"] for e in mine} == {item["args_digest"]}
        assert mine[2]["outcome"] == "ok" and mine[1]["principal"] == "ann"
    later = await client.get(
        "/api/v1/audit/export",
        params={"from": (datetime.now(UTC) + timedelta(hours=1)).isoformat()},
        headers=bearer(tokens["admin"]),
    )
    assert later.text == ""


@pytest.mark.parametrize(
    "params",
    [{"to": "9999-12-31T23:59:59-14:00"}, {"from": "0001-01-01T00:00:00+14:00"}, {"to": "2026-01-02T03:04:05"}],
)
async def test_an_export_time_utc_cannot_hold_is_422_before_the_stream_starts(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str], params: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    response = await client.get("/api/v1/audit/export", params=params, headers=bearer(tokens["admin"]))
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    assert [(e["parameter"], e["in"]) for e in response.json()["errors"]] == [(*params, "query")]


async def test_filter_times_at_the_ends_of_the_calendar_are_answered(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    for params in ({"created_before": "9999-12-31T23:59:59+14:00"}, {"created_after": "0001-01-01T00:00:00-14:00"}):
        listed = await client.get(API, params=params, headers=bearer(tokens["viewer"]))
        assert listed.status_code == 200 and len(listed.json()["items"]) == 1, listed.text
    exported = await client.get("/api/v1/audit/export", params={"to": "9999-12-31T23:59:59+14:00"},
                                headers=bearer(tokens["admin"]))  # fmt: skip
    assert exported.status_code == 200 and [json.loads(line)["kind"] for line in exported.text.splitlines()] == [
        "created"
    ]


async def test_a_quorum_s_approval_json_shows_quorum_votes_and_approvers(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})], quorum=2)
    item = await _only(client, tokens["viewer"])
    assert (item["quorum"], item["votes"], item["approvers"]) == (2, [], [])
    vote = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"}, **{"Idempotency-Key": "k-9"})
    voted = vote.json()["approval"]
    assert voted["status"] == "pending" and voted["approvers"] == ["ann"]
    assert [(v["principal"], v["decision"]) for v in voted["votes"]] == [("ann", "approve")]
    assert "k-9" not in vote.text  # a key stays with its decider
    done = (await _decide(client, tokens["other"], item["id"], {"decision": "approve"})).json()["approval"]
    assert done["status"] == "approved" and done["approvers"] == ["ann", "bob"]
    detail = (await client.get(f"{API}/{item['id']}", headers=bearer(tokens["viewer"]))).json()["approval"]
    assert detail["approvers"] == ["ann", "bob"]


async def test_edited_text_with_a_lone_surrogate_is_422_at_the_field_never_a_500(
    store: Any, client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    pause(store, [("c1", "transfer", {"amount": 5})])
    item = await _only(client, tokens["approver"])
    url, headers = f"{API}/{item['id']}/decision", {**bearer(tokens["approver"]), "Content-Type": "application/json"}
    cases = (('{"amount": 5, "\\ud800": 1}', "/arguments/\\ud800"), ('{"amount": "\\udfff"}', "/arguments/amount"))
    for raw, pointer in cases:  # JSON escapes: the body itself is ASCII
        answer = await client.post(url, content='{"decision": "edit", "arguments": ' + raw + "}", headers=headers)
        assert answer.status_code == 422, answer.text
        assert pointer in [e["pointer"] for e in answer.json()["errors"]]
    done = await _decide(client, tokens["approver"], item["id"], {"decision": "approve"})
    assert done.status_code == 200
    late = await client.post(url, content='{"decision": "edit", "arguments": {"\\ud800": 1}}', headers=headers)
    assert late.status_code == 409, late.text
