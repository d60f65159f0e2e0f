"""GroupCommit: a change is durable only after a write that began after it; concurrent changes share writes."""

from __future__ import annotations

import threading
import time

import pytest

from handrail.components.agents._group_commit import GroupCommit


def test_changes_made_during_a_write_share_the_next_one() -> None:
    record: list[int] = []  # the "store": the changes written so far
    changes: list[int] = []
    lock = threading.Lock()
    in_write = threading.Event()

    def write() -> None:
        with lock:
            snapshot = list(changes)
        in_write.set()
        time.sleep(0.05)
        record[:] = snapshot

    commit = GroupCommit(write)
    seen: dict[int, list[int]] = {}

    def change(n: int) -> None:
        with lock:
            changes.append(n)
            ticket = commit.ticket()
        commit.wait(ticket)
        seen[n] = list(record)

    first = threading.Thread(target=change, args=(0,))
    first.start()
    in_write.wait()
    others = [threading.Thread(target=change, args=(n,)) for n in range(1, 9)]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join()
    assert all(n in seen[n] for n in range(9)), seen  # each change was in the store when its wait returned
    assert commit.writes == 2  # the first change alone, then the eight made while it was written


def test_a_failed_write_raises_to_its_writer_and_the_change_is_written_again() -> None:
    calls: list[int] = []

    def write() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk full")

    commit = GroupCommit(write)
    ticket = commit.ticket()
    with pytest.raises(OSError, match="disk full"):
        commit.wait(ticket)
    assert commit.writes == 0
    commit.wait(ticket)
    assert commit.writes == 1 and len(calls) == 2
    commit.wait(ticket)  # already durable: nothing written
    assert len(calls) == 2
