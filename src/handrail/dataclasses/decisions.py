"""Human-in-the-loop decisions as data: what a UI answered and what will happen to a call."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from handrail.errors import ConfigurationError, ConfigurationTypeError

if TYPE_CHECKING:
    from handrail.dataclasses.chat_message import ToolCall

__all__ = ["ConfirmationAction", "ConfirmationUIResult", "ToolExecutionDecision", "MAX_DECIDED_BY_CHARS",
           "check_decided_by", "decided_by_problem"]  # fmt: skip

ConfirmationAction = Literal["confirm", "reject", "modify"]
_ACTIONS: tuple[str, ...] = get_args(ConfirmationAction)


def _check_str(owner: str, field: str, value: object, *, optional: bool) -> None:
    """Refuse a field that is not a str (or None, when ``optional``), naming the field and the type received."""
    if isinstance(value, str) or (optional and value is None):
        return
    expected = "a str or None" if optional else "a str"
    raise ConfigurationTypeError(f"{owner}.{field} must be {expected}, got {type(value).__name__} ({value!r:.80}).")


MAX_DECIDED_BY_CHARS = 200
"""The longest ``decided_by`` kept: a person's or a service's name, not a text."""

# Letters that render as nothing (Hangul fillers, the braille blank): a name made of them names nobody visibly.
_BLANK_LETTERS = frozenset("\u115f\u1160\u2800\u3164\uffa0")
_UNSEEN = frozenset({"Cf", "Mn", "Me"})  # format characters and lone combining marks: nothing of their own to see
_CONTROLS = frozenset({"Cc", "Cf", "Zl", "Zp"})  # control, format (bidi, zero-width), line/paragraph separators


def decided_by_problem(value: str) -> str | None:
    r"""Why ``value`` does not name somebody a person can read, or None when it does.

    A name is not empty, has at most :data:`MAX_DECIDED_BY_CHARS` characters, holds no control character
    (Unicode category Cc: NUL, ESC, a newline), no format character (Cf: a bidirectional mark, a zero-width
    space, a BOM) and no line or paragraph separator, and has at least one visible character (white space and
    blank-rendering fillers such as U+3164 or U+2800 and lone combining marks are not).

    Examples:
        >>> [decided_by_problem(v) is None for v in ("alice", "Zoë K.", "", " ", "\u200b", "a\nb", "\u3164")]
        [True, True, False, False, False, False, False]
    """
    if not value:
        return "is empty"
    if len(value) > MAX_DECIDED_BY_CHARS:
        return f"has {len(value):,} characters (at most {MAX_DECIDED_BY_CHARS})"
    if all(c.isspace() or c in _BLANK_LETTERS or unicodedata.category(c) in _UNSEEN for c in value):
        return f"is blank ({value!a}: no visible character)"
    bad = next((c for c in value if unicodedata.category(c) in _CONTROLS), None)
    if bad is not None:
        return f"holds the control or invisible character U+{ord(bad):04X}"
    return None


def check_decided_by(value: object, name: str) -> None:
    """Refuse a ``decided_by`` that is not None or a str naming somebody (:func:`decided_by_problem`; ``--by``).

    Args:
        value: The name given (None: not given, so the caller's default applies).
        name: What the value was given as, for the message (``"decided_by"``).

    Raises:
        ConfigurationTypeError: ``value`` is neither a str nor None.
        ConfigurationError: ``value`` is empty, blank, invisible, holds a control or format character, or is
            longer than :data:`MAX_DECIDED_BY_CHARS`: it would not record a readable decider.
    """
    if value is None:
        return
    if not isinstance(value, str):
        raise ConfigurationTypeError(f"{name} must be a str or None, got {type(value).__name__} ({value!r:.80}).")
    problem = decided_by_problem(value)
    if problem is not None:
        raise ConfigurationError(f"{name} {problem}; name who decided, or pass None for the default.")


@dataclass(frozen=True, slots=True)
class ConfirmationUIResult:
    """What a person answered when asked about one tool call.

    Raises:
        ConfigurationError: For an action other than confirm / reject / modify, or
            ``new_tool_params`` that is not a dict.
        ConfigurationTypeError: When ``feedback`` is not a str or None.
    """

    action: ConfirmationAction
    """``"confirm"`` (run as proposed), ``"reject"`` (do not run) or ``"modify"`` (run with new_tool_params)."""
    feedback: str | None = None
    """The person's raw text, if any (e.g. why they rejected)."""
    new_tool_params: dict[str, Any] | None = None
    """The edited arguments for ``modify`` (they replace the proposed ones, not merge)."""

    def __post_init__(self) -> None:
        if self.action not in _ACTIONS:
            raise ConfigurationError(
                f"ConfirmationUIResult.action must be one of {list(_ACTIONS)}, got {self.action!r}."
            )
        if self.new_tool_params is not None and not isinstance(self.new_tool_params, dict):
            raise ConfigurationError(
                f"ConfirmationUIResult.new_tool_params must be a dict, got {type(self.new_tool_params).__name__}."
            )
        _check_str("ConfirmationUIResult", "feedback", self.feedback, optional=True)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfirmationUIResult:
        """Rebuild from :meth:`to_dict` output."""
        return cls(**data)


@dataclass(frozen=True, slots=True)
class ToolExecutionDecision:
    """What happens to one tool call, which it names by ``tool_call_id`` (one decision per call).

    ``execute=True`` with ``final_tool_params`` None (or equal to the proposed arguments)
    confirms; ``execute=True`` with other params modifies (replaces, not merges);
    ``execute=False`` rejects. ``feedback`` is the person's raw text: the reject / modify /
    feedback templates are rendered when the decision is applied.

    Raises:
        ConfigurationError: When ``execute`` is not a bool, ``final_tool_params`` is not a dict of JSON data
            (SerializationError names the part that is not), ``tool_call_id`` is empty, or ``decided_by`` is
            empty or blank.
        ConfigurationTypeError: When ``tool_name`` is not a str, or ``tool_call_id``, ``feedback`` or
            ``decided_by`` is not a str or None.
    """

    tool_name: str
    """The tool the call is for."""
    execute: bool
    """Run the call (confirm or modify) or not (reject)."""
    tool_call_id: str | None = None
    """The call this decision answers; decisions are matched to calls by it."""
    feedback: str | None = None
    """The person's raw text, if any."""
    final_tool_params: dict[str, Any] | None = None
    """The arguments to run with (None = as proposed)."""
    decided_by: str | None = field(default=None, kw_only=True)
    """Who decided (a user name, "policy", a UI name), for the record."""

    def __post_init__(self) -> None:
        if not isinstance(self.execute, bool):
            raise ConfigurationError(f"ToolExecutionDecision.execute must be a bool, got {self.execute!r}.")
        if self.final_tool_params is not None and not isinstance(self.final_tool_params, dict):
            raise ConfigurationError(
                f"ToolExecutionDecision.final_tool_params must be a dict, got {type(self.final_tool_params).__name__}."
            )
        _check_str("ToolExecutionDecision", "tool_name", self.tool_name, optional=False)
        for name in ("tool_call_id", "feedback", "decided_by"):
            _check_str("ToolExecutionDecision", name, getattr(self, name), optional=True)
        if self.tool_call_id == "":
            raise ConfigurationError(
                "ToolExecutionDecision.tool_call_id is empty; give the id of the call it answers, or None."
            )
        if self.final_tool_params is not None:
            _check_params(self.final_tool_params)
        check_decided_by(self.decided_by, "ToolExecutionDecision.decided_by")

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolExecutionDecision:
        """Rebuild from :meth:`to_dict` output (unknown keys are refused)."""
        return cls(**data)

    def same_as(self, other: ToolExecutionDecision, proposed: Mapping[str, Any] | None = None) -> bool:
        """Whether this decision does to a call what ``other`` does: the one rule for "the same decision".

        The ledger, the snapshot stores and the Agent all decide with it whether a decision given again, or given
        beside a recorded one, is the recorded decision (nothing to do) or a different one (a conflict). Two
        decisions are the same when they:

        * name the same tool, and not two different calls (a ``tool_call_id`` of None matches any);
        * both run the call or both reject it;
        * when they run it, run it with the same arguments: ``final_tool_params`` None (as proposed) equals
          the ``proposed`` arguments, when given (a reject's ``final_tool_params`` are ignored: nothing runs);
        * carry the same feedback, an empty text being none.

        Who decided (``decided_by``) is not compared: the same decision recorded by somebody else is the same.

        Examples:
            >>> approve = ToolExecutionDecision("transfer", True, "c1", decided_by="ana")
            >>> approve.same_as(ToolExecutionDecision("transfer", True, "c1", final_tool_params={"amount": 5}),
            ...                 proposed={"amount": 5})
            True
            >>> approve.same_as(ToolExecutionDecision("transfer", False, "c1"))
            False
        """
        if not isinstance(other, ToolExecutionDecision):
            raise ConfigurationTypeError(
                f"same_as compares with a ToolExecutionDecision, got {type(other).__name__} ({other!r:.80})."
            )
        if proposed is not None and not isinstance(proposed, Mapping):
            raise ConfigurationTypeError(
                f"same_as's proposed must be a mapping or None, got {type(proposed).__name__}."
            )
        if self.tool_call_id is not None and other.tool_call_id is not None and self.tool_call_id != other.tool_call_id:
            return False
        return _effect(self, proposed) == _effect(other, proposed)

    @staticmethod
    def find(
        call: ToolCall,
        *,
        recorded: ToolExecutionDecision | None,
        given: Iterable[ToolExecutionDecision] = (),
        step_calls: Sequence[ToolCall] = (),
    ) -> ToolExecutionDecision | None:
        """The decision that answers ``call``: the one lookup order of recorded and given decisions.

        1. ``recorded``: the decision in the call's ledger entry;
        2. else the ``given`` decision (``AgentSnapshot.tool_execution_decisions``, ``handrail.resume(decisions=)``)
           whose ``tool_call_id`` is the call's id;
        3. else a given decision without ``tool_call_id`` for the call's tool, when the call is the only call of
           that tool among ``step_calls`` (decisions are matched by id, never by position).

        The record comes first because it is what the call was decided with: a store writes it atomically,
        first decision wins, and the run executes (or refuses) the call with it. A given decision can only answer
        a call the record leaves undecided; one that is not :meth:`same_as` the recorded decision is refused as a
        conflict where a run merges and checks the given decisions, so it never silently replaces the record, nor
        does a listing show a decision the run would not apply. The ledger (``Ledger.decision_for``), the stores
        (``recorded_decision``, ``awaiting_decision``) and the Agent's resume checks all look decisions up here.

        Raises:
            ConfigurationTypeError: ``call`` is not a ToolCall, ``recorded`` neither a ToolExecutionDecision nor
                None, or ``given`` / ``step_calls`` not a list (or other iterable) of ToolExecutionDecision /
                ToolCall.
        """
        given, step_calls = _checked_find_args(call, recorded, given, step_calls)
        if recorded is not None:
            return recorded
        unnamed: ToolExecutionDecision | None = None
        for decision in given:
            if decision.tool_call_id == call.id and decision.tool_call_id is not None:
                return decision
            if unnamed is None and decision.tool_call_id is None and decision.tool_name == call.tool_name:
                unnamed = decision
        if unnamed is not None and sum(c.tool_name == call.tool_name for c in step_calls) == 1:
            return unnamed
        return None


def _check_params(params: dict[str, Any]) -> None:
    """Refuse edited arguments that are not JSON data (a snapshot holds them); naming the part that is not.

    Arguments nested past ``MAX_DEPTH`` are let through here (a strategy may decide them; the model's are refused
    when parsed, and a snapshot refuses them when written).
    """
    from handrail.core.json_data import clip_path, json_problem
    from handrail.errors import SerializationError

    problem = json_problem(params)
    if problem is not None and "levels deep" not in problem[1]:
        where = clip_path(f"ToolExecutionDecision.final_tool_params{problem[0]}")
        raise SerializationError(f"{where}: {problem[1]}; the edited arguments must be JSON data.")


def _checked_find_args(
    call: object, recorded: object, given: object, step_calls: object
) -> tuple[list[ToolExecutionDecision], list[ToolCall]]:
    """Refuse arguments of :meth:`ToolExecutionDecision.find` of the wrong type; return given and step_calls."""
    from handrail.dataclasses.chat_message import ToolCall

    if not isinstance(call, ToolCall):
        raise ConfigurationTypeError(f"find's call must be a ToolCall, got {type(call).__name__} ({call!r:.80}).")
    if recorded is not None and not isinstance(recorded, ToolExecutionDecision):
        raise ConfigurationTypeError(
            f"find's recorded must be a ToolExecutionDecision or None, got {type(recorded).__name__} "
            f"({recorded!r:.80})."
        )
    checked: list[list[Any]] = []
    for name, value, kind in (("given", given, ToolExecutionDecision), ("step_calls", step_calls, ToolCall)):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
            raise ConfigurationTypeError(
                f"find's {name} must be a list of {kind.__name__}, got {type(value).__name__} ({value!r:.80})."
            )
        items = list(value)
        if not all(isinstance(item, kind) for item in items):
            raise ConfigurationTypeError(f"find's {name} must be a list of {kind.__name__}; it holds other objects.")
        checked.append(items)
    return checked[0], checked[1]


def _effect(decision: ToolExecutionDecision, proposed: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What a decision does to a call, for :meth:`ToolExecutionDecision.same_as`."""
    params = decision.final_tool_params if decision.execute else None
    if params is not None and proposed is not None and params == dict(proposed):
        params = None
    return decision.tool_name, decision.execute, params, decision.feedback or None
