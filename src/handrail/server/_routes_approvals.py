"""The approval routes: list, read, decide, the audit trail of one, and the audit export (JSON Lines, admin).

Every one goes through :class:`~handrail.human_in_the_loop.service.ApprovalService` with the authenticated
principal; the HTTP layer only translates (query and headers in, JSON and problem details out).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from handrail.dataclasses.approval import ApprovalStatus
from handrail.dataclasses.service import Principal
from handrail.errors import PermissionDeniedError
from handrail.human_in_the_loop.service import DecisionResult
from handrail.server._auth import authenticated
from handrail.server._context import approval_json, context_of
from handrail.server._problems import ApiProblem
from handrail.server._tracing import traced_decision
from handrail.stores.approvals import MAX_PAGE, ApprovalFilter

__all__ = ["DecisionBody", "router"]

router = APIRouter(tags=["approvals"])
_ETAG = re.compile(r'^\s*"v(\d{1,18})"\s*$')
"""The one strong entity-tag ``If-Match`` takes: RFC 9110 compares If-Match strongly, so ``W/"v1"`` never matches."""
_MAX_TEXT = 10_000
_AGENT_LIMIT = 200
Authenticated = Annotated[Principal, Depends(authenticated)]


class DecisionBody(BaseModel):
    """The body of ``POST /api/v1/approvals/{id}/decision``. The decider is the authenticated principal."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "edit", "reject"]
    """What is decided (one of the approval's ``allowed_decisions``)."""
    arguments: dict[str, Any] | None = None
    """An edit's new arguments (they replace the stored ones); ignored for approve and reject."""
    feedback: str | None = Field(default=None, max_length=_MAX_TEXT)
    """Text for the model (a rejection's reason reaches it)."""
    tool_name: str | None = Field(default=None, max_length=_AGENT_LIMIT)
    """The tool an edit names, if the client sends one; another than the approval's is refused (422)."""


def _query_time(name: str, moment: datetime | None) -> datetime | None:
    """A time from the query, refused (422 naming it) when naive or beyond what UTC holds (years 1 to 9999)."""
    if moment is None:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        problem = "must carry a time zone (e.g. 2026-12-02T10:00:00Z)"
    else:
        try:
            moment.astimezone(UTC)
            return moment
        except OverflowError:
            problem = "is outside the years 1 to 9999 in UTC"
    error = {"parameter": name, "in": "query", "detail": problem}
    raise ApiProblem(422, f"{name} {problem}.", slug="bad-filter", extra={"errors": [error]})


def _filters(
    status: ApprovalStatus | None,
    tool_name: str | None,
    agent_name: str | None,
    run_id: str | None,
    label: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    expires_before: datetime | None,
    decided_by: str | None,
) -> ApprovalFilter:
    return ApprovalFilter(
        status=status, tool_name=tool_name, agent_name=agent_name, run_id=run_id, label=label,
        created_after=_query_time("created_after", created_after),
        created_before=_query_time("created_before", created_before),
        expires_before=_query_time("expires_before", expires_before), decided_by=decided_by,
    )  # fmt: skip


