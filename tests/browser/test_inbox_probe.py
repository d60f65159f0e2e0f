"""What a fresh-user probe of the inbox found, each fixed and held here: huge and hidden-character arguments,
previews that could pass for the page, the JSON editor's schema check, bad hash routes, a revoked session and a
restarted server, and smaller wording slips. Waits are Playwright's ``expect`` deadlines; servers are real.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from tests.browser.conftest import Inbox
from tests.browser.test_inbox import login, open_approval

pytestmark = pytest.mark.browser
RLO = "\u202e"


def pending(inbox: Inbox, *calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    run_id = inbox.start_run(*calls)
    return inbox.approvals(run_id, len(calls))[0]


def test_a_huge_argument_with_an_override_is_cut_and_the_call_can_be_decided(page: Page, inbox: Inbox) -> None:
    memo = RLO + "evil" + "A" * 300_000
    approval = pending(inbox, ("transfer", {"amount": 5, "memo": memo}))
    login(page, inbox, path=f"/#/?run_id={approval['run_id']}")
    summary = page.locator(".row .summary")
    expect(summary).to_contain_text("amount=5, memo=")
    assert len(summary.text_content() or "") < 260  # the row shows 200 characters (and the escape)
    open_approval(page, inbox, approval["id"])
    tree = page.locator("section[aria-labelledby=h-args] .tree")
    expect(tree).to_contain_text("⟪U+202E⟫evilAAA")
    show = tree.get_by_role("button", name=f"show all {len(memo) + 2:,} characters")  # with the JSON quotes
    expect(show).to_be_visible()
    assert page.evaluate("document.documentElement.scrollHeight") < 10_000
    show.click()
    box = tree.locator(".untrusted.long")
    expect(box).to_be_focused()
    assert box.evaluate("b => b.textContent.length") > 300_000
    assert box.evaluate("b => b.clientHeight") < 500  # a scrollable box, not a page 600,000 px tall
    assert page.evaluate("document.documentElement.scrollHeight") < 10_000
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#outcome")).to_contain_text("approved by alice")


MD_EMAIL = {"kind": "markdown", "title": "email", "content": f"# Invoice\n\nTo: x@e.com{RLO}gnp.exe\n\nHi\u200bthere"}


def test_direction_changing_and_invisible_characters_are_shown_and_warned_of(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("transfer", {"amount": 6, "memo": f"x@e.com{RLO}gnp.exe"}))
    page.route("**/preview", lambda route: route.fulfill(json={"preview": MD_EMAIL, "unavailable": None}))
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    args = page.get_by_role("region", name="Arguments")
    expect(args).to_contain_text('memo: "x@e.com⟪U+202E⟫gnp.exe"')
    expect(args.locator(".hidden-warning")).to_have_text("⚠ hidden or direction-changing characters")
    assert args.locator(".j-string").first.evaluate("n => getComputedStyle(n).unicodeBidi") in ("isolate", "plaintext")
    preview = page.get_by_role("region", name="Preview")
    expect(preview).to_contain_text("To: x@e.com⟪U+202E⟫gnp.exe")
    expect(preview).to_contain_text("Hi⟪U+200B⟫there")
    expect(preview.locator(".hidden-warning")).to_be_visible()
    row_text = page.evaluate("document.body.innerText")
    assert RLO not in row_text and "\u200b" not in row_text


def test_a_preview_is_framed_as_the_tools_and_its_headings_are_toned_down(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("transfer", {"amount": 7}))
    page.route("**/preview", lambda route: route.fulfill(json={"preview": MD_EMAIL, "unavailable": None}))
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    frame = page.locator(".preview-frame")
    expect(frame).to_contain_text("The tool's preview")
    heading = frame.locator(".md-h")
    expect(heading).to_have_text("Invoice")
    body_size = page.evaluate("parseFloat(getComputedStyle(document.querySelector('main p')).fontSize)")
    assert float(heading.evaluate("n => parseFloat(getComputedStyle(n).fontSize)")) <= body_size
    assert frame.evaluate("n => getComputedStyle(n).borderTopStyle") != "none"


def test_the_json_editor_checks_the_schema_and_sends_nothing_while_invalid(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("label_files", {"paths": ["a.txt"], "label": "keep"}))
    posts: list[Request] = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" and "/decision" in r.url else None)
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Edit").click()
    editor = page.get_by_label("Arguments (JSON)")
    errors = page.locator("#edit-json-error")
    editor.fill('{"paths": ["a.txt", 3]}')
    page.get_by_role("button", name="Send edit").click()
    expect(errors).to_contain_text("/arguments/paths/1: must be of type string")
    expect(errors).to_contain_text("/arguments/label: is required")
    assert posts == []
    editor.fill('{"paths": ["b.txt"], "label": "drop"}')
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#outcome")).to_contain_text("edited by alice")
    audit = page.get_by_role("region", name="Audit trail")
    expect(audit.locator(".changes")).to_contain_text('"keep" → "drop"')  # the edit's changes, before → after
    expect(audit.locator(".changes")).to_contain_text('/paths ["a.txt"] → ["b.txt"]')


def test_keywords_left_to_the_server_still_get_its_422_at_the_editor(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("label_files", {"paths": ["a.txt"], "label": "keep"}))

    def loose(route: Any) -> None:  # the schema as a validator that skips "type" sees it
        response = route.fetch()
        data = response.json()
        data["approval"]["arguments_schema"]["properties"]["paths"].pop("type", None)
        data["approval"]["arguments_schema"]["properties"]["paths"]["x-unknown"] = True
        route.fulfill(response=response, json=data)

    login(page, inbox)
    page.route(f"**/api/v1/approvals/{approval['id']}", loose)
    open_approval(page, inbox, approval["id"])
    page.get_by_role("button", name="Edit").click()
    page.get_by_label("Arguments (JSON)").fill('{"paths": "a.txt", "label": "keep"}')
    page.get_by_role("button", name="Send edit").click()
    expect(page.locator("#edit-json-error")).to_contain_text("/arguments/paths")
    expect(page.get_by_role("alert").last).to_contain_text("Unprocessable")


@pytest.mark.parametrize("hash_", ["#/approvals/../", "#/approvals/ap_123", "#/approvals/%2e%2e", "#/runs/..",
                                   "#/approvals/x/y"])  # fmt: skip
def test_a_bad_hash_route_fetches_nothing(page: Page, inbox: Inbox, hash_: str) -> None:
    login(page, inbox)
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/api/v1/" in r.url and "/events" not in r.url else None)
    page.goto(f"{inbox.url}/{hash_}")
    expect(page.get_by_role("alert")).to_contain_text("not an" if "approvals" in hash_ else "not a run id")
    assert seen == []


def test_an_unknown_status_filter_is_ignored_with_a_note(page: Page, inbox: Inbox) -> None:
    pending(inbox, ("transfer", {"amount": 8}))
    login(page, inbox, path="/#/?status=bogus")
    expect(page.get_by_role("note")).to_contain_text('Unknown status "bogus" ignored')
    expect(page.locator(".count[aria-current=page]")).to_contain_text("pending")
    expect(page.locator(".row").first).to_be_visible()


@contextmanager
def own_server(tmp_path: Path, port: int = 0) -> Iterator[tuple[Any, str, Any]]:
    """A private ``handrail serve`` (its store, a token for alice): (server, her token, the store's path)."""
    from handrail.stores import SQLiteSnapshotStore
    from tests.browser._agents import AGENT_FILES
    from tests.server._processes import serving

    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    for name, text in AGENT_FILES.items():
        (agents / f"{name}.yaml").write_text(text, encoding="utf-8")
    db = tmp_path / "own.db"
    store = SQLiteSnapshotStore(db)
    token = store.add_token("alice", "approver", at=datetime.now(UTC))[1]
    store.close()
    options = ("--port", str(port)) if port else ()
    with serving(f"sqlite:///{db}", "--agents", str(agents), *options) as server:
        yield server, token, db


def test_a_revoked_session_asks_to_log_in_without_a_page_error(page: Page, tmp_path: Path) -> None:
    from handrail.stores import SQLiteSnapshotStore

    with own_server(tmp_path) as (server, token, db):
        inbox = Inbox(server.url, {"alice": token})
        approval = pending(inbox, ("transfer", {"amount": 9}))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        login(page, inbox)
        open_approval(page, inbox, approval["id"])
        store = SQLiteSnapshotStore(db)
        store.revoke_token("alice", at=datetime.now(UTC))
        store.close()
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_text("Your session ended; log in again.")).to_be_visible()
        expect(page.get_by_label("Token")).to_be_visible()
        page.wait_for_timeout(300)  # let any late handler run: an error would be reported by now
        assert errors == []


