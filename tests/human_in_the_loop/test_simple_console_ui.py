from __future__ import annotations

import io
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import ConfirmationUI, SimpleConsoleUI
from handrail.human_in_the_loop.user_interfaces import NO_ANSWER_FEEDBACK

from ._helpers import Lines, ScriptedInput

PARAMS: dict[str, Any] = {"city": "Oslo", "days": 3, "units": {"temp": "C"}}


def ask(
    lines: list[str], params: dict[str, Any] | None = None, injected: dict[str, Any] | None = None
) -> tuple[ConfirmationUIResult, ScriptedInput, Lines]:
    source, sink = ScriptedInput(lines), Lines()
    ui = SimpleConsoleUI(input_fn=source, output_fn=sink)
    result = ui.get_user_confirmation("get_weather", "Get the weather.", PARAMS if params is None else params, injected)
    return result, source, sink


EOF_REJECT = ConfirmationUIResult("reject", feedback=NO_ANSWER_FEEDBACK)


def test_is_a_confirmation_ui_with_the_console_label() -> None:
    assert isinstance(SimpleConsoleUI(), ConfirmationUI)
    assert SimpleConsoleUI.label == "console"


def test_shows_the_request() -> None:
    _, source, sink = ask(["y"])
    assert sink.lines[:7] == [
        "\n--- Tool Execution Request ---",
        "Tool: get_weather",
        "Description: Get the weather.",
        "Arguments:",
        "  city: Oslo",
        "  days: 3",
        '  units: {"temp": "C"}',
    ]
    assert source.prompts == ["Execute this tool call? (y = yes, n = no, m = modify): "]


def test_shows_no_arguments() -> None:
    _, _, sink = ask(["y"], params={})
    assert "  (No arguments)" in sink.lines


@pytest.mark.parametrize("answer", ["y", "Y", "yes", " YES ", "Yes\t"])
def test_confirm(answer: str) -> None:
    result, _, _ = ask([answer])
    assert result == ConfirmationUIResult("confirm")


def test_garbage_is_asked_again() -> None:
    result, source, sink = ask(["", "maybe", "yess", "ok", "y"])
    assert result == ConfirmationUIResult("confirm")
    assert len(source.prompts) == 5
    assert sink.lines.count("Please answer y (yes), n (no) or m (modify).") == 4


@pytest.mark.parametrize("answer", ["n", "N", "no", " No "])
def test_reject_with_feedback(answer: str) -> None:
    result, source, _ = ask([answer, "  Use Bergen instead  "])
    assert result == ConfirmationUIResult("reject", feedback="Use Bergen instead")
    assert source.prompts[1] == "Feedback message (optional, Enter for none): "


@pytest.mark.parametrize("feedback", ["", "   "])
def test_reject_with_empty_feedback(feedback: str) -> None:
    result, _, _ = ask(["n", feedback])
    assert result == ConfirmationUIResult("reject", feedback=None)


def test_modify_keeping_every_default() -> None:
    result, source, _ = ask(["m", "", "", ""])
    assert result == ConfirmationUIResult("modify", new_tool_params=PARAMS)
    assert source.prompts[1:] == ["  city [Oslo]: ", "  days [3]: ", '  units [{"temp": "C"}]: ']


@pytest.mark.parametrize("answer", ["M", "modify", " MODIFY "])
def test_modify_with_new_values(answer: str) -> None:
    result, _, _ = ask([answer, "  New York ", "7", '{"temp": "F", "wind": [1, 2.5]}'])
    assert result == ConfirmationUIResult(
        "modify", new_tool_params={"city": "  New York ", "days": 7, "units": {"temp": "F", "wind": [1, 2.5]}}
    )


def test_modify_strings_are_raw_and_json_looking_strings_stay_strings() -> None:
    result, _, _ = ask(["m", "42", "", ""])
    assert result.new_tool_params == {**PARAMS, "city": "42"}


def test_bad_json_is_asked_again() -> None:
    result, source, sink = ask(["m", "", "seven", "{", "8", ""])
    assert result.new_tool_params == {**PARAMS, "days": 8}
    assert source.prompts.count("  days [3]: ") == 3
    assert sum("Invalid JSON for 'days'" in line for line in sink.lines) == 2


def test_an_edit_a_snapshot_cannot_hold_is_asked_again() -> None:
    result, source, sink = ask(["m", "", "NaN", "-Infinity", '"\\ud800"', "8", ""])
    assert result.new_tool_params == {**PARAMS, "days": 8}
    assert source.prompts.count("  days [3]: ") == 4
    assert sum("Invalid JSON for 'days' (NaN is not a JSON number" in line for line in sink.lines) == 1
    assert sum("(-Infinity is not a JSON number" in line for line in sink.lines) == 1
    assert sum("lone surrogate" in line for line in sink.lines) == 1


def test_modify_without_parameters_gives_empty_params() -> None:
    result, _, sink = ask(["m"], params={})
    assert result == ConfirmationUIResult("modify", new_tool_params={})
    assert "no editable arguments" in sink.text


def test_injected_values_are_shown_read_only_and_not_editable() -> None:
    result, source, sink = ask(["m", "Paris"], params={"city": "Oslo"}, injected={"user_id": 42, "token": "abc"})
    assert "From State (read-only):" in sink.lines
    assert "  user_id: 42" in sink.lines and "  token: abc" in sink.lines
    assert source.prompts[1:] == ["  city [Oslo]: "]
    assert result.new_tool_params == {"city": "Paris"}


