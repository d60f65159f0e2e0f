"""The ledger and claim-check blobs on SQLite and PostgreSQL: check-then-run is atomic, payloads come back intact."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from handrail.errors import ConfigurationError
from handrail.temporal._codec import ClaimCheckCodec
from handrail.temporal._store import TemporalStore, open_temporal_store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TemporalStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'l.db'}"
    else:
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(request.getfixturevalue("postgres_dsn"))
        url = f"postgresql://{info['user']}@{info['host']}:{info['port']}/{info['dbname']}"
    opened = open_temporal_store(url)
    try:
        yield opened
    finally:
        opened.close()


def test_a_call_is_started_once_and_its_outcome_kept(store: TemporalStore) -> None:
    assert store.begin("run/c1") is None  # nothing recorded: run the tool
    running = store.begin("run/c1")
    assert running is not None and (running.status, running.attempts) == ("running", 1)  # an earlier attempt started
    assert store.begin("run/c1", again=True) is None  # a person (or the retry policy) chose to run it again
    assert store.row("run/c1") is not None and store.row("run/c1").attempts == 2  # type: ignore[union-attr]
    store.done("run/c1", {"type": "tool_outcome", "ok": True})
    done = store.begin("run/c1", again=True)
    assert done is not None and done.status == "done" and done.outcome == {"type": "tool_outcome", "ok": True}
    assert store.row("run/other") is None


def test_of_many_concurrent_attempts_exactly_one_may_run_the_tool(store: TemporalStore) -> None:
    answers: list[object] = []
    barrier = threading.Barrier(8)

    def attempt() -> None:
        barrier.wait()
        answers.append(store.begin("run/race"))

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers.count(None) == 1


async def test_a_large_payload_goes_by_reference_and_comes_back_checked(store: TemporalStore) -> None:
    codec = ClaimCheckCodec(store, threshold=1024)
    small, big = Payload(data=b"x" * 100), Payload(metadata={"encoding": b"json/plain"}, data=b"y" * 5000)
    encoded = await codec.encode([small, big])
    assert encoded[0] == small and encoded[1].ByteSize() < 200
    assert await codec.decode(encoded) == [small, big]
    damaged = Payload(metadata=dict(encoded[1].metadata), data=b"0" * 64)
    with pytest.raises(ConfigurationError, match=r"missing from .* or damaged"):
        await codec.decode([damaged])


@pytest.mark.parametrize("url", ["", "redis://x", "sqlite://relative.db", "user=postgres dbname=x host=h"])
def test_a_store_url_of_another_kind_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match=r"sqlite:///|empty"):
        open_temporal_store(url)


def test_the_postgres_store_never_shows_its_dsn() -> None:
    from handrail.temporal._store import PostgresTemporalStore

    assert "secret" not in PostgresTemporalStore.__repr__(object.__new__(PostgresTemporalStore))
