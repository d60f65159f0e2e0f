"""The three human-in-the-loop protocols: policy, UI and strategy.

A policy says whether to ask, a UI asks, a strategy turns the answer into a decision; the
split follows Haystack 2.x.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol, TypeGuard, runtime_checkable

from handrail.dataclasses.approval import DECISIONS, Decision, ExpiryAction
from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = [
    "ApprovalSettings",
    "ConfirmationPolicy",
    "ConfirmationStrategy",
    "ConfirmationUI",
    "PausingStrategy",
    "approval_settings",
    "is_pausing_strategy",
]


@runtime_checkable
class ConfirmationPolicy(Protocol):
    """Decides whether a person is asked before a tool call runs."""

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return True to ask a person about this call."""
        ...

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Learn from the answer (e.g. remember a confirmed argument set)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialize the configuration (never remembered decisions)."""
        ...


@runtime_checkable
class ConfirmationUI(Protocol):
    """Asks a person about one tool call (console, web page, chat, ...)."""

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        """Show the call and return the person's answer.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The model's arguments (editable).
            injected_params: Values the tool reads from State, shown read-only (an edit is refused).
        """
        ...


@runtime_checkable
class ConfirmationStrategy(Protocol):
    """Turns a tool call into a decision (asking a person where its policy says so)."""

    def run(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Return the decision for one call."""
        ...

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Async twin of :meth:`run`; must not block the event loop."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialize to the ``{type, init_parameters}`` envelope."""
        ...


@runtime_checkable
class PausingStrategy(Protocol):
    """A confirmation strategy that pauses the run instead of deciding (``BreakpointConfirmationStrategy``).

    The Agent does not call it: it holds the calls the strategy answers, runs the step's other calls, writes a
    snapshot into :attr:`snapshot_store` (or a directory, :attr:`snapshot_file_path`) with :attr:`metadata`, and
    raises ``HITLBreakpointException``; somebody decides later, and ``handrail.resume`` continues the run.
    A strategy is one when it has these attributes and :attr:`pauses_run` is True
    (:func:`is_pausing_strategy`).
    """

    pauses_run: bool
    """True: the run pauses for this strategy's calls (a class attribute, typically)."""
    snapshot_file_path: str | None
    """The directory snapshots are written into, or None when :attr:`snapshot_store` names the store."""
    snapshot_store: Any
    """The SnapshotStore object or store URL snapshots are written into, or None for the directory."""
    metadata: dict[str, Any]
    """JSON data copied into the metadata of every snapshot this strategy causes."""


def is_pausing_strategy(strategy: object) -> TypeGuard[PausingStrategy]:
    """Whether the Agent pauses the run for ``strategy``'s calls (a :class:`PausingStrategy`, ``pauses_run`` True)."""
    return isinstance(strategy, PausingStrategy) and strategy.pauses_run is True


MAX_EXPIRES_AFTER = timedelta(days=366)
"""The longest ``expires_after``: a year (leap or not). Longer is refused when the strategy is built (far longer
would not even fit a ``datetime`` from now); an approval that should wait for ever takes None."""


@dataclass(frozen=True, slots=True)
class ApprovalSettings:
    """What the approval record of a held call says besides the call: read by :func:`approval_settings`."""

    description: str = ""
    """The policy's text for the person (markdown); empty when it has none."""
    expires_after: timedelta | None = None
    """How long the approval stays open (from its creation); None: it never expires."""
    allowed_decisions: tuple[Decision, ...] = DECISIONS
    """What the person may decide (a non-empty subset of approve / edit / reject)."""
    on_expiry: ExpiryAction = "reject"
    """What an expiry decides: ``reject`` (fail closed, the default) or ``approve`` (only when set explicitly)."""


def check_approval_settings(
    description: object, expires_after: object, allowed_decisions: object, owner: str, on_expiry: object = None
) -> ApprovalSettings:
    """The settings, checked (ConfigurationError / ConfigurationTypeError naming ``owner`` and the field).

    ``on_expiry`` None is ``reject``; ``approve`` is refused unless ``approve`` is an allowed decision (an expiry
    may not decide what a person could not).
    """
    if description is not None and not isinstance(description, str):
        raise ConfigurationTypeError(f"{owner}: description must be a str or None, got {type(description).__name__}.")
    if expires_after is not None and (not isinstance(expires_after, timedelta) or expires_after <= timedelta(0)):
        raise ConfigurationError(f"{owner}: expires_after must be a positive timedelta or None, got {expires_after!r}.")
    if expires_after is not None and expires_after > MAX_EXPIRES_AFTER:
        raise ConfigurationError(
            f"{owner}: expires_after is at most 366 days, got {expires_after!r:.80} (for an approval that should "
            "stay open longer, use None: it never expires)."
        )
    if allowed_decisions is None:
        allowed_decisions = DECISIONS
    if (
        isinstance(allowed_decisions, str)
        or not isinstance(allowed_decisions, tuple | list | frozenset | set)
        or not allowed_decisions
        or any(d not in DECISIONS for d in allowed_decisions)
    ):
        raise ConfigurationError(
            f"{owner}: allowed_decisions must be a non-empty collection of {', '.join(DECISIONS)}, "
            f"got {allowed_decisions!r:.80} (an invalid setting never opens the gate: it is refused)."
        )
    chosen = tuple(d for d in DECISIONS if d in allowed_decisions)
    if on_expiry not in (None, "reject", "approve"):
        raise ConfigurationError(
            f"{owner}: on_expiry must be 'reject' or 'approve', got {on_expiry!r:.80} (an invalid setting never "
            "opens the gate: it is refused)."
        )
    action: ExpiryAction = "approve" if on_expiry == "approve" else "reject"
    if action == "approve" and "approve" not in chosen:
        raise ConfigurationError(
            f"{owner}: on_expiry='approve' needs 'approve' among allowed_decisions ({', '.join(chosen)}): an expiry "
            "may not decide what a person could not."
        )
    return ApprovalSettings(description or "", expires_after, chosen, action)


def approval_settings(strategy: object) -> ApprovalSettings:
    """A pausing strategy's approval settings: ``description``, ``expires_after``, ``allowed_decisions``, ``on_expiry``.

    Each attribute is optional (a strategy without one gets the default); when the strategy has none, those of
    its ``confirmation_policy`` are used, if it has one. An invalid value raises, never loosens the gate.
    """
    sources = [strategy, getattr(strategy, "confirmation_policy", None)]
    values: dict[str, Any] = {}
    for name in ("description", "expires_after", "allowed_decisions", "on_expiry"):
        for source in sources:
            value = getattr(source, name, None) if source is not None else None
            if value is not None:
                values[name] = value
                break
    return check_approval_settings(
        values.get("description"), values.get("expires_after"), values.get("allowed_decisions"),
        type(strategy).__name__, values.get("on_expiry"),
    )  # fmt: skip
