r"""Console user interfaces that ask a person about a tool call.

:class:`SimpleConsoleUI` uses ``input()`` / ``print()``; :class:`RichConsoleUI` draws a rich
panel and reads answers through ``rich.prompt``. Both behave the same:

1. Show the request: tool, description, arguments (``(No arguments)`` when there are
   none) and the values injected from the agent's State, marked read-only.
2. Ask ``y``/``yes`` (confirm), ``n``/``no`` (reject) or ``m``/``modify`` (edit); answers are
   trimmed and case-insensitive, anything else is asked again. There is no default answer:
   an empty line is asked again, so a stray Enter never approves a call.
3. After ``n``, read an optional feedback line (empty, or end of input, means none).
4. After ``m``, ask for each editable argument (injected ones are not editable) with the
   current value as default (Enter keeps it): strings are typed raw, other values as JSON
   (invalid JSON is asked again). A call without editable arguments yields modify with ``{}``,
   which strategies treat as confirm.
5. End of input at any other prompt rejects the call with the feedback ``"No answer (end of input)"``.

Everything shown that the model, a tool or a file chose (tool name, description, argument keys and
values, State values, notices) has its control characters escaped (``\x1b``, ``\r``), so an escape
sequence in an argument can never redraw the lines above and show the person other arguments than
the ones that run.

Prompts work on piped stdin (no terminal needed). Every question and notice is shown under
one module-level lock shared by both classes, so calls from several threads never interleave.
"""

from __future__ import annotations

import builtins
import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from handrail.core.json_data import JSONDataError, parse_json
from handrail.core.serialization import default_from_dict, default_to_dict
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop._display import printable, show_value

if TYPE_CHECKING:
    from rich.console import Console
    from rich.prompt import Prompt

__all__ = ["NO_ANSWER_FEEDBACK", "RichConsoleUI", "SimpleConsoleUI"]

NO_ANSWER_FEEDBACK = "No answer (end of input)"
"""Feedback of the reject returned when input ends before the person answered."""

_CONSOLE_LOCK = threading.RLock()
"""Held while a console UI shows a request and reads its answers, or shows a notice."""

_ANSWERS: dict[str, Literal["confirm", "reject", "modify"]] = {
    "y": "confirm",
    "yes": "confirm",
    "n": "reject",
    "no": "reject",
    "m": "modify",
    "modify": "modify",
}
_QUESTION = "Execute this tool call? (y = yes, n = no, m = modify)"
_INVALID_ANSWER = "Please answer y (yes), n (no) or m (modify)."
_FEEDBACK_QUESTION = "Feedback message (optional, Enter for none)"
_INVALID_JSON = "Invalid JSON for '{key}' ({error}); please try again, or press Enter to keep the current value."
_NO_EDITABLE = "This call has no editable arguments; it runs as proposed."
_EOF_NOTICE = "No answer (end of input): the tool call is rejected."


