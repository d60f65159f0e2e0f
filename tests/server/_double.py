"""A tiny in-test ServiceStore double: a real snapshot store plus tokens and events kept in memory.

Used only while a store kind lacks the ServiceStore methods; approval events are appended around the approval
changes it forwards, as the real stores write them in the same transaction.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from handrail.dataclasses.service import ServiceEvent, TokenInfo
from handrail.stores.service import EventPage


class ServiceDouble:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._tokens: dict[str, tuple[TokenInfo, str]] = {}
        self._events: list[ServiceEvent] = []
        self._cond = threading.Condition()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return f"ServiceDouble({self._inner!r})"

    # tokens
    def add_token(self, name: str, role: Any, *, tools: tuple[str, ...] = ("*",), at: datetime) -> Any:
        token_id = "tk_" + secrets.token_hex(8)
        text = f"{token_id}.{secrets.token_urlsafe(32)}"
        info = TokenInfo(token_id, name, role, tuple(tools), at)
        self._tokens[token_id] = (info, hashlib.sha256(text.encode()).hexdigest())
        return info, text

    def list_tokens(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        return [i for i, _ in self._tokens.values() if include_revoked or i.revoked_at is None]

    def revoke_token(self, name_or_id: str, *, at: datetime) -> TokenInfo:
        for token_id, (info, digest) in self._tokens.items():
            if info.revoked_at is None and name_or_id in (info.name, token_id):
                info = dataclasses.replace(info, revoked_at=at)
                self._tokens[token_id] = (info, digest)
                return info
        raise ValueError(name_or_id)

    def authenticate(self, token: str) -> TokenInfo | None:
        found = self._tokens.get(token.partition(".")[0])
        if found is None or found[0].revoked_at is not None:
            return None
        return found[0] if hmac.compare_digest(found[1], hashlib.sha256(token.encode()).hexdigest()) else None

    def session_key(self, token_id: str) -> tuple[TokenInfo, bytes] | None:
        found = self._tokens.get(token_id)
        if found is None or found[0].revoked_at is not None:
            return None
        return found[0], hmac.new(bytes.fromhex(found[1]), b"session", hashlib.sha256).digest()

    # events
    def append_event(self, kind: Any, data: Mapping[str, Any], *, at: datetime) -> ServiceEvent:
        with self._cond:
            event = ServiceEvent(len(self._events) + 1, kind, at, dict(data))
            self._events.append(event)
            self._cond.notify_all()
            return event

    def events_after(self, after_id: int, *, limit: int = 1000) -> EventPage:
        with self._cond:
            found = [e for e in self._events if e.id > after_id][:limit]
            return EventPage(tuple(found), False, self._events[-1].id if self._events else 0)

    def wait_for_events(self, after_id: int, *, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._events) and self._events[-1].id > after_id, timeout)

    def _approval_event(self, kind: Any, approval: Any) -> None:
        self.append_event(
            kind,
            {
                "approval_id": approval.id,
                "run_id": approval.run_id,
                "tool_name": approval.tool_name,
                "status": approval.status,
                "version": approval.version,
            },
            at=approval.created_at,
        )

    def create_approvals(self, approvals: Any, **kwargs: Any) -> Any:
        made = self._inner.create_approvals(approvals, **kwargs)
        for approval in made:
            self._approval_event("approval.created", approval)
        return made

    def decide_approval(self, *args: Any, **kwargs: Any) -> Any:
        decided = self._inner.decide_approval(*args, **kwargs)
        self._approval_event("approval.decided", decided)
        return decided

    # runs (unused until the run API lands)
    def create_run(self, record: Any) -> Any:
        raise NotImplementedError

    def get_run(self, run_id: str) -> Any:
        raise NotImplementedError

    def update_run(self, run_id: str, **changes: Any) -> Any:
        raise NotImplementedError

    def list_runs(self, **kwargs: Any) -> list[Any]:
        return []

    def claim_run(self, run_id: str) -> Any:
        raise NotImplementedError
