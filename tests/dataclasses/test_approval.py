from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from handrail.dataclasses.approval import Approval, approval_id, args_digest
from handrail.dataclasses.approval_audit import ApprovalAuditEntry, verify_chain
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.testing.store_suites.approvals import T0, make_approval


def test_the_id_and_digest_rules() -> None:
    approval = make_approval()
    assert approval.id == approval_id("run-1", "c1") and approval.id.startswith("ap_") and len(approval.id) == 35
    # canonical JSON: key order and spacing do not matter, the snapshot id and tool name do
    assert args_digest("transfer", {"b": 1, "a": 2}, "s") == args_digest("transfer", {"a": 2, "b": 1}, "s")
    assert args_digest("transfer", {"a": 1}, "s") != args_digest("transfer", {"a": 1}, "s2")
    assert args_digest("transfer", {"a": 1}, "s") != args_digest("refund", {"a": 1}, "s")
    assert approval_id("a", "bc") != approval_id("ab", "c")


def test_a_round_trip_keeps_every_field() -> None:
    approval = make_approval(labels=("eu",), expires_at=T0 + dt.timedelta(hours=1), on_expiry="approve")
    decided = approval.decided("edit", principal="ann", at=T0, arguments={"amount": 9}, idempotency_key="k")
    for record in (approval, decided, approval.expired(T0), approval.cancelled(T0, reason="gone")):
        assert Approval.from_dict(record.to_dict()) == record


def test_arguments_are_copied() -> None:
    arguments: dict[str, Any] = {"amount": 5, "nested": {"x": [1]}}
    approval = make_approval(arguments=arguments)
    arguments["nested"]["x"].append(2)
    assert approval.arguments == {"amount": 5, "nested": {"x": [1]}}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("status", "maybe"),
        ("version", 0),
        ("version", "2"),
        ("created_at", "yesterday"),
        ("created_at", "2025-01-02T03:04:05"),
        ("expires_at", "2020-01-01T00:00:00+00:00"),
        ("allowed_decisions", ["approve", "ignore"]),
        ("labels", ["a", "a"]),
        ("args_digest", "sha256:" + "0" * 64),
        ("id", "ap_" + "0" * 32),
        ("arguments", [1, 2]),
        ("decided_by", "ann"),
        ("on_expiry", "escalate"),
    ],
)
def test_from_dict_refuses_bad_input_naming_the_field(field: str, value: object) -> None:
    data = make_approval().to_dict()
    data[field] = value
    with pytest.raises(SerializationError) as caught:
        Approval.from_dict(data)
    assert caught.value.path[0] in (field, "status", "decision"), caught.value
    assert field in str(caught.value) or "status" in str(caught.value)


def test_from_dict_refuses_missing_and_unknown_keys_and_other_versions() -> None:
    data = make_approval().to_dict()
    with pytest.raises(SerializationError, match="tool_name is missing"):
        Approval.from_dict({k: v for k, v in data.items() if k != "tool_name"})
    with pytest.raises(SerializationError, match="unknown keys"):
        Approval.from_dict({**data, "surprise": 1})
    with pytest.raises(SerializationError, match="schema_version"):
        Approval.from_dict({**data, "schema_version": 3})


def test_a_version_1_record_reads_with_the_team_fields_at_their_defaults() -> None:
    """Version 2 added quorum, votes, initiator, initiator_may_approve; a record written before has none of them."""
    data = make_approval().to_dict()
    v1 = {k: v for k, v in data.items() if k not in ("quorum", "votes", "initiator", "initiator_may_approve")}
    read = Approval.from_dict({**v1, "schema_version": 1})
    assert read == make_approval() and read.quorum == 1 and read.votes == () and read.initiator_may_approve
    with pytest.raises(SerializationError, match="unknown keys"):  # a v1 record cannot carry them
        Approval.from_dict({**v1, "schema_version": 1, "quorum": 2})


def test_building_refuses_with_configuration_errors() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"Approval\.step"):
        make_approval(step="1")
    with pytest.raises(ConfigurationError, match="naive"):
        make_approval(created_at=dt.datetime(2025, 1, 2))
    with pytest.raises(ConfigurationError, match="JSON data"):
        make_approval(arguments={"x": float("nan")})


def test_terminal_states_never_change() -> None:
    done = make_approval().decided("approve", principal="ann", at=T0)
    for change in (
        lambda: done.decided("reject", principal="bob", at=T0),
        lambda: done.expired(T0),
        lambda: done.cancelled(T0),
    ):
        with pytest.raises(ConfigurationError, match="approved already"):
            change()
    with pytest.raises(ConfigurationError, match="principal"):
        make_approval().decided("approve", principal=" ", at=T0)


def test_a_changed_audit_entry_or_chain_is_detected() -> None:
    first = ApprovalAuditEntry.chained(
        None, approval_id="ap_x", kind="created", at=T0, args_digest="sha256:" + "a" * 64
    )
    second = ApprovalAuditEntry.chained(
        first, approval_id="ap_x", kind="decided", at=T0, principal="ann", decision="reject"
    )
    assert ApprovalAuditEntry.from_dict(second.to_dict()) == second
    with pytest.raises(SerializationError, match="hash"):
        ApprovalAuditEntry.from_dict({**second.to_dict(), "principal": "bob"})
    other = ApprovalAuditEntry.chained(
        None, approval_id="ap_x", kind="created", at=T0, args_digest="sha256:" + "b" * 64
    )
    with pytest.raises(ConfigurationError, match="prev_hash"):
        verify_chain([other, second])
    with pytest.raises(ConfigurationError, match="has seq 2"):
        verify_chain([second])
    with pytest.raises(ConfigurationError, match="needed"):
        ApprovalAuditEntry.chained(None, approval_id="ap_x", kind="decided", at=T0)
    assert second.at.tzinfo == dt.UTC
