"""Every field of a snapshot is type-checked when it is read: a bad file is refused on load, naming the field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from handrail.dataclasses._snapshot_quick import quick_message_ok
from handrail.dataclasses._snapshot_schema import snapshot_schema
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry, decode_snapshot, load_snapshot
from handrail.errors import SnapshotError
from handrail.human_in_the_loop.snapshots import get_tool_calls_and_descriptions_from_snapshot
from tests.dataclasses.test_snapshot import tool_pause
from tests.security.test_snapshot_fuzz import damaged

FIXTURE = Path(__file__).parents[1] / "fixtures" / "snapshots" / "v1_tool_pause.json"

Change = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Change:
    """A change of the snapshot dict: ``messages.1.content.1.tool_call.id`` set to ``value``."""

    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


# (change, the field path and what the message says)
CASES: list[tuple[Change, str]] = [
    (_set("messages.0.meta", [["a", 1]]), r"messages\[0\]\.meta: expected an object or null, got a list"),
    (_set("messages.0.meta", ["x"]), r"messages\[0\]\.meta: expected an object or null, got a list"),
    (_set("messages.1.content.1.tool_call.id", {"x": 1}),
     r"messages\[1\]\.content\[1\]\.tool_call\.id: expected a string or null, got an object"),
    (_set("messages.1.content.1.tool_call.id", ["x"]), r"tool_call\.id: expected a string or null, got a list"),
    (_set("messages.1.content.1.tool_call.id", 7), r"tool_call\.id: expected a string or null, got an integer \(7\)"),
    (_set("messages.1.content.1.tool_call.arguments", [1]),
     r"tool_call\.arguments: expected an object, got a list"),
    (_set("messages.1.content.1.tool_call.tool_name", None), r"tool_call\.tool_name: expected a string, got null"),
    (_set("messages.1.content.0", {"text": 5}), r"messages\[1\]\.content\[0\]\.text: expected a string"),
    (_set("messages.1.content.0", {"text": "a", "tool_call": {}}), r"content\[0\]: expected exactly one of the keys"),
    (_set("messages.1.content.0", {"picture": "a"}), r"content\[0\]: unknown content part 'picture'"),
    (_set("messages.1.name", 3), r"messages\[1\]\.name: expected a string or null"),
    (_set("messages.1.role", "robot"), r"messages\[1\]\.role: expected one of"),
    (_set("messages.1.extra_key", 1), r"messages\[1\]: unknown key 'extra_key'"),
    (_set("state.tool_call_counts", {"search": "3"}),
     r"state\.tool_call_counts\['search'\]: expected an integer >= 0, got a string \('3'\)"),
    (_set("state.tool_call_counts", [1]), r"state\.tool_call_counts: expected an object, got a list"),
    (_set("state.step_count", True), r"state\.step_count: expected an integer >= 0, got a boolean"),
    (_set("state.step_count", -1), r"state\.step_count: expected an integer >= 0"),
    (_set("state.continue_run", "no"), r"state\.continue_run: expected a boolean"),
    (_set("state.exit_reason", 5), r"state\.exit_reason: expected a string or null"),
    (_set("state.token_usage", "lots"), r"state\.token_usage: expected an object"),
    (_set("ledger.c1.tool_call_id", {"a": 1}), r"ledger\['c1'\]\.tool_call_id: expected a string, got an object"),
    (_set("ledger.c1.arguments", "x"), r"ledger\['c1'\]\.arguments: expected an object, got a string"),
    (_set("ledger.c1.result", {"text": 1, "error": False}), r"ledger\['c1'\]\.result\.text: expected a string or nu"),
    (_set("ledger.c1.result", {"text": "ok", "error": "no"}), r"ledger\['c1'\]\.result\.error: expected a boolean"),
    (_set("ledger.c1.decided_at", "noon"), r"ledger\['c1'\]\.decided_at: expected an ISO 8601 datetime string or"),
    (_set("ledger.c1.decision", {"tool_name": "t", "execute": "yes"}),
     r"ledger\['c1'\]\.decision\.execute: expected a boolean, got a string \('yes'\)"),
    (_set("tool_execution_decisions.0.final_tool_params", [1]),
     r"tool_execution_decisions\[0\]\.final_tool_params: expected an object or null, got a list"),
    (_set("tool_execution_decisions.0.tool_call_id", 3), r"tool_execution_decisions\[0\]\.tool_call_id: expected a"),
    (_set("break_point.break_point.visit_count", "0"), r"break_point\.break_point\.visit_count: expected an integer"),
    (_set("break_point.agent_name", None), r"break_point\.agent_name: expected a string, got null"),
    (_set("metadata.run", []), r"metadata\.run: expected an object or null, got a list"),
    (_set("metadata.agent_file", 1), r"metadata\.agent_file: expected a string or null"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_a_wrong_typed_field_is_refused_on_load_with_its_path(tmp_path: Path, change: Change, expected: str) -> None:
    data = tool_pause().to_dict()
    change(data)
    with pytest.raises(SnapshotError, match=rf"^Snapshot \S*{expected}"):
        AgentSnapshot.from_dict(data)
    target = tmp_path / "bad.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SnapshotError, match=rf"^Snapshot file {target}: Snapshot \S*{expected}"):
        load_snapshot(target)


def test_a_call_id_of_the_wrong_type_no_longer_reaches_the_approval_helpers(tmp_path: Path) -> None:
    # Before the schema, this file loaded and get_tool_calls_and_descriptions_from_snapshot raised a bare TypeError.
    data = tool_pause().to_dict()
    data["messages"][1]["content"][1]["tool_call"]["id"] = {"x": 1}
    with pytest.raises(SnapshotError, match=r"tool_call\.id"):
        decode_snapshot(json.dumps(data).encode(), source="s.json")
    calls, _ = get_tool_calls_and_descriptions_from_snapshot(tool_pause(), breakpoint_tool_only=False)
    assert [c["id"] for c in calls] == ["c1", "c2"]


def test_python_data_that_is_not_json_is_refused_by_field() -> None:
    data = tool_pause().to_dict()
    data["messages"][0]["meta"] = {"when": object()}
    with pytest.raises(SnapshotError, match=r"^Snapshot messages\[0\]\.meta: \['when'\]: an object is not JSON data"):
        AgentSnapshot.from_dict(data)


def test_the_frozen_v1_fixture_and_written_snapshots_still_load() -> None:
    snapshot = load_snapshot(FIXTURE)
    assert [call.id for call in snapshot.pending_tool_calls] == ["c1", "c2"]
    assert AgentSnapshot.from_dict(tool_pause().to_dict()) == tool_pause()


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(data=damaged())
def test_the_quick_message_check_accepts_only_what_the_full_schema_accepts(data: dict[str, Any]) -> None:
    full = snapshot_schema(deep=True)["messages"]  # the full checker (deep: the quick path is for JSON text only)
    messages = data.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if quick_message_ok(message):
            full([message])  # raises on a message the schema refuses


def test_the_quick_message_check_takes_the_common_shapes() -> None:
    call = ToolCall("search", {"q": "x"}, "c1")
    shapes = [
        ChatMessage.from_user("hi"),
        ChatMessage.from_assistant("ok", meta={"usage": {"total_tokens": 3}}, tool_calls=[call]),
        ChatMessage.from_tool("found", call),
        ChatMessage.from_system("be brief"),
    ]
    assert all(quick_message_ok(json.loads(json.dumps(m.to_dict()))) for m in shapes)


def test_what_the_constructors_accept_loads_back() -> None:
    # LedgerEntry takes any dict as a result: a record written through the API must not become unreadable.
    entry = LedgerEntry("c1", "transfer", "done", {"amount": 5}, result={"rows": 3})
    snapshot = tool_pause(ledger={"c1": entry})
    assert AgentSnapshot.from_dict(snapshot.to_dict()).ledger["c1"].result == {"rows": 3}
