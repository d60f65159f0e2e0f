from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import handrail.dataclasses as dc
from handrail.dataclasses import (
    AgentBreakpoint,
    AgentSnapshot,
    Breakpoint,
    ChatMessage,
    LedgerEntry,
    ToolBreakpoint,
    ToolCall,
    load_snapshot,
)
from handrail.dataclasses import _message_json as message_json_module
from handrail.dataclasses import snapshot as snapshot_module
from handrail.dataclasses.decisions import ToolExecutionDecision, decided_by_problem
from handrail.dataclasses.snapshot import (
    SNAPSHOT_SCHEMA_VERSION,
    MessageCache,
    decode_snapshot,
    encode_snapshot,
    snapshot_file_name,
    write_snapshot,
)
from handrail.errors import ConfigurationError, SerializationError, SnapshotError
from tests.core.test_typed_json import Color, Point, assert_same, assert_same_deep, typed_values
from tests.dataclasses._strategies import argument_dicts, call_ids, json_values, texts

FIXTURE = Path(__file__).parent.parent / "fixtures" / "snapshots" / "v1_tool_pause.json"
NOW = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def tool_pause(**changes: Any) -> AgentSnapshot:
    c1 = ToolCall("transfer", {"amount": 5}, "c1")
    c2 = ToolCall("transfer", {"amount": 900}, "c2")
    snap = AgentSnapshot(
        messages=[
            ChatMessage.from_user("Pay 5 and 900 — città 🍎"),
            ChatMessage.from_assistant("On it.", meta={"usage": {"total_tokens": 9}}, tool_calls=[c1, c2]),
        ],
        state={"step_count": 1, "exit_reason": None, "since": NOW, "pair": ("a", "b"), "tags": {"x"}},
        component_visits={"chat_generator": 1, "tool_invoker": 0},
        break_point=AgentBreakpoint("bank", ToolBreakpoint(tool_name="transfer")),
        position="tool_invoker",
        tool_visits={"transfer": 0},
        tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c2", decided_by="ana")],
        ledger={
            "c1": LedgerEntry("c1", "transfer", "done", {"amount": 5}, {"text": "ok", "error": False}, updated_at=NOW),
            "c2": LedgerEntry("c2", "transfer", "pending", {"amount": 900}, updated_at=NOW),
        },
        fingerprint={"tools": {"transfer": {"description": "Move money.", "parameters": {"type": "object"}}}},
        metadata={"agent_file": "/a/agent.yaml"},
        timestamp=NOW,
    )
    return dataclasses.replace(snap, **changes)


