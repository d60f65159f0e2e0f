from __future__ import annotations

import datetime as dt
import getpass
import os
import re
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handrail.core._files import FileLock, lock_path_for
from handrail.dataclasses import AgentBreakpoint, AgentSnapshot, ToolBreakpoint
from handrail.dataclasses.breakpoints import Breakpoint
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot, write_snapshot
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    DecisionConflictError,
    SnapshotError,
    SnapshotUnavailableError,
)
from handrail.human_in_the_loop import (
    PendingApproval,
    get_tool_calls_and_descriptions_from_snapshot,
    list_pending,
    record_decision,
    with_decision,
)
from handrail.human_in_the_loop.snapshots import awaiting_decision, list_paused, snapshot_files, unavailable_reason
from handrail.testing.store_suites.snapshots import T0, make_paused_snapshot


def paused_snapshot(**changes: Any) -> AgentSnapshot:
    """The store suite's pause before a tool step (c1, c2 to transfer wait; c3 lookup ran), with no agent name."""
    unnamed = AgentBreakpoint("", ToolBreakpoint("tool_invoker", 0, None, "transfer"))
    return make_paused_snapshot(**{"break_point": unnamed, **changes})


def approve(call_id: str = "c1", **kwargs: Any) -> ToolExecutionDecision:
    return ToolExecutionDecision("transfer", execute=True, tool_call_id=call_id, **kwargs)


def reject(call_id: str = "c1", feedback: str = "no") -> ToolExecutionDecision:
    return ToolExecutionDecision("transfer", execute=False, tool_call_id=call_id, feedback=feedback)


def on_disk(tmp_path: Path, name: str = "s1", **changes: Any) -> Path:
    path = tmp_path / f"{name}.json"
    write_snapshot(paused_snapshot(**changes), path)
    return path


# ----------------------------------------------------------------------------- reading a snapshot


def test_pending_calls_and_descriptions() -> None:
    snapshot = paused_snapshot()
    before = snapshot.to_dict()
    calls, descriptions = get_tool_calls_and_descriptions_from_snapshot(snapshot)
    assert calls == [
        {"tool_name": "transfer", "arguments": {"amount": 5}, "id": "c1", "extra": None},
        {"tool_name": "transfer", "arguments": {"amount": 7}, "id": "c2", "extra": None},
    ]
    assert descriptions == {"transfer": "Move money.", "lookup": "Look a thing up."}
    every, _ = get_tool_calls_and_descriptions_from_snapshot(snapshot, breakpoint_tool_only=False)
    assert [c["id"] for c in every] == ["c1", "c2", "c3"]
    calls[0]["arguments"]["amount"] = 999  # deep copies: the snapshot is untouched
    assert snapshot.to_dict() == before


def test_a_decided_call_no_longer_awaits() -> None:
    snapshot = paused_snapshot(tool_execution_decisions=[approve("c2")])
    calls, _ = get_tool_calls_and_descriptions_from_snapshot(snapshot)
    assert [c["id"] for c in calls] == ["c1"]
    assert [c.id for c in awaiting_decision(snapshot)] == ["c1"]


def test_a_call_without_a_ledger_entry_awaits() -> None:
    assert [c.id for c in awaiting_decision(paused_snapshot(ledger={}))] == ["c1", "c2", "c3"]


def test_a_snapshot_before_the_model_call_has_no_calls() -> None:
    snapshot = paused_snapshot(position="chat_generator", break_point=AgentBreakpoint("a", Breakpoint()))
    with pytest.raises(ConfigurationError, match="before the model call") as caught:
        get_tool_calls_and_descriptions_from_snapshot(snapshot)
    assert isinstance(caught.value, ValueError)  # as in Haystack
    assert awaiting_decision(snapshot) == []


def test_not_a_snapshot_is_a_type_error() -> None:
    with pytest.raises(ConfigurationTypeError):
        get_tool_calls_and_descriptions_from_snapshot({"messages": []})  # type: ignore[arg-type]


