"""The inbox page: ``GET /`` (index.html) and ``GET /static/{name}`` (its CSS and JavaScript modules).

The page and its files hold no data (everything comes from the API, behind authentication), so they are public
like ``/healthz``; the Host check still applies. Only the files of :data:`STATIC_FILES` are served (nothing is
looked up on disk from the request), each with its content type, an ``ETag`` (``If-None-Match`` answers 304)
and ``Cache-Control: no-cache``. Every page response carries :data:`PAGE_HEADERS`: a Content-Security-Policy
that allows only the server's own scripts, styles and connections (no inline script, no framing).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

from fastapi import APIRouter, Request, Response

from handrail.server._problems import ApiProblem

__all__ = ["CSP", "PAGE_HEADERS", "STATIC_FILES", "router"]

router = APIRouter(tags=["page"], include_in_schema=False)

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""The page's Content-Security-Policy: its own files only, no inline script or style, never framed."""
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
"""Headers of every response of this router."""
_JS = "text/javascript; charset=utf-8"
STATIC_FILES = {
    "app.css": "text/css; charset=utf-8",
    "api.js": _JS,
    "app.js": _JS,
    "detail.js": _JS,
    "dom.js": _JS,
    "events.js": _JS,
    "list.js": _JS,
    "markdown.js": _JS,
    "run.js": _JS,
    "schemaform.js": _JS,
    "validate.js": _JS,
}
"""The files under ``/static/`` and their content types (any other name is a 404)."""


@cache
def _load(name: str) -> tuple[bytes, str]:
    """A packaged file's bytes and its ETag."""
    data = resources.files("handrail.server").joinpath("static", name).read_bytes()
    return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _file_response(request: Request, name: str, media_type: str) -> Response:
    data, etag = _load(name)
    headers = {**PAGE_HEADERS, "ETag": etag}
    if etag in (t.strip() for t in request.headers.get("if-none-match", "").split(",")):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


@router.api_route("/", methods=["GET", "HEAD"], summary="The inbox page (public: it holds no data)")
def index(request: Request) -> Response:
    """index.html."""
    return _file_response(request, "index.html", "text/html; charset=utf-8")


@router.api_route("/static/{name}", methods=["GET", "HEAD"], summary="The page's CSS and JavaScript (public)")
def static_file(request: Request, name: str) -> Response:
    """One of :data:`STATIC_FILES`; any other name is a 404 problem."""
    media_type = STATIC_FILES.get(name)
    if media_type is None:
        raise ApiProblem(404, "The page has no such file.", headers={"X-Content-Type-Options": "nosniff"})
    return _file_response(request, name, media_type)
