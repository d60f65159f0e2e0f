"""A step of many calls shares its durable writes (group commit) without weakening the ledger rule.

The rule: a call is ``running`` in the store before it starts, and its result is in the store
before the next model call. Resuming a step of n approved calls used to rewrite the whole record twice per call
(2n writes, each encoding every entry: quadratic); the writes of calls that start or end together are now one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from handrail.dataclasses import ChatMessage
from handrail.dataclasses.snapshot import LedgerEntry
from handrail.errors import UnknownOutcomeError
from handrail.stores import open_snapshot_store
from handrail.testing import ScriptedChatGenerator
from handrail.tools import ToolCallId
from tests.components.agents import batch_worker as worker
from tests.components.agents.durable_worker import wait_for

N = 40
DONE = ChatMessage.from_assistant("done")


@pytest.fixture(params=["directory", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return str(tmp_path / "snaps") if request.param == "directory" else f"sqlite:///{tmp_path / 'snaps.db'}"


def _resume(store: Any, snapshot_id: str, mode: str, **kwargs: Any) -> dict[str, Any]:
    tool = kwargs.pop("tool", worker.tick if mode == "sync" else _atick)
    agent = worker.agent(store, [DONE], generator=kwargs.pop("generator", None), tool=tool)
    snapshot = store.load(snapshot_id)
    if mode == "sync":
        return agent.run([], snapshot=snapshot, **kwargs)
    return asyncio.run(agent.run_async([], snapshot=snapshot, **kwargs))


async def _atick(i: int, key: ToolCallId) -> str:
    """Tick.

    Args:
        i: Which tick.
    """
    return f"tick {i}"


def _statuses(store: Any, snapshot_id: str) -> dict[str, str]:
    return {call_id: entry.status for call_id, entry in store.load(snapshot_id).ledger.items()}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_call_is_running_in_the_store_when_it_starts(store_url: str, mode: str) -> None:
    store = open_snapshot_store(store_url)
    snapshot_id = worker.paused_and_approved(store, N)
    seen: dict[str, str] = {}
    reader = open_snapshot_store(store_url)  # another store object: it reads what is written, not memory

    def tick(i: int, key: ToolCallId) -> str:
        """Tick.

        Args:
            i: Which tick.
        """
        seen[key] = reader.load(snapshot_id).ledger[key].status
        return f"tick {i}"

    async def atick(i: int, key: ToolCallId) -> str:
        """Tick.

        Args:
            i: Which tick.
        """
        return tick(i, key)

    result = _resume(store, snapshot_id, mode, tool=tick if mode == "sync" else atick)
    assert result["last_message"].text == "done"
    assert seen == {f"c{i}": "running" for i in range(N)}


class _CheckingGenerator(ScriptedChatGenerator):
    """Before answering, reads the store: every call of the step before must have its result there."""

    def __init__(self, replies: list[ChatMessage], store: Any, snapshot_id: str) -> None:
        super().__init__(replies)
        self.store, self.snapshot_id = store, snapshot_id
        self.seen: list[dict[str, str]] = []

    def run(self, messages: list[ChatMessage], *args: Any, **kwargs: Any) -> dict[str, list[ChatMessage]]:
        self.seen.append(_statuses(self.store, self.snapshot_id))
        return super().run(messages, *args, **kwargs)

    async def run_async(self, messages: list[ChatMessage], *args: Any, **kwargs: Any) -> dict[str, list[ChatMessage]]:
        self.seen.append(_statuses(self.store, self.snapshot_id))
        return await super().run_async(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_result_is_in_the_store_before_the_next_model_call(store_url: str, mode: str) -> None:
    store = open_snapshot_store(store_url)
    snapshot_id = worker.paused_and_approved(store, N)
    generator = _CheckingGenerator([DONE], open_snapshot_store(store_url), snapshot_id)
    result = _resume(store, snapshot_id, mode, generator=generator)
    assert result["last_message"].text == "done"
    assert generator.seen == [{f"c{i}": "done" for i in range(N)}]


class _Counted:
    """Counts the snapshot writes of a store, the bytes they write and the ledger entries encoded meanwhile.

    ``writes``: full rewrites of the record (``replace``); ``appends``: writes of changed entries only
    (``append_entries``); ``full_bytes`` / ``appended_bytes``: what the backend was given to write.
    """

    def __init__(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.writes = self.encoded = self.appends = self.full_bytes = self.appended_bytes = 0
        replace, to_dict = store.replace, LedgerEntry.to_dict
        append, update, insert = store.append_entries, store._update, store._append

        def counted_append(*args: Any, **kwargs: Any) -> None:
            self.appends += 1
            append(*args, **kwargs)

        def counted_update(handle: Any, snapshot_id: str, snapshot: Any, data: bytes) -> bool:
            self.full_bytes += len(data)
            return bool(update(handle, snapshot_id, snapshot, data))

        def counted_insert(handle: Any, snapshot_id: str, changes: list[tuple[str, bytes]]) -> bool:
            self.appended_bytes += sum(len(line) for _, line in changes)
            return bool(insert(handle, snapshot_id, changes))

        monkeypatch.setattr(store, "append_entries", counted_append)
        monkeypatch.setattr(store, "_update", counted_update)
        monkeypatch.setattr(store, "_append", counted_insert)

        def counted_replace(*args: Any, **kwargs: Any) -> None:
            self.writes += 1
            replace(*args, **kwargs)

        def counted_to_dict(entry: LedgerEntry) -> dict[str, Any]:
            self.encoded += 1
            return to_dict(entry)

        monkeypatch.setattr(store, "replace", counted_replace)
        monkeypatch.setattr(LedgerEntry, "to_dict", counted_to_dict)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("n", [16, 64])
def test_the_writes_of_a_step_grow_linearly_with_its_calls(
    store_url: str, mode: str, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_snapshot_store(store_url)
    snapshot_id = worker.paused_and_approved(store, n)
    counted = _Counted(store, monkeypatch)
    result = _resume(store, snapshot_id, mode)
    assert result["last_message"].text == "done"
    assert _statuses(store, snapshot_id) == {f"c{i}": "done" for i in range(n)}
    # One write per call at most (the starts; an outcome rides on a later start's write), plus the last calls'
    # outcomes (up to tool_concurrency_limit = 8) and the run's end; it was two per call (2n + 1).
    writes = counted.writes + counted.appends
    assert writes <= n + 8 + 2, writes
    if mode == "async":  # one task thread: the calls that start together share their write, 8 at a time
        assert writes <= n // 8 + 8 + 2, writes
    # Only the step's first write and the run's end rewrite the whole record; every other write appends the
    # entries that changed, so the bytes written grow linearly with the calls (they grew as n² / 8).
    assert counted.writes <= 2, counted.writes
    assert counted.appended_bytes <= 2 * n * 400, counted.appended_bytes  # two changes per call, < 400 B each
    # Each write encodes only the entries that changed (running, then done) instead of all of them.
    assert counted.encoded <= 3 * n + 8, counted.encoded


# -- kill -9 in the middle of a step ---------------------------------------------------------------


def test_a_step_killed_mid_batch_loses_no_result_and_runs_no_call_twice(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n, stall_from = 30, 12
    store = open_snapshot_store(store_url)
    snapshot_id = worker.paused_and_approved(store, n)
    log = tmp_path / "calls.jsonl"
    process = worker.start(store=store_url, snapshot=snapshot_id, log=log, stall_from=stall_from)
    try:  # the calls from stall_from on hang: the worker is killed with 8 of them running and the rest queued
        wait_for(lambda: len(list(tmp_path.glob("calls.jsonl.stalled-*"))) >= 8, process, "8 stalled calls")
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    ran = [entry["call"] for entry in worker.read_log(log)]
    assert len(ran) == len(set(ran)), ran
    after_kill = _statuses(store, snapshot_id)
    for call_id in ran:  # every call that started was durably running first (or its result is recorded)
        assert after_kill[call_id] in ("running", "done"), (call_id, after_kill[call_id])
    for call_id in set(after_kill) - set(ran):
        assert after_kill[call_id] == "approved", (call_id, after_kill[call_id])
    assert {f"c{i}" for i in range(stall_from)} <= set(ran)
    done_before = {c for c, s in after_kill.items() if s == "done"}
    unknown = {c for c, s in after_kill.items() if s == "running"}
    assert unknown and len(unknown) <= 8, after_kill

    with pytest.raises(UnknownOutcomeError):
        _resume(store, snapshot_id, "sync")
    monkeypatch.setitem(worker.CONFIG, "log", str(log))
    result = _resume(store, snapshot_id, "sync", unknown_outcome="fail")
    assert result["last_message"].text == "done"
    again = [entry["call"] for entry in worker.read_log(log)][len(ran) :]
    assert not set(again) & (done_before | unknown), again  # no recorded result lost, no call run twice
    assert sorted(again) == sorted(set(after_kill) - set(ran))  # the calls that never started run once now
    final = store.load(snapshot_id).ledger
    assert {c for c, e in final.items() if e.status == "failed"} == unknown
    assert all(final[c].status == "done" for c in set(final) - unknown)
    assert json.dumps(store.load(snapshot_id).status) == '"done"'
