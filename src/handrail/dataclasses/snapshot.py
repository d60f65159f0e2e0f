"""Agent snapshots: the state of a paused run, its execution ledger, and the snapshot file format.

A snapshot file is UTF-8 JSON, written atomically with mode 0o600 (:func:`write_snapshot`): every key of
:meth:`AgentSnapshot.to_dict`, with ``"messages"`` last. State values keep their types through
:mod:`handrail.core._typed_json`; classes named in a file are imported only from handrail and the modules
the reader allows (``allowed_modules``). A truncated file never loads.

Examples:
    >>> import tempfile
    >>> from handrail.dataclasses import AgentBreakpoint, Breakpoint, ChatMessage
    >>> snap = AgentSnapshot(
    ...     messages=[ChatMessage.from_user("Hi")],
    ...     state={"step_count": 0, "notes": ("a", "b")},
    ...     component_visits={"chat_generator": 0, "tool_invoker": 0},
    ...     break_point=AgentBreakpoint("helper", Breakpoint()),
    ...     position="chat_generator",
    ... )
    >>> directory = tempfile.mkdtemp()
    >>> written = write_snapshot(snap, f"{directory}/{snapshot_file_name(snap.break_point, 0)}")
    >>> loaded = load_snapshot(written.location)
    >>> loaded == snap, loaded.state["notes"], loaded.snapshot_id == written.snapshot_id
    (True, ('a', 'b'), True)
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from handrail.core._files import atomic_write
from handrail.core._typed_json import check_json, encode_value
from handrail.core.serialization import restricted_imports
from handrail.dataclasses._ledger import LEDGER_STATUSES, LedgerEntry, LedgerStatus, utc_now
from handrail.dataclasses._message_json import JSON_ERRORS, MessageCache, dump_json
from handrail.dataclasses._snapshot_fields import (
    POSITIONS,
    SNAPSHOT_SCHEMA_VERSION,
    SNAPSHOT_STATUSES,
    Position,
    SnapshotStatus,
    read_snapshot_fields,
)
from handrail.dataclasses._snapshot_schema import check_ledger_entries
from handrail.dataclasses.breakpoints import AgentBreakpoint
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import ConfigurationError, SerializationError, SnapshotError

__all__ = [
    "LEDGER_STATUSES",
    "RUN_ID_KEY",
    "SNAPSHOT_SCHEMA_VERSION",
    "AgentSnapshot",
    "LedgerEntry",
    "LedgerStatus",
    "MessageCache",
    "Position",
    "SnapshotStatus",
    "decode_snapshot",
    "encode_snapshot",
    "load_snapshot",
    "snapshot_file_name",
    "write_snapshot",
]

RUN_ID_KEY = "run_id"
"""The ``metadata`` key holding a continued snapshot's run id (:attr:`AgentSnapshot.run_id`); handrail sets it."""
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # a store URL's scheme (a drive letter is one character)


