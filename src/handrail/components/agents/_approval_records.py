"""Approval records of a durable run: created when it pauses, and told when an approved call ran.

When a run pauses into a store that keeps approvals (:class:`~handrail.stores.approvals.ApprovalStore`: the
three built-in snapshot stores), :func:`open_approvals` creates one pending
:class:`~handrail.dataclasses.approval.Approval` per held call, after the snapshot is written: the effective
arguments (the ledger's: after hooks and State injection), what the person reads about the tool (its
``approval_description`` where it has one, as an MCP tool has: its server and hints; else its description) and
its parameter schema (the run's fingerprint), the strategy's settings
(:func:`~handrail.human_in_the_loop.types.approval_settings`), the step. Its id comes from the run id and the
call id, so a retried pause, or the same call held again on a later pause of the run, finds the record already
there (no duplicate); a held call whose approval is decided already gets that decision written into the new
snapshot (:func:`~handrail.stores._approval_decide.sync_snapshot`).

:class:`ExecutedTrail` appends the ``executed`` audit entry of an approved call once the ledger's record of its
outcome is durable. A store that is not an ApprovalStore (a user's own) gets neither: its runs work as before.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from handrail.dataclasses.approval import Approval, approval_id, args_digest
from handrail.dataclasses.approval_quorum import POLICY_KEY, RULE_ERROR_KEY
from handrail.dataclasses.chat_message import ToolCall
from handrail.dataclasses.decisions import decided_by_problem
from handrail.dataclasses.snapshot import AgentSnapshot, LedgerEntry
from handrail.errors import ApprovalNotFoundError, SnapshotUnavailableError, StoreError
from handrail.human_in_the_loop._approval_settings import team_policy
from handrail.human_in_the_loop.types import approval_settings
from handrail.stores._approval_decide import INJECTED_KEY, sync_snapshot
from handrail.stores.approvals import ApprovalStore

if TYPE_CHECKING:
    from handrail.components.agents._checkpoints import Checkpoints

__all__ = ["ExecutedTrail", "keeps_approvals", "open_approvals"]


def keeps_approvals(store: object) -> bool:
    """Whether ``store`` keeps approval records."""
    return store is not None and isinstance(store, ApprovalStore)


def _tool_info(snapshot: AgentSnapshot, tool_name: str) -> tuple[str, dict[str, Any]]:
    tools = snapshot.fingerprint.get("tools")
    info = tools.get(tool_name) if isinstance(tools, dict) else None
    if not isinstance(info, dict):
        return "", {"type": "object"}
    description = info.get("description")
    schema = info.get("parameters")
    return (description if isinstance(description, str) else ""), (schema if isinstance(schema, dict) else {})


def _initiator(snapshot: AgentSnapshot) -> str | None:
    """Who started the run: ``metadata["initiator"]`` of its snapshot (set by whoever starts it), if usable."""
    value = snapshot.metadata.get("initiator")
    if value is None:
        return None
    if not isinstance(value, str) or decided_by_problem(value) is not None or len(value) > 200:
        _warn(f"The snapshot {snapshot.snapshot_id} records an initiator that names nobody ({value!r:.80}); its "
              "approvals record none.")  # fmt: skip
        return None
    return value


def _new_approval(
    snapshot: AgentSnapshot,
    run_id: str,
    agent_name: str,
    call: ToolCall,
    entry: LedgerEntry | None,
    strategy: Any,
    described: str | None = None,
) -> Approval:
    settings = approval_settings(strategy)
    proposed = call.arguments if isinstance(call.arguments, dict) else {}
    arguments = dict(entry.arguments) if entry is not None else dict(proposed)
    description, schema = _tool_info(snapshot, call.tool_name)
    if isinstance(described, str) and described:  # the tool's own text for the approver (an MCP tool's server, hints)
        description = described
    team = team_policy(strategy, arguments)
    extra: dict[str, Any] = {}
    injected = sorted(k for k in arguments if k not in proposed)
    if injected:
        extra[INJECTED_KEY] = injected
    if team.policy is not None:
        extra[POLICY_KEY] = team.policy
    if team.error is not None:  # fail closed: the most approvers the policy asks; the person sees why
        extra[RULE_ERROR_KEY] = team.error
    now = datetime.now(UTC)
    return Approval.new(
        run_id=run_id, tool_call_id=call.id or "", snapshot_id=snapshot.snapshot_id or "", agent_name=agent_name,
        step=snapshot.step_count, tool_name=call.tool_name, tool_description=description, arguments=arguments,
        arguments_schema=schema, description=settings.description, created_at=now,
        allowed_decisions=settings.allowed_decisions,
        expires_at=None if settings.expires_after is None else now + settings.expires_after,
        on_expiry=settings.on_expiry, quorum=team.quorum, initiator=_initiator(snapshot),
        initiator_may_approve=settings.initiator_may_approve, extra=extra,
    )  # fmt: skip


def open_approvals(
    cp: Checkpoints,
    held: list[ToolCall],
    strategy_of: Callable[[str], Any] | None,
    description_of: Callable[[str], str | None] | None = None,
) -> None:
    """Create the approval records of the calls a pause holds (after its snapshot is written).

    Args:
        cp: The run's checkpoints (the store and the snapshot just written).
        held: The calls the pause holds.
        strategy_of: The strategy deciding a tool's calls, by tool name (its settings go on the record).
        description_of: What the person deciding a tool's calls reads about it, by tool name: its
            ``approval_description`` (an MCP tool's names its server and hints) where it has one; None, or None
            returned: the tool's description as the snapshot records it.
    """
    store, snapshot, run_id = cp.store, cp.last, cp.run_id
    if not held or not keeps_approvals(store) or snapshot is None or run_id is None or not snapshot.snapshot_id:
        return
    entries = cp.ledger.entries if cp.ledger is not None else {}
    fresh = [
        _new_approval(
            snapshot,
            run_id,
            cp.agent_name,
            call,
            entries.get(call.id),
            None if strategy_of is None else strategy_of(call.tool_name),
            None if description_of is None else description_of(call.tool_name),
        )
        for call in held
        if call.id
    ]
    # The snapshot is written and is the truth: nothing here may turn the pause into a crash. A record that
    # cannot be created or read (a damaged one of a call held again) is warned about, and the others still go.
    details = {"snapshot_id": snapshot.snapshot_id}
    try:
        # one write for the whole pause (SQL: one transaction): a record per held call cost a transaction each
        stored = store.create_approvals(fresh, details=details)
    except StoreError:
        stored = []
        for approval in fresh:  # the batch failed as a whole (SQL: rolled back): each on its own
            try:
                stored.append(store.create_approval(approval, details=details))
            except StoreError as exc:
                _warn(f"The approval record of call {approval.tool_call_id} ({approval.tool_name}) of the paused "
                      f"snapshot {snapshot.snapshot_id} was not created: {exc}")  # fmt: skip
    for existing in stored:
        if existing.terminal:  # decided before this pause reached the snapshot: the new snapshot gets it
            try:
                sync_snapshot(store, existing)
            except SnapshotUnavailableError:  # held by a resume now: it syncs when it pauses
                pass
            except StoreError as exc:
                _warn(f"The decision of approval {existing.id} was not written into the paused snapshot "
                      f"{snapshot.snapshot_id}: {exc}")  # fmt: skip


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


class ExecutedTrail:
    """Appends the ``executed`` audit entry of each approved call of the run once its outcome is durable."""

    def __init__(self, resumed: AgentSnapshot | None) -> None:
        old = resumed.ledger if resumed is not None else {}
        self.seen: set[str] = {cid for cid, e in old.items() if e.status in ("done", "failed")}
        self.started: dict[str, datetime] = {}

    def written(self, store: Any, run_id: str | None, ledger: Mapping[str, LedgerEntry]) -> None:
        """The ledger ``ledger`` is durable now: audit the approved calls that ended since the last write."""
        if run_id is None:
            return
        for call_id, entry in ledger.items():
            if call_id in self.seen or entry.decision is None or not entry.decision.execute:
                continue
            if entry.status == "running":
                self.started.setdefault(call_id, entry.updated_at)
            elif entry.status in ("done", "failed"):
                self.seen.add(call_id)
                self._audit(store, run_id, entry)

    def _audit(self, store: Any, run_id: str, entry: LedgerEntry) -> None:
        try:
            approval: Approval = store.get_approval(approval_id(run_id, entry.tool_call_id))
        except ApprovalNotFoundError:
            return  # decided at a console or by a policy: no record
        error = entry.status == "failed" or bool((entry.result or {}).get("error"))
        began = self.started.get(entry.tool_call_id)
        duration = None if began is None else max(0.0, (entry.updated_at - began).total_seconds() * 1000)
        try:
            store.append_audit(
                approval.id,
                at=entry.updated_at,
                outcome="error" if error else "ok",
                duration_ms=duration,
                args_digest=args_digest(entry.tool_name, entry.arguments, approval.snapshot_id),
            )
        except StoreError as exc:  # the outcome is durable in the snapshot; only its audit line is missing
            warnings.warn(f"The audit entry of approval {approval.id} was not written: {exc}", stacklevel=2)
