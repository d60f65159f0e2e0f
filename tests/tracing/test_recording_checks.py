"""What a Recorder refuses before the run (a target it cannot write, a file that is not a recording, a second run
while one is recording, arguments of the wrong type), what it masks by default, and the recordings a replay
refuses (a missing field, no run, cut short)."""

from __future__ import annotations

import io
import threading
import warnings
from pathlib import Path

import pytest

from handrail.components.agents import Agent
from handrail.errors import ConfigurationError, ConfigurationTypeError, RecordingError
from handrail.hooks import RedactionHook
from handrail.testing import ReplayChatGenerator, ScriptedChatGenerator, call, reply, user
from handrail.tools import tool
from handrail.tracing.recording import Recorder, replay

from ._replay_agents import add, lines, write_lines

KEY = "sk-proj-" + "ABCDEFGHIJ" * 3
PROMPT = f"You add numbers. Internal key {KEY}"


def keyed_agent() -> Agent:
    gen = ScriptedChatGenerator([reply(call("add", id="c1", a=1, b=2)), reply(f"3, and {KEY}")])
    return Agent(chat_generator=gen, tools=[add], system_prompt=PROMPT)


def test_a_recording_masks_key_like_strings_by_default_and_redact_false_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user(f"use {KEY}")], recorder=path)
    assert KEY not in path.read_text() and "[REDACTED]" in path.read_text()
    assert lines(path)[0]["redacted"] is True and lines(path)[0]["redaction"] == ["default"]

    raw = tmp_path / "raw.jsonl"
    keyed_agent().run([user(f"use {KEY}")], recorder=Recorder(raw, redact=False))
    assert KEY in raw.read_text() and lines(raw)[0]["redacted"] is False


def test_a_recording_redacted_by_default_replays_identically_though_the_prompt_holds_a_key(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user("Add.")], recorder=path)
    result = replay(path, Agent(chat_generator=ScriptedChatGenerator([]), tools=[add], system_prompt=PROMPT))
    assert not result.diverged, result.report()
    generator = ReplayChatGenerator(path, check_inputs=True)  # the header's redaction applies there too
    agent = Agent(chat_generator=generator, tools=[add], system_prompt=PROMPT)
    agent.run([user("Add.")])
    generator.assert_complete()


def test_the_patterns_of_a_redaction_hook_are_kept_in_the_header_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    hook = RedactionHook([r"Oslo"])
    Agent(chat_generator=ScriptedChatGenerator([reply("ok")]), system_prompt="You live in Oslo.").run(
        [user("Where?")], recorder=Recorder(path, redact=hook)
    )
    _, *rest = path.read_text().splitlines()
    assert "Oslo" not in "".join(rest) and lines(path)[0]["redaction"] == [{"patterns": ["Oslo"]}]
    again = Agent(chat_generator=ScriptedChatGenerator([]), system_prompt="You live in Oslo.")
    assert not replay(path, again).diverged


def test_the_divergence_diff_never_shows_a_key(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user("Add.")], recorder=Recorder(path, redact=False))
    changed = Agent(chat_generator=ScriptedChatGenerator([]), tools=[add], system_prompt=PROMPT + " Be brief.")
    divergence = replay(path, changed).divergence
    assert divergence is not None and "Be brief." in divergence.diff
    assert KEY not in divergence.report() and KEY not in str(divergence.expected) + str(divergence.actual)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_target_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="the path is empty"):
        Recorder("")
    gen = ScriptedChatGenerator([reply("x")])
    with pytest.raises(RecordingError, match="cannot write '/dev/full'"):
        Agent(chat_generator=gen).run([user("hi")], recorder="/dev/full")
    assert gen.calls == []


class FailingFile(io.StringIO):
    """An open file whose writes fail after the first ``good`` ones."""

    def __init__(self, good: int) -> None:
        super().__init__()
        self.good = good

    def write(self, text: str) -> int:
        if self.good <= 0:
            raise OSError(28, "No space left on device")
        self.good -= 1
        return super().write(text)


def test_a_write_error_during_the_run_is_warned_about_once(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = keyed_agent().run([user("Add.")], recorder=Recorder(FailingFile(good=2)))
    assert result["exit_reason"] == "text"
    recorder_warnings = [w for w in caught if "Recorder" in str(w.message)]
    assert len(recorder_warnings) == 1
    assert "the recording is incomplete" in str(recorder_warnings[0].message)


def test_a_fresh_run_overwrites_a_recording_and_a_file_that_is_not_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user("Add.")], recorder=path)
    keyed_agent().run([user("Add again.")], recorder=path)
    kinds = [line["kind"] for line in lines(path)]
    assert kinds.count("header") == 1 and kinds.count("run") == 1

    precious = tmp_path / "precious.txt"
    precious.write_text("precious data\n")
    gen = ScriptedChatGenerator([reply("x")])
    with pytest.raises(RecordingError, match="is not a handrail recording"):
        Agent(chat_generator=gen).run([user("hi")], recorder=precious)
    with pytest.raises(RecordingError, match="is not a handrail recording"):
        Recorder(precious, append=True)
    assert precious.read_text() == "precious data\n" and gen.calls == []


def test_a_second_run_while_the_recorder_records_one_is_refused() -> None:
    inside, release = threading.Event(), threading.Event()

    @tool
    def wait() -> str:
        """Waits until released."""
        inside.set()
        assert release.wait(10)
        return "done"

    recorder = Recorder(io.StringIO())
    first = Agent(chat_generator=ScriptedChatGenerator([reply(call("wait", id="c1")), reply("ok")]), tools=[wait])
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: first.run([user("wait")], recorder=recorder))
    thread.start()
    assert inside.wait(10)
    gen = ScriptedChatGenerator([reply("x")])
    try:
        with pytest.raises(RecordingError, match="give each concurrent run its own Recorder"):
            Agent(chat_generator=gen).run([user("hi")], recorder=recorder)
    except BaseException as exc:  # pragma: no cover - reported after the first run is released
        errors.append(exc)
    release.set()
    thread.join(10)
    assert not errors and gen.calls == []
    Agent(chat_generator=ScriptedChatGenerator([reply("again")])).run([user("hi")], recorder=recorder)  # free again


def test_arguments_of_the_wrong_type_are_refused_naming_the_parameter(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user("Add.")], recorder=path)
    with pytest.raises(ConfigurationTypeError, match="agent must be an Agent"):
        replay(path, str(tmp_path / "agent.yaml"))
    with pytest.raises(ConfigurationTypeError, match="agent must be an Agent"):
        replay(path, None)
    with pytest.raises(ConfigurationTypeError, match="recording must be a path"):
        ReplayChatGenerator(5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="Recorder: redact must be"):
        Recorder(path, redact=5)
    with pytest.raises(ConfigurationTypeError, match="Recorder: path_or_file must be"):
        Recorder(123)  # type: ignore[arg-type]


def test_a_recording_cut_short_or_without_a_run_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    keyed_agent().run([user("Add.")], recorder=path)
    data = lines(path)
    agent = Agent(chat_generator=ScriptedChatGenerator([]), tools=[add], system_prompt=PROMPT)
    write_lines(path, data[:3])
    with pytest.raises(RecordingError, match=r"the recording stops after line 3 \(no end line: cut short"):
        replay(path, agent)
    write_lines(path, data[:1])
    with pytest.raises(RecordingError, match="no run in it"):
        replay(path, agent)
    del data[2]["result"]
    write_lines(path, data)
    with pytest.raises(RecordingError, match="line 3: an effect line has no 'result'"):
        replay(path, agent)
