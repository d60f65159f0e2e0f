"""A confirmation strategy that pauses the run instead of asking: approval happens later, elsewhere.

:class:`BreakpointConfirmationStrategy` never asks a person now. Its optional ``confirmation_policy`` says which
calls need one (e.g. ``AskWhenPolicy("amount > 100")``; the others run, decided by "policy"); for those the Agent
writes a snapshot into the strategy's directory and raises
:class:`~handrail.dataclasses.breakpoints.HITLBreakpointException` to the caller. A person decides
later (``handrail approvals approve|reject``, or :func:`~handrail.human_in_the_loop.snapshots.record_decision`)
and the run continues with ``Agent.run(messages=[], snapshot=...)``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from handrail.core._files import check_directory_path
from handrail.core.serialization import object_from_dict, object_to_dict, qualified_name
from handrail.dataclasses.approval import DECISIONS, Decision, ExpiryAction
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.human_in_the_loop.types import ConfirmationPolicy, check_approval_settings, check_policy
from handrail.stores.types import SnapshotStore

if TYPE_CHECKING:
    from handrail.human_in_the_loop.strategies import ParamsValidator

__all__ = ["BreakpointConfirmationStrategy"]

_SETTINGS = ("description", "expires_after_seconds", "allowed_decisions", "on_expiry", "confirmation_policy", "quorum",
             "quorum_when", "initiator_may_approve")  # fmt: skip


class BreakpointConfirmationStrategy:
    """Pause the run for an asynchronous decision instead of asking now.

    The Agent recognises pausing strategies by the :class:`~handrail.human_in_the_loop.types.PausingStrategy`
    protocol (its attributes, and :attr:`pauses_run` True): it runs the
    calls of the step that need no approval, writes a snapshot file into :attr:`snapshot_file_path`
    (a directory, created on the first write) and raises ``HITLBreakpointException`` with the
    file's full path and the ids of every paused call. Called directly, :meth:`run` raises the
    exception without a snapshot (``snapshot_file_path=None``).

    Args:
        snapshot_file_path: The DIRECTORY the Agent writes snapshot files into (str or PathLike;
            stored as str). Not created here; an existing file there is refused (and again when a run starts).
        snapshot_store: Instead of a directory: a SnapshotStore (``handrail.stores``), or a URL that
            ``handrail.stores.open_snapshot_store`` understands (``sqlite:///approvals.db``,
            ``postgresql://...``), so several processes share the approvals.
        metadata: Free JSON data copied into every snapshot this strategy causes (e.g.
            ``{"agent_file": "/abs/path/agent.yaml"}``, which ``handrail resume`` reads).
        description: In a store that keeps approval records (the built-in ones): the text (markdown) each
            paused call's approval shows the person.
        expires_after: There: how long the approval stays open: at most 366 days (None: never).
        allowed_decisions: There: what the person may decide (default approve, edit and reject).
        on_expiry: There: what an expiry decides: ``"reject"`` (the default; fail closed, the model is told the
            request expired) or ``"approve"`` (only when set here, only if approve is allowed, never with a quorum).
        confirmation_policy: Which calls pause: those its ``should_ask`` says to ask about, e.g.
            ``AskWhenPolicy("amount > 100")``; the others run without a person (decided by "policy"). None (the
            default): every call pauses.
        quorum: There: how many distinct people must approve a call (1 to 20; default 1); one reject decides.
        quorum_when: There: a rule over the arguments (``"amount > 1000"``): the quorum applies only where it holds;
            elsewhere one approver is enough.
        initiator_may_approve: There: False forbids the run's initiator (``metadata["initiator"]`` of its snapshot,
            recorded by whoever starts the run) to approve or edit its calls; somebody else must.

    Raises:
        ConfigurationTypeError: When ``snapshot_file_path`` is not a str/PathLike, ``snapshot_store`` is a class or
            lacks the store methods, or ``metadata`` is not a dict.
        ConfigurationError: When both or neither of ``snapshot_file_path`` / ``snapshot_store`` are given, the path
            is empty or is an existing file (or lies inside one), ``metadata`` is not JSON-compatible, or a setting
            is invalid (a rule that does not parse, a quorum out of range, ``on_expiry="approve"`` with a quorum):
            an invalid setting never opens the gate.

    Examples:
        >>> strategy = BreakpointConfirmationStrategy("approvals", metadata={"ticket": 7})
        >>> try:
        ...     strategy.run(tool_name="transfer", tool_description="Move money.",
        ...                  tool_params={"amount": 5}, tool_call_id="c1")
        ... except Exception as exc:
        ...     print(type(exc).__name__, exc.tool_call_ids)
        HITLBreakpointException ['c1']
    """

    pauses_run: ClassVar[bool] = True
    """Tells the Agent that this strategy pauses the run (it never returns a decision)."""

    def __init__(
        self,
        snapshot_file_path: str | os.PathLike[str] | None = None,
        *,
        snapshot_store: SnapshotStore | str | None = None,
        metadata: dict[str, Any] | None = None,
        description: str | None = None,
        expires_after: timedelta | None = None,
        allowed_decisions: Sequence[Decision] | None = None,
        on_expiry: ExpiryAction | None = None,
        confirmation_policy: ConfirmationPolicy | None = None,
        quorum: int = 1,
        quorum_when: str | None = None,
        initiator_may_approve: bool = True,
    ) -> None:
        settings = check_approval_settings(
            description, expires_after, allowed_decisions, type(self).__name__, on_expiry, quorum=quorum,
            quorum_when=quorum_when, initiator_may_approve=initiator_may_approve,
        )  # fmt: skip
        if confirmation_policy is not None:
            check_policy(confirmation_policy, ("should_ask",))  # a pause never updates the policy after
        if (snapshot_file_path is None) == (snapshot_store is None):
            raise ConfigurationError(
                "BreakpointConfirmationStrategy needs exactly one of snapshot_file_path (a directory) and "
                "snapshot_store (a SnapshotStore, or a URL such as 'sqlite:///approvals.db' or 'postgresql://...')."
            )
        path: str | None = None
        if snapshot_file_path is not None:
            if not isinstance(snapshot_file_path, str | os.PathLike):
                raise ConfigurationTypeError(
                    f"snapshot_file_path must be a directory path (str or PathLike), "
                    f"got {type(snapshot_file_path).__name__}."
                )
            path = os.fspath(snapshot_file_path)
            if not isinstance(path, str) or not path.strip():
                raise ConfigurationError(f"snapshot_file_path must be a non-empty directory path, got {path!r}.")
            check_directory_path(path, f"{type(self).__name__} snapshot_file_path")
        if isinstance(snapshot_store, type):
            raise ConfigurationTypeError(
                f"snapshot_store is the class {snapshot_store.__name__!r}, not a store object; "
                f"pass an instance (or a URL such as 'sqlite:///approvals.db')."
            )
        if snapshot_store is not None and not isinstance(snapshot_store, str):
            missing = [
                m for m in ("create", "replace", "claim", "load") if not callable(getattr(snapshot_store, m, None))
            ]
            if missing:
                raise ConfigurationTypeError(
                    f"snapshot_store must be a SnapshotStore (handrail.stores) or a URL; "
                    f"{type(snapshot_store).__name__} has no {missing}."
                )
        if metadata is not None and not isinstance(metadata, dict):
            raise ConfigurationTypeError(f"metadata must be a dict or None, got {type(metadata).__name__}.")
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"metadata must be JSON-compatible (it is written to snapshots): {exc}") from exc
        self.snapshot_file_path: str | None = path
        """The directory snapshot files are written into (None when a snapshot_store is given)."""
        self.snapshot_store: SnapshotStore | str | None = snapshot_store
        """The SnapshotStore (or store URL) snapshots are written into, or None for a directory."""
        self.metadata: dict[str, Any] = copy.deepcopy(metadata) if metadata is not None else {}
        """Free JSON data copied into each snapshot's ``metadata``."""
        self.description: str | None = settings.description or None
        """The text (markdown) an approval record of a paused call shows the person, or None."""
        self.expires_after: timedelta | None = settings.expires_after
        """How long an approval record of a paused call stays open; None: it never expires."""
        self.allowed_decisions: tuple[Decision, ...] = settings.allowed_decisions
        """What a person may decide on a paused call (approve / edit / reject)."""
        self.on_expiry: ExpiryAction = settings.on_expiry
        """What an expiry of a paused call's approval decides (``reject`` unless set to ``approve``)."""
        self.confirmation_policy: ConfirmationPolicy | None = confirmation_policy
        """Which calls pause (None: every call)."""
        self.quorum: int = settings.quorum
        """How many distinct people must approve a paused call (where :attr:`quorum_when` holds, if set)."""
        self.quorum_when: str | None = settings.quorum_when
        """The rule that says where :attr:`quorum` applies (None: everywhere)."""
        self.initiator_may_approve: bool = settings.initiator_may_approve
        """False: the run's initiator may not approve or edit its calls."""

    def run(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        *,
        confirmation_strategy_context: dict[str, Any] | None = None,
        injected_params: dict[str, Any] | None = None,
        validate_params: ParamsValidator | None = None,
    ) -> ToolExecutionDecision:
        """Raise: the call waits for a decision made later (unless its policy says not to ask).

        Args:
            tool_name: The tool.
            tool_description: Its description (for the policy).
            tool_params: The arguments (for the policy; they are in the snapshot).
            tool_call_id: The paused call's id (None when the caller has none).
            confirmation_strategy_context: Accepted and ignored.
            injected_params: Accepted and ignored.
            validate_params: Accepted and ignored.

        Returns:
            Only where :attr:`confirmation_policy` says not to ask: the decision to run the call as proposed
            (``decided_by="policy"``).

        Raises:
            HITLBreakpointException: ``"Tool execution for '{tool_name}' requires user
                confirmation."`` with ``tool_name``, ``tool_call_id``, ``tool_call_ids`` (``[tool_call_id]``
                or ``[]``) and ``snapshot_file_path=None`` (the Agent raises its own, with the file).
        """
        policy = self.confirmation_policy
        if policy is not None and not policy.should_ask(tool_name, tool_description, tool_params):
            return ToolExecutionDecision(tool_name, True, tool_call_id, decided_by="policy")
        raise HITLBreakpointException(
            f"Tool execution for '{tool_name}' requires user confirmation.",
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            tool_call_ids=[tool_call_id] if tool_call_id is not None else [],
            snapshot_file_path=None,
        )

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
        injected_params: dict[str, Any] | None = None,
        validate_params: ParamsValidator | None = None,
    ) -> ToolExecutionDecision:
        """Async twin of :meth:`run`: raises ``HITLBreakpointException`` unless the policy says not to ask.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The arguments.
            tool_call_id: The paused call's id.
            confirmation_strategy_context: Accepted and ignored.
            injected_params: Accepted and ignored.
            validate_params: Accepted and ignored.

        Returns:
            What :meth:`run` returns.

        Raises:
            HITLBreakpointException: As :meth:`run`.
        """
        return self.run(tool_name=tool_name, tool_description=tool_description, tool_params=tool_params,
                        tool_call_id=tool_call_id)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Serialize to the envelope.

        Returns:
            ``{"type": <class path>, "init_parameters": {"snapshot_file_path": str | None, "metadata": dict}}``,
            plus ``"snapshot_store"`` (a URL or the store's own envelope) when one is set.

        Raises:
            SerializationError: A snapshot_store object without ``to_dict``.
        """
        store = self.snapshot_store
        if store is not None and not isinstance(store, str):
            to_dict = getattr(store, "to_dict", None)  # not part of the SnapshotStore protocol
            if not callable(to_dict):
                raise SerializationError(f"The snapshot_store {type(store).__name__} has no to_dict().")
            store = to_dict()
        params: dict[str, Any] = {"snapshot_file_path": self.snapshot_file_path}
        if store is not None:
            params["snapshot_store"] = store
        params["metadata"] = copy.deepcopy(self.metadata)
        if self.description is not None:
            params["description"] = self.description
        if self.expires_after is not None:
            params["expires_after_seconds"] = self.expires_after.total_seconds()
        if self.allowed_decisions != DECISIONS:
            params["allowed_decisions"] = list(self.allowed_decisions)
        if self.on_expiry != "reject":
            params["on_expiry"] = self.on_expiry
        if self.confirmation_policy is not None:
            params["confirmation_policy"] = object_to_dict(self.confirmation_policy)
        if self.quorum != 1:
            params["quorum"] = self.quorum
        if self.quorum_when is not None:
            params["quorum_when"] = self.quorum_when
        if not self.initiator_may_approve:
            params["initiator_may_approve"] = False
        return {"type": qualified_name(self), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BreakpointConfirmationStrategy:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is missing or an unknown parameter is present.
        """
        params = data.get("init_parameters") if isinstance(data, Mapping) else None
        if not isinstance(params, Mapping) or not ({"snapshot_file_path", "snapshot_store"} & set(params)):
            raise SerializationError(
                f"{cls.__name__} data needs init_parameters.snapshot_file_path or snapshot_store: {data!r:.200}"
            )
        unknown = sorted(set(params) - {"snapshot_file_path", "snapshot_store", "metadata", *_SETTINGS})
        if unknown:
            raise SerializationError(f"Cannot rebuild {cls.__name__}: unknown init parameters {unknown}.")
        store = params.get("snapshot_store")
        if isinstance(store, Mapping):
            store = object_from_dict(dict(store))
        seconds = params.get("expires_after_seconds")
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not abs(seconds) < 1e15
        ):  # a finite number timedelta can hold (a bound on it is checked by the constructor)
            raise SerializationError(f"{cls.__name__}: expires_after_seconds must be a number, got {seconds!r:.80}.")
        policy = params.get("confirmation_policy")
        if policy is not None:
            if not isinstance(policy, Mapping):
                raise SerializationError(f"{cls.__name__}: confirmation_policy must be an envelope, got {policy!r:.80}")
            policy = object_from_dict(dict(policy))
        return cls(
            params.get("snapshot_file_path"), snapshot_store=store, metadata=copy.deepcopy(params.get("metadata")),
            description=params.get("description"), allowed_decisions=params.get("allowed_decisions"),
            expires_after=None if seconds is None else timedelta(seconds=seconds), on_expiry=params.get("on_expiry"),
            confirmation_policy=policy, quorum=params.get("quorum", 1), quorum_when=params.get("quorum_when"),
            initiator_may_approve=params.get("initiator_may_approve", True),
        )  # fmt: skip

    def __repr__(self) -> str:
        where = f"snapshot_file_path={self.snapshot_file_path!r}"
        if self.snapshot_store is not None:
            where = f"snapshot_store={self.snapshot_store!r}"
        if self.confirmation_policy is not None:
            where += f", confirmation_policy={self.confirmation_policy!r}"
        return f"{type(self).__name__}({where})"
