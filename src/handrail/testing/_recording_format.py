"""The file format of run recordings (JSON Lines) and its reader: data and the standard library only.

:class:`handrail.tracing.recording.Recorder` writes a recording; the replay (``handrail.tracing.recording``, the
``handrail replay`` command) and :class:`handrail.testing.ReplayChatGenerator` read it with :func:`read_recording`.
It sits this low so that :mod:`handrail.testing` can read recordings without the layers above it.

Each line is one JSON object with a ``kind`` and a ``time`` (ISO 8601, UTC):

* ``header`` (the first line, once per file): ``format``, ``handrail`` (version), ``agent`` (the run's label),
  ``tools`` (the Agent's tool names), ``system_prompt_sha256`` (or null), ``redacted``, ``redaction`` (how it was
  masked: ``["default"]``, ``["agent", "default"]``, ``[{"patterns": [...]}]``, ``["custom"]``, ``[]``) and
  ``metadata``;
* ``run`` (each run, a resumed one too): ``run`` (its number in the file), ``run_id``, ``resumed_from`` and either
  ``input`` (a fresh run's messages and arguments) or ``snapshot`` (the snapshot a resumed run read);
* ``effect`` (each effect in the order the run yielded it): ``n``, ``effect`` (its JSON form), ``result`` (a list
  of JSON items, or null), ``error``, ``duration``; an ``ask_approval`` line says when the decisions came
  (``time``) and each decision who made it (``decided_by``); a ``pause`` line has the ``snapshot_id``;
* ``end`` (each run): ``outcome`` (done, paused, failed, closed), ``exit_reason`` and ``error``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from handrail.errors import ConfigurationTypeError, RecordingError

__all__ = ["FORMAT_VERSION", "Recording", "RecordedRun", "check_complete", "read_recording"]

FORMAT_VERSION = 1
"""The version of the recording format this handrail writes and reads."""

_KINDS = ("header", "run", "effect", "end")
_ANSWERED = ("call_model", "run_tools", "ask_approval")
"""The effects a replay answers from the recorded result (a line of one holds its result, or its error)."""
_EFFECT_TYPES = ("call_model", "run_tools", "ask_approval", "run_hooks", "load_stores", "persist", "pause", "finish",
                 "emit")  # fmt: skip


@dataclass(slots=True)
class RecordedRun:
    """One run of a recording: its ``run`` line, its ``effect`` lines in order, and its ``end`` line (if any)."""

    start: dict[str, Any]
    effects: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    line: int = 0
    """The line number of its ``run`` line (1-based)."""

    @property
    def resumed_from(self) -> str | None:
        """The id of the snapshot the run resumed, or None for a fresh run."""
        value = self.start.get("resumed_from")
        return value if isinstance(value, str) else None


@dataclass(slots=True)
class Recording:
    """A recording as read: its header and its runs (a paused run, then the run that resumed it, ...)."""

    header: dict[str, Any]
    runs: list[RecordedRun]
    source: str = "<recording>"
    """Where it was read from (a path, or ``<recording>``)."""

    def effects(self, effect_type: str) -> list[dict[str, Any]]:
        """The ``effect`` lines of every run whose effect is of ``effect_type`` (``"call_model"``, ...), in order."""
        return [e for run in self.runs for e in run.effects if e["effect"]["type"] == effect_type]


def _fail(source: str, line: int, text: str) -> RecordingError:
    return RecordingError(f"{source}, line {line}: {text}")


def _check_line(data: Any, source: str, number: int) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(source, number, f"a recording line is a JSON object, got {type(data).__name__}.")
    kind = data.get("kind")
    if kind not in _KINDS:
        raise _fail(source, number, f"unknown kind {kind!r:.60}; a recording line is one of {list(_KINDS)}.")
    if kind == "effect":
        effect = data.get("effect")
        if not isinstance(effect, dict) or effect.get("type") not in _EFFECT_TYPES:
            raise _fail(source, number, "an effect line has no valid 'effect' (an object with a known 'type').")
        if not isinstance(data.get("n"), int):
            raise _fail(source, number, "an effect line has no 'n' (its number in the run).")
        if "result" not in data:
            raise _fail(source, number, "an effect line has no 'result' (a list, or null).")
        result = data["result"]
        if result is not None and not isinstance(result, list):
            raise _fail(source, number, f"an effect's 'result' is a list or null, got {type(result).__name__}.")
        if result is None and effect["type"] in _ANSWERED and not data.get("error"):
            raise _fail(source, number, f"a {effect['type']} line has a null 'result' and no 'error'.")
    elif kind == "run" and not isinstance(data.get("input"), dict) and "snapshot" not in data:
        raise _fail(source, number, "a run line has neither 'input' (a fresh run) nor 'snapshot' (a resumed one).")
    elif kind == "end" and not isinstance(data.get("outcome"), str):
        raise _fail(source, number, "an end line has no 'outcome'.")
    return data


def _lines(stream: Iterable[str], source: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _fail(source, number, f"not JSON ({exc}); the file is not a recording, or was cut off.") from None
        yield number, _check_line(data, source, number)


def _parse(stream: Iterable[str], source: str) -> Recording:
    header: dict[str, Any] | None = None
    runs: list[RecordedRun] = []
    for number, data in _lines(stream, source):
        kind = data["kind"]
        if header is None:
            if kind != "header":
                raise _fail(source, number, "the first line of a recording is its header; this file has none.")
            version = data.get("format")
            if version != FORMAT_VERSION:
                raise _fail(source, number, f"recording format {version!r:.20} is not the one this handrail reads "
                                            f"({FORMAT_VERSION}).")  # fmt: skip
            header = data
        elif kind == "header":
            raise _fail(source, number, "a second header: two recordings were joined into one file.")
        elif kind == "run":
            runs.append(RecordedRun(data, line=number))
        elif not runs or runs[-1].end is not None:
            raise _fail(source, number, f"an '{kind}' line outside a run (no 'run' line before it).")
        elif kind == "effect":
            data["_line"] = number  # where a divergence report points
            runs[-1].effects.append(data)
        else:
            runs[-1].end = data
    if header is None:
        raise RecordingError(f"{source}: the recording is empty.")
    return Recording(header, runs, source)


def check_complete(recording: Recording) -> None:
    """Refuse a recording that cannot be replayed whole: no run in it, or its last run has no end line.

    Raises:
        RecordingError: The recording has no run, or stops before its last run's end (cut short).
    """
    if not recording.runs:
        raise RecordingError(f"{recording.source}: no run in it (only a header): nothing to replay.")
    last = recording.runs[-1]
    if last.end is None:
        after = last.effects[-1].get("_line", last.line) if last.effects else last.line
        raise RecordingError(f"{recording.source}: the recording stops after line {after} (no end line: cut short, "
                             f"or the run was still going).")  # fmt: skip


def read_recording(source: str | os.PathLike[str] | IO[str] | Recording) -> Recording:
    """Read a recording from a path or an open text file (a :class:`Recording` is returned as it is).

    Raises:
        RecordingError: The file cannot be read, or is not a recording: a line that is not JSON, a line of an
            unknown kind, no header, another format version (the message names the file and the line).
    """
    if isinstance(source, Recording):
        return source
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        try:
            with open(name, encoding="utf-8") as stream:
                return _parse(stream, name)
        except OSError as exc:
            raise RecordingError(f"{name}: cannot read the recording ({exc.strerror or exc}).") from None
        except UnicodeDecodeError:
            raise RecordingError(f"{name}: not a text file (not UTF-8): not a recording.") from None
    if isinstance(source, str | bytes) or not callable(getattr(source, "__iter__", None)):
        raise ConfigurationTypeError(f"recording must be a path, an open text file or a Recording, got "
                                     f"{type(source).__name__}.")  # fmt: skip
    return _parse(source, getattr(source, "name", "<recording>"))
