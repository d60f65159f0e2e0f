"""One approval service, two backends: ``handrail serve --temporal`` lists and decides the approvals of Temporal runs.

A real ``handrail serve`` process on 127.0.0.1 over a SQLite store, the dev server, and an in-process worker that
records its runs' held calls into that store (``create_worker(..., approvals=URL)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.dataclasses.approval import Approval, approval_id
from handrail.server._context import approval_json
from handrail.server._resumer import Resumer
from handrail.stores import SQLiteSnapshotStore
from handrail.testing.builders import call, reply
from tests.server._processes import ServeProcess, serving
from tests.temporal._harness import Effects, asking, harness, transfer_agent


@pytest.fixture
def effects() -> Effects:
    return Effects()


@pytest.fixture
def service_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'service.db'}"


@pytest.fixture
def service_store(service_url: str) -> Iterator[SQLiteSnapshotStore]:
    store = SQLiteSnapshotStore(service_url.removeprefix("sqlite:///"))
    yield store
    store.close()


@pytest.fixture
def tokens(service_store: SQLiteSnapshotStore) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "ann": service_store.add_token("ann", "approver", at=now)[1],
        "bob": service_store.add_token("bob", "approver", at=now)[1],
        "vera": service_store.add_token("vera", "viewer", at=now)[1],
    }


@pytest.fixture
def served(dev_server: Any, service_url: str, tokens: dict[str, str]) -> Iterator[ServeProcess]:
    with serving(service_url, "--temporal", dev_server.address) as server:
        yield server


class Api:
    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens

    async def get(self, path: str, who: str = "ann") -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.url, timeout=30) as client:
            return await client.get(f"/api/v1{path}", headers={"Authorization": f"Bearer {self.tokens[who]}"})

    async def decide(self, aid: str, body: dict[str, Any], who: str = "ann", **headers: str) -> httpx.Response:
        sent = {"Authorization": f"Bearer {self.tokens[who]}", **{k.replace("_", "-"): v for k, v in headers.items()}}
        async with httpx.AsyncClient(base_url=self.url, timeout=60) as client:
            return await client.post(f"/api/v1/approvals/{aid}/decision", json=body, headers=sent)

    async def listed(self, run_id: str, status: str | None = None, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The run's approvals in the list, once one has ``status`` (any, when None)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            items: list[dict[str, Any]] = (await self.get(f"/approvals?run_id={run_id}")).json()["items"]
            if items and (status is None or any(i["status"] == status for i in items)):
                return items
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no approval of {run_id} is {status or 'listed'} in {timeout} s: {items}")
            await asyncio.sleep(0.05)


def _local_shape() -> set[str]:
    """The keys of a local run's approval in the API (the same shape for both backends)."""
    local = Approval.new(run_id="r", tool_call_id="c", snapshot_id="s", agent_name="a", step=0, tool_name="t",
                         tool_description="", arguments={}, arguments_schema={"type": "object"}, description="",
                         created_at=datetime.now(UTC))  # fmt: skip
    return set(approval_json(local))


async def test_a_temporal_runs_approval_is_listed_and_decided_over_http_and_the_tool_runs_once(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, served: ServeProcess,
    service_url: str, tokens: dict[str, str],
) -> None:  # fmt: skip
    api = Api(served.url, tokens)
    agents = {"demo": transfer_agent(effects)}
    async with harness(dev_server.address, ledger_url, task_queue, agents, approvals=service_url) as h:
        run_id = await h.start()
        [item] = await api.listed(run_id)
        assert set(item) == _local_shape()
        assert (item["status"], item["tool_name"], item["tool_call_id"], item["arguments"]) == (
            "pending", "transfer", "c1", {"amount": 5}
        )  # fmt: skip
        assert item["id"] == approval_id(run_id, "c1") and item["agent_name"] == "demo"
        assert item["extra"]["backend"] == "temporal"
        assert item["extra"]["temporal"]["task_queue"] == task_queue
        assert item["arguments_schema"]["properties"]["amount"]["type"] == "integer"
        viewer = await api.decide(item["id"], {"decision": "approve"}, who="vera")
        assert viewer.status_code == 403  # the service's role checks hold: nothing reached the run
        assert effects.done == []
        detail = await api.get(f"/approvals/{item['id']}")
        decided = await api.decide(item["id"], {"decision": "approve"}, if_match=detail.headers["etag"],
                                   idempotency_key="k-1")  # fmt: skip
        assert decided.status_code == 200, decided.text
        body = decided.json()
        assert (body["approval"]["status"], body["approval"]["decided_by"], body["replayed"]) == (
            "approved", "ann", False
        )  # fmt: skip
        again = await api.decide(item["id"], {"decision": "approve"}, idempotency_key="k-1")
        assert again.status_code == 200 and again.json()["replayed"] is True
        result = await h.result(run_id)
    assert effects.done == [("transfer", 5)]
    assert result["answer"] == "done"
    tool_message = next(m for m in result["messages"] if m["role"] == "tool")
    assert "sent 5 to bob" in str(tool_message)
    [after] = await api.listed(run_id)
    assert after["status"] == "approved" and after["decided_by"] == "ann"