@dataclass(repr=False)
class AgentSnapshot:
    """The state of a paused Agent run: enough to resume it exactly where it stopped.

    Resume with ``agent.run(messages=[], snapshot=dataclasses.replace(snap, tool_execution_decisions=[...]))``.

    Raises:
        ConfigurationError: For an unknown position or status, or a break_point that is not an AgentBreakpoint.
    """

    messages: list[ChatMessage]
    """The history at the pause; at a tool pause the last message is the assistant reply whose calls wait."""
    state: dict[str, Any]
    """The State's values except ``messages``: the reserved keys (step_count, token_usage, tool_call_counts,
    exit_reason, stop_run, continue_run) and the user's keys. Written with their types (typed JSON)."""
    component_visits: dict[str, int]
    """Completed visits per component: ``{"chat_generator": int, "tool_invoker": int}``."""
    break_point: AgentBreakpoint
    """The breakpoint the run stopped at (for an approval pause, a ToolBreakpoint of the paused tool)."""
    position: Position
    """Where the run resumes: ``"chat_generator"`` (the model call) or ``"tool_invoker"`` (the tool step)."""
    tool_visits: dict[str, int] = field(default_factory=dict)
    """Completed tool steps that called each tool: ``{tool_name: int}``."""
    tool_execution_decisions: list[ToolExecutionDecision] = field(default_factory=list)
    """Decisions for pending calls, matched by ``tool_call_id``; add them before resuming."""
    ledger: dict[str, LedgerEntry] = field(default_factory=dict)
    """The execution ledger of the paused step (and earlier ones): ``{tool_call_id: LedgerEntry}``."""
    fingerprint: dict[str, Any] = field(default_factory=dict)
    """The agent definition the run used (JSON data), compared at resume to detect drift."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free JSON data, e.g. ``{"agent_file": "/abs/agent.yaml"}``."""
    status: SnapshotStatus = "paused"
    """``"paused"`` (resumable), ``"running"`` (being resumed), ``"done"`` or ``"resumed"`` (continued elsewhere)."""
    continued_in: str | None = None
    """The file name of the snapshot this one continued in (status ``"resumed"``)."""
    outcome: dict[str, Any] | None = None
    """Set when the run finished (status ``"done"``): ``{"exit_reason": str, ...}`` (JSON data)."""
    timestamp: datetime = field(default_factory=utc_now)
    """When the snapshot was taken (timezone-aware UTC)."""
    schema_version: int = SNAPSHOT_SCHEMA_VERSION
    """The snapshot format version."""
    location: str | None = field(default=None, compare=False, repr=False)
    """The absolute path the snapshot was loaded from or written to; never written to the file itself."""
    read_under: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    """The allowlist the snapshot was read under (None: built in this process); never written. A resumed run
    decodes the ledger's recorded results under it, so a value in a file cannot name a class outside it."""
    store: Any = field(default=None, compare=False, repr=False)
    """The SnapshotStore object to resume through (``handrail.resume`` sets it), or None; never written. A resumed
    run claims, rewrites and pauses again through this very object (a subclass's overrides run, and the run
    leaves it open); None: through a store opened from ``location``, closed when the run ends."""

    def __post_init__(self) -> None:
        if self.position not in POSITIONS:
            raise ConfigurationError(f"AgentSnapshot.position must be one of {list(POSITIONS)}, got {self.position!r}.")
        if self.status not in SNAPSHOT_STATUSES:
            raise ConfigurationError(
                f"AgentSnapshot.status must be one of {list(SNAPSHOT_STATUSES)}, got {self.status!r}."
            )
        if not isinstance(self.break_point, AgentBreakpoint):
            raise ConfigurationError(f"AgentSnapshot.break_point must be an AgentBreakpoint, got {self.break_point!r}.")
        if self.location is not None:
            self.location = os.fspath(self.location)

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        """The calls of the paused tool step (the last message's calls) at ``"tool_invoker"``, else ``[]``."""
        if self.position != "tool_invoker" or not self.messages:
            return []
        last = self.messages[-1]
        return last.tool_calls if last.role == ChatRole.ASSISTANT else []

    @property
    def snapshot_id(self) -> str | None:
        """The snapshot's id in its store (the id the approvals CLI shows), or None.

        A file's stem, or what follows ``#`` in a store URL's location (``sqlite:////d/x.db#<id>``,
        ``myscheme:/d#<id>``: one that starts with a scheme of two characters or more, as no absolute path does).
        """
        if not self.location:
            return None
        if "#" in self.location and ("://" in self.location or _URL_SCHEME.match(self.location)):
            return self.location.rpartition("#")[2]
        return Path(self.location).stem

    @property
    def run_id(self) -> str | None:
        """The id of the durable run this snapshot belongs to: the id of the first snapshot of its chain.

        A run's first pause (or its first durable write) creates a record under a new snapshot id; that id is the
        run's id, and every snapshot the run continues in carries it in ``metadata["run_id"]`` (see
        :attr:`continued_in`). A snapshot without one (the first of its chain, or one written before run ids
        existed) is its own run: the run id is its :attr:`snapshot_id` (None when it has no location either).
        Approval ids derive from the run id and the call id, so one call of one run has one approval.

        Examples:
            >>> from handrail.dataclasses import AgentBreakpoint, Breakpoint
            >>> snap = AgentSnapshot(messages=[], state={}, component_visits={}, position="chat_generator",
            ...     break_point=AgentBreakpoint("a", Breakpoint()), location="/approvals/first.json")
            >>> snap.run_id, dataclasses.replace(snap, metadata={"run_id": "first"}, location="/x/next.json").run_id
            ('first', 'first')
        """
        recorded = self.metadata.get(RUN_ID_KEY) if isinstance(self.metadata, dict) else None
        if isinstance(recorded, str) and recorded:
            return recorded
        return self.snapshot_id

    @property
    def step_count(self) -> int:
        """Completed agent steps (``state["step_count"]``, 0 when absent)."""
        count = self.state.get("step_count", 0)
        return count if isinstance(count, int) else 0

    def _header(self) -> dict[str, Any]:
        """Every key of :meth:`to_dict` but ``messages``, state values typed-encoded."""
        before, after = self._header_parts()
        return {
            **before,
            "tool_execution_decisions": [d.to_dict() for d in self.tool_execution_decisions],
            "ledger": {call_id: entry.to_dict() for call_id, entry in self.ledger.items()},
            **after,
        }

    def _header_parts(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The keys of :meth:`_header` before ``tool_execution_decisions`` and after ``ledger``, in order."""
        before = {
            "schema_version": self.schema_version,
            "timestamp": self.timestamp.isoformat(),
            "status": self.status,
            "position": self.position,
            "break_point": self.break_point.to_dict(),
            "component_visits": self.component_visits,
            "tool_visits": self.tool_visits,
            "state": {key: encode_value(value, f"state[{key!r}]") for key, value in self.state.items()},
        }
        after = {
            "fingerprint": self.fingerprint,
            "metadata": self.metadata,
            "continued_in": self.continued_in,
            "outcome": self.outcome,
        }
        return before, after

    def to_dict(self) -> dict[str, Any]:
        """Return the snapshot as JSON data (a fresh dict that shares nothing with the snapshot).

        Returns:
            ``{"schema_version", "timestamp", "status", "position", "break_point", "component_visits",
            "tool_visits", "state", "tool_execution_decisions", "ledger", "fingerprint", "metadata",
            "continued_in", "outcome", "messages"}``; ``location`` is never included.

        Raises:
            SerializationError: Naming the place (``state['lock']``, ``messages[3]``, ``ledger['c1']``...) of a
                value that cannot be written.
        """
        result: dict[str, Any] = json.loads(encode_snapshot(self))
        return result

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, allowed_modules: Iterable[str] = ()) -> AgentSnapshot:
        """Rebuild a snapshot from :meth:`to_dict` output (``data`` is neither modified nor shared).

        Args:
            data: The snapshot dict.
            allowed_modules: Module prefixes whose classes state values may name, besides handrail's.

        Returns:
            The snapshot (``location`` None).

        Raises:
            SnapshotError: Naming the key for a missing, unknown or invalid key (a class outside the allowlist
                included), or a schema version this handrail does not know.
        """
        allowed = tuple(allowed_modules)
        with restricted_imports(allowed):
            return cls(**read_snapshot_fields(data), read_under=allowed)

    def __repr__(self) -> str:
        pending = [call.id for call in self.pending_tool_calls]
        return (
            f"AgentSnapshot(position={self.position!r}, status={self.status!r}, messages={len(self.messages)}, "
            f"step_count={self.step_count}, pending_tool_call_ids={pending}, location={self.location!r})"
        )


def _dump_header(header: dict[str, Any]) -> bytes:
    try:
        return dump_json(header).encode("utf-8")
    except JSON_ERRORS as exc:
        for key, value in header.items():
            check_json(value, key)
            try:
                dump_json(value).encode("utf-8")
            except UnicodeEncodeError:
                raise SerializationError(f"{key}: the text holds a lone surrogate.") from exc
        raise SerializationError(f"The snapshot cannot be written as JSON: {exc}") from exc


def _cached_header(snapshot: AgentSnapshot, cache: MessageCache) -> bytes:
    """:func:`_dump_header` of the snapshot's header, with the ledger entries and decisions the cache encoded before.

    A durable run writes its snapshot before and after its tool calls; between two writes only a few entries
    change (entries and decisions are replaced, never changed in place), so a write encodes only those.
    """
    try:
        before, after = snapshot._header_parts()
        entries = list(snapshot.ledger.values())
        if list(snapshot.ledger) != list(map(_CALL_ID, entries)):
            return _dump_header(snapshot._header())  # keys the run did not write (its keys are the entries' ids)
        decisions = cache.encode_parts("decisions", snapshot.tool_execution_decisions, _decision_json)
        ledger = cache.encode_parts("ledger", entries, lambda entry: cache.memo(entry, _keyed_entry_json))
        middle = b'"tool_execution_decisions":[%s],"ledger":{%s}' % (b",".join(decisions), b",".join(ledger))
        head, tail = dump_json(before).encode("utf-8"), dump_json(after).encode("utf-8")
    except (*JSON_ERRORS, SerializationError, ConfigurationError):
        return _dump_header(snapshot._header())  # names the value that cannot be written
    return b"%s,%s,%s" % (head[:-1], middle, tail[1:])


def _decision_json(decision: ToolExecutionDecision) -> bytes:
    return dump_json(decision.to_dict()).encode("utf-8")


_CALL_ID = operator.attrgetter("tool_call_id")


def _keyed_entry_json(entry: LedgerEntry) -> bytes:
    return dump_json({entry.tool_call_id: entry.to_dict()}).encode("utf-8")[1:-1]


def encode_entries(entries: Mapping[str, LedgerEntry], cache: MessageCache | None = None) -> list[tuple[str, bytes]]:
    """The ledger changes a store keeps beside a record: ``(tool_call_id, UTF-8 JSON {tool_call_id: entry})`` each.

    With the run's ``cache``, an entry is encoded once: the next full write of the record reuses its bytes.

    Raises:
        SerializationError: Naming ``ledger['c1']`` for an entry that cannot be written; nothing is written.
    """
    out: list[tuple[str, bytes]] = []
    for call_id, entry in entries.items():
        if cache is not None and call_id == entry.tool_call_id:
            try:
                out.append((call_id, b"{%s}" % cache.memo(entry, _keyed_entry_json)))
                continue
            except JSON_ERRORS:
                pass  # named below
        data = entry.to_dict()
        try:
            out.append((call_id, dump_json({call_id: data}).encode("utf-8")))
        except JSON_ERRORS as exc:
            check_json(data, f"ledger[{call_id!r}]")
            raise SerializationError(f"ledger[{call_id!r}]: the entry cannot be written: {exc}") from exc
    return out


def encode_snapshot(snapshot: AgentSnapshot, cache: MessageCache | None = None) -> bytes:
    """Return the snapshot file content: UTF-8 JSON of :meth:`AgentSnapshot.to_dict`, compact.

    Args:
        snapshot: The snapshot.
        cache: The run's :class:`MessageCache`; messages already in it are not encoded again.

    Returns:
        The bytes; ``json.loads`` of them equals ``snapshot.to_dict()``. No trailing newline (so any cut of
        the file is invalid JSON).

    Raises:
        SerializationError: Naming the place of a value that cannot be written; nothing is written anywhere.
    """
    head = _dump_header(snapshot._header()) if cache is None else _cached_header(snapshot, cache)
    parts = (cache if cache is not None else MessageCache()).encode_all(snapshot.messages)
    if not parts:
        return head[:-1] + b',"messages":[]}'
    parts[0] = head[:-1] + b',"messages":[' + parts[0]
    parts[-1] += b"]}"
    return b",".join(parts)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict; a key given twice is refused (a hand-edited file must not be read two ways)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = sorted({k for k, _ in pairs if k in seen or seen.add(k)})  # type: ignore[func-returns-value]
        raise ValueError(f"the keys {twice} appear twice in one object")
    return out


def _json_object(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)


def _parsed(data: bytes, said: str) -> Any:
    """``data`` read as JSON, or a SnapshotError ``"<said> not valid JSON: ..."`` (e.g. ``"Snapshot file X is"``)."""
    try:
        return _json_object(data)
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{said} not valid JSON (not UTF-8 text: {exc})") from None
    except (ValueError, RecursionError) as exc:
        raise SnapshotError(f"{said} not valid JSON: {exc}") from None


def _fold_entries(parsed: Any, changes: Sequence[tuple[str, bytes]], name: str) -> None:
    """Apply ledger changes kept beside a record (a store's journal lines or entry rows) to its parsed JSON.

    Each change is ``(how to name it, UTF-8 JSON {tool_call_id: entry})``, oldest first; a later one replaces an
    earlier one of the same call, and calls not in the record join its ledger at the end, in order.
    """
    folded: dict[str, Any] = {}
    for label, line in changes:
        change = _parsed(line, f"{name}, {label}, is")
        try:
            check_ledger_entries(change)
        except SnapshotError as exc:
            raise SnapshotError(f"{name}, {label}: {exc}") from None
        folded.update(change)
    if isinstance(parsed, dict) and isinstance(parsed.get("ledger"), dict):
        parsed["ledger"].update(folded)


def decode_snapshot(
    data: bytes,
    *,
    source: str,
    allowed_modules: Iterable[str] = (),
    what: str | None = None,
    changes: Sequence[tuple[str, bytes]] = (),
) -> AgentSnapshot:
    """Read a snapshot from the content of a snapshot file.

    Args:
        data: The file content.
        source: The file's name, for error messages.
        allowed_modules: Module prefixes whose classes state values may name, besides handrail's.
        what: How error messages name the content (default ``"Snapshot file <source>"``), e.g. a store's record.
        changes: Ledger entries a store wrote beside the record since it was last written whole (a journal's
            lines, rows of entries): ``(how to name it, UTF-8 JSON {tool_call_id: entry})``, oldest first. They
            replace the record's entries of the same calls and are checked by the same schema.

    Returns:
        The snapshot (``location`` None).

    Raises:
        SnapshotError: ``"Snapshot file X is truncated or not valid JSON: ..."``, or naming the file and the
            field (by its path) that is missing, unknown or of the wrong type, or the unknown schema version.
    """
    name = what or f"Snapshot file {source}"
    parsed = _parsed(data, f"{name} is truncated or")
    if changes:
        _fold_entries(parsed, changes, name)
    try:
        allowed = tuple(allowed_modules)
        with restricted_imports(allowed):
            return AgentSnapshot(**read_snapshot_fields(parsed, owned=True), read_under=allowed)
    except SnapshotError as exc:
        raise SnapshotError(f"{name}: {exc}") from exc


def load_snapshot(path: str | os.PathLike[str], *, allowed_modules: Iterable[str] = ()) -> AgentSnapshot:
    """Load a snapshot file; its ``location`` is set to the file's absolute path.

    Args:
        path: The snapshot file.
        allowed_modules: Module prefixes whose classes state values may name, besides handrail's (the CLI's
            ``--allow-module``).

    Returns:
        The snapshot.

    Raises:
        FileNotFoundError: Naming the path, when there is no such file.
        SnapshotError: When the file is truncated, not a snapshot, or of an unknown schema version.
    """
    location = os.path.abspath(os.fspath(path))
    with open(location, "rb") as handle:
        data = handle.read()
    snapshot = decode_snapshot(data, source=location, allowed_modules=allowed_modules)
    snapshot.location = location
    return snapshot


def write_snapshot(
    snapshot: AgentSnapshot, path: str | os.PathLike[str], cache: MessageCache | None = None
) -> AgentSnapshot:
    """Write ``snapshot`` to ``path`` atomically (temp file, fsync, rename; mode 0o600).

    The parent directory is created (mode 0o700) when missing. The snapshot is encoded first, so a value that
    cannot be written raises before any file or directory is touched.

    Args:
        snapshot: The snapshot.
        path: The file to write (``<directory>/<snapshot_file_name(...)>``).
        cache: The run's :class:`MessageCache`.

    Returns:
        ``dataclasses.replace(snapshot, location=<absolute path>)``.

    Raises:
        SerializationError: Naming the value that cannot be written.
        OSError: When the file cannot be written; an earlier file at ``path`` is left as it was.
    """
    data = encode_snapshot(snapshot, cache)
    location = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(location), mode=0o700, exist_ok=True)
    atomic_write(location, data)
    return dataclasses.replace(snapshot, location=location)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def snapshot_file_name(break_point: AgentBreakpoint, visit: int) -> str:
    """Return a unique file name for a snapshot taken at ``break_point``.

    Args:
        break_point: The breakpoint the run stopped at.
        visit: The completed visits of the component.

    Returns:
        ``"[<agent_name>_]<component>_<visit>_<YYYY_MM_DD_HH_MM_SS>_<8 hex>.json"`` (UTC time; characters of
        the agent name other than letters, digits, ``_``, ``.`` and ``-`` become ``_``).
    """
    agent = _UNSAFE.sub("_", break_point.agent_name).lstrip(".")[:80]  # file names have a length limit
    prefix = f"{agent}_" if agent else ""
    stamp = utc_now().strftime("%Y_%m_%d_%H_%M_%S")
    return f"{prefix}{break_point.break_point.component_name}_{visit}_{stamp}_{uuid.uuid4().hex[:8]}.json"