class _ConsoleUI:
    """The dialogue shared by the console UIs; subclasses only render and read lines."""

    label: ClassVar[str] = "console"
    """Recorded as ``decided_by`` on the decisions made through this UI."""

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        """Show the call, ask the person, and return the answer.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The model's arguments (editable).
            injected_params: ``{parameter: value}`` read from State, shown read-only; never editable.

        Returns:
            ``confirm``; ``reject`` with the feedback line (None when empty or when input ended at
            it; ``"No answer (end of input)"`` when input ended before the answer); or ``modify``
            with every argument of ``tool_params`` (edited or kept), ``{}`` when none is editable.
        """
        injected = dict(injected_params or {})
        with _CONSOLE_LOCK:
            try:
                self._show_request(tool_name, tool_description, tool_params, injected)
                return self._dialogue(tool_params, injected)
            except EOFError:
                self._say(_EOF_NOTICE)
                return ConfirmationUIResult("reject", feedback=NO_ANSWER_FEEDBACK)

    def notify(self, message: str) -> None:
        """Show a notice before the next question (e.g. why an edit was refused).

        Args:
            message: The text to show (on one line, control characters escaped).
        """
        with _CONSOLE_LOCK:
            self._say_notice(printable(message))

    def _dialogue(self, tool_params: dict[str, Any], injected: dict[str, Any]) -> ConfirmationUIResult:
        action = self._ask_action()
        if action == "confirm":
            return ConfirmationUIResult("confirm")
        if action == "reject":
            try:
                feedback = self._read(_FEEDBACK_QUESTION).strip()
            except EOFError:  # the person answered n; the feedback is optional
                feedback = ""
            return ConfirmationUIResult("reject", feedback=feedback or None)
        return ConfirmationUIResult("modify", new_tool_params=self._edit(tool_params, injected))

    def _ask_action(self) -> Literal["confirm", "reject", "modify"]:
        while True:
            answer = _ANSWERS.get(self._read(_QUESTION).strip().lower())
            if answer is not None:
                return answer
            self._say(_INVALID_ANSWER)

    def _edit(self, tool_params: dict[str, Any], injected: Mapping[str, Any]) -> dict[str, Any]:
        editable = [key for key in tool_params if key not in injected]
        if not editable:
            self._say(_NO_EDITABLE)
            return {}
        edited = dict(tool_params)
        for key in editable:
            edited[key] = self._edit_value(key, tool_params[key])
        return edited

    def _edit_value(self, key: str, current: Any) -> Any:
        while True:
            typed = self._read_edit(key, show_value(current))
            if typed is None:
                return current
            if isinstance(current, str):
                return typed
            try:
                return parse_json(typed)  # the JSON a snapshot can hold: NaN, Infinity, lone surrogates asked again
            except JSONDataError as exc:
                self._say(_INVALID_JSON.format(key=printable(key), error=exc))

    # Rendering and reading, provided by each console UI.

    def _show_request(
        self, tool_name: str, tool_description: str, tool_params: Mapping[str, Any], injected: Mapping[str, Any]
    ) -> None:
        raise NotImplementedError

    def _read(self, question: str) -> str:
        """Read one line (raises EOFError at end of input)."""
        raise NotImplementedError

    def _read_edit(self, key: str, shown: str) -> str | None:
        """Read a new value for ``key``; None when the person kept the current one."""
        raise NotImplementedError

    def _say(self, message: str) -> None:
        raise NotImplementedError

    def _say_notice(self, message: str) -> None:
        raise NotImplementedError


class SimpleConsoleUI(_ConsoleUI):
    """Ask at the console with ``input()`` and ``print()``.

    Args:
        input_fn: Reads one line given a prompt; default ``builtins.input`` (looked up at each
            call, so it reads the current ``sys.stdin``). Runtime-only: not serialized.
        output_fn: Shows one line; default ``print``. Runtime-only: not serialized.

    Examples:
        >>> answers = iter(["maybe", "n", "Use the staging database"])
        >>> ui = SimpleConsoleUI(input_fn=lambda prompt: next(answers), output_fn=lambda line: None)
        >>> ui.get_user_confirmation("drop_table", "Drops a table.", {"table": "users"})
        ConfirmationUIResult(action='reject', feedback='Use the staging database', new_tool_params=None)
    """

    def __init__(
        self,
        *,
        input_fn: Callable[[str], str] | None = None,
        output_fn: Callable[[str], object] | None = None,
    ) -> None:
        self._input_fn = input_fn
        self._output_fn = output_fn

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters": {}}`` (``input_fn``/``output_fn`` are runtime-only)."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimpleConsoleUI:
        """Rebuild from :meth:`to_dict` output (reading stdin, writing stdout).

        Raises:
            SerializationError: When ``init_parameters`` is missing or ``type`` names another class.
        """
        ui: SimpleConsoleUI = default_from_dict(cls, data)
        return ui

    def _out(self, line: str) -> None:
        (self._output_fn or builtins.print)(line)

    def _show_request(
        self, tool_name: str, tool_description: str, tool_params: Mapping[str, Any], injected: Mapping[str, Any]
    ) -> None:
        self._out("\n--- Tool Execution Request ---")
        self._out(f"Tool: {printable(tool_name)}")
        self._out(f"Description: {printable(tool_description)}")
        self._out("Arguments:")
        if not tool_params:
            self._out("  (No arguments)")
        for key, value in tool_params.items():
            suffix = " (from State, read-only)" if key in injected else ""
            self._out(f"  {printable(key)}: {show_value(value)}{suffix}")
        if injected:
            self._out("From State (read-only):")
            for key, value in injected.items():
                self._out(f"  {printable(key)}: {show_value(value)}")
        self._out("-" * 30)

    def _read(self, question: str) -> str:
        return (self._input_fn or builtins.input)(f"{question}: ")

    def _read_edit(self, key: str, shown: str) -> str | None:
        typed = (self._input_fn or builtins.input)(f"  {printable(key)} [{shown}]: ")
        return typed or None

    def _say(self, message: str) -> None:
        self._out(message)

    def _say_notice(self, message: str) -> None:
        self._out(f"! {message}")


