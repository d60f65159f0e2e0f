"""The command line on the dev server: 'handrail worker --temporal', 'run --temporal', 'runs show|decide'.

Every command runs as a real ``handrail`` process (``python -m handrail.cli``). Each test starts its own worker on
its own task queue with agent files whose model is a ScriptedChatGenerator: its script is consumed by the
worker's one generator, so each worker serves one run per agent file.
"""

from __future__ import annotations

import getpass
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from handrail.dataclasses import ChatMessage, ToolCall
from tests.specs.test_agent_spec import scripted_generator_yaml
from tests.temporal.conftest import free_port

REPLIES = [ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "2 + 2"}, "c1")]),
           ChatMessage.from_assistant("It is 4.")]  # fmt: skip
ME = getpass.getuser()


def agent_file(directory: Path, name: str, confirmation: str = "calculator: always", replies: Any = None) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(f"{scripted_generator_yaml(replies or REPLIES)}\ntools: [calculator]\nconfirmation:\n"
                    f"  {confirmation}\n", encoding="utf-8")  # fmt: skip
    return path


def handrail(*args: str, timeout: float = 60, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "handrail.cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=stdin)  # fmt: skip


class Worker:
    def __init__(self, address: str, queue: str, agents: Path, ledger: str) -> None:
        self.address, self.queue, self.ledger = address, queue, ledger
        self.process = subprocess.Popen(
            [sys.executable, "-m", "handrail.cli", "worker", "--temporal", address, "--task-queue", queue,
             "--agents", str(agents), "--store", ledger],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.ready = self.process.stdout.readline()
        assert "serving task queue" in self.ready, self.process.stderr.read() if self.process.stderr else ""

    def target(self) -> list[str]:
        return ["--temporal", self.address, "--store", self.ledger]

    def run(self, agent: Path, question: str = "what is 2+2", *extra: str) -> list[str]:
        return ["run", "--temporal", self.address, "--task-queue", self.queue, "--store", self.ledger, *extra,
                str(agent), question]  # fmt: skip

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=60)
        return self.process.returncode, out


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    return tmp_path / "agents"


@pytest.fixture
def start_worker(dev_server: Any, task_queue: str, agents: Path, ledger_url: str) -> Iterator[Any]:
    started: list[Worker] = []

    def start() -> Worker:
        started.append(Worker(dev_server.address, task_queue, agents, ledger_url))
        return started[-1]

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.communicate(timeout=10)  # and close its pipes


def show(worker: Worker, run_id: str) -> dict[str, Any]:
    shown = handrail("runs", "show", run_id, *worker.target(), "--json")
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def wait_for(worker: Worker, run_id: str, what: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run = show(worker, run_id)
        if (what == "waiting" and run.get("waiting")) or run.get("status") == what:
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


def test_a_detached_run_is_shown_waiting_decided_from_a_shell_and_answers(agents: Path, start_worker: Any) -> None:
    calc = agent_file(agents, "calc")
    worker = start_worker()
    assert "agents: calc" in worker.ready
    started = handrail(*worker.run(calc, "what is 2+2", "--detach"))
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    assert run_id.startswith("run_") and "handrail runs show" in started.stderr

    run = wait_for(worker, run_id, "waiting")
    [call] = run["waiting"]
    assert (call["call_id"], call["tool_name"], call["arguments"]) == ("c1", "calculator", {"expression": "2 + 2"})
    assert run["initiator"] == ME and run["agent"] == "calc"
    text = handrail("runs", "show", run_id, *worker.target())
    assert "c1  calculator" in text.stdout and f"handrail runs decide {run_id} c1 approve" in text.stdout

    decided = handrail("runs", "decide", run_id, "c1", "approve", "--by", "alice", *worker.target())
    assert decided.returncode == 0, decided.stderr
    assert "decided: call c1 approved by alice" in decided.stdout
    done = wait_for(worker, run_id, "done")
    assert done["answer"] == "It is 4." and done["exit_reason"] == "text"
    assert done["usage"] == {"model_calls": 2, "tool_calls": 1, "approvals": 1}
    again = handrail("runs", "decide", run_id, "c1", "reject", *worker.target())
    assert again.returncode == 2 and "has ended (done)" in again.stderr

    code, out = worker.stop()
    assert code == 0 and "stopped" in out


def test_run_asks_at_a_terminal_and_prints_the_answer(agents: Path, start_worker: Any) -> None:
    calc = agent_file(agents, "calc", "calculator:\n    allowed_decisions: [approve, reject]")
    worker = start_worker()
    child = pexpect.spawn(sys.executable, ["-m", "handrail.cli", *worker.run(calc)], encoding="utf-8", timeout=60,
                          dimensions=(50, 200))  # fmt: skip
    child.expect(r"Decide \[a\]pprove/\[r\]eject/\[w\]ait: ")
    asked = str(child.before)
    assert "calculator" in asked and "2 + 2" in asked and "edit" not in asked  # only what the policy allows
    child.sendline("e")
    child.expect("Answer one of")
    child.sendline("a")
    child.expect(pexpect.EOF)
    child.close()
    rest = str(child.before)
    assert child.exitstatus == 0, rest
    assert f"approve: call c1 (calculator) by {ME}" in rest and "It is 4." in rest
    assert "model calls: 2" in rest


def test_run_without_a_terminal_prints_how_to_decide_and_waits(agents: Path, start_worker: Any) -> None:
    calc = agent_file(agents, "calc")
    worker = start_worker()
    process = subprocess.Popen([sys.executable, "-m", "handrail.cli", *worker.run(calc), "--json"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stderr is not None
    lines = []
    while not any("reject --feedback" in line for line in lines):
        lines.append(process.stderr.readline())
        assert lines[-1], "".join(lines)
    run_id = lines[0].split()[1]
    assert f"handrail runs decide {run_id} c1 reject --feedback 'why not'" in "".join(lines)
    decided = handrail("runs", "decide", run_id, "c1", "reject", "--feedback", "no sums today", *worker.target())
    assert decided.returncode == 0, decided.stderr
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0
    result = json.loads(out)
    assert result["run_id"] == run_id and result["answer"] == "It is 4."
    assert "no sums today" in json.dumps(result["messages"])  # the model read why


def test_the_team_settings_of_the_agent_file_decide_who_may_approve(agents: Path, start_worker: Any) -> None:
    calc = agent_file(agents, "team", "calculator:\n    quorum: 2\n    initiator_may_approve: false\n"
                                      "    allowed_decisions: [approve, reject]")  # fmt: skip
    worker = start_worker()
    run_id = handrail(*worker.run(calc, "sum", "--detach", "--run-id", "team-run-1")).stdout.strip()
    assert run_id == "team-run-1"
    [call] = wait_for(worker, run_id, "waiting")["waiting"]
    assert call["quorum"] == 2 and call["allowed_decisions"] == ["approve", "reject"]

    mine = handrail("runs", "decide", run_id, "c1", "approve", *worker.target())  # the OS user started the run
    assert mine.returncode == 2 and "may not approve" in mine.stderr and "Traceback" not in mine.stderr
    edit = handrail("runs", "decide", run_id, "c1", "edit", "--arguments", '{"expression": "1"}', "--by", "alice",
                    *worker.target())  # fmt: skip
    assert edit.returncode == 2 and "'edit' is not allowed" in edit.stderr
    first = handrail("runs", "decide", run_id, "c1", "approve", "--by", "alice", *worker.target())
    assert first.returncode == 0 and "voted" in first.stdout and "1 of 2" in first.stdout
    second = handrail("runs", "decide", run_id, "c1", "approve", "--by", "bob", *worker.target())
    assert second.returncode == 0 and "decided" in second.stdout, second.stderr
    assert wait_for(worker, run_id, "done")["answer"] == "It is 4."
    reused = handrail(*worker.run(calc, "sum", "--detach", "--run-id", "team-run-1"))
    assert reused.returncode == 2 and "used once" in reused.stderr


def test_a_directory_with_bad_agent_files_names_each_file_and_line(
    agents: Path, dev_server: Any, task_queue: str, ledger_url: str
) -> None:
    agent_file(agents, "good")
    (agents / "typo.yaml").write_text("tools: [calculator]\nmax_agent_steps: many\n", encoding="utf-8")
    agent_file(agents, "rule", "calculator:\n    ask_when: amount > 5")
    worker = handrail("worker", "--temporal", dev_server.address, "--task-queue", task_queue, "--agents", str(agents),
                      "--store", ledger_url)  # fmt: skip
    assert worker.returncode == 2 and "Traceback" not in worker.stderr
    assert f"{agents / 'typo.yaml'}:2: max_agent_steps" in worker.stderr
    assert f"{agents / 'rule.yaml'}:" in worker.stderr and "amount" in worker.stderr
    assert "good.yaml" not in worker.stderr


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--temporal", "localhost", "--task-queue", "q"], 2, "is not HOST:PORT"),
        (["--temporal", "127.0.0.1:99999", "--task-queue", "q"], 2, "is not HOST:PORT"),
        (["--temporal", "UNREACHABLE", "--task-queue", "q"], 1, "cannot reach Temporal at 127.0.0.1:"),
        (["--temporal", "SERVER"], 2, "needs --task-queue"),
        (["--temporal", "SERVER", "--task-queue", "q", "--agents", "EMPTY"], 2, "holds no agent files"),
        (["--temporal", "SERVER", "--task-queue", "q", "--unknown-outcome", "retry"], 2, "not a worker's choice"),
        (["--task-queue", "q"], 2, "goes with --temporal"),
    ],
)
def test_bad_worker_input_is_one_clear_error(
    tmp_path: Path, agents: Path, dev_server: Any, ledger_url: str, args: list[str], code: int, said: str
) -> None:
    agent_file(agents, "calc")
    (tmp_path / "empty").mkdir()
    swap = {"UNREACHABLE": f"127.0.0.1:{free_port()}", "SERVER": dev_server.address, "EMPTY": str(tmp_path / "empty")}
    args = [swap.get(a, a) for a in args]
    if "--agents" not in args:
        args += ["--agents", str(agents)]
    began = time.monotonic()
    done = handrail("worker", *args, "--store", ledger_url)
    assert (done.returncode, "Traceback" in done.stderr) == (code, False), done.stderr
    assert said in done.stderr
    assert time.monotonic() - began < 15


def test_the_worker_needs_a_store(agents: Path, dev_server: Any) -> None:
    agent_file(agents, "calc")
    done = handrail("worker", "--temporal", dev_server.address, "--task-queue", "q", "--agents", str(agents))
    assert done.returncode == 2 and "Missing option '--store'" in done.stderr


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["run", "--temporal", "SERVER", "--task-queue", "q", "AGENT", "hi"], 2, "needs --store"),
        (["run", "--temporal", "SERVER", "--store", "LEDGER", "AGENT", "hi"], 2, "needs --task-queue"),
        (
            [
                "run",
                "--temporal",
                "SERVER",
                "--task-queue",
                "q",
                "--store",
                "LEDGER",
                "--model",
                "small",
                "AGENT",
                "hi",
            ],
            2,
            "--model does not apply with --temporal",
        ),
        (
            ["run", "--temporal", "SERVER", "--task-queue", "q", "--store", "sqlite:///nowhere/x.db", "AGENT", "hi"],
            2,
            "no ledger at nowhere/x.db",
        ),
        (
            ["run", "--temporal", "UNREACHABLE", "--task-queue", "q", "--store", "LEDGER", "AGENT", "hi"],
            1,
            "cannot reach Temporal",
        ),
        (["run", "--detach", "AGENT", "hi"], 2, "--detach goes with --temporal"),
        (["runs", "show", "no-such-run", "--temporal", "SERVER"], 2, "no run 'no-such-run' on Temporal"),
        (["runs", "show", "x", "--temporal", "UNREACHABLE"], 1, "cannot reach Temporal"),
        (["runs", "show", "x", "--temporal", ":7233"], 2, "is not HOST:PORT"),
        (["runs", "decide", "no-such-run", "c1", "approve", "--temporal", "SERVER"], 2, "no run 'no-such-run'"),
        (["runs", "decide", "r", "c1", "edit", "--temporal", "SERVER"], 2, "edit needs --arguments"),
        (
            ["runs", "decide", "r", "c1", "approve", "--arguments", "{}", "--temporal", "SERVER"],
            2,
            "--arguments goes with edit",
        ),
        (["runs", "decide", "r", "c1", "approve", "--by", " ", "--temporal", "SERVER"], 2, "--by"),
    ],
)
def test_bad_client_input_is_one_clear_error(
    agents: Path, dev_server: Any, ledger_url: str, args: list[str], code: int, said: str
) -> None:
    from handrail.temporal import open_temporal_store

    open_temporal_store(ledger_url).close()  # the ledger a worker would have made
    swap = {"UNREACHABLE": f"127.0.0.1:{free_port()}", "SERVER": dev_server.address, "LEDGER": ledger_url,
            "AGENT": str(agent_file(agents, "calc"))}  # fmt: skip
    done = handrail(*[swap.get(a, a) for a in args])
    assert (done.returncode, "Traceback" in done.stderr) == (code, False), done.stderr
    assert said in " ".join(done.stderr.split())


