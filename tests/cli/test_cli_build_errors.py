"""The CLI on agent files whose parts fail while built, and on Python warnings: one clear line each, no traceback."""

from __future__ import annotations

import warnings
from pathlib import Path

from click.testing import CliRunner

from handrail.cli import main

SCRIPTED = """generator:
  type: handrail.testing.ScriptedChatGenerator
  init_parameters:
    replies:
      - message: {role: assistant, content: hi}
tools: [calculator]
"""


def test_a_generator_that_calls_sys_exit_while_built_is_exit_2_naming_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("allowed_modules: [tests.specs.helpers]\ngenerator:\n  type: tests.specs.helpers.Exits\n")
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2, result.output
    assert f"{path}:2: generator: Exits cannot be built from this file: SystemExit: 3" in result.output
    assert "Traceback" not in result.output


def test_a_scripted_reply_with_an_unknown_key_is_exit_2_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(SCRIPTED.replace("content: hi}", "content: hi, bogus: 5}"))
    result = CliRunner().invoke(main, ["run", str(path), "q"])
    assert result.exit_code == 2, result.output
    assert f"{path}:5: generator.init_parameters.replies.0.message.bogus: " in result.output


def test_a_python_warning_is_one_warning_line_without_handrails_source(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(SCRIPTED + "exit_conditions: [nope]\n")
    shown = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as outside the test suite, which makes warnings errors
        result = CliRunner().invoke(main, ["run", str(path), "q"])
        assert warnings.showwarning is shown  # restored when the command ends: the library's warnings are unchanged
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: exit_conditions name tools this run does not have: ['nope']; available tools: ['calculator'].\n"
    )
