"""The ``confirmation`` field of agent files: which calls ask a person, and the team policy of the approvals.

Per tool name (or ``'*'``) either a policy name (``always``, ``never``, ``once``) or a mapping::

    confirmation:
      search: never
      transfer:
        ask_when: amount > 100        # ask only when this rule over the arguments holds (or ask: always|once)
        quorum: 2                     # two distinct approvers ...
        quorum_when: amount > 1000    # ... where this rule holds (one elsewhere); one reject decides
        initiator_may_approve: false  # whoever started the run may not approve it
        allowed_decisions: [approve, reject]
        description: Pay the **invoice**?
        expires_after_seconds: 86400
        on_expiry: reject

A rule that does not parse or holds a construct a rule may not hold is refused when the file is read; one that
reads a name the tool does not take when the agent is built; each error names the file, the line and the field.
The team settings (quorum, initiator_may_approve, allowed_decisions) are the approval service's: at a console
(``approve="ask"``, one person who started the run) they cannot hold, so such a file is refused there rather than
asked more loosely than it says. ``approve="pause"`` and ``approve="workflow"`` (a Temporal worker's agents, whose
workflow asks) build ``BreakpointConfirmationStrategy`` objects that carry every setting.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from handrail.dataclasses.approval import DECISIONS
from handrail.specs._errors import SpecError, building

if TYPE_CHECKING:
    from handrail.human_in_the_loop.types import ConfirmationUI
    from handrail.stores.types import SnapshotStore

__all__ = [
    "ENTRY_TAGS",
    "WORKFLOW_DECIDES",
    "ConfirmationEntry",
    "ConfirmationValue",
    "RejectingUI",
    "WorkflowDecides",
    "asks_a_person",
    "default_strategy",
    "strategies",
]

PolicyName = Literal["always", "never", "once"]
Approve = Literal["ask", "all", "none", "pause", "workflow"]
ENTRY_TAGS = ("ConfirmationPolicyName", "ConfirmationEntry")
"""The union tags pydantic puts into error locations (left out of the field paths the messages name)."""


class ConfirmationEntry(BaseModel):
    """One tool's confirmation as a mapping: when to ask, and the team policy of its approvals."""

    model_config = ConfigDict(extra="forbid")

    ask: PolicyName | None = Field(
        None, description="always (the default), never, or once per distinct argument set; or give ask_when."
    )
    ask_when: str | None = Field(
        None, description="Ask only when this rule over the call's arguments holds, e.g. 'amount > 100'."
    )
    quorum: int = Field(
        1, ge=1, le=20, strict=True, description="Distinct approvers a call needs (one reject decides)."
    )
    quorum_when: str | None = Field(
        None,
        description="The quorum applies only where this rule holds, e.g. 'amount > 1000' (one approver elsewhere).",
    )
    initiator_may_approve: bool = Field(
        True, strict=True, description="false: whoever started the run may not approve or edit its calls."
    )
    allowed_decisions: list[Literal["approve", "edit", "reject"]] | None = Field(
        None, min_length=1, description="What a person may decide (default: approve, edit and reject)."
    )
    description: str | None = Field(None, description="The text (markdown) the approval shows the person.")
    expires_after_seconds: float | None = Field(
        None, gt=0, le=366 * 86400, description="How long an approval stays open (default: it never expires)."
    )
    on_expiry: Literal["reject", "approve"] | None = Field(
        None, description="What an expiry decides: reject (the default) or approve."
    )

    @field_validator("ask_when", "quorum_when")
    @classmethod
    def _rule(cls, value: str | None) -> str | None:
        from handrail.core._rules import compile_rule

        if value is not None:
            compile_rule(value)  # ConfigurationError (a ValueError): pydantic reports it at the field's line
        return value

    @model_validator(mode="after")
    def _one_way_to_ask(self) -> ConfirmationEntry:
        if self.ask is not None and self.ask_when is not None:
            raise ValueError("give ask (always, never, once) or ask_when (a rule), not both")
        return self

    @property
    def asks(self) -> bool:
        """Whether a call may ask a person (not ``ask: never``)."""
        return self.ask != "never"

    def team_settings(self) -> list[str]:
        """The settings a console cannot honour (more than one approver, the initiator barred, fewer decisions)."""
        found = ["quorum"] if self.quorum > 1 else []
        if not self.initiator_may_approve:
            found.append("initiator_may_approve")
        if self.allowed_decisions is not None and set(self.allowed_decisions) != set(DECISIONS):
            found.append("allowed_decisions")
        return found