@router.get("/approvals", summary="List approvals, newest first, with the counts per status")
def list_approvals(
    request: Request,
    principal: Authenticated,
    status: ApprovalStatus | None = None,
    tool_name: str | None = None,
    agent_name: str | None = None,
    run_id: str | None = None,
    label: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    expires_before: datetime | None = None,
    decided_by: str | None = None,
    cursor: Annotated[str | None, Query(max_length=500)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> dict[str, Any]:
    """``{items, next_cursor, counts}``: a page of the approvals matching every filter given.

    ``counts`` is per status (the status filter ignored). Pass ``next_cursor`` as ``cursor`` for the next page
    (every item exactly once).
    """
    service = context_of(request).service
    filters = _filters(status, tool_name, agent_name, run_id, label, created_after, created_before, expires_before,
                       decided_by)  # fmt: skip
    page = service.list(filters, cursor=cursor, limit=limit)
    return {
        "items": [approval_json(a) for a in page.items],
        "next_cursor": page.next_cursor,
        "counts": service.counts(filters),
    }


@router.get("/approvals/{approval_id}", summary="One approval with its last conversation messages")
def get_approval(
    request: Request,
    response: Response,
    approval_id: str,
    principal: Authenticated,
    context: Annotated[int | None, Query(ge=0, le=100, description="How many messages (default 6)")] = None,
) -> dict[str, Any]:
    """``{approval, messages}``; the ``ETag`` header is ``"v{version}"`` (send it back as ``If-Match``)."""
    ctx = context_of(request)
    detail = ctx.service.get(approval_id, context_messages=ctx.context_messages if context is None else context)
    response.headers["ETag"] = f'"v{detail.approval.version}"'
    return {"approval": approval_json(detail.approval), "messages": [m.to_dict() for m in detail.messages]}


def _expected_version(if_match: str | None) -> int | None:
    """The version an ``If-Match`` names (None: none given, or ``*``); a weak tag matches nothing (412)."""
    if if_match is None or if_match.strip() == "*":
        return None
    found = _ETAG.match(if_match)
    if found is None:
        raise ApiProblem(412, f"If-Match {if_match[:60]!r} names no version of this approval; send the ETag of "
                              'GET /api/v1/approvals/{id} as it is (e.g. "v1"; a weak W/ tag never matches).',
                         slug="approval-changed")  # fmt: skip
    return int(found.group(1))


def _audit_details(request: Request) -> dict[str, Any]:
    agent = request.headers.get("user-agent", "")
    return {
        "via": "http",
        "client_ip": request.client.host if request.client else None,
        "user_agent": "".join(c for c in agent if c.isprintable())[:_AGENT_LIMIT],
    }


@router.post("/approvals/{approval_id}/decision", summary="Decide an approval (approve, edit or reject)")
def decide(
    request: Request,
    response: Response,
    approval_id: str,
    body: DecisionBody,
    principal: Authenticated,
    if_match: Annotated[str | None, Header(max_length=100)] = None,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:
    """``{approval, replayed}``: the approval as decided.

    An identical repeat (same principal and content, or the same ``Idempotency-Key``) answers 200 with
    ``replayed: true``. The decider recorded is the caller; an approve runs the stored arguments.
    """
    ctx = context_of(request)
    expected, details = _expected_version(if_match), _audit_details(request)

    def decided(traced: Mapping[str, Any]) -> DecisionResult:
        return ctx.service.decide(
            approval_id, body.decision, principal=principal, feedback=body.feedback,
            arguments=body.arguments if body.decision == "edit" else None, tool_name=body.tool_name,
            expected_version=expected, idempotency_key=idempotency_key, details={**details, **traced},
        )  # fmt: skip

    result = traced_decision(ctx.tracing, ctx.store, approval_id, principal.name, body.decision, decided,
                             caller_context="traceparent" in request.headers)  # fmt: skip
    response.headers["ETag"] = f'"v{result.approval.version}"'
    if not result.replayed:  # this process's streams get the event, its resumer the run, now (not at a poll)
        ctx.wake()
    return {"approval": approval_json(result.approval), "replayed": result.replayed}


@router.get("/approvals/{approval_id}/audit", summary="The audit trail of one approval")
def audit_trail(request: Request, approval_id: str, principal: Authenticated) -> dict[str, Any]:
    """``{approval_id, entries}``: every entry, oldest first, its hash chain verified."""
    entries = context_of(request).service.audit_trail(approval_id)
    return {"approval_id": approval_id, "entries": [e.to_dict() for e in entries]}


def _export_lines(service: Any, filters: ApprovalFilter, start: datetime | None,
                  end: datetime | None) -> Iterator[bytes]:  # fmt: skip
    for approval in service.every(filters):
        for entry in service.audit_trail(approval.id):
            if (start is None or entry.at >= start) and (end is None or entry.at < end):
                yield (json.dumps(entry.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


@router.get(
    "/audit/export",
    summary="Every audit entry of a time range, as JSON Lines (admin)",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/jsonl": {}}}},
)
def audit_export(
    request: Request,
    principal: Authenticated,
    start: Annotated[datetime | None, Query(alias="from", description="From this time (inclusive)")] = None,
    end: Annotated[datetime | None, Query(alias="to", description="Up to this time (exclusive)")] = None,
) -> StreamingResponse:
    """One JSON object per line: an audit entry with its ``approval_id``.

    Approvals newest first, each trail in order. Only an admin may export.
    """
    if not principal.is_admin:
        raise PermissionDeniedError(f"{principal.name} ({principal.role}) may not export the audit log; an admin "
                                    "may.", principal=principal.name)  # fmt: skip
    start, end = _query_time("from", start), _query_time("to", end)  # checked before the response starts
    filters = ApprovalFilter(created_before=end)
    lines = _export_lines(context_of(request).service, filters, start, end)
    return StreamingResponse(lines, media_type="application/jsonl")