def reference_json(message: ChatMessage) -> bytes:
    return json.dumps(message.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def test_exports() -> None:
    for name in ("AgentSnapshot", "LedgerEntry", "load_snapshot"):
        assert getattr(dc, name) is getattr(snapshot_module, name)
    for name in snapshot_module.__all__:
        assert hasattr(snapshot_module, name)


# ---- the dataclass ---------------------------------------------------------------------------------------


def test_defaults() -> None:
    snap = AgentSnapshot([], {}, {}, AgentBreakpoint("", Breakpoint()), "chat_generator")
    assert (snap.tool_visits, snap.tool_execution_decisions, snap.ledger, snap.fingerprint, snap.metadata) == (
        {},
        [],
        {},
        {},
        {},
    )
    assert (snap.status, snap.continued_in, snap.outcome, snap.location) == ("paused", None, None, None)
    assert snap.schema_version == SNAPSHOT_SCHEMA_VERSION == 1
    assert snap.timestamp.tzinfo is not None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"position": "router"}, "position"),
        ({"status": "sleeping"}, "status"),
        ({"break_point": Breakpoint()}, "break_point"),
    ],
)
def test_invalid_fields_are_refused(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        tool_pause(**changes)


def test_pending_tool_calls_and_step_count() -> None:
    snap = tool_pause()
    assert [c.id for c in snap.pending_tool_calls] == ["c1", "c2"]
    assert snap.step_count == 1
    assert tool_pause(position="chat_generator").pending_tool_calls == []
    assert tool_pause(messages=[]).pending_tool_calls == []
    assert tool_pause(state={}).step_count == 0


def test_location_is_kept_by_replace_but_never_compared_or_written() -> None:
    snap = tool_pause(location="/d/bank_tool_invoker_0_x.json")
    moved = dataclasses.replace(snap, status="done")
    assert moved.location == "/d/bank_tool_invoker_0_x.json"
    assert moved.snapshot_id == "bank_tool_invoker_0_x"
    assert snap == tool_pause()
    assert "location" not in snap.to_dict()
    assert "/d/" not in encode_snapshot(snap).decode()
    assert tool_pause().snapshot_id is None
    assert tool_pause(location=Path("/d/y.json")).location == "/d/y.json"


def test_repr_is_short() -> None:
    text = repr(tool_pause(messages=[ChatMessage.from_user("x" * 10_000)] * 50))
    assert len(text) < 300
    assert "messages=50" in text


# ---- encoding --------------------------------------------------------------------------------------------


def test_to_dict_is_the_json_of_the_file() -> None:
    snap = tool_pause()
    data = snap.to_dict()
    assert json.loads(encode_snapshot(snap)) == data
    assert next(iter(data)) == "schema_version"
    assert list(data)[-1] == "messages"
    assert data["messages"] == [m.to_dict() for m in snap.messages]
    assert data["state"]["pair"] == {"$type": "tuple", "items": ["a", "b"]}
    assert data["ledger"]["c1"]["status"] == "done"
    assert data["tool_execution_decisions"] == [snap.tool_execution_decisions[0].to_dict()]


def test_to_dict_shares_nothing_with_the_snapshot() -> None:
    snap = tool_pause()
    data = snap.to_dict()
    data["fingerprint"]["tools"].clear()
    data["messages"][1]["meta"]["usage"]["total_tokens"] = 0
    assert snap.fingerprint["tools"]
    assert snap.messages[1].meta["usage"]["total_tokens"] == 9


def test_the_file_is_compact_utf8_without_a_trailing_newline() -> None:
    data = encode_snapshot(tool_pause())
    assert "città 🍎".encode() in data
    assert not data.endswith(b"\n")
    assert b'": ' not in data


MESSAGES = [
    ChatMessage.from_user("plain"),
    ChatMessage.from_user(""),
    ChatMessage.from_system("sys", meta={"a": 1}, name="ops"),
    ChatMessage.from_user('quotes " \\ \n\t \u2028 \x00 città 🍎', name="ana"),
    ChatMessage.from_assistant(),
    ChatMessage.from_assistant(""),
    ChatMessage.from_assistant("text", meta={"nested": {"x": [1, 2.5, None, True]}}),
    ChatMessage.from_assistant(
        "both",
        tool_calls=[ToolCall("a", {"k": "v"}, "c1", extra={"index": 0}), ToolCall("b", "not json {", None)],
    ),
    ChatMessage.from_tool("result", ToolCall("a", {}, "c1")),
    ChatMessage.from_tool("bad", ToolCall("a", {}, "c1"), error=True, meta={"ms": 3}),
    ChatMessage.from_assistant(tool_calls=[ToolCall("a", {"big": 2**70, "f": -0.0, "e": 1e300}, "c")]),
]


@pytest.mark.parametrize("message", MESSAGES)
def test_each_message_is_exactly_the_json_of_its_to_dict(message: ChatMessage) -> None:
    assert MessageCache().encode(message) == reference_json(message)


def test_unusual_messages_take_the_plain_json_path() -> None:
    odd = ChatMessage.from_user("x")
    odd.meta = None  # type: ignore[assignment]
    weird_error = ChatMessage.from_tool("r", ToolCall("a", {}, "c"))
    weird_error._content[0].error = 1  # type: ignore[union-attr]
    tool_role_text = ChatMessage(dc.ChatRole.TOOL, [dc.TextContent("t")])
    unusual = [odd, weird_error, tool_role_text]
    for message in unusual:
        assert MessageCache().encode(message) == reference_json(message)
    cache = MessageCache()
    history = [ChatMessage.from_user("usual"), *unusual]
    assert cache.encode_all(history) == [reference_json(m) for m in history]
    assert cache.encode_all(history) == [reference_json(m) for m in history]
    assert len(cache) == 4


tool_calls = st.builds(
    ToolCall,
    tool_name=texts,
    arguments=st.one_of(argument_dicts, texts),
    id=st.one_of(st.none(), call_ids),
    extra=st.one_of(st.none(), argument_dicts),
)
metas = st.dictionaries(texts, json_values, max_size=3)
messages = st.one_of(
    st.builds(ChatMessage.from_user, texts, metas, st.one_of(st.none(), texts)),
    st.builds(ChatMessage.from_system, texts, metas),
    st.builds(
        ChatMessage.from_assistant, st.one_of(st.none(), texts), metas, st.none(), st.lists(tool_calls, max_size=3)
    ),
    st.builds(ChatMessage.from_tool, texts, tool_calls, st.booleans(), metas),
)


@given(st.lists(messages, max_size=6))
def test_property_cached_message_json_is_exactly_the_json_of_to_dict(history: list[ChatMessage]) -> None:
    cache = MessageCache()
    assert cache.encode_all(history) == [reference_json(m) for m in history]
    assert cache.encode_all(history) == [reference_json(m) for m in history]


def test_the_cache_encodes_only_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[ChatMessage] = []
    real = message_json_module.assembled_json

    def counting(message: ChatMessage, memo: Any) -> str:
        encoded.append(message)
        return real(message, memo)

    monkeypatch.setattr(message_json_module, "assembled_json", counting)
    cache = MessageCache()
    snap = tool_pause()
    first = encode_snapshot(snap, cache)
    assert len(encoded) == 2
    more = dataclasses.replace(snap, messages=[*snap.messages, ChatMessage.from_user("next")])
    second = encode_snapshot(more, cache)
    assert len(encoded) == 3
    assert encoded[-1] is more.messages[-1]
    assert len(cache) == 3
    assert json.loads(second)["messages"][:2] == json.loads(first)["messages"]
    assert json.loads(second) == more.to_dict()  # every file stays self-contained
    cache.clear()
    assert len(cache) == 0


def test_the_cache_holds_its_messages_so_their_ids_are_never_reused() -> None:
    cache = MessageCache()
    for i in range(300):
        message = ChatMessage.from_user(f"message {i}")  # each one is dropped by the caller right away
        assert cache.encode(message) == reference_json(message)
    assert len(cache) == 300


def test_a_bad_message_after_cached_ones_is_named_by_its_place() -> None:
    cache = MessageCache()
    history = [ChatMessage.from_user("a"), ChatMessage.from_user("b")]
    cache.encode_all(history)
    bad = ChatMessage.from_user("c", meta={"s": {1}})
    with pytest.raises(SerializationError, match=r"^messages\[2\]\['meta'\]\['s'\]: a set"):
        cache.encode_all([*history, bad])
    assert len(cache) == 2


def test_a_tool_call_shared_by_two_messages_is_written_identically() -> None:
    call = ToolCall("t", {"a": [1, 2]}, "c1")
    history = [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_tool("ok", call)]
    assert MessageCache().encode_all(history) == [reference_json(m) for m in history]


def test_a_message_with_a_non_json_meta_is_named() -> None:
    bad = ChatMessage.from_user("hi", meta={"when": dt.date(2020, 1, 1)})
    snap = tool_pause(messages=[ChatMessage.from_user("ok"), bad])
    with pytest.raises(SerializationError, match=r"^messages\[1\]\['meta'\]\['when'\]: a datetime\.date"):
        encode_snapshot(snap)
    with pytest.raises(SerializationError, match=r"^message\['meta'\]\['when'\]"):
        MessageCache().encode(bad)


def test_nan_in_meta_is_refused() -> None:
    snap = tool_pause(messages=[ChatMessage.from_assistant("x", meta={"score": float("nan")})])
    with pytest.raises(SerializationError, match=r"^messages\[0\]\['meta'\]\['score'\]: nan"):
        encode_snapshot(snap)


def test_a_lone_surrogate_is_named() -> None:
    snap = tool_pause(messages=[ChatMessage.from_user("ok"), ChatMessage.from_user("bad \ud800")])
    with pytest.raises(SerializationError, match=r"^messages\[1\]\['content'\]\[0\]\['text'\]: the text holds a lone"):
        encode_snapshot(snap)
    with pytest.raises(SerializationError, match=r"^metadata\['k'\]: the text holds a lone surrogate '\\udfff'"):
        encode_snapshot(tool_pause(metadata={"k": "\udfff"}))


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"metadata": {"f": float("inf")}}, r"^metadata\['f'\]: inf"),
        ({"fingerprint": {"tools": {1, 2}}}, r"^fingerprint\['tools'\]: a set is not JSON data"),
        ({"outcome": {"when": NOW}}, r"^outcome\['when'\]: a datetime\.datetime"),
        ({"component_visits": {"chat_generator": object()}}, r"^component_visits\['chat_generator'\]: an object"),
    ],
)
def test_non_json_header_values_are_named(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(SerializationError, match=expected):
        encode_snapshot(tool_pause(**changes))


def test_a_ledger_entry_changed_after_creation_is_still_checked() -> None:
    snap = tool_pause()
    snap.ledger["c1"].result = {"value": {1, 2}}
    with pytest.raises(SerializationError, match=r"^ledger\['c1'\]\['result'\]\['value'\]: a set"):
        encode_snapshot(snap)


def test_an_unserializable_state_value_is_named_before_any_file_exists(tmp_path: Path) -> None:
    snap = tool_pause(state={"step_count": 1, "lock": threading.Lock()})
    target = tmp_path / "snaps" / "s.json"
    with pytest.raises(SerializationError, match=r"^state\['lock'\]: a _thread\.lock cannot be written to a snapshot"):
        write_snapshot(snap, target)
    assert not (tmp_path / "snaps").exists()


# ---- writing and loading ---------------------------------------------------------------------------------


def test_write_then_load(tmp_path: Path) -> None:
    snap = tool_pause()
    target = tmp_path / "approvals" / "s.json"
    written = write_snapshot(snap, target)
    assert written is not snap
    assert written.location == str(target)
    assert snap.location is None
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) & 0o077 == 0
    loaded = load_snapshot(target)
    assert loaded == snap
    assert loaded.location == str(target)
    assert loaded.snapshot_id == "s"
    assert_same(loaded.state["pair"], ("a", "b"))
    assert_same(loaded.state["since"], NOW)
    assert type(loaded.state["tags"]) is set
    assert type(loaded.break_point.break_point) is ToolBreakpoint