def test_a_network_error_goes_when_the_stream_is_live_again(page: Page, tmp_path: Path) -> None:
    from tests.server._processes import start_serve

    with socket.socket() as probe:  # a free port, for the server to come back on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with own_server(tmp_path, port) as (server, token, db):
        inbox = Inbox(server.url, {"alice": token})
        approval = pending(inbox, ("transfer", {"amount": 10}))
        login(page, inbox)
        open_approval(page, inbox, approval["id"])
        expect(page.locator("#live-state")).to_have_text("live")
        server.stop()
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("alert")).to_contain_text("Network error")
        again = start_serve(f"sqlite:///{db}", "--agents", str(tmp_path / "agents"), "--port", str(port))
        try:
            expect(page.locator("#live-state")).to_have_text("live", timeout=60_000)
            expect(page.get_by_role("alert")).to_have_count(0)
            expect(page.get_by_role("button", name="Approve")).to_be_enabled()
        finally:
            again.stop()
            for pipe in (again.process.stdout, again.process.stderr):
                if pipe:
                    pipe.close()


def test_wording_an_unavailable_preview_once_and_the_login_help(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("transfer", {"amount": 11}))
    why = {"preview": None, "unavailable": "preview unavailable: it took longer than 2 s"}
    page.route("**/preview", lambda route: route.fulfill(json=why))
    page.goto(inbox.url)
    help_ = page.locator("#token-help")
    expect(help_.locator("code")).to_have_text("handrail tokens add")
    assert "`" not in (help_.text_content() or "")
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    expect(page.get_by_role("region", name="Preview")).to_have_text(
        "PreviewPreview unavailable: it took longer than 2 s", use_inner_text=False
    )


def test_a_tool_call_in_the_conversation_is_monospace(page: Page, inbox: Inbox) -> None:
    approval = pending(inbox, ("transfer", {"amount": 12, "memo": "rent"}))
    login(page, inbox)
    open_approval(page, inbox, approval["id"])
    call = page.locator(".msg-call .json").first
    expect(call).to_contain_text("rent")
    args_font = page.locator("section[aria-labelledby=h-args] .tree").evaluate("n => getComputedStyle(n).fontFamily")
    assert call.evaluate("n => getComputedStyle(n).fontFamily") == args_font
