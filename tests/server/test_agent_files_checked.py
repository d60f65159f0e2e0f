"""Every agent file of ``--agents`` is checked when the service starts: a broken rule never waits for a run.

``handrail serve`` and ``handrail worker`` refuse to start (exit 2) with one line per bad file, ``FILE:LINE:`` and
the problem; the check builds the tools and the confirmation strategies, never the generator (a local model is
not loaded at startup).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from handrail.server import Resumer
from handrail.specs import SpecError
from tests.server._agents import AGENT_FILE
from tests.stores.snapshot_worker import REPO_ROOT

RULE_FILE = """\
generator:
  type: handrail.testing.FunctionChatGenerator
  init_parameters: {function: tests.server._agents.pay_replies}
tools: [tests.server._agents.transfer]
allowed_modules: [tests.server]
confirmation:
  transfer:
    ask_when: "RULE"
"""
BAD_RULES = {"typo": "amont > 100", "cut": "amount >", "dunder": "amount.__class__ > 1"}
PROBLEMS = {
    "typo": "'amont', which is not an argument of the tool",
    "cut": "does not parse",
    "dunder": "the attribute '__class__' starts with '_'",
}


class NeverBuilt:
    """A generator that cannot be built: the startup check must not try (it would load a model)."""

    def __init__(self) -> None:
        raise RuntimeError("the generator was built at startup")

    def run(self, messages: Any, tools: Any = None) -> Any:  # pragma: no cover - never built
        raise AssertionError


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "payer.yaml").write_text(AGENT_FILE, encoding="utf-8")
    for name, rule in BAD_RULES.items():
        (folder / f"{name}.yaml").write_text(RULE_FILE.replace("RULE", rule), encoding="utf-8")
    return folder


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    """``handrail ARGS`` in a process of its own; one that started (it runs until stopped) fails the test."""
    paths = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": paths, "COLUMNS": "400"}
    try:
        return subprocess.run([sys.executable, "-m", "handrail.cli", *args], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"handrail {' '.join(args)} started instead of refusing: {exc.stdout!r}") from None


def _line_of_rule() -> int:
    return next(n for n, line in enumerate(RULE_FILE.splitlines(), 1) if "ask_when" in line)


def test_a_resumer_over_agent_files_with_broken_rules_is_refused_with_one_line_per_bad_file(
    sqlite_store: Any, agents: Path
) -> None:
    with pytest.raises(SpecError) as info:
        Resumer(sqlite_store, agents_dir=agents)
    lines = str(info.value).splitlines()
    assert len(lines) == len(BAD_RULES), lines
    for line, name in zip(lines, sorted(BAD_RULES), strict=True):
        assert line.startswith(f"{agents.resolve() / name}.yaml:{_line_of_rule()}: confirmation.transfer.ask_when")
        assert PROBLEMS[name] in line
    assert "payer.yaml" not in str(info.value)


def test_the_generator_is_not_built_at_startup(sqlite_store: Any, tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(
        AGENT_FILE.replace("handrail.testing.FunctionChatGenerator", f"{__name__}.NeverBuilt").replace(
            "  init_parameters: {function: tests.server._agents.pay_replies}\n", ""
        ),
        encoding="utf-8",
    )
    resumer = Resumer(sqlite_store, agents_dir=tmp_path)  # checked, not built
    try:
        with pytest.raises(SpecError, match="the generator was built"):
            resumer.launcher.start_run("slow", ["pay 1"])  # a run builds it
    finally:
        resumer.stop()


def test_a_file_that_would_not_pause_into_the_store_is_refused_at_startup_at_its_line(
    sqlite_store: Any, tmp_path: Path
) -> None:
    (tmp_path / "quiet.yaml").write_text(AGENT_FILE.replace("confirmation: {transfer: always}\n", ""), "utf-8")
    with pytest.raises(SpecError) as info:
        Resumer(sqlite_store, agents_dir=tmp_path)
    (line,) = str(info.value).splitlines()
    assert line.startswith(f"{(tmp_path / 'quiet.yaml').resolve()}:1: ") and "no confirmation" in line, line


@pytest.mark.parametrize("command", [["worker"], ["serve", "--port", "0"], ["serve", "--port", "0", "--workers", "2"]])
def test_serve_and_worker_refuse_to_start_naming_each_bad_file(
    sqlite_store: Any, agents: Path, command: list[str]
) -> None:
    sqlite_store.add_token("ada", "admin", at=datetime.now(UTC))  # the database exists
    refused = _command(*command, "--store", f"sqlite:///{sqlite_store.path}", "--agents", str(agents))
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == len(BAD_RULES) and lines[0].startswith("error: "), refused.stderr
    for name in BAD_RULES:
        assert sum(f"{name}.yaml:{_line_of_rule()}: " in line and PROBLEMS[name] in line for line in lines) == 1
    assert "watching" not in refused.stdout and "listening" not in refused.stdout