def test_load_sets_an_absolute_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_snapshot(tool_pause(), tmp_path / "s.json")
    monkeypatch.chdir(tmp_path)
    assert load_snapshot("s.json").location == str(tmp_path / "s.json")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope.json"))):
        load_snapshot(tmp_path / "nope.json")


def test_rewriting_keeps_one_file(tmp_path: Path) -> None:
    cache = MessageCache()
    target = tmp_path / "s.json"
    write_snapshot(tool_pause(), target, cache)
    write_snapshot(tool_pause(status="done", outcome={"exit_reason": "text"}), target, cache)
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]
    assert load_snapshot(target).outcome == {"exit_reason": "text"}


def test_a_truncated_file_never_loads_at_any_cut(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    write_snapshot(tool_pause(), target)
    data = target.read_bytes()
    for cut in range(len(data)):
        with pytest.raises(SnapshotError, match="is truncated or not valid JSON"):
            decode_snapshot(data[:cut], source="s.json")
    assert decode_snapshot(data, source="s.json") == tool_pause()


def test_a_truncated_file_is_named_on_load(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    write_snapshot(tool_pause(), target)
    target.write_bytes(target.read_bytes()[:-10])
    with pytest.raises(SnapshotError, match=f"^Snapshot file {re.escape(str(target))} is truncated or not valid JSON"):
        load_snapshot(target)


@pytest.mark.parametrize("text", [b"NaN", b'{"schema_version": 1, "x": Infinity}', b"\xff\xfe\x00", b""])
def test_non_standard_or_binary_content_is_refused(text: bytes) -> None:
    with pytest.raises(SnapshotError, match="truncated or not valid JSON"):
        decode_snapshot(text, source="f")


# ---- from_dict: versions, keys, allowlist ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (2, "Snapshot schema version 2 was written by a newer handrail"),
        (0, "Snapshot schema version 0 is unknown"),
        ("1", r"Snapshot schema_version: expected an integer"),
        (True, r"Snapshot schema_version: expected an integer"),
    ],
)
def test_unknown_versions_are_refused(version: Any, expected: str) -> None:
    data = tool_pause().to_dict()
    data["schema_version"] = version
    with pytest.raises(SnapshotError, match=expected):
        AgentSnapshot.from_dict(data)
    with pytest.raises(SnapshotError, match=f"^Snapshot file f.json: {expected}"):
        decode_snapshot(json.dumps(data).encode(), source="f.json")


