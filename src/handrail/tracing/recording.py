"""Run recordings: every effect of a run and its result, as JSON Lines, replayable without the model or the tools.

``agent.run(messages, recorder="run.jsonl")`` (or ``recorder=Recorder(path, redact=...)``, or ``handrail run
AGENT.yaml QUESTION --record run.jsonl``) writes one line per effect of the run: the model's inputs and replies,
the tool calls and their outcomes, the decisions on calls (who decided, and when), the hooks run, a pause and the
run that resumes it (appended to the same file). :func:`replay` runs the agent again on a recording, answering
every model call, tool call and approval from it, and reports the first place where the run does something else
(``handrail replay run.jsonl``). The format is described in ``docs/replay.md``.

A recording holds no secrets: known secret values (API keys, tokens handrail resolved) are masked in every string,
and the ``redact`` callable (a :class:`~handrail.hooks.RedactionHook`'s ``redact``) rewrites every string when set.
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
from handrail.errors import ConfigurationError
from handrail.testing._recording_format import FORMAT_VERSION
from handrail.tracing._recording_json import (
    agent_redaction,
    clean,
    error_text,
    now,
    redactor,
    result_json,
    run_input,
    tool_names,
    version,
)
from handrail.tracing._replay import ReplayDriver, replay

__all__ = ["Recorder", "ReplayDriver", "replay"]


class Recorder:
    """Writes a recording of the runs it observes (JSON Lines): a :class:`~handrail.components.drivers.RunObserver`.

    Give it to a run as ``agent.run(..., recorder=Recorder(path))`` (or ``recorder=path``): then it also records
    the run's own input (the messages given, before the system prompt is added), which a replay starts from. A run
    that resumes a snapshot recorded to the same path appends to the file. Record one run at a time with one
    Recorder (runs of several threads at once would interleave their lines).

    Args:
        path_or_file: A path (lines are appended; the header is written when the file is new or empty) or an open
            text file (the header is written before the first run).
        redact: A callable ``str -> str`` applied to every string written (after known secret values are
            masked), or a :class:`~handrail.hooks.RedactionHook` (its ``redact``). None: the run's Agent's own
            RedactionHook when it has one. A replay of a redacted recording uses the same ``redact`` (by default
            the replayed Agent's RedactionHook).
        metadata: JSON data kept in the header (``handrail run --record`` keeps the agent file and its options).

    Raises:
        ConfigurationError: The path is a directory, or its directory does not exist (before any run).
    """

    def __init__(
        self, path_or_file: str | os.PathLike[str] | IO[str], *, redact: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        self._path = os.fspath(path_or_file) if isinstance(path_or_file, str | os.PathLike) else None
        if self._path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(self._path))):
            raise ConfigurationError(f"Recorder: the directory of {self._path!r} does not exist; create it first.")
        if self._path is not None and os.path.isdir(self._path):
            raise ConfigurationError(f"Recorder: {self._path!r} is a directory; give the path of a file.")
        self._file: IO[str] | None = None if isinstance(path_or_file, str | os.PathLike) else path_or_file
        self._redact = redactor(redact)
        self._metadata = dict(metadata or {})
        self._lock = threading.Lock()
        self._header_written = False
        self._runs: int | None = None
        self._request: dict[str, Any] | None = None
        self._n = 0
        self._durations: dict[str, float] = {}
        self._in_tools = False
        self._ledger_writes = 0
        self._info: RunInfo | None = None

    @property
    def path(self) -> str | None:
        """The file written, when the Recorder was given a path."""
        return self._path

    def begin_request(self, agent: Any, arguments: Mapping[str, Any]) -> None:
        """Told by ``Agent.run(..., recorder=self)`` before the run starts: the Agent and the run's arguments.

        A Recorder given no ``redact`` takes the Agent's own :class:`~handrail.hooks.RedactionHook` (its first), so
        what the run masks is masked in the recording too.
        """
        if self._redact is None:
            self._redact = agent_redaction(agent)
        prompt = arguments.get("system_prompt") or getattr(agent, "system_prompt", None)
        digest = hashlib.sha256(prompt.encode()).hexdigest() if isinstance(prompt, str) else None
        self._request = {"tools": tool_names(agent), "system_prompt_sha256": digest,
                         "input": run_input(arguments) if arguments.get("snapshot") is None else None}  # fmt: skip

    # -- RunObserver ---------------------------------------------------------------------------------------------

    def run_started(self, info: RunInfo) -> None:
        """Write the header (a new file) and the run's ``run`` line."""
        request, self._request = self._request or {}, None
        self._info = info
        with self._lock:
            if not self._header_written and not self._has_header():
                self._write({"kind": "header", "time": now(), "format": FORMAT_VERSION, "handrail": version(),
                             "agent": info.agent_name, "tools": request.get("tools", []),
                             "system_prompt_sha256": request.get("system_prompt_sha256"),
                             "redacted": self._redact is not None, "metadata": self._metadata})  # fmt: skip
            self._header_written = True
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
            self._write({"kind": "end", "time": now(), "outcome": info.outcome,
                         "exit_reason": result.get("exit_reason"),
                         "error": None if info.outcome == "paused" else error_text(ended.error)})  # fmt: skip

    # -- writing -------------------------------------------------------------------------------------------------

    def _write(self, line: dict[str, Any]) -> None:
        text = json.dumps(clean(line, self._redact), ensure_ascii=False, separators=(",", ":")) + "\n"
        if self._path is not None:
            with open(self._path, "a", encoding="utf-8") as stream:
                stream.write(text)
        else:
            assert self._file is not None
            self._file.write(text)
            self._file.flush()

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
