"""The run routes: start a run of a named agent (the principal is its initiator), read it, list them.

They go through the service's run launcher (:class:`~handrail.server.RunLauncher`): a run is written to the store
before the answer (its first snapshot, its record), so it survives the process; it pauses there for approval and
is resumed by whichever server or worker process finds its calls decided.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from handrail.dataclasses.service import Principal, RunStatus
from handrail.errors import PermissionDeniedError
from handrail.server._auth import authenticated
from handrail.server._context import approval_json, context_of
from handrail.server._problems import ApiProblem

__all__ = ["RunBody", "router", "run_json"]

router = APIRouter(tags=["runs"])
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


def run_json(record: Any) -> dict[str, Any]:
    """A run record as JSON (times in ISO 8601)."""
    data = dataclasses.asdict(record)
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in data.items()}


def _launcher(request: Request) -> Any:
    runs = context_of(request).runs
    if runs is None:
        raise ApiProblem(404, "This server runs no agents (start it with agents or --agents DIR).", slug="no-agents")
    return runs


@router.post("/runs", summary="Start a run of a named agent", status_code=201)
def start_run(request: Request, response: Response, body: RunBody, principal: Authenticated) -> dict[str, Any]:
    """``{run}``: the run's record (``queued``); its ``run_id`` is the id its approvals carry.

    The run is in the store before the answer. The initiator recorded is the caller; a viewer may not start runs.
    """
    if principal.role == "viewer":
        raise PermissionDeniedError(f"{principal.name} (viewer) may not start runs; an approver or admin may.",
                                    principal=principal.name)  # fmt: skip
    record = _launcher(request).start_run(body.agent_name, body.messages, state=body.state, initiator=principal)
    response.headers["Location"] = f"{request.url.path}/{record.run_id}"
    return {"run": run_json(record)}


@router.get("/runs/{run_id}", summary="A run: its status, pending approvals and, once finished, the result")
def get_run(request: Request, run_id: str, principal: Authenticated) -> dict[str, Any]:
    """``{run, pending}``: the record (status, result or error) and the approvals it waits for."""
    view = _launcher(request).get_run(run_id)
    return {"run": run_json(view.record), "pending": [approval_json(a) for a in view.pending]}


@router.get("/runs", summary="The service's runs, newest first")
def list_runs(
    request: Request,
    principal: Authenticated,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
) -> dict[str, Any]:
    """``{items}``: run records, newest first (``status`` filters)."""
    records = context_of(request).store.list_runs(status=status, limit=limit)
    return {"items": [run_json(r) for r in records]}