def test_a_dict_without_a_version_is_not_a_snapshot() -> None:
    data = tool_pause().to_dict()
    del data["schema_version"]
    with pytest.raises(SnapshotError, match="'schema_version' is missing"):
        AgentSnapshot.from_dict(data)
    with pytest.raises(SnapshotError, match="must be a JSON object"):
        AgentSnapshot.from_dict([1])  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["messages", "state", "component_visits", "break_point", "position"])
def test_missing_required_keys_are_named(key: str) -> None:
    data = tool_pause().to_dict()
    del data[key]
    with pytest.raises(SnapshotError, match=f"Snapshot keys \\['{key}'\\] are missing"):
        AgentSnapshot.from_dict(data)


def test_optional_keys_take_their_defaults() -> None:
    data = {
        k: v
        for k, v in tool_pause().to_dict().items()
        if k in ("schema_version", "messages", "state", "component_visits", "break_point", "position")
    }
    snap = AgentSnapshot.from_dict(data)
    assert (snap.ledger, snap.status, snap.tool_execution_decisions) == ({}, "paused", [])


def test_unknown_keys_are_refused() -> None:
    data = tool_pause().to_dict()
    data["location"] = "/x"
    with pytest.raises(SnapshotError, match=r"Snapshot keys \['location'\] are unknown"):
        AgentSnapshot.from_dict(data)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("messages", {}, r"^Snapshot messages: expected a list, got an object\.$"),
        ("messages", [1], r"^Snapshot messages\[0\]: expected an object, got an integer \(1\)\.$"),
        ("messages", [{"role": "robot", "content": []}], r"^Snapshot messages\[0\]\.role: expected one of \["),
        ("messages", [{"role": "user"}], r"^Snapshot messages\[0\]: the key 'content' is missing\.$"),
        ("state", [], r"^Snapshot state: expected an object, got a list\.$"),
        ("state", {"k": {"$type": "nope"}}, r"state\['k'\]: unknown \$type tag 'nope'"),
        ("component_visits", {"chat_generator": -1}, r"component_visits\['chat_generator'\]: expected an integer >= 0"),
        ("tool_visits", {"t": True}, r"^Snapshot tool_visits\['t'\]: expected an integer >= 0, got a boolean\.$"),
        ("break_point", {"agent_name": "a"}, r"^Snapshot break_point: the key 'break_point' is missing\.$"),
        ("position", "router", r"^Snapshot position: expected one of \['chat_generator', 'tool_invoker'\]"),
        ("status", "gone", r"^Snapshot status: expected one of"),
        ("tool_execution_decisions", [{"tool_name": "t"}], r"decisions\[0\]: the key 'execute' is missing"),
        ("tool_execution_decisions", [5], r"^Snapshot tool_execution_decisions\[0\]: expected an object"),
        ("tool_execution_decisions", {}, r"^Snapshot tool_execution_decisions: expected a list"),
        ("ledger", [], r"^Snapshot ledger: expected an object"),
        ("ledger", {"c1": {"tool_call_id": "c1"}}, r"^Snapshot ledger\['c1'\]: the key 'tool_name' is missing"),
        (
            "ledger",
            {"c1": {"tool_call_id": "c1", "tool_name": "t", "status": "lost", "arguments": {}}},
            r"^Snapshot ledger\['c1'\]\.status: expected one of \['pending'",
        ),
        ("fingerprint", None, r"^Snapshot fingerprint: expected an object, got null\.$"),
        ("metadata", [], r"^Snapshot metadata: expected an object, got a list\.$"),
        ("outcome", "done", r"^Snapshot outcome: expected an object or null, got a string \('done'\)\.$"),
        ("continued_in", 5, r"^Snapshot continued_in: expected a string or null, got an integer \(5\)\.$"),
        ("timestamp", "noon", r"^Snapshot timestamp: expected an ISO 8601 datetime string, got a string"),
    ],
)
def test_bad_values_are_named_by_key(key: str, value: Any, expected: str) -> None:
    data = tool_pause().to_dict()
    data[key] = value
    with pytest.raises(SnapshotError, match=expected):
        AgentSnapshot.from_dict(data)


