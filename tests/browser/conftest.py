"""Fixtures of the browser tests: Debian's chromium driven by Playwright, and a real ``handrail serve``.

Playwright comes with the ``browser-test`` extra (``pip install -e '.[browser-test]'``) and drives
``/usr/bin/chromium`` (``apt-get install chromium``; never ``playwright install``). Without them these tests are
not collected, unless ``HANDRAIL_REQUIRE_BROWSER=1`` (as in CI), which makes their absence an error.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

CHROMIUM = "/usr/bin/chromium"
_NEEDS = {
    "playwright (pip install -e '.[browser-test]')": importlib.util.find_spec("playwright") is not None,
    f"{CHROMIUM} (apt-get install chromium)": Path(CHROMIUM).exists(),
}
_MISSING = [what for what, present in _NEEDS.items() if not present]
if _MISSING and os.environ.get("HANDRAIL_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"The browser tests need {' and '.join(_MISSING)}.")
collect_ignore_glob = ["test_*.py"] if _MISSING else []


_LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
"""Root needs no sandbox; the networking flags keep chromium from calling out of the closed network."""


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Debian's chromium, launched once for these tests and closed after them.

    Package-scoped, not session-scoped: Playwright's sync API runs an event loop in this thread while it is
    started, and the tests that run after these (asyncio.run in the docs examples) need none running.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=_LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser context (its own cookies: a new visitor) for one test."""
    made = browser.new_context()
    yield made
    made.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A tab in the test's context."""
    return context.new_page()


@dataclass
class Inbox:
    """The served inbox: its URL and a token per principal; helpers to start runs through the API."""

    url: str
    tokens: dict[str, str]

    def api(self, method: str, path: str, token: str = "alice", **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[token]}"}
        return httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kwargs)

    def start_run(self, *calls: tuple[str, dict[str, Any]], agent: str = "payer") -> str:
        """Start a run whose model makes ``calls`` in one step; its id once its approvals exist."""
        body = {"agent_name": agent, "messages": [json.dumps({"steps": [list(calls)]})]}
        response = self.api("POST", "/runs", json=body)
        assert response.status_code == 201, response.text
        run_id: str = response.json()["run"]["run_id"]
        self.approvals(run_id, len(calls))
        return run_id

    def approvals(self, run_id: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The run's approvals, once there are ``count`` of them (waits up to ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            items: list[dict[str, Any]] = self.api("GET", "/approvals", params={"run_id": run_id}).json()["items"]
            if len(items) >= count or time.monotonic() > deadline:
                assert len(items) == count, items
                return items
            time.sleep(0.05)


@pytest.fixture(scope="session")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inbox]:
    """One ``handrail serve`` on 127.0.0.1 (a free port) over a SQLite store, with the test agents."""
    from handrail.stores import SQLiteSnapshotStore
    from tests.browser._agents import AGENT_FILES
    from tests.server._processes import serving

    root = tmp_path_factory.mktemp("inbox")
    agents = root / "agents"
    agents.mkdir()
    for name, text in AGENT_FILES.items():
        (agents / f"{name}.yaml").write_text(text, encoding="utf-8")
    store = SQLiteSnapshotStore(root / "inbox.db")
    now = datetime.now(UTC)
    tokens = {
        "alice": store.add_token("alice", "approver", at=now)[1],
        "vera": store.add_token("vera", "viewer", at=now)[1],
        "rita": store.add_token("rita", "approver", tools=("read_*",), at=now)[1],
    }
    store.close()
    with serving(f"sqlite:///{root / 'inbox.db'}", "--agents", str(agents)) as server:
        yield Inbox(server.url, tokens)


def shoot(page: Any, name: str) -> None:
    """Save a screenshot of the page as NAME.png under $HANDRAIL_SCREENSHOTS (nothing when it is unset)."""
    folder = os.environ.get("HANDRAIL_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