def test_an_argument_that_is_also_injected_is_marked_and_not_editable() -> None:
    result, source, sink = ask(["m", "Paris"], params={"city": "Oslo", "user_id": 1}, injected={"user_id": 1})
    assert "  user_id: 1 (from State, read-only)" in sink.lines
    assert source.prompts[1:] == ["  city [Oslo]: "]
    assert result.new_tool_params == {"city": "Paris", "user_id": 1}


def test_only_injected_arguments_gives_empty_params() -> None:
    result, _, _ = ask(["m"], params={"user_id": 1}, injected={"user_id": 1})
    assert result == ConfirmationUIResult("modify", new_tool_params={})


@pytest.mark.parametrize(
    "lines",
    [
        [],  # at the question
        ["what"],  # at the question, after an invalid answer
        ["m"],  # at the first argument
        ["m", "Paris", "oops"],  # re-asking after bad JSON
        ["m", "Paris", ""],  # at the last argument
    ],
)
def test_end_of_input_at_any_prompt_rejects(lines: list[str]) -> None:
    result, _, sink = ask(lines)
    assert result == EOF_REJECT
    assert sink.lines[-1] == "No answer (end of input): the tool call is rejected."


def test_end_of_input_at_the_optional_feedback_prompt_is_no_feedback() -> None:
    result, source, sink = ask(["n"])
    assert result == ConfirmationUIResult("reject")  # the person answered n; the feedback is optional
    assert source.prompts[-1] == "Feedback message (optional, Enter for none): "
    assert "No answer (end of input)" not in sink.text


def test_notify_shows_a_message() -> None:
    sink = Lines()
    SimpleConsoleUI(output_fn=sink).notify("The edit was refused.")
    assert sink.lines == ["! The edit was refused."]


def test_reads_real_piped_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("x\nm\nBergen\n\n[1]\n"))
    result = SimpleConsoleUI().get_user_confirmation("get_weather", "Weather.", {"city": "Oslo", "days": 3, "u": []})
    assert result == ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "days": 3, "u": [1]})
    out = capsys.readouterr().out
    assert "--- Tool Execution Request ---" in out
    assert "Please answer y (yes), n (no) or m (modify)." in out


def test_end_of_real_stdin_rejects(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("maybe\n"))
    result = SimpleConsoleUI().get_user_confirmation("t", "d", {})
    assert result == EOF_REJECT
    assert "Traceback" not in capsys.readouterr().err


def test_end_of_real_stdin_after_no_rejects_without_feedback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    result = SimpleConsoleUI().get_user_confirmation("t", "d", {})
    assert result == ConfirmationUIResult("reject")
    assert "No answer (end of input)" not in capsys.readouterr().out


def test_works_in_a_process_with_piped_stdin() -> None:
    script = textwrap.dedent(
        """
        from handrail.human_in_the_loop import SimpleConsoleUI
        ui = SimpleConsoleUI()
        print("RESULT", ui.get_user_confirmation("t", "d", {"a": 1}))
        print("RESULT", ui.get_user_confirmation("t", "d", {"a": 1}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input="n\nbecause\n", capture_output=True, text=True, timeout=60, check=True
    )
    results = ["RESULT" + line.split("RESULT", 1)[1] for line in done.stdout.splitlines() if "RESULT" in line]
    assert results == [
        "RESULT ConfirmationUIResult(action='reject', feedback='because', new_tool_params=None)",
        "RESULT ConfirmationUIResult(action='reject', feedback='No answer (end of input)', new_tool_params=None)",
    ]
    assert done.stderr == ""


def test_concurrent_requests_do_not_interleave() -> None:
    log: list[tuple[str, str]] = []

    def make_ui(name: str, answers: list[str]) -> SimpleConsoleUI:
        def read(prompt: str) -> str:
            log.append((name, prompt))
            time.sleep(0.01)  # give the other thread every chance to cut in
            return answers.pop(0)

        def write(line: str) -> None:
            log.append((name, line))
            time.sleep(0.001)

        return SimpleConsoleUI(input_fn=read, output_fn=write)

    results: dict[str, ConfirmationUIResult] = {}
    barrier = threading.Barrier(4)

    def work(name: str, answers: list[str]) -> None:
        ui = make_ui(name, answers)
        barrier.wait()
        results[name] = ui.get_user_confirmation(name, "d", {"a": "x", "b": 2})

    scripts = {"A": ["bad", "y"], "B": ["n", "no"], "C": ["m", "z", "3"], "D": ["m", "", ""]}
    threads = [threading.Thread(target=work, args=item) for item in scripts.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    owners = [name for name, _ in log]
    blocks = [owner for i, owner in enumerate(owners) if i == 0 or owners[i - 1] != owner]
    assert sorted(blocks) == ["A", "B", "C", "D"]  # each thread's dialogue is one contiguous block
    assert results["A"].action == "confirm"
    assert results["B"] == ConfirmationUIResult("reject", feedback="no")
    assert results["C"].new_tool_params == {"a": "z", "b": 3}


def test_serialization_round_trip() -> None:
    ui = SimpleConsoleUI(input_fn=ScriptedInput([]), output_fn=Lines())
    data = ui.to_dict()
    assert data == {"type": "handrail.human_in_the_loop.user_interfaces.SimpleConsoleUI", "init_parameters": {}}
    assert isinstance(SimpleConsoleUI.from_dict(data), SimpleConsoleUI)
    assert isinstance(object_from_dict(data), SimpleConsoleUI)
