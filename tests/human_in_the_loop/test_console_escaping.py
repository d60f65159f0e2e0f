"""The console UIs never print a control character the model, a tool or a file chose.

An argument such as ``"bob\\x1b[1A\\x1b[2K\\r  to: alice"`` printed raw moves the cursor up, clears the
line and draws ``to: alice`` over it: the person approves other arguments than the ones that run.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest
from rich.console import Console

from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import RichConsoleUI, SimpleConsoleUI

from ._helpers import Lines, ScriptedInput

SPOOF = "bob\x1b[1A\x1b[2K\r  to: alice\x1b[8m (hidden)"
SPOOF_SHOWN = r"bob\x1b[1A\x1b[2K\r  to: alice\x1b[8m (hidden)"
# An argument value with control characters is shown as a quoted JSON string (a real "\n" and the two
# characters backslash and n must not look alike).
SPOOF_VALUE = r'"bob\u001b[1A\u001b[2K\r  to: alice\u001b[8m (hidden)"'
PARAMS: dict[str, Any] = {
    "to": SPOOF,
    "note\x07": "ring\x07 del\x7f csi\x9b bidi\u202e",
    "nested": {"k": "x\x1by\x9b\u2028"},
}
INJECTED: dict[str, Any] = {"user\r": "root\x1b[2J"}
TOOL = ("send\x1b[31m", "Sends mail.\rFAKE")

# Anything a terminal acts on: C0 (except the newline between printed lines), DEL, C1, separators, bidi.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
SHOWN = (
    r"Tool: send\x1b[31m",
    r"Sends mail.\rFAKE",
    f"to: {SPOOF_VALUE}",
    r'note\x07: "ring\u0007 del\u007f csi\u009b bidi\u202e"',
    r'nested: {"k": "x\u001by\u009b\u2028"}',
    r'user\r: "root\u001b[2J"',
)


def test_simple_console_ui_escapes_what_it_shows() -> None:
    source, sink = ScriptedInput(["y"]), Lines()
    ui = SimpleConsoleUI(input_fn=source, output_fn=sink)
    result = ui.get_user_confirmation(*TOOL, {**PARAMS, "user\r": "root\x1b[2J"}, INJECTED)
    assert result == ConfirmationUIResult("confirm")
    assert not RAW_CONTROL.search(sink.text), sink.text
    for text in SHOWN:
        assert text in sink.text


def test_simple_console_ui_escapes_the_edit_prompts_but_keeps_the_values() -> None:
    source, sink = ScriptedInput(["m", "", "nope\x1b", ""]), Lines()
    ui = SimpleConsoleUI(input_fn=source, output_fn=sink)
    params = {"to": SPOOF, "n\x1b": {"a": 1}}
    result = ui.get_user_confirmation(*TOOL, params)
    # Enter kept the original value (not its escaped display); bad JSON for "n\x1b" was asked again.
    assert result == ConfirmationUIResult("modify", new_tool_params=params)
    prompts = "\n".join(source.prompts)
    assert not RAW_CONTROL.search(prompts + sink.text)
    assert f"  to [{SPOOF_VALUE}]: " in source.prompts
    assert '  n\\x1b [{"a": 1}]: ' in source.prompts
    assert r"Invalid JSON for 'n\x1b'" in sink.text


def test_simple_console_ui_escapes_notices() -> None:
    sink = Lines()
    SimpleConsoleUI(output_fn=sink).notify(f"The edit of 'send' was refused: {SPOOF}")
    assert sink.lines == [f"! The edit of 'send' was refused: {SPOOF_SHOWN}"]


@pytest.fixture
def rich_ui(monkeypatch: pytest.MonkeyPatch) -> Any:
    def _make(*lines: str) -> tuple[RichConsoleUI, io.StringIO]:
        monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{line}\n" for line in lines)))
        out = io.StringIO()
        return RichConsoleUI(console=Console(file=out, force_terminal=False, width=400)), out

    return _make


def test_rich_console_ui_escapes_what_it_shows(rich_ui: Any) -> None:
    ui, out = rich_ui("y")
    result = ui.get_user_confirmation(*TOOL, {**PARAMS, "user\r": "root\x1b[2J"}, INJECTED)
    assert result == ConfirmationUIResult("confirm")
    text = out.getvalue()
    assert not RAW_CONTROL.search(text), repr(text)
    for shown in SHOWN:
        assert shown in text


def test_rich_console_ui_escapes_the_edit_prompt_and_reads_no_markup(rich_ui: Any) -> None:
    ui, out = rich_ui("m", "")
    params = {"to\x1b[1m [bold]": "[red]bob[/red]\x9b"}
    result = ui.get_user_confirmation("send [b]x[/b]", "[i]d[/i]", params)
    assert result == ConfirmationUIResult("modify", new_tool_params=params)
    text = out.getvalue()
    assert not RAW_CONTROL.search(text), repr(text)
    assert r'to\x1b[1m [bold]: "[red]bob[/red]\u009b"' in text
    assert "Tool: send [b]x[/b]" in text
    assert "Description: [i]d[/i]" in text


def test_rich_console_ui_escapes_notices(rich_ui: Any) -> None:
    ui, out = rich_ui()
    ui.notify(f"refused: {SPOOF}")
    assert out.getvalue() == f"! refused: {SPOOF_SHOWN}\n"


@pytest.mark.parametrize("ui_kind", ["simple", "rich"])
def test_a_real_newline_and_a_backslash_n_look_different(ui_kind: str, rich_ui: Any) -> None:
    params = {"cmd": "echo a\nrm -rf ~", "literal": "echo a\\nrm -rf ~", "plain": "just text"}
    if ui_kind == "simple":
        sink = Lines()
        SimpleConsoleUI(input_fn=ScriptedInput(["y"]), output_fn=sink).get_user_confirmation("t", "d", params)
        text = sink.text
    else:
        ui, out = rich_ui("y")
        ui.get_user_confirmation("t", "d", params)
        text = out.getvalue()
    assert r'cmd: "echo a\nrm -rf ~"' in text
    assert r'literal: "echo a\\nrm -rf ~"' in text
    assert "plain: just text" in text
