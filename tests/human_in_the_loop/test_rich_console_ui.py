from __future__ import annotations

import io
import sys
import threading
from typing import Any

import pytest
from rich.console import Console

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import ConfirmationUI, RichConsoleUI, SimpleConsoleUI
from handrail.human_in_the_loop.user_interfaces import NO_ANSWER_FEEDBACK

from ._helpers import Lines

PARAMS: dict[str, Any] = {"city": "Oslo", "days": 3, "units": {"temp": "C"}}
EOF_REJECT = ConfirmationUIResult("reject", feedback=NO_ANSWER_FEEDBACK)


@pytest.fixture
def feed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Replace stdin with the given lines (rich's Console.input reads through builtins.input)."""

    def _feed(*lines: str) -> None:
        monkeypatch.setattr(sys, "stdin", io.StringIO("".join(f"{line}\n" for line in lines)))

    return _feed


def make_ui() -> tuple[RichConsoleUI, io.StringIO]:
    out = io.StringIO()
    return RichConsoleUI(console=Console(file=out, force_terminal=False, width=100)), out


def ask(
    feed: Any, *lines: str, params: dict[str, Any] | None = None, injected: dict[str, Any] | None = None
) -> tuple[ConfirmationUIResult, str]:
    feed(*lines)
    ui, out = make_ui()
    result = ui.get_user_confirmation("get_weather", "Get the weather.", PARAMS if params is None else params, injected)
    return result, out.getvalue()


def test_is_a_confirmation_ui_with_the_console_label() -> None:
    assert isinstance(RichConsoleUI(), ConfirmationUI)
    assert RichConsoleUI.label == "console"


def test_shows_a_panel(feed: Any) -> None:
    result, out = ask(feed, "y")
    assert result == ConfirmationUIResult("confirm")
    assert "🔧 Tool Execution Request" in out
    for text in ("Tool: get_weather", "Description: Get the weather.", "city: Oslo", "days: 3", 'units: {"temp": "C"}'):
        assert text in out
    assert "Execute this tool call? (y = yes, n = no, m = modify): " in out


def test_shows_no_arguments(feed: Any) -> None:
    _, out = ask(feed, "y", params={})
    assert "(No arguments)" in out


def test_markup_in_names_and_values_is_shown_literally(feed: Any) -> None:
    feed("y")
    ui, out = make_ui()
    ui.get_user_confirmation("t[bold]", "Uses [red]colour[/red].", {"q": "[link=x]y[/link]"})
    text = out.getvalue()
    assert "t[bold]" in text and "Uses [red]colour[/red]." in text and "q: [link=x]y[/link]" in text


@pytest.mark.parametrize("answer", ["y", "YES", " yes "])
def test_confirm(feed: Any, answer: str) -> None:
    assert ask(feed, answer)[0] == ConfirmationUIResult("confirm")


def test_garbage_is_asked_again(feed: Any) -> None:
    result, out = ask(feed, "", "perhaps", "y")
    assert result == ConfirmationUIResult("confirm")
    assert out.count("Please answer y (yes), n (no) or m (modify).") == 2


@pytest.mark.parametrize("answer", ["n", "No"])
def test_reject_with_feedback(feed: Any, answer: str) -> None:
    result, out = ask(feed, answer, "  Too expensive ")
    assert result == ConfirmationUIResult("reject", feedback="Too expensive")
    assert "Feedback message (optional, Enter for none): " in out


def test_reject_with_empty_feedback(feed: Any) -> None:
    assert ask(feed, "n", "")[0] == ConfirmationUIResult("reject", feedback=None)


def test_modify_keeping_every_default(feed: Any) -> None:
    result, out = ask(feed, "m", "", "", "")
    assert result == ConfirmationUIResult("modify", new_tool_params=PARAMS)
    assert "city (Oslo): " in out and "days (3): " in out and 'units ({"temp": "C"}): ' in out


def test_modify_with_new_values_strings_raw(feed: Any) -> None:
    result, _ = ask(feed, "M", " New York ", "7", '{"temp": "F"}')
    assert result.new_tool_params == {"city": " New York ", "days": 7, "units": {"temp": "F"}}


def test_typing_the_default_text_is_the_same_value(feed: Any) -> None:
    result, _ = ask(feed, "modify", "Oslo", "3", '{"temp": "C"}')
    assert result.new_tool_params == PARAMS


def test_bad_json_is_asked_again(feed: Any) -> None:
    result, out = ask(feed, "m", "", "seven", "8", "")
    assert result.new_tool_params == {**PARAMS, "days": 8}
    assert "Invalid JSON for 'days'" in out


def test_modify_without_parameters_gives_empty_params(feed: Any) -> None:
    assert ask(feed, "m", params={})[0] == ConfirmationUIResult("modify", new_tool_params={})


def test_injected_values_are_shown_read_only_and_not_editable(feed: Any) -> None:
    result, out = ask(feed, "m", "Paris", params={"city": "Oslo"}, injected={"user_id": 42})
    assert "From State (read-only):" in out and "user_id: 42" in out
    assert "user_id (" not in out  # never asked for
    assert result.new_tool_params == {"city": "Paris"}


@pytest.mark.parametrize(
    "lines",
    [(), ("what",), ("m",), ("m", "Paris", "oops"), ("m", "Paris", "")],
)
def test_end_of_input_at_any_prompt_rejects(feed: Any, lines: tuple[str, ...]) -> None:
    result, out = ask(feed, *lines)
    assert result == EOF_REJECT
    assert "No answer (end of input): the tool call is rejected." in out


def test_end_of_input_at_the_optional_feedback_prompt_is_no_feedback(feed: Any) -> None:
    result, out = ask(feed, "n")
    assert result == ConfirmationUIResult("reject")  # the person answered n; the feedback is optional
    assert out.endswith("Feedback message (optional, Enter for none): ")
    assert "No answer (end of input)" not in out


def test_notify(feed: Any) -> None:
    ui, out = make_ui()
    ui.notify("The edit was refused: [x] is bad.")
    assert out.getvalue() == "! The edit was refused: [x] is bad.\n"


def test_default_console_writes_to_stdout(feed: Any, capsys: pytest.CaptureFixture[str]) -> None:
    feed("n", "")
    result = RichConsoleUI().get_user_confirmation("t", "d", {"a": 1})
    assert result == ConfirmationUIResult("reject")
    out = capsys.readouterr().out
    assert "Tool Execution Request" in out and "a: 1" in out


def test_serialization_round_trip() -> None:
    ui, _ = make_ui()
    data = ui.to_dict()
    assert data == {
        "type": "handrail.human_in_the_loop.user_interfaces.RichConsoleUI",
        "init_parameters": {"console": None},
    }
    for rebuilt in (RichConsoleUI.from_dict(data), object_from_dict(data)):
        assert isinstance(rebuilt, RichConsoleUI)
        assert rebuilt.console is None


def test_rich_and_simple_uis_share_one_lock(feed: Any) -> None:
    """A SimpleConsoleUI question waits while a RichConsoleUI question is open."""
    feed("y")
    ui, out = make_ui()
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    def slow_input(prompt: str) -> str:
        entered.set()
        assert release.wait(5)
        order.append("simple answered")
        return "y"

    simple = SimpleConsoleUI(input_fn=slow_input, output_fn=Lines())
    first = threading.Thread(target=simple.get_user_confirmation, args=("a", "d", {}))
    first.start()
    assert entered.wait(5)

    def ask_rich() -> None:
        ui.get_user_confirmation("b", "d", {})
        order.append("rich answered")

    second = threading.Thread(target=ask_rich)
    second.start()
    second.join(timeout=0.2)
    assert second.is_alive()  # blocked on the shared lock
    assert "Tool Execution Request" not in out.getvalue()
    release.set()
    first.join(timeout=5)
    second.join(timeout=5)
    assert order == ["simple answered", "rich answered"]


def test_a_long_description_wraps_inside_the_panel_on_a_soft_wrapping_console(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from rich.console import Console

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    out = io.StringIO()
    ui = RichConsoleUI(console=Console(file=out, width=60, soft_wrap=True, force_terminal=False))  # as the CLI's
    description = "Search the local knowledge base: returns the best passages for a query, with their files."
    ui.get_user_confirmation("search", description, {"query": "x"})
    shown = " ".join(line.strip("│ ").strip() for line in out.getvalue().splitlines())
    assert "with their files." in shown
