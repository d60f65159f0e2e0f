"""Checks and preparation for breakpoints and resuming.

Everything here runs before a run's first effect: a bad breakpoint, a snapshot in use, conflicting
decisions or a changed agent definition raise before anything is called or written.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterable, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.components.agents._decision_checks import (
    check_decision_types,
    check_decisions,
    merge_decisions,
    unspent,
)
from handrail.core._files import check_directory_path
from handrail.core.serialization import serialize_type
from handrail.errors import (
    ConfigurationError,
    ConfigurationTypeError,
    SnapshotDriftError,
    SnapshotError,
)
from handrail.human_in_the_loop.types import is_pausing_strategy
from handrail.tools.tool import Tool

if TYPE_CHECKING:
    from handrail.dataclasses.breakpoints import AgentBreakpoint
    from handrail.dataclasses.snapshot import AgentSnapshot
    from handrail.stores.types import Lease

__all__ = ["check_break_point", "check_consistency", "check_decision_types", "check_decisions", "check_drift",
           "claim_snapshot", "fingerprint_of", "let_go", "pausing_store"]  # fmt: skip


def fingerprint_of(tools: list[Tool], agent: Any) -> dict[str, Any]:
    """The parts of the agent definition a snapshot depends on: resuming after they change needs ``allow_drift``.

    Returns:
        ``{"tools": {name: {"description", "parameters"}}, "system_prompt", "user_prompt",
        "exit_conditions", "state_schema": {key: type string}}`` — never the chat generator, its
        settings, callbacks, stores, hooks or strategies.
    """
    fingerprint = {
        "tools": {t.name: {"description": t.description, "parameters": t.parameters} for t in tools},
        "system_prompt": agent.system_prompt,
        "user_prompt": agent.user_prompt if agent.user_prompt is None else str(agent.user_prompt),
        "exit_conditions": list(agent.exit_conditions),
        "state_schema": {k: serialize_type(v["type"]) for k, v in (agent.state_schema or {}).items()},
    }
    normalized: dict[str, Any] = json.loads(json.dumps(fingerprint, default=str))  # as it reads back from a file
    return normalized


def check_drift(recorded: Mapping[str, Any], current: Mapping[str, Any], name: str, allow_drift: bool) -> None:
    """Refuse to resume against a changed agent definition, showing what changed.

    Raises:
        SnapshotDriftError: The fingerprints differ and ``allow_drift`` is False; the message holds a
            unified diff (``-`` the snapshot's definition, ``+`` the agent's now).
    """
    if allow_drift or dict(recorded) == dict(current):
        return
    before = json.dumps(recorded, indent=2, sort_keys=True, default=str, ensure_ascii=False).splitlines()
    after = json.dumps(current, indent=2, sort_keys=True, default=str, ensure_ascii=False).splitlines()
    diff = "\n".join(difflib.unified_diff(before, after, "snapshot", "agent now", lineterm="", n=2))
    raise SnapshotDriftError(
        f"The agent changed since snapshot {name} was taken; resuming could run calls against a different "
        f"definition. Pass allow_drift=True to resume anyway. Changes:\n{diff}"
    )


def check_break_point(break_point: Any, tool_names: set[str] | None) -> AgentBreakpoint | None:
    """Accept an AgentBreakpoint or a bare Breakpoint / ToolBreakpoint (wrapped with agent_name "").

    Args:
        break_point: The run's ``break_point`` argument.
        tool_names: The run's tool names, or None when a Toolset may still grow.

    Raises:
        ConfigurationTypeError: Not a breakpoint.
        ConfigurationError: A ToolBreakpoint for a tool the run does not have.
    """
    if break_point is None:
        return None
    from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint, ToolBreakpoint

    if isinstance(break_point, Breakpoint):
        break_point = AgentBreakpoint("", break_point)
    if not isinstance(break_point, AgentBreakpoint):
        raise ConfigurationTypeError(
            f"break_point must be an AgentBreakpoint, Breakpoint or ToolBreakpoint, got {type(break_point).__name__}."
        )
    inner = break_point.break_point
    named = inner.tool_name if isinstance(inner, ToolBreakpoint) else None
    if named is not None and tool_names is not None and named not in tool_names:
        raise ConfigurationError(
            f"Tool '{named}' is not available in the agent's tools (available: {sorted(tool_names)})."
        )
    return break_point


def pausing_store(strategies: Mapping[Any, Any] | None, break_point: AgentBreakpoint | None) -> tuple[Any, bool]:
    """The one snapshot store of a run.

    Named by its pausing strategies (a store, a store URL or a directory) and its breakpoint's directory.

    Returns:
        ``(store or None, True when the run opened it and must close it)``.

    Raises:
        ConfigurationError: Two different stores or directories are named (a run writes to one store), or a
            directory named is an existing file (or lies inside one): refused before the run's first effect.
    """
    found: dict[str, tuple[str, Any]] = {}
    for key, strategy in (strategies or {}).items():
        if not is_pausing_strategy(strategy):
            continue
        store = strategy.snapshot_store
        if store is not None and not isinstance(store, str):
            found.setdefault(f"object {id(store)}", (f"the strategy for {key!r}", store))
        elif isinstance(store, str):
            found.setdefault(store, (f"the strategy for {key!r}", store))
        else:
            directory = str(strategy.snapshot_file_path)
            check_directory_path(directory, f"The snapshot_file_path of the strategy for {key!r}")
            where = str(Path(directory).resolve())
            found.setdefault(where, (f"the strategy for {key!r}", where))
    if break_point is not None and break_point.break_point.snapshot_file_path:
        inner, directory = break_point.break_point, break_point.break_point.snapshot_file_path
        check_directory_path(directory, f"The break_point's {type(inner).__name__} snapshot_file_path")
        where = str(Path(directory).resolve())
        found.setdefault(where, ("the break_point", where))
    if len(found) > 1:
        listed = "; ".join(f"{who}: {name}" for name, (who, _) in found.items())
        raise ConfigurationError(f"One run writes its snapshots to one store, but several are named: {listed}.")
    if not found:
        return None, False
    _, target = next(iter(found.values()))
    if not isinstance(target, str):
        return target, False
    from handrail.stores._snapshot_locations import open_snapshot_store

    return open_snapshot_store(target), True


def _modules(value: Any, out: set[str], depth: int = 0) -> None:
    """Top-level packages of the classes inside ``value`` (trusted already: the caller loaded them)."""
    if depth > 50 or value is None or type(value) in (str, int, float, bool, bytes):
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            _modules(k, out, depth + 1)
            _modules(v, out, depth + 1)
        return
    if isinstance(value, list | tuple | set | frozenset):
        for v in value:
            _modules(v, out, depth + 1)
        return
    out.add(type(value).__module__.split(".")[0])
    if dataclasses.is_dataclass(value) and not isinstance(value, type | Enum):
        for f in dataclasses.fields(value):
            _modules(getattr(value, f.name), out, depth + 1)


def trusted_modules(snapshot: AgentSnapshot, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Module prefixes a resumed run may import from its own snapshot file.

    Those of the values the caller already holds, plus ``extra``.
    """
    found: set[str] = set(extra)
    _modules(snapshot.state, found)
    found.discard("builtins")
    return tuple(sorted(found))