def test_a_ledger_entry_filed_under_another_id_is_refused() -> None:
    data = tool_pause().to_dict()
    data["ledger"]["c9"] = data["ledger"].pop("c1")
    with pytest.raises(SnapshotError, match=r"Snapshot ledger\['c9'\]: the entry is for the call 'c1'"):
        AgentSnapshot.from_dict(data)


def test_from_dict_neither_modifies_nor_shares_its_input() -> None:
    data = tool_pause().to_dict()
    before = copy.deepcopy(data)
    snap = AgentSnapshot.from_dict(data)
    assert data == before
    snap.messages[1].meta["usage"]["total_tokens"] = 0
    snap.ledger["c1"].arguments["amount"] = 0
    snap.fingerprint["tools"].clear()
    assert data == before


def test_classes_in_state_need_the_allowlist(tmp_path: Path) -> None:
    snap = tool_pause(state={"color": Color.RED, "point": Point(1, 2)})
    target = tmp_path / "s.json"
    write_snapshot(snap, target)
    with pytest.raises(SnapshotError, match=r"^Snapshot file .*: state\['color'\]: Refusing to import"):
        load_snapshot(target)
    loaded = load_snapshot(target, allowed_modules=["tests.core"])
    assert loaded.state == {"color": Color.RED, "point": Point(1, 2)}
    with pytest.raises(SnapshotError, match="Refusing to import"):
        AgentSnapshot.from_dict(snap.to_dict())
    assert AgentSnapshot.from_dict(snap.to_dict(), allowed_modules=("tests",)) == snap


