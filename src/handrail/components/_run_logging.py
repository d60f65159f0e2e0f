"""Structured run logs through :mod:`logging`: a run observer that writes to the ``handrail.run`` loggers.

Quiet by default: the drivers' built-in observer factory makes a :class:`RunLogger` for a run only while
``handrail.run`` is enabled for INFO (this module is imported then, not before). Every record has the
``extra`` fields ``event``, ``run_id``, ``durable_run_id``, ``step`` and ``tool_call_id`` (None where they do not
apply) and the fields of its event (:data:`FIELDS`), so a JSON formatter can pick them up; its message is a line a
person reads (``step 1 chat gpt-4o 0.80s in=120 out=20 finish=stop``).

Arguments, results and messages are never logged at INFO. At DEBUG a tool call's arguments and result are shown
as a short preview, known secret values masked and the :class:`~handrail.hooks.RedactionHook` default patterns
applied.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from handrail.components._json_text import json_text
from handrail.components._observed_words import decision_kind, mask_text, model_name
from handrail.components.drivers import Ended, RunInfo
from handrail.components.effects import (
    AskApproval,
    CallModel,
    Effect,
    Finish,
    LoadStores,
    Pause,
    Persist,
    RunHooks,
    ToolInvocation,
)

__all__ = ["FIELDS", "RUN_LOGGER", "RunLogger"]

RUN_LOGGER = "handrail.run"
"""The run records' logger; model calls, tool calls and approvals go to its children ``.model``, ``.tool``,
``.approval``."""

FIELDS = ("event", "run_id", "durable_run_id", "step", "tool_call_id", "tool_name", "duration", "ok", "error_type",
          "model", "input_tokens", "output_tokens", "finish_reason", "decision", "decided_by", "snapshot_id",
          "outcome", "exit_reason", "steps", "agent_name", "resumed_from", "conversation_id", "hook_point")  # fmt: skip
"""Every ``extra`` field a record may have (the first five are on every record)."""

_RUN = logging.getLogger(RUN_LOGGER)
_MODEL = logging.getLogger(RUN_LOGGER + ".model")
_TOOL = logging.getLogger(RUN_LOGGER + ".tool")
_APPROVAL = logging.getLogger(RUN_LOGGER + ".approval")

PREVIEW_CHARS = 200
"""The longest argument or result preview at DEBUG (then ``…``)."""


def _tokens(usage: object) -> tuple[int | None, int | None]:
    """Input and output tokens of a usage dict (OpenAI's names, or the GenAI ``input_tokens`` / ``output_tokens``)."""
    if not isinstance(usage, Mapping):
        return None, None
    found = []
    for names in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        value = next((usage[n] for n in names if n in usage), None)
        found.append(value if isinstance(value, int) and not isinstance(value, bool) else None)
    return found[0], found[1]


def _model_name(generator: object) -> str | None:
    """The model the spans name (``gen_ai.request.model``), else the generator's class."""
    if generator is None:
        return None
    return model_name(generator) or type(generator).__name__


def _error_text(error: BaseException, info: RunInfo | None = None) -> str:
    """``Type: message`` of ``error``, masked as a :func:`preview` is, cut at PREVIEW_CHARS."""
    return _cut(mask_text(f"{type(error).__name__}: {error}", info.redact if info is not None else None))


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def preview(value: Any, info: RunInfo | None = None) -> str:
    """``value`` as a short line for a DEBUG record: JSON (else repr), secrets masked, cut at PREVIEW_CHARS.

    Masked are the known secret values, then what the run's own redaction hooks mask (``info.redact``), then what
    :class:`~handrail.hooks.RedactionHook`'s default patterns match (also for a run without such a hook).
    """
    return _cut(mask_text(json_text(value), info.redact if info is not None else None))


def _s(seconds: float | None) -> str:
    return f"{seconds:.2f}s" if seconds is not None else "?s"


class RunLogger:
    """Logs one run: its start and end, each model call, tool call, approval and pause (made per run, not shared).

    The effect methods are told in the run's thread, the tool calls from worker threads: the step counter and the
    call names are written only in the run's thread, before the calls they describe start.
    """

    def __init__(self) -> None:
        self._info: RunInfo | None = None
        self._run_id = ""
        self._step = 0
        self._names: dict[str, str] = {}
        self._tokens: list[int | None] = [None, None]
        self._snapshot_id: str | None = None
        self._model: str | None = None

    def _durable_note(self) -> str:
        """`` durable_run_id=…`` once the run has a durable id it does not log under (a fresh run that paused).

        That id is the one the runs resuming it log under: grepping it finds this run's pause too.
        """
        durable = self._info.durable_id if self._info is not None else None
        return f" durable_run_id={durable}" if durable and durable != self._run_id else ""

    def _error(self, error: BaseException) -> str:
        return _error_text(error, self._info)

    # -- records ---------------------------------------------------------------------------------------------

    def _log(self, logger: logging.Logger, level: int, event: str, message: str, *args: object,
             call_id: str | None = None, **fields: Any) -> None:  # fmt: skip
        if not logger.isEnabledFor(level):
            return
        info = self._info
        extra = {"event": event, "run_id": self._run_id, "durable_run_id": info.durable_id if info else None,
                 "step": self._step or None, "tool_call_id": call_id, **fields}  # fmt: skip
        logger.log(level, message, *args, extra=extra)

    def run_started(self, info: RunInfo) -> None:
        """Log the run's start (its id, label, model, the snapshot it resumes)."""
        self._info, self._run_id, self._model = info, info.run_id, _model_name(info.generator)
        parts = [f" agent={info.agent_name}" if info.agent_name else "", f" model={self._model}" if self._model else "",
                 f" resumed from {info.resumed_from}" if info.resumed_from else ""]  # fmt: skip
        self._log(_RUN, logging.INFO, "run_started", "run %s started%s", self._run_id, "".join(parts),
                  agent_name=info.agent_name, model=self._model, resumed_from=info.resumed_from,
                  conversation_id=info.conversation_id)  # fmt: skip
        snapshot = info.snapshot
        if snapshot is not None:  # the resumed step goes on: a paused tool step is the step after those completed
            self._step = snapshot.step_count + (1 if snapshot.position == "tool_invoker" else 0)
            self._resumed_decisions(info, snapshot)

    def _resumed_decisions(self, info: RunInfo, snapshot: Any) -> None:
        """Log the decisions the resumed run is given (made while it was paused: by a person, a service)."""
        proposed = {c.id: c.arguments for m in snapshot.messages for c in m.tool_calls}
        for decision in info.decisions:
            call_id = decision.tool_call_id
            kind = decision_kind(decision, proposed.get(call_id))
            by = decision.decided_by
            self._log(_APPROVAL, logging.INFO, "approval_decided", "approval %s %s %s by %s (given to the resumed run)",
                      decision.tool_name, call_id, kind, by or "?", call_id=call_id, tool_name=decision.tool_name,
                      decision=kind, decided_by=by)  # fmt: skip

    def run_ended(self, info: RunInfo, ended: Ended) -> None:
        """Log how the run ended: outcome, exit reason, steps, tokens, its time (WARNING when it failed)."""
        result = ended.result if isinstance(ended.result, Mapping) else {}
        exit_reason = result.get("exit_reason")
        steps = result.get("step_count", self._step)
        tokens_in, tokens_out = _tokens(result["token_usage"]) if "token_usage" in result else self._tokens
        snapshot = self._snapshot_id if info.outcome == "paused" else None
        text = f"run {self._run_id} {info.outcome}"
        text += f" exit={exit_reason}" if exit_reason else ""
        text += f" steps={steps}"
        text += f" in={tokens_in}" if tokens_in is not None else ""
        text += f" out={tokens_out}" if tokens_out is not None else ""
        text += f" {_s(ended.duration)}"
        text += f" snapshot={snapshot}" if snapshot else ""
        text += self._durable_note()
        failed = info.outcome == "failed" and ended.error is not None
        error = ended.error
        text += f": {self._error(error)}" if failed and error is not None else ""
        self._log(_RUN, logging.WARNING if failed else logging.INFO, "run_ended", "%s", text, outcome=info.outcome,
                  exit_reason=exit_reason, steps=steps, input_tokens=tokens_in, output_tokens=tokens_out,
                  duration=ended.duration, snapshot_id=snapshot,
                  error_type=type(error).__name__ if failed and error is not None else None)  # fmt: skip

    # -- effects ---------------------------------------------------------------------------------------------

    def started(self, event: Effect | ToolInvocation) -> None:
        """Count the step at a model call; log an approval asked, a tool call's arguments (DEBUG)."""
        kind = type(event)
        if kind is CallModel:
            self._step += 1
        elif kind is ToolInvocation:
            assert isinstance(event, ToolInvocation)
            if _TOOL.isEnabledFor(logging.DEBUG):
                self._log(_TOOL, logging.DEBUG, "tool_arguments", "tool %s %s arguments %s", event.tool_name,
                          event.call_id, preview(event.arguments, self._info), call_id=event.call_id,
                          tool_name=event.tool_name)  # fmt: skip
        elif kind is AskApproval:
            assert isinstance(event, AskApproval)
            for call in event.calls:
                self._log(_APPROVAL, logging.INFO, "approval_asked", "approval asked: %s %s", call.tool_name,
                          call.call_id, call_id=call.call_id, tool_name=call.tool_name)  # fmt: skip

    def ended(self, event: Effect | ToolInvocation, ended: Ended) -> None:
        """Log the effect's end: a model call, a tool call, the decisions, a pause; hooks and writes at DEBUG."""
        kind = type(event)
        if kind is ToolInvocation:
            assert isinstance(event, ToolInvocation)
            self._tool_ended(event, ended)
        elif kind is CallModel:
            self._model_ended(ended)
        elif kind is AskApproval:
            assert isinstance(event, AskApproval)
            self._decided(event, ended)
        elif kind is Pause:
            assert isinstance(event, Pause)
            self._paused(event, ended)
        elif kind is RunHooks:
            assert isinstance(event, RunHooks)
            self._log(_RUN, logging.DEBUG, "hooks", "hooks %s %s", event.point, _s(ended.duration),
                      hook_point=event.point, duration=ended.duration)  # fmt: skip
        elif kind in (Persist, LoadStores, Finish):
            name = {Persist: "persist", LoadStores: "load_stores", Finish: "finish"}[kind]
            self._log(_RUN, logging.DEBUG, name, "%s %s", name, _s(ended.duration), duration=ended.duration)

    def _model_ended(self, ended: Ended) -> None:
        step = self._step
        if ended.error is not None:
            self._log(_MODEL, logging.WARNING, "model_call", "step %d chat %s failed %s: %s", step, self._model,
                      _s(ended.duration), self._error(ended.error), model=self._model, duration=ended.duration,
                      ok=False, error_type=type(ended.error).__name__)  # fmt: skip
            return
        replies = ended.result if isinstance(ended.result, tuple | list) else ()
        tokens_in = tokens_out = None
        finish = None
        for reply in replies:
            meta = getattr(reply, "meta", None) or {}
            got_in, got_out = _tokens(meta.get("usage"))
            tokens_in = got_in if tokens_in is None else tokens_in + (got_in or 0)
            tokens_out = got_out if tokens_out is None else tokens_out + (got_out or 0)
            finish = meta.get("finish_reason") if isinstance(meta.get("finish_reason"), str) else finish
            for call in getattr(reply, "tool_calls", ()):
                if call.id is not None:
                    self._names[call.id] = call.tool_name
        for index, count in enumerate((tokens_in, tokens_out)):
            if count is not None:
                self._tokens[index] = (self._tokens[index] or 0) + count
        text = f"step {step} chat {self._model} {_s(ended.duration)}"
        text += f" in={tokens_in}" if tokens_in is not None else ""
        text += f" out={tokens_out}" if tokens_out is not None else ""
        text += f" finish={finish}" if finish else ""
        self._log(_MODEL, logging.INFO, "model_call", "%s", text, model=self._model, duration=ended.duration, ok=True,
                  input_tokens=tokens_in, output_tokens=tokens_out, finish_reason=finish)  # fmt: skip

    def _tool_ended(self, event: ToolInvocation, ended: Ended) -> None:
        name, call_id = event.tool_name, event.call_id
        if ended.error is None:
            self._log(_TOOL, logging.INFO, "tool_call", "tool %s %s ok %s", name, call_id, _s(ended.duration),
                      call_id=call_id, tool_name=name, ok=True, duration=ended.duration)  # fmt: skip
            if _TOOL.isEnabledFor(logging.DEBUG):
                self._log(_TOOL, logging.DEBUG, "tool_result", "tool %s %s result %s", name, call_id,
                          preview(ended.result, self._info), call_id=call_id, tool_name=name)  # fmt: skip
            return
        self._log(_TOOL, logging.WARNING, "tool_call", "tool %s %s error %s: %s", name, call_id, _s(ended.duration),
                  self._error(ended.error), call_id=call_id, tool_name=name, ok=False, duration=ended.duration,
                  error_type=type(ended.error).__name__)  # fmt: skip

    def _decided(self, event: AskApproval, ended: Ended) -> None:
        if ended.error is not None:
            error = ended.error
            self._log(_APPROVAL, logging.WARNING, "approval_failed", "approval failed %s: %s", _s(ended.duration),
                      self._error(error), duration=ended.duration, error_type=type(error).__name__)  # fmt: skip
            return
        decisions = ended.result if isinstance(ended.result, tuple | list) else ()
        proposed = {c.call_id: c.arguments for c in event.calls}
        for decision in decisions:
            call_id = getattr(decision, "tool_call_id", None)
            kind = decision_kind(decision, proposed.get(call_id))
            by = decision.decided_by
            self._log(_APPROVAL, logging.INFO, "approval_decided", "approval %s %s %s by %s %s", decision.tool_name,
                      call_id, kind, by or "?", _s(ended.duration), call_id=call_id, tool_name=decision.tool_name,
                      decision=kind, decided_by=by, duration=ended.duration)  # fmt: skip

    def _paused(self, event: Pause, ended: Ended) -> None:
        snapshot = getattr(ended.error, "snapshot", None)
        snapshot_id = getattr(snapshot, "snapshot_id", None)
        self._snapshot_id = snapshot_id if isinstance(snapshot_id, str) else None
        held = ",".join(event.held) or "-"
        self._log(_RUN, logging.INFO, "pause", "paused at %s snapshot=%s waiting=%s%s", event.position,
                  self._snapshot_id, held, self._durable_note(), snapshot_id=self._snapshot_id)  # fmt: skip
        for call_id in event.held:
            name = self._names.get(call_id)
            self._log(_APPROVAL, logging.INFO, "approval_waiting", "approval waiting: %s %s snapshot=%s", name,
                      call_id, self._snapshot_id, call_id=call_id, tool_name=name,
                      snapshot_id=self._snapshot_id)  # fmt: skip
