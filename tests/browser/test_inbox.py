"""The inbox page in Debian's chromium against a real ``handrail serve``: login, the list, deciding, live updates.

Every wait is Playwright's auto-waiting ``expect`` (a deadline, no sleeps); a decision's effect is checked where
it lands (the run's result, which the model produced from what reached it).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, Request, expect

from tests.browser.conftest import Inbox, shoot

pytestmark = pytest.mark.browser
XSS = "<img src=x onerror=window.__pwned=1>"


def login(page: Page, inbox: Inbox, who: str = "alice", path: str = "/") -> None:
    page.goto(inbox.url + path)
    page.get_by_label("Token").fill(inbox.tokens[who])
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#whoami")).to_contain_text(who)


def open_approval(page: Page, inbox: Inbox, approval_id: str) -> None:
    page.goto(f"{inbox.url}/#/approvals/{approval_id}")
    expect(page.get_by_role("heading", level=1)).to_be_visible()


def decision_buttons(page: Page) -> Any:
    return page.locator(".actions button[data-decision]")


def test_login_shows_who_and_keeps_no_token(page: Page, inbox: Inbox) -> None:
    page.goto(inbox.url)
    page.get_by_label("Token").fill("tk_0000000000000000.wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown or revoked")
    login(page, inbox)
    expect(page.locator("#whoami")).to_have_text("alice (approver)")
    expect(page.get_by_role("heading", name="Approvals")).to_be_visible()
    stored = page.evaluate("JSON.stringify([localStorage, sessionStorage, document.cookie])")
    assert inbox.tokens["alice"] not in stored and "handrail_session" not in stored  # the cookie is HttpOnly
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("Token")).to_be_visible()
    page.reload()
    expect(page.get_by_label("Token")).to_be_visible()  # the session is gone, not only the view


def test_the_pending_approval_is_listed_with_tool_arguments_and_preview(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 5, "memo": "rent"}))
    login(page, inbox, path=f"/#/?run_id={run_id}")
    row = page.locator(".row")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("transfer")
    expect(row).to_contain_text("amount=5, memo=rent")
    expect(row).to_contain_text("expires")
    expect(page.get_by_label("Run")).to_have_value(run_id)  # the filter comes from the URL
    expect(page.locator(".count[aria-current=page]")).to_have_text("pending 1")
    shoot(page, "list-desktop")
    row.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"#/approvals/ap_"))
    expect(page.locator(".tree")).to_contain_text('memo: "rent"')
    expect(page.get_by_role("region", name="Why it asks")).to_contain_text("Check the amount before approving")
    expect(page.locator(".tool-description")).to_contain_text("Send money.")
    expect(page.get_by_role("region", name="Preview")).not_to_contain_text("Loading")  # shown, or "unavailable"
    expect(page.get_by_role("region", name="Audit trail")).to_contain_text("created")
    expect(decision_buttons(page)).to_have_count(3)
    shoot(page, "detail-desktop")


def test_approve_flips_the_status_in_both_tabs_and_the_run_finishes(context: BrowserContext, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 5, "memo": "rent"}))
    (approval,) = inbox.approvals(run_id, 1)
    first = context.new_page()
    login(first, inbox)
    open_approval(first, inbox, approval["id"])
    second = context.new_page()  # the same session: a second tab
    open_approval(second, inbox, approval["id"])
    expect(second.get_by_role("button", name="Approve")).to_be_enabled()
    first.get_by_role("button", name="Approve").click()
    expect(first.locator("#outcome")).to_contain_text("approved by alice")
    expect(second.locator("#outcome")).to_contain_text("approved by alice")  # from the event stream, no reload
    for button in decision_buttons(second).all():
        expect(button).to_be_disabled()
    expect(second.locator(".why")).to_contain_text("approved by alice")
    second.get_by_role("link", name=run_id).click()
    expect(second.locator("#run-status")).to_contain_text("finished")
    expect(second.get_by_role("region", name="Result")).to_contain_text("done: sent 5 (rent)")
    expect(second.get_by_role("region", name="Waiting for")).to_contain_text("No pending approvals")


def test_reject_with_feedback_reaches_the_model(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 900}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Reject").click()
    page.get_by_label("Feedback for the model").fill("Ask Bob first.")
    page.get_by_role("button", name="Send rejection").click()
    expect(page.locator("#outcome")).to_contain_text("rejected by alice")
    expect(page.locator(".feedback").first).to_contain_text("Ask Bob first.")
    page.goto(f"{inbox.url}/#/runs/{run_id}")
    expect(page.get_by_role("region", name="Result")).to_contain_text("Ask Bob first.")


def test_an_edit_failing_the_schema_is_shown_at_the_field_and_sends_nothing(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 5, "memo": "rent"}))
    (approval,) = inbox.approvals(run_id, 1)
    posts: list[Request] = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" and "/decision" in r.url else None)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Edit").click()
    amount = page.get_by_label("amount")
    amount.fill("five")
    page.get_by_role("button", name="Send edit").click()
    error = page.locator(".field-error[data-field=amount]")
    expect(error).to_have_text("amount must be a whole number")
    expect(amount).to_have_attribute("aria-invalid", "true")
    expect(amount).to_be_focused()
    amount.fill("")
    page.get_by_role("button", name="Send edit").click()
    expect(error).to_have_text("amount is required")
    assert posts == []  # nothing was sent
    expect(page.locator("#outcome")).to_contain_text("waiting for a decision")
    amount.fill("42")
    page.get_by_label("memo").fill("rent, less")
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#outcome")).to_contain_text("edited by alice")
    assert len(posts) == 1
    page.goto(f"{inbox.url}/#/runs/{run_id}")
    expect(page.get_by_role("region", name="Result")).to_contain_text("done: sent 42 (rent, less)")


def test_the_json_editor_checks_json_and_the_schema_before_sending(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("label_files", {"paths": ["a.txt"], "label": "keep"}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Arguments (JSON)")  # a list argument: no generated form
    editor.fill("{not json")
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#edit-json-error")).to_contain_text("Not valid JSON")
    editor.fill('{"paths": "a.txt", "label": "keep"}')
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#edit-json-error")).to_contain_text("/arguments/paths: must be of type array")
    expect(page.locator(".action-message")).to_contain_text("Fix the fields marked")  # checked here, not sent
    expect(page.locator("#outcome")).to_contain_text("waiting for a decision")


def test_an_approval_created_out_of_band_appears_live(page: Page, inbox: Inbox) -> None:
    login(page, inbox, path="/#/?agent_name=payer")
    expect(page.locator("#live-state")).to_have_text("live")
    run_id = inbox.start_run(("transfer", {"amount": 77, "memo": "out of band"}))
    row = page.locator(".row", has_text="memo=out of band")
    expect(row).to_have_count(1)
    shown = {"agent_name": "payer", "status": "pending", "limit": 25}  # what the page lists: its filter, a page
    listed = inbox.api("GET", "/approvals", params=shown).json()["items"]
    expect(page.locator(".row")).to_have_count(len(listed))  # the new row added once, the others kept
    (approval,) = inbox.approvals(run_id, 1)
    inbox.api("POST", f"/approvals/{approval['id']}/decision", json={"decision": "approve"})
    expect(row).to_contain_text("approved by alice")  # updated in place, from the event stream


def test_an_xss_payload_stays_text(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 1, "memo": XSS}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox, path=f"/#/?run_id={run_id}")
    expect(page.locator(".row")).to_contain_text(XSS)
    open_approval(page, inbox, approval["id"])
    expect(page.locator(".tree")).to_contain_text(XSS)
    expect(page.get_by_role("region", name="Conversation")).to_contain_text("__pwned")
    policy = page.get_by_role("region", name="Why it asks")
    expect(policy).to_contain_text("[x](javascript:window.__pwned=1)")  # not a link: text
    expect(policy.get_by_role("link", name="the runbook")).to_have_attribute("rel", "noopener noreferrer")
    expect(page.locator("img")).to_have_count(0)
    expect(page.locator("a[href^='javascript' i]")).to_have_count(0)
    page.keyboard.press("Tab")
    assert page.evaluate("window.__pwned") is None


def test_a_foreign_origin_decision_is_refused(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 3}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox)
    path = f"{inbox.url}/api/v1/approvals/{approval['id']}"
    refused = page.request.post(f"{path}/decision", data={"decision": "approve"},
                                headers={"Origin": "http://evil.example"})  # fmt: skip
    assert refused.status == 403 and "cross-origin" in refused.json()["type"]
    assert page.request.get(path).json()["approval"]["status"] == "pending"  # the cookie itself works


def test_an_expired_approval_shows_as_expired_and_cannot_be_decided(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 4}), agent="expiring")
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    expect(page.locator("#outcome")).to_contain_text("expired", timeout=30_000)  # 2 s after its creation
    for button in decision_buttons(page).all():
        expect(button).to_be_disabled()
    late = page.request.post(f"{inbox.url}/api/v1/approvals/{approval['id']}/decision", data={"decision": "approve"},
                             headers={"Origin": inbox.url})  # fmt: skip
    assert late.status == 410
    page.goto(f"{inbox.url}/#/runs/{run_id}")
    expect(page.get_by_role("region", name="Result")).to_contain_text("expired")


def test_a_viewer_reads_but_cannot_decide(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 6}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox, who="vera")
    expect(page.locator("#whoami")).to_have_text("vera (viewer)")
    open_approval(page, inbox, approval["id"])
    for button in decision_buttons(page).all():
        expect(button).to_be_disabled()
    expect(page.locator(".why")).to_contain_text("You are a viewer")


def test_the_run_view_lists_its_pending_approvals(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 8}), ("transfer", {"amount": 9}))
    login(page, inbox, path=f"/#/runs/{run_id}")
    expect(page.locator("#run-status")).to_contain_text("paused")
    expect(page.get_by_role("region", name="Waiting for").locator(".row")).to_have_count(2)


def test_keyboard_only(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 10, "memo": "keys"}))
    login(page, inbox, path=f"/#/?run_id={run_id}")
    link = page.locator(".row a")
    expect(link).to_have_count(1)
    link.focus()
    page.keyboard.press("Enter")
    reject = page.get_by_role("button", name="Reject")
    reject.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Feedback for the model")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_label("Feedback for the model")).to_have_count(0)
    expect(reject).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.type("Not this month.")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Send rejection")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#outcome")).to_contain_text("rejected by alice")


@pytest.mark.parametrize("width", [360])
def test_the_page_fits_a_phone(browser: Any, inbox: Inbox, width: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    try:
        long = "x" * 300
        run_id = inbox.start_run(("transfer", {"amount": 11, "memo": long}))
        (approval,) = inbox.approvals(run_id, 1)
        login(page, inbox, path=f"/#/?run_id={run_id}")
        expect(page.locator(".row")).to_have_count(1)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shoot(page, "list-phone")
        open_approval(page, inbox, approval["id"])
        expect(page.get_by_role("region", name="Audit trail")).to_contain_text("created")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.get_by_role("button", name="Edit").click()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shoot(page, "detail-phone")
    finally:
        context.close()


PREVIEWS = [
    ({"kind": "diff", "title": "config.yaml", "content": "--- a\n+++ b\n@@ -1 +1 @@\n-old <b>\n+new <b>"}, ".d-add"),
    ({"kind": "markdown", "title": None, "content": "**Dear** Bob, [pay](javascript:window.__pwned=1)"}, "strong"),
    ({"kind": "json", "title": "cost", "content": '{"euros": 12.5}'}, ".j-key"),
    ({"kind": "text", "title": "SQL", "content": "DELETE FROM users; <script>window.__pwned=1</script>"}, "pre"),
]


@pytest.mark.parametrize(("preview", "selector"), PREVIEWS, ids=[p["kind"] for p, _ in PREVIEWS])
def test_a_preview_renders_as_text(page: Page, inbox: Inbox, preview: dict[str, Any], selector: str) -> None:
    # The preview endpoint's contract (GET /api/v1/approvals/{id}/preview), answered here by the browser.
    run_id = inbox.start_run(("transfer", {"amount": 12}))
    (approval,) = inbox.approvals(run_id, 1)
    page.route("**/preview", lambda route: route.fulfill(json={"preview": preview, "unavailable": None}))
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    box = page.get_by_role("region", name="Preview")
    expect(box.locator(selector)).not_to_have_count(0)
    if preview["title"]:
        expect(box.get_by_role("heading", level=3)).to_have_text(preview["title"])
    if preview["kind"] == "diff":
        expect(box.locator(".d-add")).to_have_text("+new <b>")
        expect(box.locator(".d-del")).to_have_text("-old <b>")
    expect(box.locator("a, script, b")).to_have_count(0)
    expect(decision_buttons(page).first).to_be_enabled()
    assert page.evaluate("window.__pwned") is None


UNAVAILABLE = [{"status": 500, "json": {"title": "x"}}, {"json": {"preview": None, "unavailable": "took over 2 s"}}]


@pytest.mark.parametrize("answer", UNAVAILABLE, ids=["500", "unavailable"])
def test_an_unavailable_preview_never_blocks_the_decision(page: Page, inbox: Inbox, answer: dict[str, Any]) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 13}))
    (approval,) = inbox.approvals(run_id, 1)
    page.route("**/preview", lambda route: route.fulfill(**answer))
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    expect(page.get_by_role("region", name="Preview")).to_contain_text("Preview unavailable")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#outcome")).to_contain_text("approved by alice")


def test_a_view_gone_stale_offline_is_refused_and_reloads(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 14}))
    (approval,) = inbox.approvals(run_id, 1)
    page.route("**/api/v1/events**", lambda route: route.abort())  # no live update: the view goes stale
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Edit").click()
    body = {"decision": "edit", "arguments": {"amount": 15}}
    assert inbox.api("POST", f"/approvals/{approval['id']}/decision", json=body).status_code == 200
    page.get_by_label("amount").fill("16")
    page.get_by_role("button", name="Send edit").click()  # If-Match names version 1: refused (412 or 409)
    expect(page.locator(".action-message [role=alert]")).to_be_visible()
    expect(page.locator("#outcome")).to_contain_text("edited by alice")
    expect(page.locator(".tree").first).to_contain_text("amount: 15")


def test_a_decision_made_elsewhere_closes_the_open_form(page: Page, inbox: Inbox) -> None:
    run_id = inbox.start_run(("transfer", {"amount": 17}))
    (approval,) = inbox.approvals(run_id, 1)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Reject").click()
    assert inbox.api("POST", f"/approvals/{approval['id']}/decision", json={"decision": "approve"}).status_code == 200
    expect(page.locator("#outcome")).to_contain_text("approved by alice")
    expect(page.get_by_label("Feedback for the model")).to_have_count(0)
    expect(page.locator(".action-message")).to_contain_text("Changed elsewhere")