def test_missing_fingerprint_gives_no_descriptions() -> None:
    _, descriptions = get_tool_calls_and_descriptions_from_snapshot(paused_snapshot(fingerprint={}))
    assert descriptions == {}


# ----------------------------------------------------------------------------- deciding in memory


def test_with_decision_records_the_decision_and_the_ledger_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "alice")
    snapshot = paused_snapshot()
    before = snapshot.to_dict()
    updated = with_decision(snapshot, approve("c2", final_tool_params={"amount": 6}))
    assert snapshot.to_dict() == before  # not mutated
    assert updated.tool_execution_decisions == [approve("c2", final_tool_params={"amount": 6}, decided_by="alice")]
    entry = updated.ledger["c2"]
    assert (entry.status, entry.decided_by, entry.arguments) == ("approved", "alice", {"amount": 6})
    assert entry.decision == updated.tool_execution_decisions[0]
    assert entry.decided_at is not None and entry.decided_at.tzinfo is not None
    assert updated.ledger["c1"] == snapshot.ledger["c1"]
    rejected = with_decision(updated, reject("c1", "too much"), decided_by="bob")
    assert (rejected.ledger["c1"].status, rejected.ledger["c1"].decided_by) == ("rejected", "bob")
    assert rejected.ledger["c1"].arguments == {"amount": 5}
    assert awaiting_decision(rejected) == []


def test_the_decisions_own_decided_by_is_kept() -> None:
    updated = with_decision(paused_snapshot(), approve(decided_by="web-ui"))
    assert updated.ledger["c1"].decided_by == "web-ui"


def test_the_same_decision_again_is_a_no_op() -> None:
    once = with_decision(paused_snapshot(), reject("c1", "no"), decided_by="alice")
    assert with_decision(once, reject("c1", "no"), decided_by="bob") is once
    approved = with_decision(paused_snapshot(), approve())
    # Edited arguments equal to the proposed ones are a plain approval.
    assert with_decision(approved, approve(final_tool_params={"amount": 5})) is approved


@pytest.mark.parametrize("second", [reject("c1", "no"), approve(final_tool_params={"amount": 2}), reject("c1", "x")])
def test_a_different_decision_for_a_decided_call_conflicts(second: ToolExecutionDecision) -> None:
    first = reject("c1", "stop") if second.execute else approve()
    decided = with_decision(paused_snapshot(), first, decided_by="alice")
    with pytest.raises(DecisionConflictError, match=r"'c1'.*already decided.*alice"):
        with_decision(decided, second)


@pytest.mark.parametrize(
    ("decision", "fragment"),
    [
        (approve("c9"), r"'c9' is not a paused call.*\['c1', 'c2'\]"),
        (ToolExecutionDecision("lookup", execute=True, tool_call_id="c3"), r"not pending \(status 'done'\)"),
        (ToolExecutionDecision("lookup", execute=True, tool_call_id="c1"), "is to 'transfer'"),
        (ToolExecutionDecision("transfer", execute=True), r"must name its call.*\['c1', 'c2'\]"),
    ],
)
def test_a_decision_for_a_call_that_is_not_pending_is_refused(decision: ToolExecutionDecision, fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        with_decision(paused_snapshot(), decision)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"amount": 0}, "minimum"),
        ({"amount": "5"}, "not of type 'integer'"),
        ({"amount": 5, "to": "mallory"}, "Additional properties"),
        ({}, "'amount' is a required property"),
    ],
)
def test_an_edit_failing_the_tools_schema_is_refused(params: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=f"refused by schema validation.*{fragment}"):
        with_decision(paused_snapshot(), approve(final_tool_params=params))


