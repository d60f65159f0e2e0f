"""The run routes: start a run of a named agent (the principal is its initiator), read it, list them.

They go through the service's run launcher (:class:`~handrail.server.RunLauncher`): a run is written to the store
before the answer (its first snapshot, its record), so it survives the process; it pauses there for approval and
is resumed by whichever server or worker process finds its calls decided.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from handrail.dataclasses.service import Principal, RunRecord, RunStatus
from handrail.errors import ConfigurationError, ConfigurationTypeError, PermissionDeniedError, UnknownAgentError
from handrail.server._auth import authenticated
from handrail.server._context import approval_json, context_of
from handrail.server._problems import ApiProblem
from handrail.server._runs import _message as check_message
from handrail.server._runs import _state as check_state
from handrail.stores.approvals import micros

__all__ = ["RunBody", "router", "run_json"]

router = APIRouter(tags=["runs"])
_LOG = logging.getLogger("handrail.server")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
Authenticated = Annotated[Principal, Depends(authenticated)]


class RunBody(BaseModel):
    """The body of ``POST /api/v1/runs``."""

    model_config = ConfigDict(extra="forbid")

    agent_name: str = Field(min_length=1, max_length=200)
    """The agent to run (a name the service knows: a factory, or an agent file of its agents directory)."""
    messages: list[str | dict[str, Any]] = Field(min_length=1, max_length=1000)
    """The input: plain text (a user message) or ChatMessage dicts (user, system or assistant text)."""
    state: dict[str, Any] = Field(default_factory=dict)
    """State inputs: keys of the agent's state schema, JSON values."""

    @field_validator("agent_name")
    @classmethod
    def _printable(cls, name: str) -> str:
        if not name.strip() or not name.isprintable():
            raise ValueError("an agent name is printable characters, not only blanks")
        return name


def run_json(record: Any) -> dict[str, Any]:
    """A run record as JSON (times in ISO 8601)."""
    data = dataclasses.asdict(record)
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in data.items()}


def _launcher(request: Request) -> Any:
    runs = context_of(request).runs
    if runs is None:
        raise ApiProblem(404, "This server runs no agents (start it with agents or --agents DIR).", slug="no-agents")
    return runs


def _invalid(errors: list[dict[str, str]]) -> ApiProblem:
    where = ", ".join(e["pointer"] for e in errors)
    return ApiProblem(422, f"The request is invalid: {where}.", slug="invalid-request", extra={"errors": errors})


def _check_input(body: RunBody) -> None:
    """Refuse bad messages and state inputs by JSON Pointer (422), with the checks the launcher applies."""
    errors: list[dict[str, str]] = []
    for index, item in enumerate(body.messages):
        try:
            check_message(index, item)
        except (ConfigurationError, ConfigurationTypeError) as exc:
            errors.append({"pointer": f"/messages/{index}", "detail": str(exc)})
    for key, value in body.state.items():
        try:
            check_state({key: value})
        except (ConfigurationError, ConfigurationTypeError) as exc:
            errors.append({"pointer": "/state/" + key.replace("~", "~0").replace("/", "~1"), "detail": str(exc)})
    if errors:
        raise _invalid(errors)


def _agent(launcher: Any, name: str) -> None:
    """Build the agent (the launcher keeps it): a file that cannot be built is the server's fault, not the client's.

    Raises:
        UnknownAgentError: No agent of that name (404). ApiProblem: 500 ``agent-broken``, naming the agent only
            (the file's path and the reason go to the server's log).
    """
    try:
        launcher.registry.agent_named(name)
    except UnknownAgentError:
        raise
    except (ConfigurationError, ConfigurationTypeError) as exc:
        _LOG.error("The agent %r cannot be built: %s", name, exc)
        detail = (f"The agent {name!r} cannot be built on this server (its definition is broken); an administrator "
                  "must fix it (the server's log says why).")  # fmt: skip
        raise ApiProblem(500, detail, slug="agent-broken") from None


@router.post("/runs", summary="Start a run of a named agent", status_code=201)
def start_run(request: Request, response: Response, body: RunBody, principal: Authenticated) -> dict[str, Any]:
    """``{run}``: the run's record (``queued``); its ``run_id`` is the id its approvals carry.

    The run is in the store before the answer. The initiator recorded is the caller; a viewer may not start runs.
    Bad input is a 422 pointing at it (``/messages/1``, ``/state/key``; ``/state`` for a key the agent does not
    take); an agent whose file cannot be built is a 500 ``agent-broken``.
    """
    if principal.role == "viewer":
        raise PermissionDeniedError(f"{principal.name} (viewer) may not start runs; an approver or admin may.",
                                    principal=principal.name)  # fmt: skip
    launcher = _launcher(request)
    _check_input(body)
    _agent(launcher, body.agent_name)
    try:
        record = launcher.start_run(body.agent_name, body.messages, state=body.state, initiator=principal)
    except UnknownAgentError:
        raise
    except (ConfigurationError, ConfigurationTypeError) as exc:  # what is left: the agent refused the state inputs
        raise _invalid([{"pointer": "/state", "detail": str(exc)}]) from None
    response.headers["Location"] = f"{request.url.path}/{record.run_id}"
    return {"run": run_json(record)}


@router.get("/runs/{run_id}", summary="A run: its status, pending approvals and, once finished, the result")
def get_run(request: Request, run_id: str, principal: Authenticated) -> dict[str, Any]:
    """``{run, pending}``: the record (status, result or error) and the approvals it waits for."""
    view = _launcher(request).get_run(run_id)
    return {"run": run_json(view.record), "pending": [approval_json(a) for a in view.pending]}


def _cursor_of(record: RunRecord) -> str:
    """The opaque cursor after ``record``: URL-safe base64 of ``[created_at µs, run_id]``."""
    raw = json.dumps([micros(record.created_at), record.run_id], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _before(cursor: str | None) -> tuple[datetime, str] | None:
    """The ``(created_at, run_id)`` key a cursor of :func:`_cursor_of` names (400 for another string)."""
    if cursor is None:
        return None
    try:
        created, run_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if type(created) is not int or not isinstance(run_id, str):
            raise ValueError(cursor)
        return _EPOCH + timedelta(microseconds=created), run_id
    except (binascii.Error, ValueError, TypeError, OverflowError, UnicodeDecodeError):
        raise ApiProblem(400, f"cursor {cursor[:80]!r} is not a cursor this server gave out; pass a next_cursor "
                              "of GET /api/v1/runs.", slug="bad-request") from None  # fmt: skip


@router.get("/runs", summary="The service's runs, newest first")
def list_runs(
    request: Request,
    principal: Authenticated,
    status: RunStatus | None = None,
    cursor: Annotated[str | None, Query(max_length=500)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> dict[str, Any]:
    """``{items, next_cursor}``: a page of run records, newest first (``status`` filters).

    Pass ``next_cursor`` as ``cursor`` for the next page (every run exactly once, even while runs start); None on
    the last page.
    """
    store = context_of(request).store
    records: list[RunRecord] = store.list_runs(status=status, limit=limit + 1, before=_before(cursor))
    more = len(records) > limit
    return {
        "items": [run_json(r) for r in records[:limit]],
        "next_cursor": _cursor_of(records[limit - 1]) if more else None,
    }