def _tag(value: Any) -> str:
    return ENTRY_TAGS[1] if isinstance(value, dict | ConfirmationEntry) else ENTRY_TAGS[0]


ConfirmationValue = Annotated[
    Annotated[PolicyName, Tag(ENTRY_TAGS[0])] | Annotated[ConfirmationEntry, Tag(ENTRY_TAGS[1])],
    Discriminator(_tag),
]
"""A tool's ``confirmation``: a policy name or a :class:`ConfirmationEntry`."""


class RejectingUI:
    """A confirmation UI that rejects every call it is asked about (``--approve none``)."""

    label = "approve-none"

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> Any:
        """Reject the call with an explanation the model can read."""
        from handrail.dataclasses.decisions import ConfirmationUIResult

        return ConfirmationUIResult("reject")

    def to_dict(self) -> dict[str, Any]:
        """Serialize (no settings)."""
        return {"type": "handrail.specs.agent_spec.RejectingUI", "init_parameters": {}}


class WorkflowDecides:
    """Where the strategies of ``approve="workflow"`` pause: nowhere, a Temporal workflow decides their calls.

    The workflow replaces each strategy with its own asking (Updates) and reads the strategy's policy and settings
    (``allowed_decisions``, ``quorum``, ``expires_after``, ...), so no snapshot is ever written here. An agent built
    so and run by ``Agent.run`` would pause: that write is refused, naming why, instead of going anywhere.
    """

    url = "workflow:"

    def _refuse(self, *_: Any, **__: Any) -> Any:
        from handrail.errors import RunError

        raise RunError(
            "This agent was built with approve='workflow': a Temporal worker runs it and decides its calls. Run it "
            "there ('handrail worker --temporal'), or build it with approve='pause' and a snapshot store."
        )

    create = replace = claim = load = _refuse

    def __repr__(self) -> str:
        return "WorkflowDecides()"


WORKFLOW_DECIDES = WorkflowDecides()
"""The one :class:`WorkflowDecides` every ``approve="workflow"`` strategy names."""


class Pause(NamedTuple):
    """Where a pausing strategy writes (a directory or a store, one of them) and what it records."""

    directory: str | None
    store: SnapshotStore | str | None
    metadata: dict[str, Any]


_NOT_APPROVED = "Tool execution for '{tool_name}' was not approved: this session runs no call that needs approval."


def _entry(value: str | ConfirmationEntry) -> ConfirmationEntry:
    return value if isinstance(value, ConfirmationEntry) else ConfirmationEntry(ask=value)


def asks_a_person(confirmation: Mapping[str, str | ConfirmationEntry]) -> bool:
    """True when some tool may ask a person (anything but ``never``)."""
    return any(_entry(value).asks for value in confirmation.values())


def _policy(entry: ConfirmationEntry) -> Any:
    from handrail.human_in_the_loop import AlwaysAskPolicy, AskOncePolicy, AskWhenPolicy, NeverAskPolicy

    if entry.ask_when is not None:
        return AskWhenPolicy(entry.ask_when)
    return {"always": AlwaysAskPolicy, "never": NeverAskPolicy, "once": AskOncePolicy}[entry.ask or "always"]()


def _pausing(name: str, entry: ConfirmationEntry, pause: Pause) -> Any:
    from handrail.human_in_the_loop import BreakpointConfirmationStrategy

    at = ("confirmation", name)
    fields = [(*at, field) for field in ConfirmationEntry.model_fields if field in entry.model_fields_set]
    seconds = entry.expires_after_seconds
    with building(f"the confirmation of {name!r}", at, fields):
        return BreakpointConfirmationStrategy(
            pause.directory, snapshot_store=pause.store, metadata=pause.metadata,
            confirmation_policy=_policy(entry) if entry.ask_when is not None else None,
            quorum=entry.quorum, quorum_when=entry.quorum_when, initiator_may_approve=entry.initiator_may_approve,
            allowed_decisions=entry.allowed_decisions, description=entry.description, on_expiry=entry.on_expiry,
            expires_after=None if seconds is None else timedelta(seconds=seconds),
        )  # fmt: skip


