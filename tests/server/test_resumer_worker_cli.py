"""``handrail worker``: its options, refusals, the line it prints per run, and a clean stop on a signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from handrail.cli import main
from tests.server._workers import Workers, paused_runs, wait_until_ended
from tests.server.test_resumer import approve_all
from tests.stores.snapshot_worker import REPO_ROOT


def test_the_command_is_in_the_cli_and_documents_its_options() -> None:
    assert "worker" in CliRunner().invoke(main, ["--help"]).output
    shown = CliRunner().invoke(main, ["worker", "--help"]).output
    for option in ("--store URL", "--agents DIR", "--allow-module PREFIX", "--unknown-outcome [fail|retry]",
                   "--max-workers", "SIGTERM"):  # fmt: skip
        assert option in shown


def test_a_bad_agents_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["worker", "--store", str(tmp_path / "store"), "--agents", str(tmp_path / "no")])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and f"--agents {tmp_path / 'no'}: not a directory." in said, result.output
    assert "Traceback" not in result.output


def test_a_store_without_a_store_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["worker"])
    assert result.exit_code == 2 and "--store" in result.output


def test_it_prints_a_line_per_run_with_the_models_text_escaped_and_stops_on_a_signal(
    sqlite_store: Any, tmp_path: Path
) -> None:
    workers = Workers.in_folder(f"sqlite:///{sqlite_store.path}", tmp_path)
    try:
        _prints_and_stops(sqlite_store, workers)
    finally:
        workers.close()


def _prints_and_stops(sqlite_store: Any, workers: Workers) -> None:
    (run_id,) = paused_runs(sqlite_store, workers.agents, ["pay 3 note: \x1b[2Jwiped"])
    process = workers.start()
    approve_all(sqlite_store, run_id)
    wait_until_ended(sqlite_store, [run_id])
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == f"resumed run {run_id} (payer)"
    assert lines[1] == f"finished run {run_id} (payer): exit text, 2 steps: paid: sent 3 (note: \\x1b[2Jwiped)"
    assert lines[-1] == "handrail worker: stopped." and "\x1b" not in out


def _closed_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once it is closed


def _worker(*args: str) -> subprocess.CompletedProcess[str]:
    """``handrail worker ARGS`` in a process of its own; one that started (it runs until stopped) fails the test."""
    paths = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": paths, "COLUMNS": "400"}  # an error line is not wrapped
    command = [sys.executable, "-m", "handrail.cli", "worker", *args]
    try:
        return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"handrail worker {' '.join(args)} started instead of refusing: {exc.stdout!r}") from None


@pytest.mark.parametrize(("store", "words"), [
    ("sqlite:///{tmp}/nowhere/x.db", "no such database file"),
    ("{tmp}/nowhere/dir", "no such directory"),
    ("{tmp}/a-file.txt", "not a directory"),
])  # fmt: skip
def test_a_store_that_does_not_exist_is_refused_in_one_line_as_serve_refuses_it(
    tmp_path: Path, store: str, words: str
) -> None:
    (tmp_path / "a-file.txt").write_text("x", encoding="utf-8")
    given = store.format(tmp=tmp_path)
    worker_run = _worker("--store", given)
    serve_run = CliRunner().invoke(main, ["serve", "--store", given, "--port", "0"])
    assert worker_run.returncode == 2 and len(worker_run.stderr.strip().splitlines()) == 1, worker_run.stderr
    for code, err in ((worker_run.returncode, worker_run.stderr), (serve_run.exit_code, serve_run.stderr)):
        said = " ".join(err.split())
        assert code == 2 and said.startswith(f"error: --store {given}") and words in said, err
    assert "watching" not in worker_run.stdout and not (tmp_path / "nowhere").exists()  # nothing was created


def test_an_unreachable_postgresql_server_at_startup_ends_the_worker_as_it_ends_serve() -> None:
    url = f"postgresql://nobody@127.0.0.1:{_closed_port()}/handrail"
    worker_run = _worker("--store", url)
    serve_run = CliRunner().invoke(main, ["serve", "--store", url, "--port", "0"])
    assert worker_run.returncode == serve_run.exit_code == 1, (worker_run.stderr, serve_run.output)
    assert worker_run.stderr.startswith("error: ") and "cannot reach PostgreSQL" in worker_run.stderr
    assert "watching" not in worker_run.stdout and "Traceback" not in worker_run.stderr
