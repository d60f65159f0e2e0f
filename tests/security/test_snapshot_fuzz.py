"""Damaged snapshots of every shape: each one loads, or is refused with handrail's documented error.

Hypothesis starts from valid snapshots (a paused tool step with ledger entries, decisions and typed State values)
and damages them: a value anywhere replaced by one of another type, a key removed or added, the file's text cut
or a byte changed. Whatever comes out, ``AgentSnapshot.from_dict``, ``decode_snapshot`` / ``load_snapshot``, a
store's ``load`` and ``list_pending`` either give a snapshot the approval helpers can use, or raise
``SnapshotError`` (``CorruptRecordError`` from a database store); never another exception. The CLI on such files
exits 0 or 2 and never prints a traceback. Runs are derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

import contextlib
import copy
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.cli import main
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot, decode_snapshot, encode_snapshot, load_snapshot
from handrail.errors import CorruptRecordError, HandrailError, SnapshotError
from handrail.human_in_the_loop.snapshots import awaiting_decision, get_tool_calls_and_descriptions_from_snapshot
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
from handrail.testing.store_suites.snapshots import make_paused_snapshot

FUZZ = settings(max_examples=120, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip

Path_ = tuple[str | int, ...]


def _bases() -> list[dict[str, Any]]:
    decided = make_paused_snapshot(
        tool_execution_decisions=[ToolExecutionDecision("transfer", True, "c1", decided_by="ana")],
        metadata={"agent_file": "/abs/agent.yaml", "run": {"new_from": 1, "chat_message_store_kwargs": None}},
    )
    call = ToolCall("lookup", {"q": "rent"}, "c3")
    answered = make_paused_snapshot(
        messages=[
            ChatMessage.from_user("Rent?", name="ann"),
            ChatMessage.from_assistant("Looking.", meta={"usage": {"total_tokens": 3}}, tool_calls=[call]),
            ChatMessage.from_tool("found", call),
        ],
        position="chat_generator",
    )
    return [make_paused_snapshot().to_dict(), decided.to_dict(), answered.to_dict()]


BASES = _bases()


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every place in a JSON value (the value itself included)."""
    yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _paths(child, (*prefix, key))


PATHS = [sorted(set(_paths(base)) - {()}, key=repr) for base in BASES]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "c1", "transfer", "paused", "tool_invoker", "2025-01-02T03:04:05+00:00", "$type"]),
    st.text(max_size=8),
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)


def _parent(data: Any, path: Path_) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


@st.composite
def damaged(draw: st.DrawFn) -> dict[str, Any]:
    """A valid snapshot dict with one to three places damaged."""
    which = draw(st.integers(0, len(BASES) - 1))
    data = copy.deepcopy(BASES[which])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS[which]))
        try:
            parent = _parent(data, path)
            parent[path[-1]]  # the place may be gone after an earlier damage
        except (KeyError, IndexError, TypeError):
            continue
        action = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "remove" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "remove":
            parent.pop(path[-1])
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(st.text(max_size=6))] = draw(json_values)
        elif isinstance(parent[path[-1]], list):
            parent[path[-1]].append(draw(json_values))
    return data


def use(snapshot: AgentSnapshot) -> None:
    """What the approval commands do with a loaded snapshot: each step works or raises a handrail error."""
    repr(snapshot)
    for step in (
        lambda: awaiting_decision(snapshot),
        lambda: get_tool_calls_and_descriptions_from_snapshot(snapshot, breakpoint_tool_only=False),
        lambda: encode_snapshot(snapshot),
        lambda: [(c.id or "") in snapshot.ledger for c in snapshot.pending_tool_calls],
    ):
        with contextlib.suppress(HandrailError):
            step()


@FUZZ
@given(data=damaged())
def test_from_dict_loads_or_raises_a_snapshot_error(data: dict[str, Any]) -> None:
    try:
        snapshot = AgentSnapshot.from_dict(data)
    except SnapshotError as exc:
        assert "\n" not in str(exc)
        return
    use(snapshot)


@FUZZ
@given(data=damaged())
def test_a_damaged_file_loads_or_raises_a_snapshot_error(tmp_path: Path, data: dict[str, Any]) -> None:
    target = tmp_path / "damaged.json"
    target.write_text(json.dumps(data), encoding="utf-8")
    try:
        snapshot = load_snapshot(target)
    except SnapshotError as exc:
        assert str(target) in str(exc)
        return
    use(snapshot)


@FUZZ
@given(base=st.sampled_from(BASES), cut=st.floats(0, 1), flip=st.integers(0, 2**31), byte=st.integers(0, 255))
def test_cut_or_changed_bytes_load_or_raise_a_snapshot_error(base: dict[str, Any], cut: float, flip: int,
                                                            byte: int) -> None:  # fmt: skip
    data = bytearray(json.dumps(base).encode("utf-8"))
    data[flip % len(data)] = byte
    for text in (bytes(data), bytes(data[: int(len(data) * cut)])):
        with contextlib.suppress(SnapshotError):
            use(decode_snapshot(text, source="s.json"))


@settings(FUZZ, max_examples=30)
@given(data=damaged())
def test_stores_list_the_good_records_and_refuse_the_damaged_one(tmp_path: Path, data: dict[str, Any]) -> None:
    good = make_paused_snapshot()
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    for store in (FileSnapshotStore(folder / "dir"), SQLiteSnapshotStore(folder / "s.db")):
        skipped: list[str] = []
        store.on_error = lambda snapshot_id, exc, seen=skipped: seen.append(snapshot_id)
        good_id, bad_id = store.save(good), store.save(good)
        with store._scope(bad_id) as handle:
            store._update(handle, bad_id, good, json.dumps(data).encode("utf-8"))
        try:
            use(store.load(bad_id))
            readable = True
        except (SnapshotError, CorruptRecordError) as exc:
            assert bad_id in str(exc)
            readable = False
        listed = {p.snapshot_id for p in store.list_pending()}
        assert good_id in listed and skipped == ([] if readable else [bad_id])
        store.close()


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


@settings(FUZZ, max_examples=15)
@given(data=damaged())
def test_the_cli_on_a_damaged_file_never_prints_a_traceback(
    tmp_path: Path, runner: CliRunner, data: dict[str, Any]
) -> None:
    folder = tmp_path / "snaps"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    (folder / "bad.json").write_text(json.dumps(data), encoding="utf-8")
    for args in (["approvals", "list"], ["approvals", "list", "--json"], ["approvals", "show", "bad"],
                 ["approvals", "show", "bad", "--json"], ["approvals", "approve", "bad", "--call", "c1"]):  # fmt: skip
        result = runner.invoke(main, [*args, "--dir", str(folder)])
        assert result.exit_code in (0, 2), (args, result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
        assert "Traceback" not in result.output, (args, result.output)
