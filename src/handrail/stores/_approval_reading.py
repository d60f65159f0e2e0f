"""Reading approval records: decoding them (a damaged one refused by name) and the default queries.

:class:`ApprovalReading` is the read half of :class:`~handrail.stores._approval_base.ApprovalStoreBase`: the
default listing, counting and due queries (over every record, for a directory store; the SQL stores override
them with queries), and the checks every record and audit trail passes when it is read.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from handrail.dataclasses.approval import STATUSES, Approval
from handrail.dataclasses.approval_audit import ApprovalAuditEntry, verify_chain
from handrail.errors import ApprovalNotFoundError, ConfigurationTypeError, CorruptRecordError
from handrail.stores.approvals import ApprovalFilter, micros

__all__ = ["ApprovalReading", "Cursor"]

_ID = re.compile(r"ap_[0-9a-f]{32}")
Cursor = tuple[int, str]


class ApprovalReading:
    """Decoding approval records and the default queries over :meth:`_approval_all`."""

    @abstractmethod
    def _approval_read(self, handle: Any, approval_id: str) -> bytes | None:
        """The record's bytes (``handle`` None: outside any scope), or None."""

    def _approval_all(self) -> Iterator[tuple[str, bytes | CorruptRecordError]]:
        """Every record as ``(id, bytes)``, or ``(id, the error)`` for one that cannot be read.

        The default queries below filter them; SQL stores override those.
        """
        raise NotImplementedError  # pragma: no cover - a backend overrides this or the three queries

    def _approval_scan(self, filter: ApprovalFilter, after: Cursor | None, limit: int) -> list[Approval]:
        """Up to ``limit`` matching approvals, newest first, strictly after the cursor ``after``."""
        found = [a for a in self._decoded_all() if filter.matches(a)]
        found.sort(key=lambda a: (micros(a.created_at), a.id), reverse=True)
        if after is not None:
            found = [a for a in found if (micros(a.created_at), a.id) < after]
        return found[:limit]

    def _approval_counts(self, filter: ApprovalFilter) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for approval in self._decoded_all():
            if filter.matches(approval):
                counts[approval.status] += 1
        return counts

    def _approval_due(self, now: datetime) -> list[str]:
        """The ids of pending approvals with ``expires_at <= now``, oldest expiry first."""
        due = [a for a in self._decoded_all() if a.due(now)]
        due.sort(key=lambda a: (micros(a.expires_at or now), a.id))
        return [a.id for a in due]

    def _decoded_all(self, unreadable: list[tuple[str, str]] | None = None) -> Iterator[Approval]:
        """Every readable record; a damaged one is skipped (and appended to ``unreadable`` as ``(id, error)``)."""
        for approval_id, data in self._approval_all():
            try:
                if isinstance(data, CorruptRecordError):
                    raise data
                yield self._decode_approval(approval_id, data)
            except CorruptRecordError as exc:
                if unreadable is not None:
                    unreadable.append((approval_id, str(exc)))

    def unreadable_approvals(self) -> list[tuple[str, str]]:
        """The approvals whose record cannot be read (damaged, hand-edited), as ``(id, error)``, by id.

        Listing, counting and the expiry sweep skip them (each is refused by name when read on its own); this
        names them, reading every record.
        """
        unreadable: list[tuple[str, str]] = []
        for _ in self._decoded_all(unreadable):
            pass
        return sorted(unreadable)

    def _approval_key(self, approval_id: object) -> str:
        if not isinstance(approval_id, str):
            raise ConfigurationTypeError(f"An approval id is a str, got {type(approval_id).__name__}.")
        if not _ID.fullmatch(approval_id):
            raise ApprovalNotFoundError(
                f"No approval {approval_id!r:.80} in {self}: approval ids look like ap_<32 hex>."
            )
        return approval_id

    def _decode_approval(self, approval_id: str, data: bytes) -> Approval:
        try:
            approval = Approval.from_dict(json.loads(data))
        except (ValueError, TypeError, RecursionError) as exc:  # SerializationError is a ValueError
            raise CorruptRecordError(f"{self}: the record of approval {approval_id} cannot be read: {exc}") from exc
        if approval.id != approval_id:
            raise CorruptRecordError(f"{self}: the record of approval {approval_id} holds approval {approval.id}.")
        return approval

    def _decode_entries(self, approval_id: str, rows: list[bytes]) -> list[ApprovalAuditEntry]:
        try:
            entries = [ApprovalAuditEntry.from_dict(json.loads(row)) for row in rows]
            verify_chain(entries)
        except (ValueError, TypeError, RecursionError) as exc:  # ConfigurationError is a ValueError
            raise CorruptRecordError(f"{self}: the audit trail of approval {approval_id} is damaged: {exc}") from exc
        if any(entry.approval_id != approval_id for entry in entries):
            raise CorruptRecordError(f"{self}: the audit trail of approval {approval_id} holds another's entries.")
        return entries

    def _current_approval(self, handle: Any, approval_id: str) -> Approval:
        data = self._approval_read(handle, approval_id)
        if data is None:
            raise ApprovalNotFoundError(f"No approval {approval_id} in {self}.")
        return self._decode_approval(approval_id, data)
