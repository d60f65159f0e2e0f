"""Many concurrent resumes against one PostgreSQL server: every run resumes, within a bounded number of connections.

A process holds, per DSN and pool settings, at most ``max_size`` pooled connections plus one connection that
holds all of its claims, however many store objects and leases it has (a resumed run opens its own store).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import SnapshotUnavailableError
from handrail.stores.snapshot_postgres import PostgresSnapshotStore
from handrail.testing.store_suites.snapshots import make_paused_snapshot
from tests.cases._helpers import asst, user
from tests.stores.resume_worker import make_agent
from tests.stores.snapshot_worker import REPO_ROOT, poll

pytestmark = pytest.mark.postgres

RUNS = 200
WORKERS = 2
POOL_MAX = 4  # the default max_size of a store opened from a URL (as a resumed run opens its store)


def _named(dsn: str, application_name: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, application_name=application_name)


def _connections(dsn: str, application_name: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


class _Peak:
    """The most connections of one application name seen while the block runs (sampled in a thread)."""

    def __init__(self, dsn: str, application_name: str) -> None:
        self.dsn, self.name, self.peak, self.samples = dsn, application_name, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _connections(self.dsn, self.name))
            self.samples += 1

    def __enter__(self) -> _Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _paused_runs(store: PostgresSnapshotStore, count: int) -> list[str]:
    """``count`` paused snapshots of one run shape, call c1 approved with arguments ``{"n": i}`` in the i-th."""
    with pytest.raises(HITLBreakpointException) as info:
        make_agent([asst(calls=[("c1", "record", {"n": -1})])], store).run([user("go")])
    first = store.load(info.value.snapshot.snapshot_id)
    ids = [first.snapshot_id or ""] + [store.save(dataclasses.replace(first, location=None)) for _ in range(count - 1)]
    for n, snapshot_id in enumerate(ids):
        decision = ToolExecutionDecision("record", execute=True, tool_call_id="c1", final_tool_params={"n": n})
        store.record_decision(snapshot_id, decision, decided_by="ana")
    return ids


def _start(location: str, ids_file: Path, calls: Path, gate: Path) -> subprocess.Popen[str]:
    paths = [str(REPO_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "tests.stores.resume_worker", location, str(ids_file), str(calls), str(gate)]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresSnapshotStore]:
    made = PostgresSnapshotStore(postgres_dsn)
    yield made
    made.close()


def test_two_processes_resume_200_runs_at_once_on_a_default_server(
    postgres_dsn: str, store: PostgresSnapshotStore, tmp_path: Path
) -> None:
    ids = _paused_runs(store, RUNS)
    (tmp_path / "ids").write_text("\n".join(ids))
    name = f"handrail_capacity_{uuid.uuid4().hex[:8]}"
    gate = tmp_path / "gate"
    gate.mkdir()
    calls = [tmp_path / f"calls-{i}" for i in range(WORKERS)]
    workers = [_start(_named(postgres_dsn, name), tmp_path / "ids", c, gate) for c in calls]
    try:
        ready = lambda: len(list(gate.glob("ready-*"))) == WORKERS or any(w.poll() is not None for w in workers)  # noqa: E731
        poll(ready, "workers")
        with _Peak(postgres_dsn, name) as peak:
            (gate / "go").write_text("")
            reports = []
            for worker in workers:
                out, err = worker.communicate(timeout=120)
                assert worker.returncode == 0, err
                reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    outcomes = [o for report in reports for o in report]
    errors = [o for o in outcomes if o["outcome"] == "error"]
    assert errors == [], f"{len(errors)} runs failed, e.g. {errors[:3]}"
    assert sorted(o["id"] for o in outcomes if o["outcome"] == "done") == sorted(ids)  # each resumed exactly once
    assert {o["message"] for o in outcomes if o["outcome"] == "done"} == {"done"}
    ran = [int(line) for c in calls if c.exists() for line in c.read_text().split()]
    assert sorted(ran) == list(range(RUNS))  # every approved call ran, and ran once
    assert {s.status for s in store.list_snapshots(("paused", "running", "done"))} == {"done"}
    assert peak.samples > 0 and peak.peak <= WORKERS * (POOL_MAX + 1), peak.peak


def test_many_store_objects_and_leases_in_one_process_share_a_bounded_pool(postgres_dsn: str) -> None:
    name = f"handrail_bound_{uuid.uuid4().hex[:8]}"
    dsn = _named(postgres_dsn, name)
    setup = PostgresSnapshotStore(postgres_dsn)
    ids = [setup.save(make_paused_snapshot()) for _ in range(30)]
    setup.close()
    stores = [PostgresSnapshotStore(dsn, max_size=2) for _ in ids]  # as 30 resumed runs open theirs
    leases = [s.claim(i) for s, i in zip(stores, ids, strict=True)]
    try:
        for s, i in zip(stores, ids, strict=True):
            assert s.load(i).status == "paused"
        assert _connections(postgres_dsn, name) <= 2 + 1  # max_size, plus the one connection holding the claims
        other = PostgresSnapshotStore(postgres_dsn, lock_timeout=0)  # another process's view (another session)
        for i in ids:
            assert other.claimed(i)
            with pytest.raises(SnapshotUnavailableError, match=i):
                other.claim(i)
        stores.append(PostgresSnapshotStore(dsn, max_size=2))
        with pytest.raises(SnapshotUnavailableError, match=ids[0]):
            stores[-1].claim(ids[0])  # this process, through another store object
    finally:
        for lease in leases:
            lease.release()
        for s in stores:
            s.close()
    assert not other.claimed(ids[0])
    other.claim(ids[0]).release()
    other.close()
    poll(lambda: _connections(postgres_dsn, name) == 0, "the last store's connections to close")


def test_a_lease_keeps_its_claim_after_its_store_is_closed(postgres_dsn: str, store: PostgresSnapshotStore) -> None:
    snapshot_id = store.save(make_paused_snapshot())
    holder = PostgresSnapshotStore(postgres_dsn)
    lease = holder.claim(snapshot_id)
    holder.close()
    assert store.claimed(snapshot_id)
    lease.release()
    assert not store.claimed(snapshot_id)


def test_a_lost_claims_connection_is_replaced_and_its_claims_are_gone(postgres_dsn: str) -> None:
    import psycopg

    name = f"handrail_lost_{uuid.uuid4().hex[:8]}"
    store = PostgresSnapshotStore(_named(postgres_dsn, name), lock_timeout=0)
    other = PostgresSnapshotStore(postgres_dsn, lock_timeout=0)  # another process's view (another session)
    first, second = store.save(make_paused_snapshot()), store.save(make_paused_snapshot())
    lease = store.claim(first)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # the server ends the session holding the claims
        conn.execute(
            "SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid "
            "WHERE a.application_name = %s AND l.locktype = 'advisory'",
            (name,),
        )
    poll(lambda: not other.claimed(first), "the lost claim to be free on the server")
    with store.claim(second):  # on a new claims connection
        assert other.claimed(second)
    assert not other.claimed(second)
    lease.release()  # its lock went with the connection: nothing to give up, and no error
    with store.claim(first):
        assert other.claimed(first)
    store.close()
    other.close()


@pytest.mark.parametrize(
    "pool", [{"max_size": 0}, {"min_size": 5, "max_size": 4}, {"min_size": -1}, {"max_size": 2.5}, {"timeout": 0}]
)
def test_bad_pool_settings_are_refused(pool: dict[str, float]) -> None:
    from handrail.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="PostgresSnapshotStore: the pool needs"):
        PostgresSnapshotStore("postgresql://nobody@127.0.0.1:1/x", **pool)  # type: ignore[arg-type]


def _backend(store: PostgresSnapshotStore) -> int:
    """The server process serving the store's pooled connection (the pool keeps one: min_size=1)."""
    with store._db.connection() as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def _use_in_a_forked_child(store: PostgresSnapshotStore, snapshot_id: str, out: Path) -> None:
    status = store.load(snapshot_id).status  # the parent's store object: this process opens its own connections
    backend = _backend(store)
    other = PostgresSnapshotStore(store.dsn, lock_timeout=0)
    held = other.claimed(snapshot_id)
    other.close()
    store.close()
    out.write_text(f"{status} {held} {backend}")


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_never_uses_its_parents_connections(store: PostgresSnapshotStore, tmp_path: Path) -> None:
    import multiprocessing

    snapshot_id = store.save(make_paused_snapshot())
    lease = store.claim(snapshot_id)
    parent = _backend(store)
    child = multiprocessing.get_context("fork").Process(
        target=_use_in_a_forked_child, args=(store, snapshot_id, tmp_path / "out")
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    status, held, backend = (tmp_path / "out").read_text().split()
    assert (status, held) == ("paused", "True") and int(backend) != parent
    assert store.load(snapshot_id).status == "paused" and _backend(store) == parent  # the parent's still work
    lease.release()
    other = PostgresSnapshotStore(store.dsn, lock_timeout=0)
    assert not other.claimed(snapshot_id)
    other.close()
