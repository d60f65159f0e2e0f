"""The inbox page's routes: ``/`` and its static files, public, under a strict CSP, behind the Host check."""

from __future__ import annotations

import re

import httpx
import pytest

from handrail.server._routes_page import CSP, STATIC_FILES

pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)


def _page_headers(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["cache-control"] == "no-cache"


async def test_the_page_is_served_without_credentials_under_the_csp(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 200 and response.headers["content-type"] == "text/html; charset=utf-8"
    _page_headers(response)
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "frame-ancestors 'none'" in CSP
    scripts = re.findall(r"<script[^>]*>", response.text)
    assert scripts and all('src="/static/' in s for s in scripts)  # no inline script anywhere
    assert "style=" not in response.text and "<style" not in response.text
    for name in re.findall(r'(?:src|href)="/static/([^"]+)"', response.text):
        assert name in STATIC_FILES


async def test_every_static_file_has_its_type_and_an_etag(client: httpx.AsyncClient) -> None:
    for name, media_type in STATIC_FILES.items():
        response = await client.get(f"/static/{name}")
        assert response.status_code == 200 and response.headers["content-type"] == media_type, name
        _page_headers(response)
        again = await client.get(f"/static/{name}", headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304 and again.content == b""


async def test_the_modules_import_only_each_other(client: httpx.AsyncClient) -> None:
    for name in STATIC_FILES:
        if name.endswith(".js"):
            text = (await client.get(f"/static/{name}")).text
            for target in re.findall(r'from "([^"]+)"', text):
                assert target.startswith("./") and target[2:] in STATIC_FILES, (name, target)
            unsafe = r"\.(inner|outer)HTML|insertAdjacentHTML|\beval\(|document\.write|new Function"
            assert not re.search(unsafe, text), name


@pytest.mark.parametrize("path", ["/static/nope.js", "/static/..%2f_app.py", "/static/index.html%00", "/static/"])
async def test_only_the_listed_files_are_served(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 404 and response.headers["content-type"] == "application/problem+json"


async def test_the_host_check_still_applies(client: httpx.AsyncClient) -> None:
    response = await client.get("/", headers={"Host": "attacker.example"})
    assert response.status_code == 421 and "<html" not in response.text