def claim_snapshot(
    snapshot: AgentSnapshot, extra_modules: Iterable[str] = ()
) -> tuple[AgentSnapshot, Any, Lease | None]:
    """Claim a snapshot's record for this run and read it again (the store, not the object, is the truth).

    The record is reached through ``snapshot.store`` when it is set (the very object: its overrides run), else
    through a store opened from ``snapshot.location`` (any registered scheme). The caller's
    ``tool_execution_decisions`` are added to those recorded in the store.

    Returns:
        ``(the snapshot to resume, its store, the claim held until the run ends)``; ``(snapshot, None, None)``
        for a snapshot that has no record.

    Raises:
        SnapshotUnavailableError: Another process is resuming it (exit code 5); SnapshotFinishedError: its run
            finished; SnapshotResumedError: it was resumed already (both exit code 2, worded as the command words
            them).
        DecisionConflictError: The caller's decision for a call differs from the one recorded in the store.
    """
    if snapshot.location is None:
        return snapshot, None, None
    if snapshot.store is not None:
        store, snapshot_id = snapshot.store, snapshot.snapshot_id or ""
    else:
        from handrail.stores._snapshot_locations import store_for_location

        store, snapshot_id = store_for_location(snapshot.location,
                                                allowed_modules=trusted_modules(snapshot, extra_modules))  # fmt: skip
    name = f"'{snapshot_id}' ({snapshot.location})"
    lease = store.claim(snapshot_id)
    try:
        stored = store.load(snapshot_id)
        if stored.status in ("done", "resumed"):  # SnapshotFinishedError, SnapshotResumedError: exit code 2
            from handrail.stores._snapshot_common import unavailable_error

            ended = unavailable_error(stored, held=True)
            assert ended is not None
            raise ended
        given = unspent(stored, snapshot.tool_execution_decisions)
        recorded = unspent(stored, stored.tool_execution_decisions)
        decisions = merge_decisions(recorded, given, name, stored.pending_tool_calls)
        return dataclasses.replace(stored, tool_execution_decisions=decisions, store=snapshot.store), store, lease
    except BaseException:
        let_go(lease, None if store is snapshot.store else store)
        raise


