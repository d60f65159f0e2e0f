"""Deciding paused tool calls after the fact: read snapshots, list what waits, record decisions.

A run paused by :class:`~handrail.human_in_the_loop.breakpoint_strategy.BreakpointConfirmationStrategy`
leaves a snapshot file whose last message holds the step's tool calls and whose ledger marks the
calls that wait for a person as ``pending``. The helpers here read those files and write decisions
into them; the Agent applies the decisions when the run is resumed with
``Agent.run(messages=[], snapshot=...)``. Calls are always decided by their ``tool_call_id``,
never by position.

Example (in memory, the Haystack way)::

    calls, descriptions = get_tool_calls_and_descriptions_from_snapshot(snapshot)
    decision = ToolExecutionDecision(calls[0]["tool_name"], execute=True, tool_call_id=calls[0]["id"])
    result = agent.run(messages=[], snapshot=with_decision(snapshot, decision))

Example (on disk, from another process)::

    for item in list_pending("approvals/"):
        record_decision(item.path, ToolExecutionDecision(item.tool_name, execute=True,
                                                         tool_call_id=item.tool_call_id))
"""

from __future__ import annotations

import contextlib
import copy
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.errors import ConfigurationError
from handrail.stores._snapshot_common import (
    awaiting_decision,
    check_snapshot,
    pending_approvals,
    recorded_decision,
    unavailable_reason,
    with_decision,
)
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.stores.types import PendingApproval, SnapshotStore

__all__ = [
    "PendingApproval",
    "awaiting_decision",
    "get_tool_calls_and_descriptions_from_snapshot",
    "list_paused",
    "list_pending",
    "record_decision",
    "recorded_decision",
    "snapshot_files",
    "unavailable_reason",
    "with_decision",
]

OnError = Callable[[Path, Exception], None]
"""Called with a snapshot file that cannot be read and the error; the file is skipped."""


