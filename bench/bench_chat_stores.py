"""Quick measurement (not a test): write and retrieve a 2,000-message chat history on SQLite and PostgreSQL.

Usage: python bench/bench_chat_stores.py [postgres DSN]
The history is 400 rounds of 5 messages (user, assistant with one tool call, tool result, assistant answer... plus
one extra tool call per round), i.e. realistic agent traffic; each figure is the median of 5 runs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from handrail.stores.chat_memory import InMemoryChatMessageStore
from handrail.stores.chat_postgres import PostgresChatMessageStore
from handrail.stores.chat_sqlite import SQLiteChatMessageStore
from handrail.testing.store_suites.chat import make_round

N_ROUNDS = 400  # make_round(tools=2) gives 5 messages: 2,000 in all


def history() -> list:
    messages = []
    for i in range(N_ROUNDS):
        messages += make_round(f"round {i}: " + "lorem ipsum dolor sit amet " * 8, tools=2)
    return messages


def measure(name: str, make) -> None:
    writes, reads, reads_k, batched = [], [], [], []
    for run in range(5):
        store = make()
        store.delete_all_messages()  # also opens the connection (pool) and migrates: not timed
        msgs = history()
        assert len(msgs) == 2000
        t = time.perf_counter()
        assert store.write_messages(f"h{run}", msgs) == 2000
        writes.append(time.perf_counter() - t)
        t = time.perf_counter()
        back = store.retrieve_messages(f"h{run}")
        reads.append(time.perf_counter() - t)
        assert len(back) == 2000
        t = time.perf_counter()
        assert len(store.retrieve_messages(f"h{run}", last_k=10)) == 50
        reads_k.append(time.perf_counter() - t)
        # the agent's pattern: one write per completed round (5 messages), 400 transactions
        msgs = history()
        t = time.perf_counter()
        for i in range(0, 2000, 5):
            store.write_messages(f"r{run}", msgs[i : i + 5])
        batched.append(time.perf_counter() - t)
        assert store.count_messages(f"r{run}") == 2000
        store.delete_all_messages()
        if hasattr(store, "close"):
            store.close()
    ms = lambda xs: f"{statistics.median(xs) * 1000:8.1f} ms"  # noqa: E731
    print(
        f"{name:10s} write 2000 in one call {ms(writes)} | retrieve all {ms(reads)} | "
        f"retrieve last_k=10 {ms(reads_k)} | 400 writes of one round {ms(batched)}"
    )


if __name__ == "__main__":
    folder = Path(tempfile.mkdtemp())
    measure("memory", InMemoryChatMessageStore)
    measure("sqlite", lambda: SQLiteChatMessageStore(folder / "bench.db"))
    if len(sys.argv) > 1:
        measure("postgres", lambda: PostgresChatMessageStore(sys.argv[1]))