# ---- the property ----------------------------------------------------------------------------------------

datetimes = st.datetimes(timezones=st.just(dt.UTC))
decisions = st.builds(
    ToolExecutionDecision,
    tool_name=texts,
    execute=st.booleans(),
    tool_call_id=st.one_of(st.none(), texts.filter(bool)),  # an empty id is refused
    feedback=st.one_of(st.none(), texts),
    final_tool_params=st.one_of(st.none(), argument_dicts),
    decided_by=st.one_of(st.none(), texts.filter(lambda t: decided_by_problem(t) is None)),  # others are refused
)
ledger_entries = st.builds(
    LedgerEntry,
    tool_call_id=st.just("placeholder"),
    tool_name=texts,
    status=st.sampled_from(["pending", "approved", "rejected", "running", "done", "failed"]),
    arguments=argument_dicts,
    result=st.one_of(st.none(), st.fixed_dictionaries({"text": st.one_of(st.none(), texts), "error": st.booleans()})),
    decision=st.one_of(st.none(), decisions),
    decided_by=st.one_of(st.none(), texts.filter(lambda t: decided_by_problem(t) is None)),
    decided_at=st.one_of(st.none(), datetimes),
    updated_at=datetimes,
)
ledgers = st.dictionaries(texts, ledger_entries, max_size=3).map(
    lambda entries: {k: dataclasses.replace(v, tool_call_id=k) for k, v in entries.items()}
)
snapshots = st.builds(
    AgentSnapshot,
    messages=st.lists(messages, max_size=5),
    state=st.dictionaries(texts, typed_values, max_size=4),
    component_visits=st.dictionaries(st.sampled_from(["chat_generator", "tool_invoker"]), st.integers(0, 10**6)),
    break_point=st.builds(
        AgentBreakpoint,
        texts,
        st.one_of(
            st.builds(
                Breakpoint,
                visit_count=st.integers(0, 9),
                snapshot_file_path=st.one_of(st.none(), texts.filter(lambda t: bool(t.strip()))),
            ),
            st.builds(ToolBreakpoint, tool_name=st.one_of(st.none(), texts), visit_count=st.integers(0, 9)),
        ),
    ),
    position=st.sampled_from(["chat_generator", "tool_invoker"]),
    tool_visits=st.dictionaries(texts, st.integers(0, 99), max_size=3),
    tool_execution_decisions=st.lists(decisions, max_size=3),
    ledger=ledgers,
    fingerprint=st.dictionaries(texts, json_values, max_size=3),
    metadata=st.dictionaries(texts, json_values, max_size=3),
    status=st.sampled_from(["paused", "running", "done", "resumed"]),
    continued_in=st.one_of(st.none(), texts),
    outcome=st.one_of(st.none(), st.dictionaries(texts, json_values, max_size=2)),
    timestamp=datetimes,
)