def get_tool_calls_and_descriptions_from_snapshot(
    agent_snapshot: AgentSnapshot, breakpoint_tool_only: bool = True
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Return the paused calls as dicts and the tools' descriptions, without mutating the snapshot.

    Args:
        agent_snapshot: A snapshot taken before a tool step (``position == "tool_invoker"``).
        breakpoint_tool_only: True: only the calls awaiting a decision (see :func:`awaiting_decision`);
            False: every call of the paused step.

    Returns:
        ``(calls, descriptions)``: ``calls`` is a list of ``ToolCall.to_dict()`` dicts (deep copies;
        keys ``tool_name``, ``arguments``, ``id``, ``extra``) in call order; ``descriptions`` maps
        each tool name in the snapshot's fingerprint to its description.

    Raises:
        ConfigurationTypeError: When ``agent_snapshot`` is not an AgentSnapshot.
        ConfigurationError: When the snapshot was not taken before a tool step (a ValueError, as in
            Haystack).
    """
    snapshot = check_snapshot(agent_snapshot)
    if snapshot.position != "tool_invoker":
        raise ConfigurationError(
            f"Snapshot {snapshot.snapshot_id or '(in memory)'} was taken before the model call (position "
            f"{snapshot.position!r}), not before a tool step; it holds no tool calls to decide."
        )
    calls = awaiting_decision(snapshot) if breakpoint_tool_only else snapshot.pending_tool_calls
    tools = snapshot.fingerprint.get("tools")
    descriptions: dict[str, str] = {}
    if isinstance(tools, dict):
        for name, info in tools.items():
            if isinstance(info, dict) and isinstance(info.get("description"), str):
                descriptions[str(name)] = info["description"]
    return [copy.deepcopy(call.to_dict()) for call in calls], descriptions


def snapshot_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The snapshot files of a directory: ``*.json``, not hidden (temp and lock files start with ``.``).

    Args:
        directory: The snapshot directory.

    Returns:
        Absolute paths, sorted by name.

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    return FileSnapshotStore(directory).files()


def _warn(path: Path, exc: Exception) -> None:
    warnings.warn(f"Skipping snapshot file {path}: {exc}", UserWarning, stacklevel=5)


def _store(
    directory: str | os.PathLike[str], allowed_modules: Iterable[str], on_error: OnError | None
) -> FileSnapshotStore:
    folder = Path(directory).absolute()
    if not folder.exists():
        raise FileNotFoundError(f"Snapshot directory {folder} does not exist.")
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a directory.")
    report = on_error if on_error is not None else _warn
    return FileSnapshotStore(
        folder,
        allowed_modules=allowed_modules,
        on_error=lambda snapshot_id, exc: report(folder / f"{snapshot_id}.json", exc),
    )


@contextlib.contextmanager
def _database(value: object, allowed_modules: Iterable[str]) -> Iterator[SnapshotStore | None]:
    """The store ``value`` names when it is a store URL, closed afterwards; None for a directory or file path.

    Opened through :func:`~handrail.stores.open_snapshot_store`: any registered scheme.
    """
    from handrail.stores._snapshot_locations import names_a_database, open_snapshot_store

    if not isinstance(value, str) or not names_a_database(value):
        yield None
        return
    store = open_snapshot_store(value, allowed_modules=allowed_modules)
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


def _listed(store: SnapshotStore, statuses: tuple[str, ...], on_error: OnError | None) -> list[AgentSnapshot]:
    """The snapshots of a URL-named store with these statuses; an unreadable record goes to ``on_error``."""
    lister = getattr(store, "list_snapshots", None)
    if not callable(lister):
        return [s for s in store.list_paused() if s.status in statuses]  # type: ignore[attr-defined]
    report = None if on_error is None else (lambda snapshot_id, exc: on_error(Path(snapshot_id), exc))
    found: list[AgentSnapshot] = lister(statuses, on_error=report)
    return found


def list_paused(
    directory: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), on_error: OnError | None = None
) -> list[AgentSnapshot]:
    """Load the snapshots of a directory whose status is ``paused``, oldest first.

    The directory is read through :class:`~handrail.stores.snapshot_file.FileSnapshotStore`.

    Args:
        directory: The snapshot directory.
        allowed_modules: Module prefixes trusted for classes named inside the files (state values).
        on_error: Called with each file that cannot be read (truncated, invalid, unknown version,
            a class outside the allowlist) and the error; default: a ``UserWarning`` naming the file.
            Such files are skipped. A file that vanishes while listing (renamed by a running
            agent) is skipped silently.

    Returns:
        The paused snapshots (``location`` set), sorted by timestamp, then id.

    ``directory`` may also be a store URL (``sqlite:///<path>``, ``postgresql://...`` or a registered scheme), opened
    through :func:`~handrail.stores.open_snapshot_store` and closed afterwards (``on_error`` gets the record's id
    as the path).

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    with _database(directory, allowed_modules) as store:
        if store is not None:
            return _listed(store, ("paused",), on_error)
    return _store(directory, allowed_modules, on_error).list_paused()


def list_pending(
    directory: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), on_error: OnError | None = None
) -> list[PendingApproval]:
    """List the tool calls waiting for a decision in a snapshot directory, oldest first.

    Only snapshots with status ``paused`` count (finished and resumed ones are never listed);
    within one snapshot, calls keep their order. The same as ``FileSnapshotStore(directory).list_pending()``.

    Args:
        directory: The snapshot directory.
        allowed_modules: See :func:`list_paused`.
        on_error: See :func:`list_paused` (default: a ``UserWarning`` naming the unreadable file).

    Returns:
        One :class:`PendingApproval` per waiting call (``path`` set to the snapshot file).

    ``directory`` may also be a store URL, as for :func:`list_paused` (``path`` is then None).

    Raises:
        FileNotFoundError: When ``directory`` does not exist.
        NotADirectoryError: When it is not a directory.
    """
    with _database(directory, allowed_modules) as store:
        if store is not None:
            if on_error is None:
                return store.list_pending()
            return [p for snap in _listed(store, ("paused",), on_error)
                    for p in pending_approvals(snap, snap.snapshot_id or "")]  # fmt: skip
    return _store(directory, allowed_modules, on_error).list_pending()


def record_decision(
    path: str | os.PathLike[str],
    decision: ToolExecutionDecision,
    *,
    decided_by: str | None = None,
    allowed_modules: Iterable[str] = (),
    lock_timeout: float = 5.0,
) -> AgentSnapshot:
    """Record a decision in a snapshot file, atomically, under the file's lock.

    The same as ``FileSnapshotStore(path.parent).record_decision(path.stem, ...)``: under
    ``FileLock(lock_path_for(path))`` (the claim a resumed run holds) the file is read again (it, not any copy
    in memory, is the source of truth), checked and updated as :func:`with_decision` describes, and rewritten
    atomically (temp file, fsync, rename; mode 0600). A refused decision writes nothing; the same decision
    again writes nothing.

    Args:
        path: The snapshot file (``<id>.json``), or a snapshot's ``location`` in a database store:
            ``<store URL>#<id>`` (any registered scheme, opened through the registry and closed afterwards).
        decision: The decision; ``tool_call_id`` names the call.
        decided_by: Who decided; default the decision's ``decided_by``, else the OS user.
        allowed_modules: Module prefixes trusted for classes named inside the file.
        lock_timeout: Seconds to wait for the lock (a resuming run holds it for its whole run).

    Returns:
        The snapshot as it now is on disk (``location`` set). For a call whose approval needs a quorum of
        approvers, an approval short of it is a vote: the call stays pending in the snapshot until the quorum is
        reached (``ApprovalService(store).get(approval_id).approval`` shows the votes and the quorum).

    Raises:
        FileNotFoundError: When the file does not exist.
        SnapshotError: When the file is truncated, invalid or of an unknown schema version.
        SnapshotUnavailableError: When the lock is held past ``lock_timeout`` ("is being resumed"), or
            the snapshot is not paused any more.
        ConfigurationError: See :func:`with_decision` (unknown or non-pending call, schema refusal), a file
            whose name does not end in ``.json``, or a store URL without ``#<id>``.
        DecisionConflictError: When a different decision is already recorded for the call.
    """
    from handrail.stores._snapshot_locations import names_a_database, store_for_location

    if isinstance(path, str) and names_a_database(path):  # a snapshot's location in a database: <store URL>#<id>
        store, snapshot_id = store_for_location(path, allowed_modules=allowed_modules, lock_timeout=lock_timeout)
        try:
            return store.record_decision(snapshot_id, decision, decided_by=decided_by)
        finally:
            close = getattr(store, "close", None)
            if callable(close):
                close()
    file = Path(path).absolute()
    if not file.is_file():
        raise FileNotFoundError(f"Snapshot file {file} does not exist.")
    if file.suffix != ".json":
        raise ConfigurationError(f"{file} is not a snapshot file: snapshot files are named <id>.json.")
    store = FileSnapshotStore(file.parent, allowed_modules=allowed_modules, lock_timeout=lock_timeout)
    return store.record_decision(file.stem, decision, decided_by=decided_by)
