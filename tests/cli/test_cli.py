from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from handrail.cli import main
from handrail.dataclasses import ChatMessage, StreamingChunk, ToolCall
from tests.specs.test_agent_spec import scripted_generator_yaml


def agent_file(tmp_path: Path, replies: list[ChatMessage], extra: str = "") -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(scripted_generator_yaml(replies) + "\ntools: [calculator]\n" + extra, encoding="utf-8")
    return path


CALC_THEN_ANSWER = [
    ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "17 * 23"}, "c1")]),
    ChatMessage.from_assistant("17 × 23 = 391."),
]


def test_help_lists_commands_and_options() -> None:
    runner = CliRunner()
    top = runner.invoke(main, ["--help"])
    assert top.exit_code == 0
    assert "run" in top.output and "schema" in top.output
    sub = runner.invoke(main, ["run", "--help"])
    assert sub.exit_code == 0
    for option in ("--model", "--openai-base-url", "--json", "--approve", "--allow-module", "--max-steps"):
        assert option in sub.output


def test_run_shows_tool_calls_results_and_the_answer(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(agent_file(tmp_path, CALC_THEN_ANSWER)), "What is 17*23?"])
    assert result.exit_code == 0, result.output
    assert "calculator" in result.output and '"17 * 23"' in result.output
    assert "391" in result.output
    assert result.output.count("17 × 23 = 391.") == 1  # streamed or printed at the end, never both
    assert "exit: text" in result.output


def test_a_streamed_answer_is_printed_once(tmp_path: Path) -> None:
    streamed = [[StreamingChunk(content="Forty-"), StreamingChunk(content="two.", finish_reason="stop")]]
    path = tmp_path / "agent.yaml"
    path.write_text(scripted_generator_yaml(streamed) + "\n", encoding="utf-8")  # type: ignore[arg-type]
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 0, result.output
    assert result.output.count("Forty-two.") == 1, result.output


def test_json_output_is_one_parseable_object(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["run", "--json", str(agent_file(tmp_path, CALC_THEN_ANSWER)), "q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["answer"] == "17 × 23 = 391."
    assert data["exit_reason"] == "text"
    assert data["tool_call_counts"] == {"calculator": 1}
    assert data["messages"][0]["role"] == "user"
    help_text = " ".join(runner.invoke(main, ["run", "--help"]).output.split())
    assert "Print one JSON object (answer, exit reason, messages)." in help_text  # the keys it prints


def test_python_dash_m_handrail_is_the_handrail_command() -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "handrail", "--help"], capture_output=True, text=True, env=env,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "approvals" in result.stdout and "resume" in result.stdout and "run" in result.stdout


def test_bad_agent_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("tools: [calculator]\nmax_agent_steps: many\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2
    assert f"{path}:2: max_agent_steps" in result.output
    assert "Traceback" not in result.output


def test_step_limit_exits_3(tmp_path: Path) -> None:
    loop = [ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "1+1"}, f"c{i}")])
            for i in range(3)]  # fmt: skip
    result = CliRunner().invoke(main, ["run", "--max-steps", "2", str(agent_file(tmp_path, loop)), "q"])
    assert result.exit_code == 3
    assert "max_agent_steps" in result.output