def test_a_refused_decision_names_the_reason_and_changes_nothing(agents: Path, start_worker: Any) -> None:
    calc = agent_file(agents, "calc")
    worker = start_worker()
    run_id = handrail(*worker.run(calc, "sum", "--detach")).stdout.strip()
    wait_for(worker, run_id, "waiting")
    unknown = handrail("runs", "decide", run_id, "c9", "approve", *worker.target())
    assert unknown.returncode == 2 and "no call 'c9' waits" in unknown.stderr and "Traceback" not in unknown.stderr
    bad_edit = handrail("runs", "decide", run_id, "c1", "edit", "--arguments", '{"expression": 4}', *worker.target())
    assert bad_edit.returncode == 2 and "edited arguments are refused" in bad_edit.stderr
    assert [c["call_id"] for c in show(worker, run_id)["waiting"]] == ["c1"]
    edited = handrail("runs", "decide", run_id, "c1", "edit", "--arguments", '{"expression": "3 + 3"}',
                      *worker.target())  # fmt: skip
    assert edited.returncode == 0 and "edited" in edited.stdout
    done = wait_for(worker, run_id, "done")
    assert "6" in json.dumps(done["messages"])


def test_tls_and_an_api_key_from_the_environment_reach_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from handrail.cli import main
    from handrail.temporal import _client

    seen: dict[str, Any] = {}

    async def fake_connect(address: str, store: Any, **options: Any) -> Any:
        seen.update(options, address=address)
        raise _client.TemporalUnavailableError("stop here")

    monkeypatch.setattr(_client, "connect", fake_connect)
    monkeypatch.setenv("TEMPORAL_KEY_FOR_TEST", "k-123")
    args = ["runs", "show", "r1", "--temporal", "ns.tmprl.cloud:7233", "--namespace", "ns.acct"]
    result = CliRunner().invoke(main, [*args, "--api-key-env", "TEMPORAL_KEY_FOR_TEST"])
    assert result.exit_code == 1 and "k-123" not in result.output  # the key is used, never shown
    assert (seen["address"], seen["namespace"], seen["api_key"], seen["tls"]) == (
        "ns.tmprl.cloud:7233",
        "ns.acct",
        "k-123",
        True,
    )
    seen.clear()
    CliRunner().invoke(main, [*args, "--tls"])
    assert seen["tls"] is True and "api_key" not in seen
    missing = CliRunner().invoke(main, [*args, "--api-key-env", "NO_SUCH_VARIABLE_SET"])
    assert missing.exit_code == 2 and "NO_SUCH_VARIABLE_SET: that environment variable is not set" in missing.output
