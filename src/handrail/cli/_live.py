"""What ``handrail run`` and ``handrail resume`` show while the run goes: a spinner line, each call, the summary.

:class:`RunView` is both the run's observer and its streaming callback. As the observer it counts the model calls
(the step), sees the approvals asked with their decisions and the tool calls that run; as the callback it prints
the answer's text and each call (a :class:`~handrail.cli._common.Printer`), and turns the embedded model's
progress chunks (``meta["progress"]``, see ``handrail.components.generators.chat._progress``) into the spinner's
words: ``step 2 · reading the prompt (680 tokens)…``, ``step 2 · choosing a tool: search (14 tokens)…``.

The spinner is drawn only on a terminal, and stopped before anything else is printed (streamed text, a call, an
approval prompt), so it never garbles them. What the run was doing is kept for Ctrl-C (:meth:`interrupted`).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from handrail.cli._common import Printer, printable

__all__ = ["RunView", "describe_progress"]

_CONSOLE_UIS = ("console",)
"""``decided_by`` of the decisions the console prompt made (the person at this terminal)."""
_APPROVE_NONE = "approve-none"
"""``decided_by`` of the rejections of ``--approve none``."""
_LOADING = "loading the model"
"""What :attr:`RunView.doing` says before the run's first effect."""


def describe_progress(progress: dict[str, Any]) -> str:
    """What the model is doing, in words, from a ``meta["progress"]`` value: ``"choosing a tool: search (14 tokens)"``.

    The tool's name is the model's: escaped for the terminal.
    """
    if progress.get("phase") == "reading":
        new = int(progress.get("prompt_tokens") or 0) - int(progress.get("cached_tokens") or 0)
        return f"reading the prompt ({new} tokens)" if new > 0 else "reading the prompt"
    tokens = int(progress.get("tokens") or 0)
    count = f"{tokens} token{'s' if tokens != 1 else ''}"
    writing = progress.get("writing")
    if writing == "final_answer":
        return "writing the answer"
    if writing == "tool_call":
        tool = progress.get("tool")
        return f"choosing a tool: {printable(str(tool))} ({count})" if tool else f"choosing a tool ({count})"
    return f"thinking ({count})"


def _call_text(tool: str, arguments: Any, limit: int = 120) -> str:
    shown = json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments)
    return f"{printable(tool)}({printable(shown if len(shown) <= limit else shown[:limit] + ' …')})"