def test_model_and_openai_options_conflict(tmp_path: Path) -> None:
    args = ["run", "--model", "small", "--openai-base-url", "http://127.0.0.1:9/v1", str(agent_file(tmp_path, [])), "q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "pass only one" in result.output


def test_unreachable_openai_server_is_a_one_line_error_with_the_url(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    result = CliRunner().invoke(main, ["run", "--openai-base-url", url, str(agent_file(tmp_path, [])), "q"])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert "127.0.0.1:9" in errors[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("bad", ["tools: [os.system]\n"])
def test_module_outside_the_allowlist_is_refused_with_the_reason(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(scripted_generator_yaml([]) + "\n" + bad, encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2
    assert "allowlist" in result.output


def test_schema_command_prints_the_json_schema() -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    assert "generator" in schema["properties"] and "tools" in schema["properties"]


def test_ask_without_a_terminal_is_a_clear_error(tmp_path: Path) -> None:
    path = agent_file(tmp_path, CALC_THEN_ANSWER, "confirmation:\n  calculator: always\n")
    result = CliRunner().invoke(main, ["run", str(path), "q"])  # CliRunner's stdin is not a terminal
    assert result.exit_code == 2
    assert "--approve all" in result.output and "--approve none" in result.output


@pytest.mark.parametrize(("flag", "ran"), [("all", True), ("none", False)])
def test_approve_all_and_none_without_a_terminal(tmp_path: Path, flag: str, ran: bool) -> None:
    path = agent_file(tmp_path, CALC_THEN_ANSWER, "confirmation:\n  calculator: always\n")
    result = CliRunner().invoke(main, ["run", "--json", "--approve", flag, str(path), "q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["tool_call_counts"] == {"calculator": 1 if ran else 0}
    if not ran:  # nobody was asked: the model must not read that "the user" rejected it
        rejection = next(m for m in data["messages"] if m["role"] == "tool")
        text = json.dumps(rejection)
        assert "was not approved: this session runs no call that needs approval" in text
        assert "by the user" not in text


def test_errors_are_plain_text_not_markup(tmp_path: Path) -> None:
    path = tmp_path / "agent[bold].yaml"  # rich would swallow "[bold]" as markup
    path.write_text("max_agent_steps: lots\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2
    assert "agent[bold].yaml:1: max_agent_steps" in result.output
    assert "Traceback" not in result.output and "MarkupError" not in result.output


def test_an_empty_question_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["run", str(agent_file(tmp_path, CALC_THEN_ANSWER)), "   "])
    assert result.exit_code == 2
    assert "QUESTION is empty" in result.output


def test_a_tool_module_beside_the_agent_file_is_importable(tmp_path: Path) -> None:
    (tmp_path / "mytools_beside.py").write_text(
        'def shout(text: str) -> str:\n    """Shout."""\n    return text.upper()\n'
    )
    replies = [ChatMessage.from_assistant(tool_calls=[ToolCall("shout", {"text": "hi"}, "c1")]),
               ChatMessage.from_assistant("done")]  # fmt: skip
    path = tmp_path / "agent.yaml"
    path.write_text(scripted_generator_yaml(replies) + "\ntools: [mytools_beside.shout]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "--json", "--allow-module", "mytools_beside", str(path), "q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["tool_call_counts"] == {"shout": 1}


BROKEN_STREAM = '''
from handrail.dataclasses import StreamingChunk
from handrail.errors import GenerationError


class BrokenStream:
    """Streams half an answer, then loses the server."""

    def run(self, messages, tools=None, streaming_callback=None):
        if streaming_callback is not None:
            streaming_callback(StreamingChunk(content="It is"))
        raise GenerationError("Lost the connection to the server in the middle of its streamed reply.")

    def to_dict(self):
        return {"type": "broken_stream_gen.BrokenStream", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data):
        return cls()
'''


def test_an_error_after_streamed_text_starts_on_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "broken_stream_gen.py").write_text(BROKEN_STREAM, encoding="utf-8")
    path = tmp_path / "agent.yaml"
    path.write_text("generator:\n  type: broken_stream_gen.BrokenStream\n  init_parameters: {}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", "--allow-module", "broken_stream_gen", str(path), "q"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert "It is" in lines
    assert any(line.startswith("error:") and "Lost the connection" in line for line in lines), result.output


@pytest.mark.parametrize(
    ("generator", "line", "fragment"),
    [
        ("generator:\n  init_parameters: {replies: []}\n", 2, "init_parameters.replies: LlamaCppChatGenerator"),
        ("generator:\n  type: handrail.testing.ScriptedChatGenerator\n  init_parameters: {replies: [{message: 5}]}\n",
         3, "ChatMessage data must be a mapping, got int"),
        ("allowed_modules: [tests.specs.helpers]\ngenerator: {type: tests.specs.helpers.NeedsReplies}\n",
         2, "generator: NeedsReplies cannot be built from this file: KeyError: 'replies'"),
    ],
)  # fmt: skip
def test_an_agent_file_that_cannot_be_built_exits_2_with_one_line(
    tmp_path: Path, generator: str, line: int, fragment: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(generator + "tools: [calculator]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {path}:{line}: ") and fragment in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_users_generator_failing_in_the_run_is_one_error_line_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("allowed_modules: [tests.specs.helpers]\ngenerator: {type: tests.specs.helpers.BrokenRun}\n")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 1, result.output
    assert result.output == "error: The run failed: IndexError: list index out of range\n"


def test_an_int_of_too_many_digits_in_an_agent_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("tools: [calculator]\nmax_agent_steps: " + "9" * 5000 + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2 and f"{path}:2: an integer of 5,000 characters is refused" in result.output
    assert "Traceback" not in result.output


def test_the_run_printer_shows_a_result_of_parts_as_text_with_placeholders() -> None:
    import io

    from rich.console import Console

    from handrail.cli._common import Printer
    from handrail.dataclasses import ImageContent, TextContent, ToolCallResult

    out = io.StringIO()
    parts = [TextContent("The chart:"), ImageContent("iVBORw0KGgo=", "image/png")]
    result = ToolCallResult(parts, ToolCall("chart", {"month": "May"}, "c1"), error=False)
    Printer(Console(file=out, width=200))(StreamingChunk(index=0, tool_call_result=result, start=True))
    printed = out.getvalue()
    assert '→ chart({"month": "May"})' in printed
    assert "The chart:\\n[image: image/png, 8 bytes, not shown to this model]" in printed  # newlines shown escaped
