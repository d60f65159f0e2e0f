"""The approval prompt of ``handrail run --approve ask``: rich's console UI, plus ``a`` (always allow the tool).

``a`` approves the call and every later call of the same tool in this run (the command's one run), without
asking; the prompt then says how to make that permanent in the agent file (``confirmation: {search: never}``).
The spinner line is taken away before the request is drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from handrail.cli._common import printable
from handrail.dataclasses.decisions import ConfirmationUIResult
from handrail.human_in_the_loop import RichConsoleUI
from handrail.human_in_the_loop.user_interfaces import _ANSWERS

__all__ = ["RunConsoleUI"]

_ALWAYS = ("a", "always")


class RunConsoleUI(RichConsoleUI):
    """RichConsoleUI with a fourth answer, ``a``: allow this tool for the rest of the run.

    Args:
        console: The command's console.
        agent_file: The agent file, named in the hint that makes the choice permanent.
        before_asking: Called before a request is drawn (it takes the spinner line away).
    """

    def __init__(self, console: Any, agent_file: Path, before_asking: Callable[[], None]) -> None:
        super().__init__(console=console)
        self.agent_file = agent_file
        self.before_asking = before_asking
        self.allowed: set[str] = set()
        """The tools the person allowed for the rest of the run (``a``): their calls are not asked."""
        self._tool = ""

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        """Confirm a call of an allowed tool at once; ask about any other (see RichConsoleUI)."""
        if tool_name in self.allowed:
            return ConfirmationUIResult("confirm")
        self.before_asking()
        self._tool = tool_name
        return super().get_user_confirmation(tool_name, tool_description, tool_params, injected_params)

    def _ask_action(self) -> Literal["confirm", "reject", "modify"]:
        tool = printable(self._tool)
        question = f"Execute this tool call? (y = yes, n = no, m = modify, a = always allow {tool} in this run)"
        while True:
            typed = self._read(question).strip().lower()
            if typed in _ALWAYS:
                self.allowed.add(self._tool)
                self._say(f"{tool} runs without asking for the rest of this run. To never ask for it, write "
                          f"'{tool}: never' under 'confirmation:' in {printable(str(self.agent_file))} "
                          f"(confirmation: {{{tool}: never}}).")  # fmt: skip
                return "confirm"
            answer = _ANSWERS.get(typed)
            if answer is not None:
                return answer
            self._say(f"Please answer y (yes), n (no), m (modify) or a (always allow {tool} in this run).")
