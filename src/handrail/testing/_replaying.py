"""A recording as a regression test: :class:`ReplayChatGenerator` (the recorded replies) and :func:`replay`."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import IO, Any

from handrail.core._secret_values import mask_secrets
from handrail.core.component import component
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import StreamingCallback
from handrail.errors import ConfigurationTypeError, RecordingError, ReplayDivergedError, ScriptExhaustedError
from handrail.testing._recording_format import Recording, read_recording
from handrail.testing._replay_report import ReplayDivergence, ReplayResult, json_diff

__all__ = ["ReplayChatGenerator", "replay"]

Source = str | os.PathLike[str] | IO[str] | Recording


def _masked(value: Any, redact: Callable[[str], str] | None) -> Any:
    if isinstance(value, str):
        text = mask_secrets(value)
        return redact(text) if redact is not None else text
    if isinstance(value, dict):
        return {k: _masked(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, redact) for v in value]
    return value


def _default_redact() -> Callable[[str], str]:
    from handrail.hooks.redaction import RedactionHook

    return RedactionHook().redact


def _header_redaction(header: dict[str, Any]) -> Callable[[str], str] | None:
    """The patterns a recording's header says it was redacted with (the default ones, or those it lists)."""
    from handrail.hooks.redaction import RedactionHook

    steps: list[Callable[[str], str]] = []
    for step in header.get("redaction") or ():
        if step == "default":
            steps.append(_default_redact())
        elif isinstance(step, dict) and isinstance(step.get("patterns"), list):
            steps.append(RedactionHook(step["patterns"]).redact)

    def redact(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return redact if steps else None


def _replies(line: dict[str, Any], source: str) -> list[ChatMessage]:
    try:
        return [ChatMessage.from_dict({k: v for k, v in item.items() if k != "type"}) for item in line["result"]]
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise RecordingError(f"{source}, line {line.get('_line')}: a model reply cannot be read back: {exc}") from None


@component
class ReplayChatGenerator:
    r"""A chat generator that returns a recording's model replies in order, for regression tests.

    Each call returns the replies of the next recorded model call (across every run of the recording: a paused
    run, then the run that resumed it). With ``check_inputs`` each call's messages must be those recorded: a
    different input raises :class:`~handrail.errors.ReplayDivergedError` with a diff.

    Args:
        recording: A path, an open text file, or a :class:`Recording` (see :mod:`handrail.tracing.recording`).
        check_inputs: Compare each call's messages with the recorded ones.
        redact: The ``redact`` the recording was written with (applied to the inputs before they are compared;
            None: the patterns its header names, the default ones for a recording of ``handrail run --record``).

    Raises:
        RecordingError: The recording cannot be read (names the line).
        ConfigurationTypeError: ``recording`` or ``redact`` is of the wrong type.

    Examples:
        >>> import io, json
        >>> lines = [{"kind": "header", "format": 1}, {"kind": "run", "input": {"messages": []}},
        ...          {"kind": "effect", "n": 1, "effect": {"type": "call_model", "messages": [], "tools": []},
        ...           "result": [{"type": "message", **ChatMessage.from_assistant("4").to_dict()}]}]
        >>> gen = ReplayChatGenerator(io.StringIO("\n".join(json.dumps(line) for line in lines)))
        >>> gen.run([ChatMessage.from_user("2+2?")])["replies"][0].text
        '4'
    """

    def __init__(self, recording: Source, *, check_inputs: bool = False,
                 redact: Callable[[str], str] | None = None) -> None:  # fmt: skip
        if redact is not None and not callable(getattr(redact, "redact", redact)):
            raise ConfigurationTypeError(f"ReplayChatGenerator: redact must be a callable str -> str or a "
                                         f"RedactionHook, got {type(redact).__name__}.")  # fmt: skip
        read = read_recording(recording)
        self._lines = read.effects("call_model")
        self._source = read.source
        self._redact = getattr(redact, "redact", redact) if redact is not None else _header_redaction(read.header)
        self.check_inputs = check_inputs
        self.calls = 0
        """The calls made so far."""

    def _next(self, messages: list[ChatMessage]) -> dict[str, list[ChatMessage]]:
        if self.calls >= len(self._lines):
            raise ScriptExhaustedError(f"ReplayChatGenerator was called {self.calls + 1} times but the recording "
                                       f"{self._source} has {len(self._lines)} model calls.")  # fmt: skip
        line = self._lines[self.calls]
        self.calls += 1
        if self.check_inputs:
            expected = line["effect"].get("messages")
            actual = _masked([m.to_dict() for m in messages], self._redact)
            if actual != expected:
                shown, got = _masked(expected, _default_redact()), _masked(actual, _default_redact())
                divergence = ReplayDivergence(self.calls, self.calls, "model_input", {"messages": shown},
                                              {"messages": got}, json_diff(shown, got),
                                              int(line.get("_line", 0)))  # fmt: skip
                raise ReplayDivergedError(divergence.report(), divergence)
        return {"replies": _replies(line, self._source)}

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Any] | Any = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """The next recorded model call's replies, as ``{"replies": [...]}`` (nothing is streamed).

        Raises:
            ScriptExhaustedError: Called more often than the recording has model calls.
            ReplayDivergedError: With ``check_inputs``, ``messages`` are not the recorded input.
        """
        return self._next(messages)

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Any] | Any = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async twin of :meth:`run`."""
        return self._next(messages)

    def assert_complete(self) -> None:
        """Raise AssertionError when some recorded model calls were not replayed."""
        if self.calls < len(self._lines):
            raise AssertionError(f"ReplayChatGenerator: {len(self._lines) - self.calls} of {len(self._lines)} "
                                 f"recorded model calls were not replayed.")  # fmt: skip


def replay(recording: Source, agent: Any, *, redact: Any = None) -> ReplayResult:
    """Run ``agent`` again on ``recording`` and return a :class:`ReplayResult` (``.diverged``, ``.divergence``).

    No model, tool or person is asked: every model call, tool call and approval is answered from the recording;
    the first effect that differs from the recorded one ends the replay with a :class:`ReplayDivergence` (a
    unified diff of the JSON). ``assert not replay("run.jsonl", agent).diverged`` is a regression test. This is
    :func:`handrail.tracing.recording.replay` (loaded by name: it drives the Agent, which sits above this package).

    Raises:
        RecordingError: The recording cannot be read (names the line).
    """
    engine = importlib.import_module("handrail.tracing._replay")
    result: ReplayResult = engine.replay(recording, agent, redact=redact)
    return result
