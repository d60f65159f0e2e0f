"""Agent files of wrong shapes and types: each is built or refused with a SpecError naming file and line.

Hypothesis damages valid agent files (the shipped example, a scripted one, one with a user's generator
class) and checks that building each gives an Agent or a :class:`SpecError` whose message starts with
``FILE:LINE:``, never another exception; and that ``handrail run`` on it never prints a traceback and
exits 2 exactly when the file is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.cli import main
from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import GenerationError, HandrailError
from handrail.specs import SpecError, build_agent, load_agent_spec
from handrail.testing import ScriptedChatGenerator
from tests.security.mutations import mutated, with_huge_ints

ROOT = Path(__file__).resolve().parents[2]

ASSISTANT: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "assistant.yaml").read_text(encoding="utf-8"))

SCRIPTED: dict[str, Any] = {
    "generator": {
        "type": "handrail.testing.ScriptedChatGenerator",
        "init_parameters": ScriptedChatGenerator(
            [
                ChatMessage.from_assistant(tool_calls=[ToolCall("calculator", {"expression": "6 * 7"}, "c1")]),
                ChatMessage.from_assistant(tool_calls=[ToolCall("search", {"query": "owls"}, "c2")]),
                ChatMessage.from_assistant("It is 42."),
            ]
        ).to_dict()["init_parameters"],
    },
    "tools": ["calculator", {"name": "search", "folder": "docs", "top_k": 2}],
    "system_prompt": "Be brief.",
    "exit_conditions": ["text"],
    "max_agent_steps": 4,
    "confirmation": {"calculator": "never", "search": "always"},
}

CUSTOM: dict[str, Any] = {
    "allowed_modules": ["tests.security.fuzz_helpers"],
    "generator": {"type": "tests.security.fuzz_helpers.KeyedGenerator", "init_parameters": {"replies": ["hi"]}},
    "tools": ["calculator"],
}

FUZZ = settings(max_examples=150, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip


def write(folder: Path, doc: Any) -> Path:
    (folder / "docs").mkdir(exist_ok=True)
    (folder / "docs" / "owls.md").write_text("# Owls\n\nThe snowy owl weighs about 2 kilograms.\n", encoding="utf-8")
    path = folder / "agent.yaml"
    path.write_text(with_huge_ints(yaml.safe_dump(doc, allow_unicode=True)), encoding="utf-8")
    return path


def build(path: Path, approve: str = "ask") -> SpecError | None:
    """Build the file's Agent; return the SpecError that refused it, or None. Any other exception fails the test."""
    try:
        build_agent(load_agent_spec(path), base_dir=path.parent, approve=approve)  # type: ignore[arg-type]
    except SpecError as exc:
        assert re.match(rf"{re.escape(str(path))}:\d+: \S", str(exc)), str(exc)
        if exc.__cause__ is not None and not isinstance(exc.__cause__, HandrailError):  # handrail's own parts
            assert "fuzz_helpers" in path.read_text(encoding="utf-8"), repr(exc.__cause__)  # check their types
        return exc
    return None


@pytest.mark.parametrize("base", [ASSISTANT, SCRIPTED, CUSTOM], ids=["assistant", "scripted", "custom"])
def test_the_base_files_build(tmp_path: Path, base: dict[str, Any]) -> None:
    assert build(write(tmp_path, base)) is None


@FUZZ
@given(doc=st.one_of(mutated(ASSISTANT), mutated(SCRIPTED), mutated(CUSTOM)), approve=st.sampled_from(["ask", "none"]))
def test_a_damaged_agent_file_is_built_or_refused_with_a_spec_error(tmp_path: Path, doc: Any, approve: str) -> None:
    build(write(tmp_path, doc), approve)


@contextlib.contextmanager
def no_model() -> Iterator[None]:
    """The embedded model fails to load and no OpenAI key is set: a file that picks either fails fast."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    failing = mock.Mock(side_effect=GenerationError("no model in this test"))
    with mock.patch.dict(os.environ, env, clear=True), mock.patch.object(LlamaCppChatGenerator, "_load", failing):
        yield


@settings(FUZZ, max_examples=60)
@given(doc=st.one_of(mutated(SCRIPTED), mutated(CUSTOM)), as_json=st.booleans())
def test_handrail_run_on_a_damaged_agent_file_never_prints_a_traceback(tmp_path: Path, doc: Any, as_json: bool) -> None:
    path = write(tmp_path, doc)
    refused = build(path, "none")
    with no_model():
        result = CliRunner().invoke(main, ["run", str(path), "q", "--approve", "none", *(["--json"] * as_json)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2, 3), result.output
    if refused is not None:
        assert result.exit_code == 2 and str(path) in result.output, result.output
    if "The run failed:" in result.output:  # only a user's class may raise what handrail does not know
        assert "fuzz_helpers" in str(doc), result.output
