"""Ctrl-C during ``handrail run``: what was interrupted, the command that continues a durable run, exit 130.

Each test starts the real command in a subprocess, waits until the tool call runs (the tool writes a file),
and sends SIGINT, as a terminal's Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from handrail.dataclasses import ChatMessage
from tests.cli._slow_tool import write_slow_agent
from tests.specs.test_agent_spec import scripted_generator_yaml

CALL = 'wait({"text": "hi"})'


def _interrupted(tmp_path: Path, *args: str | Path) -> tuple[int, str, str]:
    """Start ``handrail ARGS`` in ``tmp_path``, send SIGINT once its tool call runs; ``(code, stdout, stderr)``."""
    command = [sys.executable, "-m", "handrail", *map(str, args)]
    child = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not (tmp_path / "started").exists():
            assert child.poll() is None, child.communicate()  # it ended before its tool call started
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    return child.returncode, out, err


def test_ctrl_c_in_a_durable_run_says_what_ran_and_how_to_continue(tmp_path: Path) -> None:
    agent = write_slow_agent(tmp_path)
    code, out, err = _interrupted(tmp_path, "run", "--allow-module", "slowtools", "--pause-for-approval", "snaps",
                                  agent, "Say hi slowly")  # fmt: skip
    assert code == 130, out + err
    text = out + err
    assert f"Interrupted at step 1, while running {CALL}." in text
    assert "Aborted!" not in text and "Traceback" not in text
    assert "its outcome is unknown" in text  # the call was running: resuming must say what to do with it
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith("handrail resume")]
    assert [c.split()[-2:] for c in commands] == [["--unknown-outcome", "retry"], ["--unknown-outcome", "fail"]]

    (tmp_path / "go").write_text("x")  # the tool finishes at once from now on
    agent.write_text(  # the scripted model restarts in a new process: give it only the reply still to come
        scripted_generator_yaml([ChatMessage.from_assistant("It said HI.")])
        + "\ntools: [slowtools.wait, search]\nconfirmation:\n  wait: never\n  search: always\n",
        encoding="utf-8",
    )
    again = subprocess.run([sys.executable, "-m", "handrail", *shlex.split(commands[0])[1:]], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "→ wait" in again.stdout and "HI" in again.stdout  # the call ran again, with the same id
    assert "It said HI." in again.stdout


def test_ctrl_c_in_a_run_without_a_store_says_nothing_was_saved(tmp_path: Path) -> None:
    agent = write_slow_agent(tmp_path)
    code, out, err = _interrupted(tmp_path, "run", "--approve", "all", "--allow-module", "slowtools", agent, "q")
    assert code == 130, out + err
    assert f"Interrupted at step 1, while running {CALL}." in out
    assert "Nothing of this run was saved" in out
    assert "handrail resume" not in out
    assert "\x1b[" not in out  # not a terminal: no spinner, no escape sequence at all


def test_ctrl_c_with_json_prints_the_interruption_as_a_json_error(tmp_path: Path) -> None:
    agent = write_slow_agent(tmp_path)
    code, out, _ = _interrupted(tmp_path, "run", "--json", "--approve", "all", "--allow-module", "slowtools", agent,
                                "q")  # fmt: skip
    assert code == 130
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    error = json.loads(lines[0])["error"]
    assert error["type"] == "Interrupted"
    assert error["message"] == f"Interrupted at step 1, while running {CALL}."
    assert "Nothing of this run was saved" in error["hint"]
