"""The replay of a recording: a RunDriver that answers every effect from the recording and compares as it goes.

What is compared, in order: the model calls (their input messages and the tools offered), the tool calls, the
approvals asked, the hooks run, loading the stores and the pauses. What is answered from the recording without
running anything: the model's replies, the tools' outcomes, the decisions, the messages the stores loaded. The
hooks run (they are the agent's own code, and may rewrite the input). ``Persist`` and ``Finish`` (durable
bookkeeping) and ``Emit`` (streaming) are answered without running and not compared: a replay writes no store
and needs none. A ``Pause`` ends the replay of its run; the recording's next run, which resumed it, is replayed
from the snapshot it read (kept in its ``run`` line).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from handrail.components.effects import (
    AskApproval,
    CallModel,
    Effect,
    LoadStores,
    Pause,
    RunHooks,
    RunTools,
    from_json,
    to_json,
)
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationTypeError, RecordingError, ReplayDivergedError
from handrail.testing._recording_format import RecordedRun, Recording, check_complete, read_recording
from handrail.testing._replay_report import DivergenceKind, ReplayDivergence, ReplayResult, json_diff

__all__ = ["ReplayDriver", "replay"]

COMPARED = frozenset({"call_model", "run_tools", "ask_approval", "run_hooks", "load_stores", "pause"})
"""The effects a replay compares with the recording (the others are bookkeeping: answered, not compared)."""


@dataclass(slots=True)
class Progress:
    """How far a replay got: effects matched and model calls made, over every run of the recording."""

    matched: int = 0
    steps: int = 0


def _kind(expected: dict[str, Any] | None, actual: dict[str, Any] | None) -> DivergenceKind:
    types = {d.get("type") for d in (expected, actual) if d is not None}
    if expected is None or actual is None:
        return "decision_point" if types & {"ask_approval", "pause"} else "steps"
    if types & {"ask_approval", "pause"}:
        return "decision_point"
    if types == {"call_model"}:
        return "model_input"
    if types == {"run_tools"}:
        return "tool_calls"
    return "hooks" if types == {"run_hooks"} else "effect"


class ReplayDriver:
    """Drives one run answering every effect from ``recorded`` (one run of a recording); raises at a divergence.

    Args:
        recorded: The recorded run.
        redact: The ``redact`` the recording was written with (the replay's effects are cleaned the same way
            before they are compared).
        progress: Counts shared by the runs of one replay (a fresh one when None).
        source: The recording's name, for the errors about its lines.

    Raises:
        ReplayDivergedError: From :meth:`drive`, at the first effect that differs (``.divergence``).
    """

    def __init__(self, recorded: RecordedRun, *, redact: Any = None, progress: Progress | None = None,
                 source: str = "<recording>") -> None:  # fmt: skip
        from handrail.tracing._recording_json import redactor

        self._recorded = recorded
        self._source = source
        self._redact: Callable[[str], str] | None = redactor(redact)
        self.progress = progress if progress is not None else Progress()
        self.paused = False
        """True when the replayed run stopped at a (recorded) pause."""
        self.failed: str | None = None
        """The recorded error of the effect the recorded run failed at (the replay stops there too)."""

    def drive(self, run: Any) -> Any:
        """Drive ``run`` (``agent.start(...)``) to its end; returns its result (None when it paused or failed)."""
        from handrail.tracing._recording_json import clean

        expected = [e for e in self._recorded.effects if e["effect"]["type"] in COMPARED]
        position = 0
        result: Any = None
        while True:
            effect = run.send(result)
            actual = clean(to_json(effect), self._redact) if effect is not None else None
            if actual is not None and actual["type"] not in COMPARED:
                result = None  # Persist, Finish, Emit: nothing durable is written, nothing streamed
                continue
            line = expected[position] if position < len(expected) else None
            if line is None and actual is None:
                return run.result
            if line is None or line["effect"] != actual:
                self._diverge(line, actual)
            assert line is not None and effect is not None
            position += 1
            self.progress.matched += 1
            if type(effect) is CallModel:
                self.progress.steps += 1
            if line.get("error"):
                self.failed = str(line["error"])
                return None
            if type(effect) is Pause:
                self.paused = True
                return None
            result = self._answer(effect, line, run)

    def _answer(self, effect: Effect, line: dict[str, Any], run: Any) -> Any:
        match effect:
            case CallModel() | RunTools() | AskApproval():
                try:
                    return [from_json(item) for item in line.get("result") or []]
                except ValueError as exc:
                    raise RecordingError(f"{self._where(line)}: {exc}") from None
            case RunHooks():
                return run.context.run_hooks(effect)
            case LoadStores():
                messages = line.get("messages")
                if isinstance(messages, list):
                    run.messages[:] = [ChatMessage.from_dict(m) for m in messages]
                return None
        return None

    def _where(self, line: dict[str, Any]) -> str:
        return f"{self._source}, line {line.get('_line')}"

    def _diverge(self, line: dict[str, Any] | None, actual: dict[str, Any] | None) -> None:
        from handrail.tracing._recording_json import masked_for_display

        expected = masked_for_display(line["effect"]) if line is not None else None  # the report shows no key
        actual = masked_for_display(actual)
        model_call = any(d is not None and d["type"] == "call_model" for d in (expected, actual))
        divergence = ReplayDivergence(
            step=max(1, self.progress.steps + model_call),
            effect=self.progress.matched + 1, kind=_kind(expected, actual), expected=expected, actual=actual,
            diff=json_diff(expected, actual), line=int(line.get("_line", 0)) if line is not None else 0,
        )  # fmt: skip
        raise ReplayDivergedError(divergence.report(), divergence)


_OPTIONS = ("system_prompt", "generation_kwargs", "chat_message_store_kwargs", "memory_store_kwargs")
"""The run arguments a recording keeps in its ``input`` (JSON data), given back to the replayed run."""


def _start(agent: Any, recorded: RecordedRun, source: str) -> Any:
    """Start the run to replay: a fresh run from its recorded input, a resumed one from the snapshot it read."""
    from handrail.core import _typed_json as typed_json
    from handrail.dataclasses.snapshot import AgentSnapshot

    start = recorded.start
    where = f"{source}, line {recorded.line}"
    try:
        if "snapshot" in start:
            if not isinstance(start["snapshot"], dict):
                raise RecordingError(f"{where}: a resumed run's line does not hold the snapshot it read.")
            snapshot = AgentSnapshot.from_dict(start["snapshot"])
            return agent.start([], snapshot=snapshot, allow_drift=True)
        given = start.get("input")
        if not isinstance(given, dict) or not isinstance(given.get("messages"), list):
            raise RecordingError(f"{where}: a run's line has no 'input' with its messages.")
        messages = [ChatMessage.from_dict(m) for m in given["messages"]]
        kwargs = {k: typed_json.decode_value(v, f"kwargs[{k!r}]") for k, v in (given.get("kwargs") or {}).items()}
        options = {k: given[k] for k in _OPTIONS if given.get(k) is not None}
    except RecordingError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise RecordingError(f"{where}: the run's input cannot be read back: {exc}") from None
    return agent.start(messages, **options, **kwargs)


def replay(recording: str | os.PathLike[str] | IO[str] | Recording, agent: Any, *, redact: Any = None) -> ReplayResult:
    """Run ``agent`` again on ``recording``: the model, the tools and the people are answered from it.

    Every run of the recording is replayed in order (a paused run, then the run that resumed it, ...). Nothing is
    called but the agent's hooks; no store is written.

    Args:
        recording: A path, an open text file, or a :class:`~handrail.testing.Recording`.
        agent: The Agent to replay (changed since the recording, or not).
        redact: The ``redact`` the recording was written with (None: as its header says: the default patterns,
            the patterns of its RedactionHook, the replayed Agent's RedactionHook).

    Returns:
        A :class:`~handrail.testing.ReplayResult`: ``.diverged``, ``.divergence`` (the first one, with a diff),
        ``.matched`` and ``.steps``.

    Raises:
        RecordingError: The recording cannot be read (names the line), has no run, or stops before its last run's
            end line (cut short).
        ConfigurationTypeError: ``agent`` is not an Agent (a path: build the Agent of the file first).
    """
    from handrail.tracing._recording_json import replay_redaction

    if not callable(getattr(agent, "start", None)):
        raise ConfigurationTypeError(
            f"replay: agent must be an Agent, got {type(agent).__name__}; for an agent file, build it first "
            f"(handrail.specs.build_agent(handrail.specs.load_agent_spec(path))) or run 'handrail replay FILE "
            f"--agent AGENT.yaml'."
        )
    read = read_recording(recording)
    check_complete(read)
    if redact is None:
        redact = replay_redaction(read.header, agent)
    progress = Progress()
    result: dict[str, Any] | None = None
    for recorded in read.runs:
        driver = ReplayDriver(recorded, redact=redact, progress=progress, source=read.source)
        try:
            with _start(agent, recorded, read.source) as run:
                result = driver.drive(run)
        except ReplayDivergedError as exc:
            divergence = exc.divergence if isinstance(exc.divergence, ReplayDivergence) else None
            return ReplayResult(progress.matched, progress.steps, divergence, None)
        if driver.failed is not None:
            break
    return ReplayResult(progress.matched, progress.steps, None, result)