def let_go(lease: Lease | None, store: Any) -> None:
    """Release a claim and close the store it was taken in (a store without ``close`` is left as is)."""
    if lease is not None:
        lease.release()
    close = getattr(store, "close", None)
    if callable(close):
        close()


def check_consistency(snapshot: AgentSnapshot) -> None:
    """Refuse a snapshot whose parts contradict each other (e.g. a hand-edited file), before anything runs.

    Raises:
        SnapshotError: Named part and what is wrong.
    """
    where = f"Snapshot '{snapshot.snapshot_id or 'in memory'}'"
    if not snapshot.messages:
        raise SnapshotError(f"{where} holds no messages; there is nothing to resume.")
    for key in ("step_count",):
        value = snapshot.state.get(key, 0)
        if type(value) is not int or value < 0:
            raise SnapshotError(f"{where}: state[{key!r}] must be a non-negative int, got {value!r}.")
    for key in ("token_usage", "tool_call_counts"):
        if not isinstance(snapshot.state.get(key, {}), dict):
            raise SnapshotError(f"{where}: state[{key!r}] must be a dict, got {snapshot.state.get(key)!r}.")
    if snapshot.position == "tool_invoker":
        last = snapshot.messages[-1]
        if last.role.value != "assistant" or not last.tool_calls:
            raise SnapshotError(
                f"{where} is paused at a tool step, but its last message is not an assistant message with tool calls."
            )
    ids = {c.id for c in snapshot.pending_tool_calls}
    open_elsewhere = sorted(
        k for k, e in snapshot.ledger.items() if k not in ids and e.status in ("pending", "approved", "running")
    )
    if open_elsewhere:
        raise SnapshotError(
            f"{where}: its ledger has unfinished calls {open_elsewhere} that are not calls of the paused step."
        )
    _check_ledger_matches(snapshot, where)


def _check_ledger_matches(snapshot: AgentSnapshot, where: str) -> None:
    """The ledger's entries for the paused calls name the same tools (and, while undecided, the same arguments)."""
    for call in snapshot.pending_tool_calls:
        entry = snapshot.ledger.get(call.id or "")
        if entry is None:
            continue
        if entry.tool_name != call.tool_name:
            raise SnapshotError(
                f"{where}: its ledger records call {call.id!r} as a call of tool {entry.tool_name!r}, but the paused "
                f"step calls {call.tool_name!r}."
            )
        if entry.status == "pending" and isinstance(call.arguments, dict) and entry.arguments != call.arguments:
            raise SnapshotError(
                f"{where}: its ledger holds other arguments for call {call.id!r} than the paused step "
                f"({json.dumps(entry.arguments)[:200]} against {json.dumps(call.arguments)[:200]})."
            )
    undecided = sorted(k for k, e in snapshot.ledger.items() if e.status in ("approved", "rejected") and not e.decision)
    if undecided:
        raise SnapshotError(f"{where}: its ledger marks calls {undecided} as decided but records no decision for them.")
    opposite = sorted(
        k
        for k, e in snapshot.ledger.items()
        if e.status in ("approved", "rejected") and e.decision and e.decision.execute != (e.status == "approved")
    )
    if opposite:
        raise SnapshotError(f"{where}: its ledger says the opposite of the recorded decision for calls {opposite}.")