class RunView(Printer):
    """The run's observer and streaming callback in the terminal (see the module docstring).

    Args:
        console: The rich console everything is printed on.
        spinner: Draw the spinner (only on a terminal, never with ``--json``).
        step: The model calls the run made before this process continued it (a resumed snapshot's).
        rejected: Calls already rejected (a resumed snapshot's decisions): ``{call id: (tool, decision)}``.
    """

    def __init__(self, console: Any, *, spinner: bool, step: int = 0,
                 rejected: dict[str, tuple[str, Any]] | None = None) -> None:  # fmt: skip
        super().__init__(console)
        self.step = step
        """The model calls of the run so far (the current one included): the step shown."""
        self.rejected: dict[str, tuple[str, Any]] = dict(rejected or {})
        """The calls rejected, by call id: ``(tool name, the ToolExecutionDecision)``."""
        self.doing: str | None = _LOADING
        """What the model is doing now (``describe_progress``'s words), None while it is not called."""
        self.asking: list[str] = []
        """The calls waiting for a decision now, as ``tool(arguments)`` texts."""
        self.running: dict[str, str] = {}
        """The tool calls running now: ``{key: "tool(arguments)"}``."""
        self.run_info: Any = None
        """The run's RunInfo, once it started (its ``durable_id`` names the record it writes)."""
        self._spinner = spinner
        self._status: Any = None
        self._lock = threading.RLock()

    # -- the spinner ---------------------------------------------------------------------------------------------

    def show(self, text: str) -> None:
        """Show ``text`` on the spinner line (a terminal only); an open line of streamed text is ended first.

        The line is redrawn at once: the model's progress can change faster than the spinner turns.
        """
        if not self._spinner:
            return
        from rich.live import Live
        from rich.spinner import Spinner
        from rich.text import Text

        with self._lock:
            if self._status is None:
                self.end_text()
                spinner = Spinner("dots", text=Text(text), style="status.spinner")
                self._status = (Live(spinner, console=self.console, transient=True, refresh_per_second=12.5), spinner)
                self._status[0].start()
            else:
                self._status[1].update(text=Text(text))
                self._status[0].refresh()

    def hide(self) -> None:
        """Take the spinner line away (before anything else is printed)."""
        with self._lock:
            if self._status is not None:
                self._status[0].stop()
                self._status = None

    # -- the streaming callback ----------------------------------------------------------------------------------

    def __call__(self, chunk: Any) -> None:
        progress = chunk.meta.get("progress") if isinstance(chunk.meta, dict) else None
        if isinstance(progress, dict) and not chunk.content:
            self.doing = describe_progress(progress)
            self.show(f"step {self.step} · {self.doing}…")
            return
        if not chunk.content and chunk.tool_call_result is None:
            return  # a call's delta, a finish: nothing to print
        self.hide()
        result = chunk.tool_call_result
        if result is not None and result.origin.id in self.rejected:
            self.end_text()
            _, decision = self.rejected[result.origin.id]
            from rich.text import Text

            line = Text("✗ ", style="bold red")
            line.append(printable(result.origin.tool_name), style="bold red")
            line.append(f"({printable(_arguments(result.origin.arguments))}) ")
            line.append(f"rejected: {reason(decision)}", style="red")
            self.console.print(line)
            return
        super().__call__(chunk)

    # -- the observer --------------------------------------------------------------------------------------------

    def run_started(self, info: Any) -> None:
        """Keep the RunInfo (the durable record's id, for the resume command after Ctrl-C)."""
        self.run_info = info

    def started(self, event: Any) -> None:
        """A model call, an approval or a tool call starts: the spinner says so."""
        from handrail.components.effects import AskApproval, CallModel, ToolInvocation

        kind = type(event)
        if kind is CallModel:
            self.step += 1
            self.doing = "waiting for the model"
            self.show(f"step {self.step} · waiting for the model…")
        elif kind is AskApproval:
            self.asking = [_call_text(c.tool_name, c.arguments) for c in event.calls]
        elif kind is ToolInvocation:
            with self._lock:
                self.running[event.key] = _call_text(event.tool_name, event.arguments)
                shown = ", ".join(self.running.values())
            self.show(f"step {self.step} · running {shown}…")

    def ended(self, event: Any, ended: Any) -> None:
        """Keep the rejections of an approval; forget a call or model call that ended.

        One that Ctrl-C ended is kept: it is what :meth:`interrupted` names.
        """
        from handrail.components.effects import AskApproval, CallModel, ToolInvocation

        if isinstance(getattr(ended, "error", None), KeyboardInterrupt):
            return
        kind = type(event)
        if kind is CallModel:
            self.doing = None
        elif kind is AskApproval:
            self.asking = []
            for call, decision in zip(event.calls, ended.result or (), strict=False):
                if not getattr(decision, "execute", True) and call.call_id is not None:
                    self.rejected[call.call_id] = (call.tool_name, decision)
        elif kind is ToolInvocation:
            with self._lock:
                self.running.pop(event.key, None)

    # -- what to say at the end, or after Ctrl-C -----------------------------------------------------------------

    def counts(self, ran: dict[str, int]) -> str:
        """The summary's ``tools:`` part: every call made (rejected ones too), by name: ``search×2 (1 rejected)``."""
        refused = Counter(tool for tool, _ in self.rejected.values())
        names = sorted({*ran, *refused})
        parts = []
        for name in names:
            total = ran.get(name, 0) + refused.get(name, 0)
            if total:
                parts.append(f"{printable(name)}×{total}" + (f" ({refused[name]} rejected)" if refused[name] else ""))
        return ", ".join(parts) or "none"

    def refused_by_approve_none(self) -> list[str]:
        """The tools of the calls ``--approve none`` refused, one per call."""
        return [tool for tool, decision in self.rejected.values() if getattr(decision, "decided_by", None)
                == _APPROVE_NONE]  # fmt: skip

    def interrupted(self) -> str:
        """What Ctrl-C stopped: ``"Interrupted at step 2, while running search({...})."``."""
        if self.doing == _LOADING:
            return "Interrupted while loading the model."
        where = f"at step {self.step}" if self.step else "before the first step"
        if self.running:
            what = f"while running {', '.join(self.running.values())}"
        elif self.asking:
            what = f"while {', '.join(self.asking)} waited for your approval"
        elif self.doing == "waiting for the model":
            what = "while waiting for the model's reply"
        elif self.doing is not None:
            what = f"while the model was {self.doing}"
        else:
            what = "between two steps"
        return f"Interrupted {where}, {what}."


def _arguments(arguments: Any) -> str:
    return json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments)


def reason(decision: Any) -> str:
    """Why a call was rejected, for its ``✗`` line: the feedback, or who rejected it."""
    feedback = getattr(decision, "feedback", None)
    decided_by = getattr(decision, "decided_by", None)
    if decided_by == _APPROVE_NONE:
        return "--approve none runs no call that needs approval"
    if feedback:
        return printable(str(feedback))
    if decided_by and decided_by not in _CONSOLE_UIS:
        return f"by {printable(str(decided_by))}, no reason given"
    return "no reason given"
