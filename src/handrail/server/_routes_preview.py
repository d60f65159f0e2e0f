"""The preview route: ``GET /api/v1/approvals/{id}/preview``, the tool's preview of the call (any role may read).

The route is ``async``: it waits for the preview thread (:class:`~handrail.server._previews.Previewer`) without
holding one of the server's threads, so a hanging preview never delays a decision or another request.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from handrail.dataclasses.service import Principal
from handrail.server._auth import authenticated
from handrail.server._context import context_of

__all__ = ["router"]

router = APIRouter(tags=["approvals"])


@router.get("/approvals/{approval_id}/preview", summary="The tool's preview of the call (or why there is none)")
async def preview(
    request: Request, approval_id: str, principal: Annotated[Principal, Depends(authenticated)]
) -> dict[str, Any]:
    """``{preview: {kind, content, title} | null, unavailable: str | null}``: exactly one is set.

    ``kind`` is ``text``, ``markdown``, ``json`` or ``diff``; the content is built from model-made arguments (show
    it as text, or as sanitized markdown). ``unavailable`` says why there is no preview, for a person: the tool has
    none, it failed, it took longer than the server's limit, the agent is not known here. Computed once per
    version of the approval.
    """
    ctx = context_of(request)
    detail = await run_in_threadpool(ctx.service.get, approval_id, 0)
    answer = await ctx.previews.answer(detail.approval)
    result: dict[str, Any] = answer.to_dict()
    return result
