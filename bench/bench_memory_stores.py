"""Memory store benchmark: add 10,000 memories, then search them with top_k 5 (SQLite and PostgreSQL).

Prints one JSON line per backend: the time to add the memories (in batches, as an agent adds a run's messages)
and the median / p95 / min of searches: free-text queries over every memory and within one user's memories, and
the most recent memories (no query). Not a test; CI does not run it.

    python bench/bench_memory_stores.py                                   # SQLite only
    python bench/bench_memory_stores.py --postgres postgresql://postgres@127.0.0.1:5432/postgres

With ``--postgres`` a scratch database ``handrail_bench_<random>`` is created on that server and dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores.memory_memory import InMemoryMemoryStore
from handrail.stores.memory_postgres import PostgresMemoryStore
from handrail.stores.memory_sqlite import SQLiteMemoryStore

USERS = 10


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def _corpus(n: int, seed: int = 7) -> tuple[list[tuple[str, str]], list[str]]:
    """``n`` (user_id, text) pairs of 8-20 words drawn with a Zipf-like skew, and 20 queries of 2-5 words."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    memories = [
        (f"user-{i % USERS}", " ".join(rng.choices(vocab, weights, k=rng.randint(8, 20))).capitalize() + ".")
        for i in range(n)
    ]
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(2, 5))) + "?" for _ in range(20)]
    return memories, queries


def _stats(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return {"median": round(statistics.median(ordered), 3), "p95": round(p95, 3), "min": round(ordered[0], 3)}


def _time_ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def run(store: Any, n: int, batch: int, rounds: int) -> dict[str, Any]:
    memories, queries = _corpus(n)
    start = time.perf_counter()
    for i in range(0, n, batch):
        chunk = memories[i : i + batch]
        for user in {u for u, _ in chunk}:
            store.add_memories(messages=[ChatMessage.from_user(t) for u, t in chunk if u == user], user_id=user)
    add_s = time.perf_counter() - start
    store.search_memories(query=queries[0], top_k=5)  # warm-up
    every = [_time_ms(lambda q=q: store.search_memories(query=q, top_k=5)) for _ in range(rounds) for q in queries]
    scoped = [
        _time_ms(lambda q=q: store.search_memories(query=q, top_k=5, user_id="user-3"))
        for _ in range(rounds)
        for q in queries
    ]
    recent = [_time_ms(lambda: store.search_memories(top_k=5, user_id="user-3")) for _ in range(rounds * 5)]
    hits = [len(store.search_memories(query=q, top_k=5)) for q in queries]
    return {
        "memories": n,
        "add_batch": batch,
        "add_total_s": round(add_s, 3),
        "add_per_memory_us": round(add_s / n * 1e6, 1),
        "search_all_top5_ms": _stats(every),
        "search_one_user_top5_ms": _stats(scoped),
        "recent_one_user_top5_ms": _stats(recent),
        "queries": len(queries),
        "mean_hits": statistics.mean(hits),
    }


@contextmanager
def _scratch_database(server_dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"handrail_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(server_dsn, dbname=name)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100, help="messages per add_memories call")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the 20 queries")
    parser.add_argument("--postgres", metavar="DSN", help="a PostgreSQL server (a scratch database is made)")
    parser.add_argument("--in-memory", action="store_true", help="also measure InMemoryMemoryStore")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        sqlite = SQLiteMemoryStore(Path(folder) / "bench.db")
        print(json.dumps({"backend": "sqlite", **run(sqlite, args.memories, args.batch, args.rounds)}))
        sqlite.close()
    if args.postgres:
        with _scratch_database(args.postgres) as dsn:
            for config in ("simple", "english"):
                store = PostgresMemoryStore(dsn, text_search_config=config)
                result = run(store, args.memories, args.batch, args.rounds)
                print(json.dumps({"backend": f"postgres ({config})", **result}))
                store.delete_all_memories()
                store.close()
    if args.in_memory:
        print(json.dumps({"backend": "in-memory", **run(InMemoryMemoryStore(), args.memories, args.batch, 1)}))


if __name__ == "__main__":
    main()