class RichConsoleUI(_ConsoleUI):
    """Ask at the console with a rich panel and ``rich.prompt``.

    Answers are read through rich's ``Console.input`` (so from ``sys.stdin``, piped or not).
    Names and values are shown as plain text (``rich.text.Text``): square brackets in them are never
    read as rich markup, and their control characters are escaped.

    Args:
        console: The rich ``Console`` to draw on; None creates one on each use (writing to the
            current ``sys.stdout``). Runtime-only: serialized as None.

    Examples:
        >>> RichConsoleUI().to_dict()
        {'type': 'handrail.human_in_the_loop.user_interfaces.RichConsoleUI', 'init_parameters': {'console': None}}
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console
        """The console to draw on (None: a new one on each use)."""

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters": {"console": None}}`` (a console is runtime-only)."""
        return default_to_dict(self, console=None)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RichConsoleUI:
        """Rebuild from :meth:`to_dict` output (with a console created on use).

        Raises:
            SerializationError: When ``init_parameters`` is missing or ``type`` names another class.
        """
        ui: RichConsoleUI = default_from_dict(cls, data)
        return ui

    def _console(self) -> Console:
        if self.console is not None:
            return self.console
        from rich.console import Console

        return Console()

    def _show_request(
        self, tool_name: str, tool_description: str, tool_params: Mapping[str, Any], injected: Mapping[str, Any]
    ) -> None:
        from rich.panel import Panel
        from rich.text import Text

        body = Text()
        body.append("Tool: ", style="bold").append(printable(tool_name), style="cyan").append("\n")
        body.append("Description: ", style="bold").append(printable(tool_description)).append("\n")
        body.append("Arguments:", style="bold")
        if not tool_params:
            body.append("\n  (No arguments)", style="dim")
        for key, value in tool_params.items():
            body.append(f"\n  {printable(key)}: ", style="green").append(show_value(value))
            if key in injected:
                body.append(" (from State, read-only)", style="dim")
        if injected:
            body.append("\nFrom State (read-only):", style="bold")
            for key, value in injected.items():
                body.append(f"\n  {printable(key)}: ", style="dim").append(show_value(value), style="dim")
        panel = Panel(body, title="🔧 Tool Execution Request", title_align="left", expand=False)
        self._console().print(panel, soft_wrap=False)  # a soft-wrapping console (the CLI's) would crop long lines

    def _ask(self, question: str, default: str | None = None) -> str:
        from rich.text import Text

        prompt = _raw_prompt_class()(Text(question), console=self._console())
        return prompt() if default is None else prompt(default=default)

    def _read(self, question: str) -> str:
        return self._ask(question)

    def _read_edit(self, key: str, shown: str) -> str | None:
        keep = _Kept(shown)  # rich returns the default object itself when the line is empty
        typed = self._ask(f"  {printable(key)}", default=keep)
        return None if typed is keep or typed == "" else typed

    def _say(self, message: str) -> None:
        from rich.text import Text

        self._console().print(Text(message, style="yellow"))

    def _say_notice(self, message: str) -> None:
        from rich.text import Text

        self._console().print(Text(f"! {message}", style="bold yellow"))


@functools.cache
def _raw_prompt_class() -> type[Prompt]:
    """Build (once, importing rich lazily) a rich prompt that returns the line exactly as typed."""
    from rich.prompt import Prompt

    class _RawPrompt(Prompt):
        def process_response(self, value: str) -> str:
            return value  # rich strips the line by default; string arguments are typed raw

    return _RawPrompt


class _Kept(str):
    """A default value that can be told apart from the same text typed by the person."""

    __slots__ = ()