def test_an_edit_adding_a_key_the_tool_does_not_declare_is_refused_as_the_agent_would() -> None:
    """@tool schemas do not say additionalProperties: an extra key passed the store and failed at every resume."""
    snapshot = paused_snapshot()
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}
    tools = {
        **snapshot.fingerprint["tools"],
        "transfer": {**snapshot.fingerprint["tools"]["transfer"], "parameters": schema},
    }
    open_schema = paused_snapshot(fingerprint={**snapshot.fingerprint, "tools": tools})
    with pytest.raises(ConfigurationError, match=r"\['note'\] are not parameters of 'transfer' .*Nothing was recorded"):
        with_decision(open_schema, approve(final_tool_params={"amount": 5, "note": "x"}))
    allowing = {**schema, "additionalProperties": True}
    tools["transfer"] = {**tools["transfer"], "parameters": allowing}
    allowed = with_decision(paused_snapshot(fingerprint={**snapshot.fingerprint, "tools": tools}),
                            approve(final_tool_params={"amount": 5, "note": "x"}))  # fmt: skip
    assert allowed.ledger["c1"].arguments == {"amount": 5, "note": "x"}


def test_an_edit_is_not_checked_when_no_schema_was_recorded() -> None:
    updated = with_decision(paused_snapshot(fingerprint={}), approve(final_tool_params={"amount": "lots"}))
    assert updated.ledger["c1"].arguments == {"amount": "lots"}


def test_a_rejection_ignores_its_params() -> None:
    odd = ToolExecutionDecision("transfer", execute=False, tool_call_id="c1", final_tool_params={"amount": -1})
    assert with_decision(paused_snapshot(), odd).ledger["c1"].status == "rejected"


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"status": "done", "outcome": {"exit_reason": "text"}}, r"finished run \(exit reason: text\)"),
        ({"status": "resumed", "continued_in": "s2.json"}, "already resumed; it continued in s2.json"),
        ({"status": "running"}, "is being resumed"),
    ],
)
def test_only_paused_snapshots_take_decisions(changes: dict[str, Any], fragment: str) -> None:
    snapshot = paused_snapshot(**changes)
    assert re.search(fragment, unavailable_reason(snapshot) or "")
    with pytest.raises(SnapshotUnavailableError, match=fragment):
        with_decision(snapshot, approve())


# ----------------------------------------------------------------------------- deciding on disk


def test_record_decision_writes_the_file_atomically(tmp_path: Path) -> None:
    path = on_disk(tmp_path)
    updated = record_decision(path, approve("c2", final_tool_params={"amount": 6}), decided_by="carol")
    assert updated.location == str(path.absolute())
    again = load_snapshot(path)
    assert again.tool_execution_decisions == [approve("c2", final_tool_params={"amount": 6}, decided_by="carol")]
    assert again.ledger["c2"].status == "approved" and again.ledger["c2"].decided_by == "carol"
    assert again.state["pair"] == (1, 2) and again.state["when"] == dt.date(2025, 1, 2)  # state kept, typed
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["s1.json"]


def test_a_refused_decision_writes_nothing(tmp_path: Path) -> None:
    path = on_disk(tmp_path)
    record_decision(path, reject("c1", "no"))
    before = path.read_bytes()
    for bad, error in [
        (approve("c2", final_tool_params={"amount": -3}), ConfigurationError),
        (approve("c1"), DecisionConflictError),
        (approve("c7"), ConfigurationError),
    ]:
        with pytest.raises(error):
            record_decision(path, bad)
        assert path.read_bytes() == before
    assert record_decision(path, reject("c1", "no")).tool_execution_decisions[0].feedback == "no"
    assert path.read_bytes() == before  # the same decision again: nothing written


def test_a_locked_snapshot_is_being_resumed(tmp_path: Path) -> None:
    path = on_disk(tmp_path)
    with FileLock(lock_path_for(path)), pytest.raises(SnapshotUnavailableError, match="s1 is being resumed"):
        record_decision(path, approve(), lock_timeout=0)
    assert record_decision(path, approve(), lock_timeout=0).ledger["c1"].status == "approved"


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.json"):
        record_decision(tmp_path / "nope.json", approve())
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "messa', encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"bad\.json"):
        record_decision(bad, approve())


