"""axe-core on every view of the inbox page, desktop and phone wide; the same views saved as the docs' screenshots.

axe-core comes from npm (``npm ci --prefix tests/browser``, pinned by package-lock.json). The page's CSP allows no
inline script, so these tests alone use a browser context with ``bypass_csp=True`` to inject it. The data is a
believable accounts-payable agent's (tests/browser/_showcase.py) on a server of its own: three pending approvals
and one decided. With HANDRAIL_SCREENSHOTS set, the views of SHOTS are written to docs/images/ as PNG files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import Inbox
from tests.browser.test_inbox import login

pytestmark = pytest.mark.browser
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
IMAGES = Path(__file__).parents[2] / "docs" / "images"
BLOCKING = ("serious", "critical")
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 360, "height": 740}}
SHOTS = ("list-desktop", "list-phone", "detail-desktop", "detail-phone", "detail-email-desktop")
RUN_AXE = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations.map((v) => ({
  id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" "))}))"""


@pytest.fixture(scope="module")
def showcase(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Inbox, dict[str, str]]]:
    """A server with the payables agent; three pending approvals and one approved. Yields it and approval ids."""
    from handrail.stores import SQLiteSnapshotStore
    from tests.browser import _showcase as show
    from tests.server._processes import serving

    root = tmp_path_factory.mktemp("showcase")
    (root / "agents").mkdir()
    (root / "agents" / "payables.yaml").write_text(show.AGENT_FILE, encoding="utf-8")
    store = SQLiteSnapshotStore(root / "inbox.db")
    now = datetime.now(UTC)
    tokens = {name: store.add_token(name, "approver", at=now)[1] for name in ("alice", "bob")}
    store.close()
    with serving(f"sqlite:///{root / 'inbox.db'}", "--agents", str(root / "agents")) as server:
        inbox = Inbox(server.url, tokens)
        ids: dict[str, str] = {}
        for request, count in ((show.PAY_SMALL, 1), (show.REMIND_LATE, 1), (show.PAY_INVOICE, 2)):
            response = inbox.api("POST", "/runs", json={"agent_name": "payables", "messages": [request]})
            assert response.status_code == 201, response.text
            for approval in inbox.approvals(response.json()["run"]["run_id"], count):
                ids[f"{approval['tool_name']}:{approval['arguments'].get('amount_eur', 'email')}"] = approval["id"]
        decided = inbox.api("POST", f"/approvals/{ids['transfer:240.0']}/decision", token="bob",
                            json={"decision": "approve"})  # fmt: skip
        assert decided.status_code == 200, decided.text
        yield inbox, ids


def need_axe() -> None:
    """Skip without axe-core (a failure when HANDRAIL_REQUIRE_BROWSER=1, as in CI)."""
    if not AXE.exists():
        message = f"{AXE} is missing: npm ci --prefix tests/browser --no-audit --no-fund"
        if os.environ.get("HANDRAIL_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)


def blocking(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in violations if v["impact"] in BLOCKING]


def report(found: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for view, violations in found.items():
        for v in violations:
            lines.append(f"{view}: {v['id']} ({v['impact']}): {v['help']}; at {', '.join(v['targets'][:5])}")
    return "\n".join(lines)


def axe(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is: [{id, impact, help, targets}]."""
    page.add_script_tag(path=str(AXE))
    violations: list[dict[str, Any]] = page.evaluate(RUN_AXE)
    return violations


def views(page: Page, inbox: Inbox, ids: dict[str, str]) -> Iterator[tuple[str, Callable[[], None]]]:
    """(name, open it) for each view of the page, each waited for until its data is shown."""

    def detail(key: str, form: str = "") -> Callable[[], None]:
        def open_it() -> None:
            page.goto(f"{inbox.url}/#/approvals/{ids[key]}")
            expect(page.get_by_role("region", name="Preview")).not_to_contain_text("Loading")
            expect(page.get_by_role("region", name="Audit trail")).to_contain_text("created")
            expect(page.get_by_role("region", name="Conversation")).not_to_contain_text("Loading")
            if form == "reject":
                page.get_by_role("button", name="Reject").click()
                expect(page.get_by_label("Feedback for the model")).to_be_focused()
            elif form == "edit":  # with a field refused by the schema
                page.get_by_role("button", name="Edit").click()
                page.get_by_label("amount_eur").fill("a lot")
                page.get_by_role("button", name="Send edit").click()
                expect(page.get_by_label("amount_eur")).to_have_attribute("aria-invalid", "true")

        return open_it

    def listed() -> None:
        page.goto(f"{inbox.url}/#/?status=all")
        expect(page.locator(".row")).to_have_count(4)
        expect(page.locator("#live-state")).to_have_text("live")

    def run_view() -> None:
        page.locator(".meta a").first.click()  # the approval's run
        expect(page.get_by_role("region", name="Result")).to_contain_text("Done: transferred 240.00 EUR to Jo Park")

    yield "list", listed
    yield "detail", detail("transfer:1250.0")
    yield "detail-reject", detail("transfer:1250.0", "reject")
    yield "detail-edit", detail("transfer:1250.0", "edit")
    yield "detail-email", detail("send_email:email")
    yield "detail-decided", detail("transfer:240.0")
    yield "run", run_view  # from the decided approval's detail


@pytest.mark.parametrize("width", list(VIEWPORTS))
def test_axe_finds_nothing_serious_on_any_view(browser: Browser, showcase: tuple[Inbox, dict[str, str]],
                                               width: str) -> None:  # fmt: skip
    need_axe()
    inbox, ids = showcase
    context = browser.new_context(viewport=VIEWPORTS[width], bypass_csp=True)  # to inject axe, this test only
    page = context.new_page()
    found: dict[str, list[dict[str, Any]]] = {}
    try:
        page.goto(inbox.url)
        expect(page.get_by_label("Token")).to_be_visible()
        found["login"] = blocking(axe(page))
        login(page, inbox)
        for name, open_view in views(page, inbox, ids):
            open_view()
            if f"{name}-{width}" in SHOTS and os.environ.get("HANDRAIL_SCREENSHOTS"):
                IMAGES.mkdir(exist_ok=True)
                page.screenshot(path=str(IMAGES / f"inbox-{name}-{width}.png"), full_page=True)
            found[name] = blocking(axe(page))
    finally:
        context.close()
    found = {view: violations for view, violations in found.items() if violations}
    assert not found, f"axe-core found serious or critical problems:\n{report(found)}"


def test_the_check_reports_a_planted_problem(browser: Browser, showcase: tuple[Inbox, dict[str, str]]) -> None:
    # The harness itself: text too faint to read and a button with no name are found, so a pass means something.
    need_axe()
    inbox, _ = showcase
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    try:
        page.goto(inbox.url)
        expect(page.get_by_label("Token")).to_be_visible()
        page.evaluate("""() => {
          const faint = document.createElement("p"); faint.textContent = "faint"; faint.style.color = "#ccc";
          document.querySelector("main").append(faint, document.createElement("button"));
        }""")
        assert {v["id"] for v in blocking(axe(page))} >= {"color-contrast", "button-name"}
    finally:
        context.close()
