"""The append-only audit trail of one approval, hash-chained so that a changed or removed entry is detected.

Each :class:`ApprovalAuditEntry` carries ``seq`` (1, 2, ...), the previous entry's ``hash`` as ``prev_hash``
(None for the first) and its own ``hash``: ``"sha256:"`` and the SHA-256 of the canonical JSON of
:meth:`ApprovalAuditEntry.to_dict` without ``hash``. Build one with :meth:`ApprovalAuditEntry.chained`; an entry
whose hash does not match its fields is refused when it is built or read, and :func:`verify_chain` checks that
a trail's entries follow each other. (An attacker who can rewrite the whole trail can rewrite the chain too:
the chain detects edits by hand and partial damage; export the hashes elsewhere to detect more.)

Examples:
    >>> from datetime import UTC, datetime
    >>> at = datetime(2025, 1, 2, tzinfo=UTC)
    >>> digest = "sha256:" + "0" * 64
    >>> first = ApprovalAuditEntry.chained(None, approval_id="ap_1", kind="created", at=at, args_digest=digest)
    >>> second = ApprovalAuditEntry.chained(first, approval_id="ap_1", kind="decided", at=at, principal="ann",
    ...                                     decision="approve")
    >>> second.seq, second.prev_hash == first.hash, verify_chain([first, second]) is None
    (2, True, True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, get_args

from handrail.dataclasses._approval_checks import Checker, iso, sha256_of
from handrail.dataclasses.approval import DECISIONS, Decision
from handrail.errors import ConfigurationError, SerializationError

__all__ = ["AUDIT_KINDS", "ApprovalAuditEntry", "ArgumentChange", "AuditKind", "arguments_diff", "verify_chain"]

AuditKind = Literal["created", "voted", "decided", "expired", "cancelled", "executed"]
AUDIT_KINDS: tuple[AuditKind, ...] = get_args(AuditKind)
_OPS = ("add", "remove", "replace")


@dataclass(frozen=True, slots=True)
class ArgumentChange:
    """One change an edit made to the arguments (JSON Patch's ``op`` and ``path``, with the old value kept)."""

    op: Literal["add", "remove", "replace"]
    """``add``, ``remove`` or ``replace``."""
    path: str
    """A JSON Pointer (RFC 6901) into the arguments, e.g. ``/amount`` or ``/to/iban``."""
    old: Any = None
    """The value before (None for ``add``)."""
    new: Any = None
    """The value after (None for ``remove``)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"op", "path", "old"?, "new"?}``."""
        data: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.op != "add":
            data["old"] = self.old
        if self.op != "remove":
            data["new"] = self.new
        return data

    @classmethod
    def from_dict(cls, data: Any, checker: Checker | None = None) -> ArgumentChange:
        """Read :meth:`to_dict` output (SerializationError naming the field)."""
        checker = checker or Checker("ArgumentChange", reading=True)
        if not isinstance(data, dict):
            checker.fail("changes", f"items must be objects, got {type(data).__name__}")
        checker.choice("changes.op", data.get("op"), _OPS)
        checker.text("changes.path", data.get("path"), empty=True)
        return cls(op=data["op"], path=data["path"], old=data.get("old"), new=data.get("new"))


def _pointer(parts: list[str]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def arguments_diff(old: dict[str, Any], new: dict[str, Any]) -> tuple[ArgumentChange, ...]:
    """What changed from ``old`` to ``new``: objects compared key by key (sorted), anything else as a whole.

    Examples:
        >>> for change in arguments_diff({"amount": 5, "memo": "x"}, {"amount": 7, "to": "bob"}):
        ...     print(change.to_dict())
        {'op': 'replace', 'path': '/amount', 'old': 5, 'new': 7}
        {'op': 'remove', 'path': '/memo', 'old': 'x'}
        {'op': 'add', 'path': '/to', 'new': 'bob'}
    """
    changes: list[ArgumentChange] = []
    stack: list[tuple[list[str], Any, Any]] = [([], old, new)]
    while stack:
        parts, before, after = stack.pop()
        if isinstance(before, dict) and isinstance(after, dict):
            for key in sorted(set(before) | set(after), reverse=True):
                stack.append(([*parts, key], before.get(key, _MISSING), after.get(key, _MISSING)))
        elif before is _MISSING:
            changes.append(ArgumentChange("add", _pointer(parts), new=after))
        elif after is _MISSING:
            changes.append(ArgumentChange("remove", _pointer(parts), old=before))
        elif before != after or type(before) is not type(after):
            changes.append(ArgumentChange("replace", _pointer(parts), old=before, new=after))
    return tuple(changes)


_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class ApprovalAuditEntry:
    """One entry of an approval's audit trail (see the module docstring). Build it with :meth:`chained`.

    Which fields a kind needs: ``created``: ``args_digest``; ``decided``: ``principal`` and ``decision`` (an edit
    also ``changes`` and the new ``args_digest``); ``voted`` (a vote toward a quorum that leaves the approval
    pending): the same as ``decided``; ``expired``: ``decision`` (the expiry action); ``executed``:
    ``outcome``. Other fields are optional.

    Raises:
        ConfigurationError / ConfigurationTypeError: A field is invalid, a kind's field is missing, or ``hash``
            does not match the other fields.
    """

    approval_id: str
    """The approval."""
    seq: int
    """1 for the first entry, then one more each."""
    kind: AuditKind
    """``created``, ``voted``, ``decided``, ``expired``, ``cancelled`` or ``executed``."""
    at: datetime
    """When (UTC)."""
    prev_hash: str | None
    """The previous entry's ``hash`` (None for the first)."""
    hash: str
    """``sha256:`` of the canonical JSON of the other fields."""
    principal: str | None = None
    """Who acted (a decision's decider)."""
    decision: Decision | None = None
    """The decision (an expiry: the action applied)."""
    feedback: str | None = None
    """The decision's text for the model."""
    changes: tuple[ArgumentChange, ...] = ()
    """An edit's changes to the arguments."""
    args_digest: str | None = None
    """The arguments' digest: as created, as edited, or as executed."""
    outcome: str | None = None
    """An execution's outcome, e.g. ``ok`` or ``error``."""
    duration_ms: float | None = None
    """An execution's duration in milliseconds."""
    details: dict[str, Any] = field(default_factory=dict)
    """More JSON data (the policy, a client's address and user agent, ...)."""

    def __post_init__(self) -> None:
        checker = Checker("ApprovalAuditEntry", reading=False)
        values = {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}
        if not isinstance(self.changes, tuple) or not all(isinstance(c, ArgumentChange) for c in self.changes):
            checker.fail("changes", "must be a tuple of ArgumentChange", wrong_type=True)
        values["changes"] = list(self.changes)
        checked = _check_entry(values, checker, check_hash=True)
        object.__setattr__(self, "at", checked["at"])
        object.__setattr__(self, "details", checked["details"])

    @classmethod
    def chained(
        cls,
        previous: ApprovalAuditEntry | None,
        *,
        approval_id: str,
        kind: AuditKind,
        at: datetime,
        principal: str | None = None,
        decision: Decision | None = None,
        feedback: str | None = None,
        changes: tuple[ArgumentChange, ...] = (),
        args_digest: str | None = None,
        outcome: str | None = None,
        duration_ms: float | None = None,
        details: dict[str, Any] | None = None,
    ) -> ApprovalAuditEntry:
        """The entry that follows ``previous`` (None: the first), its ``seq``, ``prev_hash`` and ``hash`` computed.

        Raises:
            ConfigurationError: ``previous`` belongs to another approval, or a field is invalid.
        """
        if previous is not None and previous.approval_id != approval_id:
            raise ConfigurationError(f"The previous audit entry is of {previous.approval_id}, not {approval_id}.")
        checker = Checker("ApprovalAuditEntry", reading=False)
        moment = checker.moment("at", at)
        values: dict[str, Any] = {
            "approval_id": approval_id,
            "seq": 1 if previous is None else previous.seq + 1,
            "kind": kind,
            "at": moment,
            "prev_hash": None if previous is None else previous.hash,
            "principal": principal,
            "decision": decision,
            "feedback": feedback,
            "changes": list(changes),
            "args_digest": args_digest,
            "outcome": outcome,
            "duration_ms": duration_ms,
            "details": details or {},
        }
        values = _check_entry(values, checker, check_hash=False)
        values["changes"] = tuple(changes)
        return cls(**values, hash=_entry_hash(values))

    def to_dict(self) -> dict[str, Any]:
        """JSON data: every field (``at`` in ISO 8601, ``changes`` as dicts)."""
        data: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "at":
                value = iso(value)
            elif item.name == "changes":
                value = [change.to_dict() for change in value]
            data[item.name] = value
        return data

    @classmethod
    def from_dict(cls, data: Any, checker: Checker | None = None) -> ApprovalAuditEntry:
        """Read :meth:`to_dict` output.

        Raises:
            SerializationError: A missing, unknown or invalid field (``path`` names it), or a ``hash`` that does not
                match (the entry was changed).
        """
        checker = checker or Checker("ApprovalAuditEntry", reading=True)
        if not isinstance(data, dict):
            raise SerializationError(f"An ApprovalAuditEntry is read from a dict, got {type(data).__name__}.")
        names = {item.name for item in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise SerializationError(f"Cannot read the ApprovalAuditEntry: unknown keys {unknown}.", path=(unknown[0],))
        for name in ("approval_id", "seq", "kind", "at", "prev_hash", "hash"):
            if name not in data:
                checker.fail(name, "is missing")
        values = _check_entry(data, checker, check_hash=True)
        values["changes"] = tuple(ArgumentChange.from_dict(item, checker) for item in values["changes"])
        return cls(**values)


def _check_entry(data: dict[str, Any], checker: Checker, *, check_hash: bool) -> dict[str, Any]:
    """Check an entry's dict (named on failure); returns the values for the constructor."""
    values = {**data}
    checker.text("approval_id", values["approval_id"], limit=500)
    checker.integer("seq", values["seq"], minimum=1)
    checker.choice("kind", values["kind"], AUDIT_KINDS)
    values["at"] = checker.moment("at", values["at"])
    checker.digest("prev_hash", values["prev_hash"], optional=True)
    if (values["prev_hash"] is None) != (values["seq"] == 1):
        checker.fail("prev_hash", "must be None for the first entry (seq 1) only")
    checker.text("principal", values.get("principal"), optional=True, limit=200)
    checker.choice("decision", values.get("decision"), DECISIONS, optional=True)
    checker.text("feedback", values.get("feedback"), optional=True, empty=True)
    checker.digest("args_digest", values.get("args_digest"), optional=True)
    checker.text("outcome", values.get("outcome"), optional=True)
    checker.number("duration_ms", values.get("duration_ms"), optional=True)
    values["details"] = checker.json_data("details", values.get("details", {}))
    raw_changes = values.get("changes", [])
    if not isinstance(raw_changes, list | tuple):
        checker.fail("changes", f"must be a list, got {type(raw_changes).__name__}", wrong_type=True)
    values["changes"] = list(raw_changes)
    _check_kind(values, checker)
    if check_hash:
        checker.digest("hash", values.get("hash"))
        if _entry_hash(values) != values["hash"]:
            checker.fail(
                "hash", f"does not match the entry (seq {values['seq']} of {values['approval_id']}): it was changed"
            )
    return values


_BODY_FIELDS = ("approval_id", "seq", "kind", "at", "prev_hash", "principal", "decision", "feedback", "changes",
                "args_digest", "outcome", "duration_ms", "details")  # fmt: skip
_DEFAULTS: dict[str, Any] = {"changes": [], "details": {}}


def _entry_hash(values: dict[str, Any]) -> str:
    """``sha256:`` of the canonical JSON of an entry's fields but ``hash``."""
    body = {name: values.get(name, _DEFAULTS.get(name)) for name in _BODY_FIELDS}
    body["at"] = iso(values["at"])
    body["changes"] = [c.to_dict() if isinstance(c, ArgumentChange) else c for c in values["changes"]]
    return sha256_of(body)


def _check_kind(values: dict[str, Any], checker: Checker) -> None:
    kind = values["kind"]
    needed = {
        "created": ("args_digest",),
        "voted": ("principal", "decision"),
        "decided": ("principal", "decision"),
        "expired": ("decision",),
        "executed": ("outcome",),
        "cancelled": (),
    }[kind]
    for name in needed:
        if values.get(name) is None:
            checker.fail(name, f"is needed by a {kind!r} entry")


def verify_chain(entries: list[ApprovalAuditEntry]) -> None:
    """Check that ``entries`` (one approval's, in order) form an unbroken chain from seq 1.

    Raises:
        ConfigurationError: An entry of another approval, a gap or repeat in ``seq``, or a ``prev_hash`` that is
            not the previous entry's ``hash`` (named by seq).
    """
    previous: ApprovalAuditEntry | None = None
    for index, entry in enumerate(entries, start=1):
        if previous is not None and entry.approval_id != previous.approval_id:
            raise ConfigurationError(f"Audit entry {index} is of {entry.approval_id}, not {previous.approval_id}.")
        if entry.seq != index:
            raise ConfigurationError(f"Audit trail of {entry.approval_id}: entry {index} has seq {entry.seq}.")
        expected = None if previous is None else previous.hash
        if entry.prev_hash != expected:
            raise ConfigurationError(
                f"Audit trail of {entry.approval_id}: entry {entry.seq}'s prev_hash is not entry {entry.seq - 1}'s "
                "hash: an entry was changed, removed or inserted."
            )
        previous = entry