def test_two_different_decisions_at_once_one_wins(tmp_path: Path) -> None:
    path = on_disk(tmp_path)
    start = threading.Barrier(2)

    def decide(decision: ToolExecutionDecision) -> str:
        start.wait()
        try:
            record_decision(path, decision)
        except DecisionConflictError:
            return "conflict"
        return "recorded"

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(decide, [approve(), reject()]))
    assert outcomes == ["conflict", "recorded"]
    assert len(load_snapshot(path).tool_execution_decisions) == 1


# ----------------------------------------------------------------------------- listing a directory


def test_list_pending_lists_paused_calls_oldest_first_and_skips_the_rest(tmp_path: Path) -> None:
    on_disk(tmp_path, "newer", timestamp=T0 + dt.timedelta(minutes=5))
    on_disk(tmp_path, "older")
    on_disk(tmp_path, "finished", status="done", outcome={"exit_reason": "text"})
    on_disk(tmp_path, "moved_on", status="resumed", continued_in="newer.json")
    on_disk(tmp_path, "decided", tool_execution_decisions=[approve("c1"), reject("c2")])
    (tmp_path / ".newer.json.tmp").write_text("{", encoding="utf-8")
    (tmp_path / ".newer.json.lock").write_text("", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    (tmp_path / "sub.json").mkdir()
    pending = list_pending(tmp_path)
    assert [(p.snapshot_id, p.tool_call_id) for p in pending] == [
        ("older", "c1"), ("older", "c2"), ("newer", "c1"), ("newer", "c2")
    ]  # fmt: skip
    first = pending[0]
    assert first == PendingApproval("older", "transfer", {"amount": 5}, "c1", T0, tmp_path / "older.json")
    assert [s.snapshot_id for s in list_paused(tmp_path)] == ["decided", "older", "newer"]
    assert [p.name for p in snapshot_files(tmp_path)] == [
        "decided.json", "finished.json", "moved_on.json", "newer.json", "older.json"
    ]  # fmt: skip


def test_a_corrupt_file_is_a_warning_naming_it_not_a_crash(tmp_path: Path) -> None:
    on_disk(tmp_path, "good")
    (tmp_path / "broken.json").write_text('{"schema_version": 1', encoding="utf-8")
    (tmp_path / "future.json").write_text('{"schema_version": 99}', encoding="utf-8")
    with pytest.warns(UserWarning) as warned:
        pending = list_pending(tmp_path)
    assert [p.snapshot_id for p in pending] == ["good", "good"]
    messages = sorted(str(w.message) for w in warned)
    assert len(messages) == 2 and "broken.json" in messages[0] and "future.json" in messages[1]
    seen: list[tuple[str, type]] = []
    list_pending(tmp_path, on_error=lambda path, exc: seen.append((path.name, type(exc))))
    assert sorted(name for name, _ in seen) == ["broken.json", "future.json"]
    assert all(issubclass(kind, SnapshotError) for _, kind in seen)


def test_listing_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list_pending(tmp_path / "missing")
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        list_pending(tmp_path / "file")


def test_an_empty_directory_has_nothing_pending(tmp_path: Path) -> None:
    assert list_pending(tmp_path) == []


def test_a_conflict_shows_the_edited_arguments_as_json() -> None:
    decided = with_decision(paused_snapshot(), approve(final_tool_params={"amount": 3}), decided_by="alice")
    with pytest.raises(DecisionConflictError) as info:
        with_decision(decided, approve(final_tool_params={"amount": 4}))
    assert 'approve with arguments {"amount": 3}, by alice' in str(info.value)
    assert 'refusing a different decision (approve with arguments {"amount": 4})' in str(info.value)