def _asking(name: str, entry: ConfirmationEntry, approve: Approve, ui: ConfirmationUI | None) -> Any:
    from handrail.human_in_the_loop import BlockingConfirmationStrategy, RichConsoleUI

    barred = entry.team_settings() if approve == "ask" else []
    if barred:
        at = ("confirmation", name, barred[0])
        raise SpecError(
            f"confirmation.{name}.{barred[0]}: {', '.join(barred)} are settings of the approval service: a console "
            "asks one person, who started the run, so they cannot hold there. Run with approve='pause' "
            "(--approve pause and a store), or 'none'.",
            at,
        )
    if approve == "none":  # no person is asked: the rejection must not say "by the user"
        return BlockingConfirmationStrategy(confirmation_policy=_policy(entry), confirmation_ui=RejectingUI(),
                                            reject_template=_NOT_APPROVED)  # fmt: skip
    never_asks = approve in ("pause", "workflow")
    chosen = RejectingUI() if never_asks else (ui if ui is not None else RichConsoleUI())
    return BlockingConfirmationStrategy(confirmation_policy=_policy(entry), confirmation_ui=chosen)


def _check_names(name: str, entry: ConfirmationEntry, tools: Mapping[str, set[str]]) -> None:
    """Refuse a rule reading a name the tool does not take (under '*': that no tool takes), at the rule's line."""
    from handrail.core._rules import compile_rule

    names = set().union(*tools.values()) if name == "*" else tools.get(name, set())
    for field in ("ask_when", "quorum_when"):
        source = getattr(entry, field)
        if source is None:
            continue
        try:
            compile_rule(source, names=names, what=field)
        except ValueError as exc:
            raise SpecError(f"confirmation.{name}.{field}: {exc}", ("confirmation", name, field)) from None


def default_strategy(approve: Approve, ui: ConfirmationUI | None, pause: Pause | None) -> Any:
    """The strategy of calls that ask though no ``confirmation`` entry names them (MCP tools, by their hints).

    ``ask``: the console strategy of ``always`` (through ``ui``); ``all``: one that never asks; ``none``: one that
    rejects every call; ``pause`` and ``workflow``: a ``BreakpointConfirmationStrategy`` writing where the file's
    pausing tools write (``workflow``: nowhere, the workflow decides).

    Raises:
        ConfigurationError: The pause target (a caller's setting) is refused by the strategy.
    """
    from handrail.human_in_the_loop import BlockingConfirmationStrategy, BreakpointConfirmationStrategy, NeverAskPolicy

    if approve == "all":
        return BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui=RejectingUI())
    if pause is not None:
        return BreakpointConfirmationStrategy(pause.directory, snapshot_store=pause.store, metadata=pause.metadata)
    return _asking("*", ConfirmationEntry(ask="always"), approve, ui)


def strategies(
    confirmation: Mapping[str, str | ConfirmationEntry],
    tools: Mapping[str, set[str]],
    approve: Approve,
    ui: ConfirmationUI | None,
    pause: Pause | None,
    *,
    more_tools: bool = False,
) -> dict[str, Any] | None:
    """The confirmation strategies of an agent file's ``confirmation`` (None: nothing asks).

    ``tools`` maps each tool's name to the argument names its rules may read. ``more_tools``: the agent gets more
    tools when it runs (an MCP server's, known once connected), so a key that names none of ``tools`` is not
    refused, and the rules of such a key (and of ``'*'``) are not checked against argument names here: at run time
    a key that matches no tool is warned about, and a rule reading an argument the call lacks fails, which asks.

    Raises:
        SpecError: A key that is no tool, a setting a console cannot honour, or a strategy that refuses its
            settings; ``location`` is the field.
    """
    unknown = sorted(k for k in confirmation if k != "*" and k not in tools)
    if unknown and not more_tools:
        raise SpecError(
            f"confirmation: {unknown} are not tools of this agent (tools: {list(tools)}).", ("confirmation", unknown[0])
        )
    for name, value in confirmation.items():
        if not more_tools or (name != "*" and name in tools):
            _check_names(name, _entry(value), tools)
    if approve == "all" or not confirmation:
        return None
    built: dict[str, Any] = {}
    for name, value in confirmation.items():
        entry = _entry(value)
        if pause is not None and entry.asks:
            built[name] = _pausing(name, entry, pause)
        else:
            built[name] = _asking(name, entry, approve, ui)
    return built
