"""``handrail worker``: its options, refusals, the line it prints per run, and a clean stop on a signal."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from handrail.cli import main
from tests.server._workers import Workers, paused_runs, wait_until_ended
from tests.server.test_resumer import approve_all


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
