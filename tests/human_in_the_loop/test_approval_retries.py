"""Retries and odd input at the decision: keys scoped to their principal, a retry after the run went on, text
that is not Unicode (found by a fresh-user probe of the approval service)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail import resume
from handrail.errors import ApprovalClosedError, ApprovalDecisionError, IdempotencyKeyReusedError
from handrail.human_in_the_loop.service import ApprovalService
from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from tests.cases._helpers import asst
from tests.common_tools import SENT
from tests.human_in_the_loop.test_approval_service import _agent, _pause
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "directory":
        made: Any = FileSnapshotStore(tmp_path / "snaps")
    elif request.param == "sqlite":
        made = SQLiteSnapshotStore(tmp_path / "a.db")
    else:
        made = open_snapshot_store(request.getfixturevalue("postgres_dsn"))
    yield made
    close = getattr(made, "close", None)
    if callable(close):
        close()


def test_an_idempotency_key_is_scoped_to_its_principal(store: Any) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    service.decide(approval.id, "reject", principal="adm", feedback="no", idempotency_key="K1")
    with pytest.raises(ApprovalClosedError) as other:  # ben's own request: told who decided, not "key reused"
        service.decide(approval.id, "reject", principal="ben", feedback="no", idempotency_key="K1")
    assert not isinstance(other.value, IdempotencyKeyReusedError) and "adm" in str(other.value)
    with pytest.raises(IdempotencyKeyReusedError):  # adm's key with another body is still refused
        service.decide(approval.id, "reject", principal="adm", feedback="changed my mind", idempotency_key="K1")
    again = service.decide(approval.id, "reject", principal="adm", feedback="no", idempotency_key="K1")
    assert again.replayed


def test_a_retry_of_a_decision_whose_run_finished_meanwhile_answers_with_the_stored_result(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot_id = _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    before = store.load(snapshot_id)  # paused, the call waiting: what a retry read just before the run finished
    service.decide(approval.id, "approve", principal="ann")
    done = resume(snapshot_id, store=store, agent=_agent([asst("paid")], store))
    assert done["last_message"].text == "paid" and SENT == [5]
    monkeypatch.setattr(store, "load", lambda _id: before)  # the retry's read is stale; its claim sees 'done'
    again = service.decide(approval.id, "approve", principal="ann")
    assert again.replayed and again.approval.status == "approved"
    monkeypatch.undo()
    assert store.load(snapshot_id).status == "done" and SENT == [5]


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [
        ({"amount": 5, "\ud800": 1}, "/\\ud800"),
        ({"amount": "\udfff"}, "/amount"),
        ({"amount": ["\ud83d"]}, "/amount/0"),
    ],
)
def test_edited_text_that_is_not_unicode_is_refused_by_pointer_and_the_error_prints(
    store: Any, arguments: dict[str, Any], pointer: str
) -> None:
    _pause(store, [("c1", "transfer", {"amount": 5})])
    service = ApprovalService(store)
    (approval,) = service.list().items
    with pytest.raises(ApprovalDecisionError) as refused:
        service.decide(approval.id, "edit", principal="ann", arguments=arguments)
    assert [e["pointer"] for e in refused.value.errors] == [pointer]
    assert "lone surrogate" in refused.value.errors[0]["message"]
    str(refused.value).encode("utf-8")  # printable: no raw surrogate in the message
    assert store.get_approval(approval.id).status == "pending"
    service.decide(approval.id, "approve", principal="ann")
    with pytest.raises(ApprovalClosedError) as closed:  # decided already: a conflict, not a crash
        service.decide(approval.id, "edit", principal="ann", arguments=arguments)
    str(closed.value).encode("utf-8")