@given(snapshots)
def test_property_snapshots_round_trip_through_the_file_format(snap: AgentSnapshot) -> None:
    back = decode_snapshot(encode_snapshot(snap, MessageCache()), source="mem", allowed_modules=("tests",))
    again = AgentSnapshot.from_dict(snap.to_dict(), allowed_modules=("tests",))
    for other in (back, again):
        assert dataclasses.replace(other, state={}) == dataclasses.replace(snap, state={})  # state may hold NaN
        assert list(other.state) == list(snap.state)
        for key, value in snap.state.items():
            assert_same_deep(other.state[key], value)


# ---- file names ------------------------------------------------------------------------------------------


def test_snapshot_file_names() -> None:
    name = snapshot_file_name(AgentBreakpoint("bank", ToolBreakpoint(tool_name="t")), 3)
    assert re.fullmatch(r"bank_tool_invoker_3_\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}_[0-9a-f]{8}\.json", name)
    bare = snapshot_file_name(AgentBreakpoint("", Breakpoint()), 0)
    assert re.fullmatch(r"chat_generator_0_\d{4}(_\d{2}){5}_[0-9a-f]{8}\.json", bare)


def test_snapshot_file_names_are_unique_within_a_second() -> None:
    bp = AgentBreakpoint("a", Breakpoint())
    assert len({snapshot_file_name(bp, 0) for _ in range(500)}) == 500


def test_agent_names_cannot_leave_the_directory() -> None:
    name = snapshot_file_name(AgentBreakpoint("../../etc/pass wd", Breakpoint()), 0)
    assert "/" not in name
    assert not name.startswith(".")
    assert name.startswith("_.._etc_pass_wd_chat_generator_0_")
    assert os.path.basename(name) == name


# ---- the frozen fixture of schema version 1 --------------------------------------------------------------


def test_the_v1_fixture_keeps_loading() -> None:
    snap = load_snapshot(FIXTURE)
    assert snap.schema_version == 1
    assert snap.location == str(FIXTURE.resolve()) or snap.location == os.path.abspath(FIXTURE)
    assert snap.snapshot_id == "v1_tool_pause"
    assert (snap.status, snap.position) == ("paused", "tool_invoker")
    assert snap.timestamp == dt.datetime(2025, 3, 14, 10, 0, 3, tzinfo=dt.UTC)
    assert snap.break_point == AgentBreakpoint(
        "payments", ToolBreakpoint(tool_name="transfer", snapshot_file_path="/var/lib/handrail/approvals")
    )
    assert snap.component_visits == {"chat_generator": 1, "tool_invoker": 0}
    assert [m.role.value for m in snap.messages] == ["system", "user", "assistant"]
    assert snap.messages[1].text == "Pay the plumber 40 and move 2500 to savings — grazie!"
    assert [(c.id, c.tool_name, c.arguments) for c in snap.pending_tool_calls] == [
        ("c1", "transfer", {"amount": 40}),
        ("c2", "transfer", {"amount": 2500}),
    ]
    assert_same(snap.state["session_started"], dt.datetime(2025, 3, 14, 9, 59, 58, 250000, tzinfo=dt.UTC))
    assert_same(snap.state["accounts"], ("checking", "savings"))
    assert snap.step_count == 0
    assert {k: e.status for k, e in snap.ledger.items()} == {"c1": "done", "c2": "pending"}
    assert snap.ledger["c1"].result == {"text": "Transferred 40 from checking.", "error": False}
    assert snap.ledger["c1"].decision == ToolExecutionDecision("transfer", True, "c1", decided_by="policy")
    assert snap.ledger["c1"].decided_at == dt.datetime(2025, 3, 14, 10, 0, 1, tzinfo=dt.UTC)
    assert snap.tool_execution_decisions == []
    assert snap.fingerprint["tools"]["transfer"]["parameters"]["required"] == ["amount"]
    assert snap.metadata == {"agent_file": "/home/ana/agents/payments.yaml"}


def test_the_v1_fixture_survives_a_rewrite_unchanged(tmp_path: Path) -> None:
    snap = load_snapshot(FIXTURE)
    copy_path = tmp_path / "copy.json"
    write_snapshot(snap, copy_path)
    assert json.loads(copy_path.read_bytes()) == json.loads(FIXTURE.read_bytes())


def test_a_key_given_twice_in_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    write_snapshot(tool_pause(), target)
    text = target.read_text(encoding="utf-8")
    doubled = text.replace('"status":"paused"', '"status":"paused","status":"done"', 1)
    assert doubled != text
    with pytest.raises(SnapshotError, match="status"):
        decode_snapshot(doubled.encode(), source="s.json")
