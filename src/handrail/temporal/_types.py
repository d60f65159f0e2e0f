"""The data a handrail workflow takes, answers and hands its activities (JSON through Temporal's converter).

Everything here is plain data (dataclasses of str, int, float, bool, lists and dicts): messages are
``ChatMessage.to_dict()``, tool outcomes and decisions ``handrail.components.effects.to_json``, State values the
typed JSON of snapshots. A field added later must have a default, so histories written by an older handrail still
decode (the replay tests hold saved histories).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DecisionInput", "HookInput", "ModelInput", "RunInput", "RunOptions", "ToolInput", "WORKFLOW_NAME"]

WORKFLOW_NAME = "handrail.AgentRun"
"""The workflow type every handrail run has (a durable contract: never renamed)."""


@dataclass
class RunOptions:
    """How a run treats what the engine cannot know: unknown outcomes, timeouts, history size."""

    unknown_outcome: str = "ask"
    """A tool call whose worker died while it ran: ``ask`` a person again (the default), ``fail`` (an error result
    the model reads), or ``retry`` (run it again: only for tools marked idempotent or taking a ToolCallId; others
    are asked)."""
    tool_timeout_seconds: float = 600.0
    """Start-to-close timeout of one tool call."""
    heartbeat_seconds: float = 2.0
    """A tool call whose worker stops heartbeating for this long is taken over by another worker."""
    model_timeout_seconds: float = 600.0
    """Start-to-close timeout of one model call (retried by ``model_attempts``)."""
    model_attempts: int = 3
    """How many times a model call is tried (model calls have no side effects)."""
    local_model_calls: bool = True
    """Model calls and hooks as local activities (one history event each instead of six); False: remote activities."""
    continue_after_events: int = 10_000
    """Continue as new (with the run's snapshot) before a model call once the history holds this many events."""


@dataclass
class RunInput:
    """What starts a run (or continues one as new)."""

    agent: str
    """The agent's name in the workers' catalog."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The input messages (``ChatMessage.to_dict()``); empty when ``snapshot`` is given."""
    state: dict[str, Any] = field(default_factory=dict)
    """State-schema values and user_prompt variables (typed JSON)."""
    initiator: str | None = None
    """Who started the run (may not approve its calls where a policy says so)."""
    options: RunOptions = field(default_factory=RunOptions)
    snapshot: dict[str, Any] | None = None
    """A snapshot to go on from (``AgentSnapshot.to_dict()``): continue-as-new, or a local run moved here."""
    decided: dict[str, str] = field(default_factory=dict)
    """Call ids decided in earlier runs of this chain and the decision's digest (a late duplicate is ignored)."""
    continued: int = 0
    """How many times this run continued as new."""
    usage: dict[str, int] = field(default_factory=dict)
    """Counts kept across continue-as-new: model calls, tool calls, approvals."""
    answered: dict[str, str] = field(default_factory=dict)
    """The digest of each question's final decision, by question number (``asked``), from earlier runs."""


@dataclass
class DecisionInput:
    """A decision on one held call (the ``decide`` Update)."""

    call_id: str
    decision: str
    """``approve``, ``reject`` or ``edit``."""
    decided_by: str
    """Who decided (the approval service passes its authenticated principal)."""
    arguments: dict[str, Any] | None = None
    """For ``edit``: the new arguments (checked against the tool's schema before the Update is accepted)."""
    feedback: str | None = None
    tool_name: str | None = None
    """When given, must be the call's tool (an edit cannot rename the tool)."""
    asked: int | None = None
    """The number of the question this decision answers (``asked`` in the status' ``waiting``): a call asked again
    after an unknown outcome is a new question, and a late repeat of the first answer must not answer it."""
    proposal: int | None = None
    """The version of the arguments the person saw (``proposal`` in the status): an approval of an older version
    (another approver edited the call since, under a quorum) is refused instead of approving what they never saw."""


@dataclass
class ModelInput:
    agent: str
    messages: str
    """The model input as JSON text (a list of ``ChatMessage.to_dict()``): each message is encoded once per run,
    and a string goes through the payload converter without the deep copy a nested dataclass field costs."""
    tools: list[str]
    run_id: str
    step: int = 0
    """The number of this model call in the run (1 for the first, across continue-as-new; 0: not known), for the
    ``chat`` span's ``handrail.step``."""


@dataclass
class ToolInput:
    agent: str
    run_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    """The model's (approved, possibly edited) arguments."""
    injected: dict[str, Any] = field(default_factory=dict)
    """State-injected values (typed JSON)."""
    key: str = ""
    """The idempotency key given to a ToolCallId parameter."""
    again: bool = False
    """Run again although the ledger says an earlier attempt started (a person or the retry policy said so)."""
    unknown_outcome: str = "ask"


@dataclass
class HookInput:
    agent: str
    point: str
    state: dict[str, Any]
    """The run's State (typed JSON; messages as dicts)."""
