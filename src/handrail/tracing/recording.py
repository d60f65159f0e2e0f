"""Run recordings: every effect of a run and its result, as JSON Lines, replayable without the model or the tools.

``agent.run(messages, recorder="run.jsonl")`` (or ``recorder=Recorder(path, redact=...)``, or ``handrail run
AGENT.yaml QUESTION --record run.jsonl``) writes one line per effect of the run: the model's inputs and replies,
the tool calls and their outcomes, the decisions on calls (who decided, and when), the hooks run, a pause and the
run that resumes it (appended to the same file). :func:`replay` runs the agent again on a recording, answering
every model call, tool call and approval from it, and reports the first place where the run does something else
(``handrail replay run.jsonl``). The format is described in ``docs/replay.md``.

A recording holds no key-like strings by default: known secret values (API keys, tokens handrail resolved) are
masked in every string, then what a :class:`~handrail.hooks.RedactionHook` masks with its default patterns
(``Recorder(path, redact=False)``: only the known secret values; ``redact=``: your own hook or callable).
This module does not need OpenTelemetry.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from typing import IO, Any

from handrail.components.drivers import Ended, RunInfo
from handrail.components.effects import (
    Effect,
    Emit,
    LoadStores,
    Pause,
    Persist,
    RunTools,
    ToolInvocation,
    to_json,
)
from handrail.errors import ConfigurationTypeError, RecordingError
from handrail.testing._recording_format import FORMAT_VERSION
from handrail.tracing._recording_json import (
    Redact,
    agent_redaction,
    chain,
    clean,
    default_redact,
    describe,
    error_text,
    now,
    redactor,
    result_json,
    run_input,
    tool_names,
    version,
)
from handrail.tracing._recording_target import Target, check_path, check_recording
from handrail.tracing._replay import ReplayDriver, replay

__all__ = ["Recorder", "ReplayDriver", "replay"]


class Recorder:
    """Writes a recording of the runs it observes (JSON Lines): a :class:`~handrail.components.drivers.RunObserver`.

    Give it to a run as ``agent.run(..., recorder=Recorder(path))`` (or ``recorder=path``): then it also records
    the run's own input (the messages given, before the system prompt is added), which a replay starts from, and
    the file is checked (and its header written) before the run starts. A fresh run starts a fresh recording (the
    file is overwritten); a run that resumes a snapshot appends to it (the recording of the run that paused), and
    so do the later runs given the same Recorder. A non-empty file that is not a recording is refused, neither
    overwritten nor appended to. One Recorder records one run at a time: a second run started
    while one is recording is refused (:class:`~handrail.errors.RecordingError`); give each concurrent run its own.

    What is masked: known secret values (the API keys and tokens handrail resolved) always; by default also what a
    :class:`~handrail.hooks.RedactionHook` masks with its default patterns (``sk-...`` keys, ``Bearer`` tokens, AWS,
    GitHub and Slack tokens, ``api_key=...``), after the run's Agent's own RedactionHook when it has one. The
    header says how (``"redaction"``), so that a replay masks what it compares the same way.

    Args:
        path_or_file: A path or an open text file (the header is written before the first run).
        redact: True (the default; None too): the Agent's RedactionHook, then the default patterns. False: only
            the known secret values. A :class:`~handrail.hooks.RedactionHook` (its patterns are kept in the header)
            or a callable ``str -> str`` (a replay needs it again: ``replay(..., redact=...)``) instead.
        append: None (the default): a resumed run appends, a fresh run overwrites. True: always append (to an
            empty file or a recording only). False: the first run overwrites.
        metadata: JSON data kept in the header (``handrail run --record`` keeps the agent file and its options).

    Raises:
        ConfigurationError: The path is empty, a directory, cannot be written, or its directory does not exist.
        ConfigurationTypeError: ``path_or_file`` or ``redact`` is of the wrong type.
        RecordingError: From the run: the file cannot be written, is not a recording to append to, or this
            Recorder is recording another run.
    """

    def __init__(
        self, path_or_file: str | os.PathLike[str] | IO[str], *, redact: Any = True, append: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        self._path = check_path(path_or_file)
        if append is not None and not isinstance(append, bool):
            raise ConfigurationTypeError(f"Recorder: append must be True, False or None, got {append!r}.")
        if append and self._path is not None:
            check_recording(self._path)
        self._target = Target(self._path, None if self._path is not None else path_or_file)  # type: ignore[arg-type]
        self._append = append
        self._given = redact if redact is not None else True
        if not isinstance(self._given, bool):
            redactor(self._given, "Recorder: redact")
        self._redact: Redact | None = None
        self._redaction: list[Any] = []
        self._choose_redaction(None)
        self._metadata = dict(metadata or {})
        self._lock = threading.Lock()
        self._header_written = False
        self._busy: str | None = None  # the run being recorded ("" until it has an id)
        self._runs: int | None = None
        self._request: dict[str, Any] | None = None
        self._n = 0
        self._durations: dict[str, float] = {}
        self._in_tools = False
        self._ledger_writes = 0
        self._info: RunInfo | None = None

    def _choose_redaction(self, agent: Any) -> None:
        own = agent_redaction(agent) if agent is not None and self._given is True else None
        if self._given is True:
            self._redaction = (["agent"] if own is not None else []) + ["default"]
            self._redact = chain([*([own] if own is not None else []), default_redact()])
        elif self._given is False:
            self._redaction, self._redact = [], None
        else:
            self._redaction, self._redact = [describe(self._given)], redactor(self._given, "Recorder: redact")

    @property
    def path(self) -> str | None:
        """The file written, when the Recorder was given a path."""
        return self._path

    def begin_request(self, agent: Any, arguments: Mapping[str, Any]) -> None:
        """Told by ``Agent.run(..., recorder=self)`` before the run starts: the Agent and the run's arguments.

        The file is checked and the header written here, so that a file that cannot be written, or a second run
        while one is being recorded, is refused before the run does anything.

        Raises:
            RecordingError: This Recorder is recording another run, the file cannot be written, or the run
                would append to a file that is not a recording.
        """
        with self._lock:
            if self._busy is not None:
                which = f"run {self._busy}" if self._busy else "a run"
                raise RecordingError(f"Recorder: this Recorder is recording {which}; give each concurrent run its "
                                     f"own Recorder.")  # fmt: skip
            self._busy = ""
        try:
            self._begin(agent, arguments)
        except BaseException:
            self._busy = None
            raise

    def _begin(self, agent: Any, arguments: Mapping[str, Any]) -> None:
        self._choose_redaction(agent)
        prompt = arguments.get("system_prompt") or getattr(agent, "system_prompt", None)
        digest = hashlib.sha256(prompt.encode()).hexdigest() if isinstance(prompt, str) else None
        self._request = {"tools": tool_names(agent), "system_prompt_sha256": digest,
                         "input": run_input(arguments) if arguments.get("snapshot") is None else None}  # fmt: skip
        if self._path is None or self._header_written:
            return
        resumed = arguments.get("snapshot") is not None
        fresh = not self._appends(resumed)
        check_recording(self._path, overwrite=fresh)
        if not fresh and self._has_header():
            self._header_written = True
            return
        snapshot = arguments.get("snapshot")
        point = arguments.get("break_point") or getattr(snapshot, "break_point", None)
        self._write_header(str(getattr(point, "agent_name", "") or ""), fresh=fresh, strict=True)

    def _appends(self, resumed: bool) -> bool:
        return self._append if self._append is not None else resumed

    def _write_header(self, agent_name: str, *, fresh: bool, strict: bool = False) -> None:
        request = self._request or {}
        self._write({"kind": "header", "time": now(), "format": FORMAT_VERSION, "handrail": version(),
                     "agent": agent_name, "tools": request.get("tools", []),
                     "system_prompt_sha256": request.get("system_prompt_sha256"),
                     "redacted": self._redact is not None, "metadata": self._metadata}, fresh=fresh, strict=strict,
                    raw={"redaction": clean(self._redaction, None)})  # fmt: skip  # its patterns, not redacted
        self._header_written, self._runs = True, 0

    # -- RunObserver ---------------------------------------------------------------------------------------------

    def run_started(self, info: RunInfo) -> None:
        """Write the header (a new file) and the run's ``run`` line."""
        self._info = info
        with self._lock:
            self._busy = info.run_id or ""
            if not self._header_written:  # not told by Agent.run(recorder=...): an observer of the run
                fresh = self._path is not None and not self._appends(info.resumed_from is not None)
                if fresh or not self._has_header():
                    self._write_header(info.agent_name, fresh=fresh)
            self._header_written = True
            request, self._request = self._request or {}, None
            self._runs = (self._runs if self._runs is not None else self._count_runs()) + 1
            self._n = 0
            line: dict[str, Any] = {"kind": "run", "time": now(), "run": self._runs, "run_id": info.run_id,
                                    "resumed_from": info.resumed_from}  # fmt: skip
            snapshot = getattr(info, "snapshot", None)
            if info.resumed_from is not None or snapshot is not None:
                line["decisions"] = [to_json(d) for d in getattr(info, "decisions", ())]  # who decided the held calls
                try:
                    line["snapshot"] = snapshot.to_dict() if snapshot is not None else None
                except ValueError as exc:  # a value the snapshot format refuses: this run cannot be replayed
                    line["snapshot"], line["snapshot_error"] = None, str(exc)
            else:
                line["input"] = request.get("input") or {"messages": [m.to_dict() for m in info.messages],
                                                         "as_started": True}  # fmt: skip
            self._write(line)

    def started(self, event: Effect | ToolInvocation) -> None:
        """A ``RunTools`` effect starts: what its calls tell (from worker threads) is kept for its line."""
        if type(event) is RunTools:
            with self._lock:
                self._in_tools, self._durations, self._ledger_writes = True, {}, 0

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        """Write the effect's line when it ends, with its result.

        What happens inside a ``RunTools`` effect (each call's end, the ledger's writes around the calls, told in
        the worker threads in the order the threads ran) goes into that effect's line, in the order of its calls.
        """
        if type(event) is ToolInvocation:
            with self._lock:
                self._durations[event.key] = ended.duration
            return
        if type(event) is Emit:
            return  # streamed chunks: the replies they make up are recorded
        with self._lock:
            if type(event) is Persist and self._in_tools:
                self._ledger_writes += 1
                return
            self._n += 1
            line: dict[str, Any] = {"kind": "effect", "time": now(), "n": self._n, "effect": to_json(event),  # type: ignore[arg-type]
                                    "result": result_json(ended.result), "duration": ended.duration}  # fmt: skip
            if type(event) is Pause:
                snapshot = getattr(ended.error, "snapshot", None)
                line["snapshot_id"] = getattr(snapshot, "snapshot_id", None)
            else:
                line["error"] = error_text(ended.error)
            if type(event) is LoadStores and self._info is not None:  # what the replay puts in the run's input
                line["messages"] = [m.to_dict() for m in self._info.messages]
            if type(event) is RunTools:
                line["call_durations"] = [self._durations.get(call.key) for call in event.calls]
                line["ledger_writes"] = self._ledger_writes
                self._in_tools, self._durations = False, {}
            self._write(line)

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        """Write the run's ``end`` line: its outcome and exit reason."""
        result = ended.result if isinstance(ended.result, dict) else {}
        with self._lock:
            self._busy = None
            self._write({"kind": "end", "time": now(), "outcome": info.outcome,
                         "exit_reason": result.get("exit_reason"),
                         "error": None if info.outcome == "paused" else error_text(ended.error)})  # fmt: skip

    # -- writing -------------------------------------------------------------------------------------------------

    def _write(self, line: dict[str, Any], *, fresh: bool = False, strict: bool = False,
               raw: dict[str, Any] | None = None) -> None:  # fmt: skip
        cleaned = {**clean(line, self._redact), **(raw or {})}
        text = json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._target.write(text, fresh=fresh, strict=strict)

    def _has_header(self) -> bool:
        if self._path is None:
            return False
        try:
            return os.path.getsize(self._path) > 0
        except OSError:
            return False

    def _count_runs(self) -> int:
        """The runs already in the file (a resumed run appends to the recording of the run that paused)."""
        if self._path is None or not self._has_header():
            return 0
        count = 0
        with open(self._path, encoding="utf-8", errors="replace") as stream:
            for text in stream:
                if '"kind":"run"' in text:
                    count += 1
        return count