async def test_a_refused_edit_over_http_is_422_and_the_run_still_waits(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, served: ServeProcess,
    service_url: str, tokens: dict[str, str],
) -> None:  # fmt: skip
    api = Api(served.url, tokens)
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)},
                       approvals=service_url) as h:  # fmt: skip
        run_id = await h.start()
        [item] = await api.listed(run_id)
        refused = await api.decide(item["id"], {"decision": "edit", "arguments": {"amount": "five"}})
        assert refused.status_code == 422, refused.text
        assert refused.json()["type"].endswith("decision-refused")
        assert "integer" in refused.text
        [still] = await h.waiting(run_id)
        assert still["call_id"] == "c1" and still["votes"] == []
        assert (await api.listed(run_id))[0]["version"] == 1  # nothing recorded
        edited = await api.decide(item["id"], {"decision": "edit", "arguments": {"amount": 3, "to": "carol"}})
        assert edited.status_code == 200, edited.text
        assert edited.json()["approval"]["status"] == "edited"
        await h.result(run_id)
    assert effects.done == [("transfer", 3)]


async def test_what_the_run_refuses_is_refused_over_http_and_nothing_is_recorded(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, served: ServeProcess,
    service_url: str, service_store: SQLiteSnapshotStore, tokens: dict[str, str],
) -> None:  # fmt: skip
    api = Api(served.url, tokens)
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)},
                       approvals=service_url) as h:  # fmt: skip
        run_id = await h.start()
        [item] = await api.listed(run_id)
        stray = service_store.get_approval(item["id"])  # the run's record, and
        ghost = Approval.new(  # one the run never held: only the workflow's validator can tell
            run_id=run_id, tool_call_id="ghost", snapshot_id=stray.snapshot_id, agent_name="demo", step=0,
            tool_name="transfer", tool_description="", arguments={"amount": 1},
            arguments_schema=stray.arguments_schema, description="", created_at=datetime.now(UTC),
            extra={**stray.extra, "temporal": {**stray.extra["temporal"], "call_id": "ghost"}},
        )  # fmt: skip
        service_store.create_approval(ghost)
        refused = await api.decide(ghost.id, {"decision": "approve"})
        assert refused.status_code == 422, refused.text
        assert "no call 'ghost' waits" in refused.json()["detail"]
        assert service_store.get_approval(ghost.id).status == "pending"
        assert (await api.decide(item["id"], {"decision": "reject", "feedback": "no"})).status_code == 200
        await h.result(run_id)
    assert effects.done == []


async def test_a_decision_by_update_alone_and_an_expiry_show_in_the_services_list(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, served: ServeProcess,
    service_url: str, service_store: SQLiteSnapshotStore, tokens: dict[str, str],
) -> None:  # fmt: skip
    api = Api(served.url, tokens)
    script = [reply(call("transfer", {"amount": 5}, id="c1")), reply(call("transfer", {"amount": 6}, id="c2")),
              reply("done")]  # fmt: skip
    agent = transfer_agent(effects, script, strategy=asking(expires_after=timedelta(seconds=2)))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}, approvals=service_url) as h:
        run_id = await h.start()
        [first] = await api.listed(run_id)
        assert first["expires_at"] is not None
        await h.decide(run_id, "c1", "reject", decided_by="carol", feedback="by hand")  # not through the service
        listed = await api.listed(run_id, "rejected")
        rejected = next(i for i in listed if i["tool_call_id"] == "c1")
        assert (rejected["decided_by"], rejected["feedback"]) == ("carol", "by hand")
        expired = next(i for i in await api.listed(run_id, "expired", timeout=30) if i["tool_call_id"] == "c2")
        assert expired["decision"] == "reject"
        trail = (await api.get(f"/approvals/{expired['id']}/audit")).json()["entries"]
        assert trail[-1]["kind"] == "expired" and trail[-1]["details"]["via"] == "temporal"  # the run's timer
        result = await h.result(run_id)
        late = await api.decide(expired["id"], {"decision": "approve"})
        assert late.status_code == 410  # expired: takes no decision
    assert effects.done == [] and "expired" in str(result["messages"]).lower()
    report = Resumer(service_store).run_once()  # the resumer leaves Temporal records alone
    assert (report.resumed, report.expired) == ((), ())


async def test_a_quorum_is_counted_by_the_run_and_shown_on_the_record(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, served: ServeProcess,
    service_url: str, tokens: dict[str, str],
) -> None:  # fmt: skip
    api = Api(served.url, tokens)
    agent = transfer_agent(effects, strategy=asking(quorum=2))
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": agent}, approvals=service_url) as h:
        run_id = await h.start()
        [item] = await api.listed(run_id)
        assert item["quorum"] == 2
        first = (await api.decide(item["id"], {"decision": "approve"})).json()["approval"]
        assert first["status"] == "pending" and first["approvers"] == ["ann"]
        assert (await h.waiting(run_id))[0]["votes"] == ["ann"]
        assert effects.done == []
        second = await api.decide(item["id"], {"decision": "approve"}, who="bob")
        assert second.json()["approval"]["status"] == "approved", second.text
        await h.result(run_id)
    assert effects.done == [("transfer", 5)]


async def test_the_resumer_ignores_temporal_records(
    dev_server: Any, ledger_url: str, task_queue: str, effects: Effects, service_url: str,
    service_store: SQLiteSnapshotStore,
) -> None:  # fmt: skip
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(effects)},
                       approvals=service_url) as h:  # fmt: skip
        run_id = await h.start()
        await h.waiting(run_id)
        resumer = Resumer(service_store)
        resumer.run_once()  # the start: a rescan
        deadline = asyncio.get_running_loop().time() + 20
        while service_store.list_approvals().items == ():
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        await h.decide(run_id, "c1")
        await h.result(run_id)
        while service_store.get_approval(approval_id(run_id, "c1")).status != "approved":
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        report = resumer.run_once()
        assert (report.resumed, report.expired, report.took_over) == ((), (), ())
        assert len(resumer.waiting) == 0 and resumer.expiry.next_due() is None
    assert effects.done == [("transfer", 5)]
