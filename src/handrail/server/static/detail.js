// One approval: what the call is (tool, description, arguments as a JSON tree, the policy's text as sanitized
// markdown, the preview, the last messages), who may decide it, and Approve / Reject / Edit. A decision is sent
// with If-Match (the ETag read), so a view that went stale gets 412 and reloads. Events about this approval
// (from another tab, the CLI, the API) reload it in place: a decided one shows who decided and its buttons go.

import { decide, getApproval, getAudit, getPreview } from "./api.js";
import { badge, escaped, h, hasHidden, hiddenWarning, jsonTree, randomKey, relative, replace, timeNode, untrusted } from "./dom.js";
import { outcomeText } from "./list.js";
import { renderMarkdown } from "./markdown.js";
import { schemaForm } from "./schemaform.js";

const VERB = { approve: "Approve", reject: "Reject", edit: "Edit" };

function globMatch(pattern, name) {
  const source = pattern.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")
    .replace(/\[!/g, "[^");
  try {
    return new RegExp(`^${source}$`, "s").test(name);
  } catch {
    return false;
  }
}

/** Why me may not decide a (null: they may). */
export function refusal(a, me, decision) {
  if (a.status !== "pending") return `It is ${outcomeText(a)}.`;
  if (a.expires_at && Date.parse(a.expires_at) <= Date.now()) return "It is past its expiry.";
  if (me.role === "viewer") return "You are a viewer: you can read approvals, not decide them.";
  if (me.role !== "admin" && !(me.tools || []).some((p) => globMatch(p, a.tool_name))) {
    return `You may decide only the tools ${(me.tools || []).join(", ") || "(none)"}.`;
  }
  if (decision !== "reject" && !a.initiator_may_approve && a.initiator === me.name) {
    return "You started this run: somebody else must approve it (you may reject it).";
  }
  return null;
}

function partNode(part) {
  if (typeof part.text === "string") return untrusted(part.text, { tag: "p", cls: "msg-text" });
  if (part.tool_call) {
    const call = part.tool_call;
    return h("div", { class: "msg-call" }, h("span", { class: "label" }, "calls ", untrusted(call.tool_name, { max: 200 })), jsonTree(call.arguments));
  }
  if (part.tool_call_result) {
    const r = part.tool_call_result;
    const name = r.origin?.tool_name ? [" of ", untrusted(r.origin.tool_name, { max: 200 })] : null;
    return h("div", { class: "msg-result" }, h("span", { class: "label" }, "result", name, r.error ? " (error)" : ""),
      untrusted(typeof r.result === "string" ? r.result : JSON.stringify(r.result), { tag: "p", cls: "msg-text" }));
  }
  return untrusted(JSON.stringify(part, null, 2), { tag: "pre", cls: "msg-text" });
}

function messagesNode(messages) {
  if (!messages.length) return h("p", { class: "state" }, "No messages.");
  return h("ol", { class: "messages" }, messages.map((m) =>
    h("li", { class: `msg r-${m.role}` }, h("span", { class: "role" }, m.role), (m.content || []).map(partNode))));
}

function changeNode(c) {
  const value = (v) => untrusted(JSON.stringify(v), { cls: "change-value", max: 200 });
  return h("li", {}, h("code", { class: "change-path" }, untrusted(c.path || "/", { max: 200 })), " ",
    c.op === "add" ? ["added: ", value(c.new)] : c.op === "remove" ? ["removed (was ", value(c.old), ")"]
      : [value(c.old), " → ", value(c.new)]);
}

function auditNode(entries) {
  if (!entries.length) return h("p", { class: "state" }, "No entries.");
  return h("ol", { class: "audit" }, entries.map((e) => h("li", {},
    h("span", { class: "audit-kind" }, e.kind), " ", timeNode(e.at),
    e.principal ? [" by ", h("strong", {}, untrusted(e.principal, { max: 200 }))] : null,
    e.decision ? ` (${e.decision})` : null,
    e.outcome ? ` → ${e.outcome}` : null,
    e.changes?.length ? h("ul", { class: "changes", "aria-label": "Changed arguments" }, e.changes.map(changeNode)) : null,
    e.feedback ? untrusted(e.feedback, { tag: "p", cls: "feedback" }) : null)));
}

function diffNode(content) {
  return h("pre", { class: "diff" }, content.split("\n").map((line) => {
    let kind = "ctx";
    if (/^(\+\+\+|---)/.test(line)) kind = "file";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    else if (line.startsWith("@@")) kind = "hunk";
    return h("span", { class: `d-${kind} untrusted` }, escaped(`${line}\n`));
  }));
}

/** A preview ({kind, content, title}) as nodes. */
export function previewNode(preview) {
  const content = String(preview.content ?? "").slice(0, 200000);
  let body;
  if (preview.kind === "markdown") body = renderMarkdown(content);
  else if (preview.kind === "diff") body = diffNode(content);
  else if (preview.kind === "json") {
    try {
      body = h("div", { class: "tree" }, jsonTree(JSON.parse(content)));
    } catch {
      body = untrusted(content, { tag: "pre", max: 20000 });
    }
  } else body = untrusted(content, { tag: "pre", cls: "preview-text", max: 20000 });
  const title = preview.title ? h("h3", { class: "preview-title" }, untrusted(preview.title, { max: 200 })) : null;
  return h("div", { class: `preview-frame k-${preview.kind}` },
    h("p", { class: "preview-label" }, "The tool's preview (written by the tool, not by this page)"),
    hasHidden(content) ? h("p", {}, hiddenWarning()) : null, title, h("div", { class: "preview-body" }, body));
}

/** The server's sentence on why there is no preview, once ("Preview unavailable: ..."). */
function unavailableText(why) {
  if (!why) return "Preview unavailable.";
  const text = String(why).slice(0, 500);
  if (/^preview unavailable/i.test(text)) return text.charAt(0).toUpperCase() + text.slice(1);
  return `Preview unavailable: ${text}`;
}

function section(title, id, ...children) {
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

/** Mount the detail of approval id in main; returns the view. */
export function mountDetail(main, id, ctx) {
  let approval = null;
  let etag = null;
  let panel = null; // the open reject / edit form: {kind, node, form?}
  let disposed = false;
  let busy = false;
  const actions = h("div", { class: "actions" });
  const auditBox = h("div", {}, h("p", { class: "state" }, "Loading…"));
  const previewBox = h("div", { class: "preview", "aria-live": "polite" }, h("p", { class: "state" }, "Loading preview…"));
  const messagesBox = h("div", {}, h("p", { class: "state" }, "Loading…"));
  const message = h("div", { class: "action-message", role: "status", "aria-live": "polite" });

  replace(main, h("p", { class: "state" }, "Loading…"));

  const loadAudit = async () => {
    try {
      const { data } = await getAudit(id);
      if (!disposed) replace(auditBox, auditNode(data.entries));
    } catch (error) {
      if (!disposed) replace(auditBox, ctx.problemNode(error));
    }
  };

  const loadPreview = async () => {
    try {
      const { data } = await getPreview(id);
      if (disposed) return;
      if (data?.preview) replace(previewBox, previewNode(data.preview));
      else replace(previewBox, h("p", { class: "state" }, unavailableText(data?.unavailable)));
    } catch {
      if (!disposed) replace(previewBox, h("p", { class: "state" }, "Preview unavailable."));
    }
  };

  const closePanel = (focusButton = true) => {
    const kind = panel?.kind;
    panel?.node.remove();
    panel = null;
    if (focusButton && kind) actions.querySelector(`[data-decision="${kind}"]`)?.focus();
  };

  const send = async (body, onProblem) => {
    if (busy) return;
    setBusy(true);
    replace(message, "Sending…");
    try {
      const { data, response } = await decide(id, body, etag, randomKey());
      approval = data.approval;
      etag = response.headers.get("ETag") || etag;
      panel = null;
      render();
      replace(message, `Done: ${outcomeText(approval)}.`);
      ctx.notify(`${approval.tool_name}: ${outcomeText(approval)}.`);
      loadAudit();
    } catch (error) {
      setBusy(false);
      if (error.status === 401) return ctx.fail(error);
      if ([409, 410, 412].includes(error.status)) {
        const why = error.status === 412 ? "This approval changed since you opened it; this is its current state." : error.detail;
        await load();
        replace(message, h("div", { class: "error", role: "alert" }, h("strong", {}, error.title), h("p", {}, why)));
        return;
      }
      if (error.status === 422 && onProblem && error.errors.length) onProblem(error);
      replace(message, ctx.problemNode(error));
    } finally {
      setBusy(false);
    }
  };

  const openReject = () => {
    closePanel(false);
    const area = h("textarea", { id: "reject-feedback", rows: 3, "aria-describedby": "reject-help" });
    const form = h("form", { class: "panel", "aria-label": "Reject" },
      h("label", { for: "reject-feedback" }, "Feedback for the model (optional)"),
      h("p", { class: "help", id: "reject-help" }, "The model reads this with the rejection, e.g. what to do instead."),
      area,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "danger" }, "Send rejection"),
        h("button", { type: "button", "data-cancel": "" }, "Cancel")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const feedback = area.value.trim();
      send({ decision: "reject", ...(feedback ? { feedback } : {}) });
    });
    panel = { kind: "reject", node: form };
    actions.after(form);
    area.focus();
  };

  const openEdit = () => {
    closePanel(false);
    const editor = schemaForm(approval.arguments_schema, approval.arguments, "edit");
    const feedback = h("input", { id: "edit-feedback", type: "text", autocomplete: "off" });
    const form = h("form", { class: "panel", "aria-label": "Edit the arguments", novalidate: true },
      h("h2", { class: "panel-title" }, "Edit the arguments"), editor.node,
      h("label", { for: "edit-feedback" }, "Note for the model (optional)"), feedback,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Send edit"),
        h("button", { type: "button", "data-cancel": "" }, "Cancel")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const args = editor.read();
      if (args === null) {
        replace(message, "Fix the fields marked before sending.");
        editor.focus();
        return;
      }
      const note = feedback.value.trim();
      send({ decision: "edit", arguments: args, ...(note ? { feedback: note } : {}) }, (error) => {
        editor.showErrors(error.errors);
        editor.focus();
      });
    });
    panel = { kind: "edit", node: form };
    actions.after(form);
    editor.focus();
  };

  const setBusy = (flag) => {
    busy = flag;
    for (const b of main.querySelectorAll(".panel button")) b.disabled = flag;
    if (approval && !disposed) updateButtons();
  };

  const updateButtons = () => {
    if (disposed || !ctx.me) return; // signed out meanwhile: the view is gone
    for (const button of actions.querySelectorAll("button[data-decision]")) {
      button.disabled = busy || refusal(approval, ctx.me, button.dataset.decision) !== null;
    }
  };

  const renderActions = () => {
    const allowed = approval.allowed_decisions || [];
    const why = refusal(approval, ctx.me, "reject");
    const buttons = ["approve", "reject", "edit"].filter((d) => allowed.includes(d)).map((d) =>
      h("button", { type: "button", class: d === "approve" ? "primary" : d === "reject" ? "danger" : "",
        "data-decision": d, "aria-expanded": d === "approve" ? null : "false" }, VERB[d]));
    const approveWhy = why === null ? refusal(approval, ctx.me, "approve") : null;
    replace(actions, h("div", { class: "buttons" }, buttons),
      why || approveWhy ? h("p", { class: "why", id: "why" }, why || approveWhy) : null);
    for (const button of buttons) {
      button.addEventListener("click", () => {
        const d = button.dataset.decision;
        if (d === "approve") send({ decision: "approve" });
        else if (panel?.kind === d) closePanel();
        else (d === "reject" ? openReject : openEdit)();
        for (const b of buttons) if (b.hasAttribute("aria-expanded")) b.setAttribute("aria-expanded", String(panel?.kind === b.dataset.decision));
      });
    }
    updateButtons();
  };

  const render = (messages) => {
    const a = approval;
    const outcome = h("p", { class: `outcome-line s-${a.status}`, id: "outcome" }, badge(a.status), " ", outcomeText(a),
      a.decided_at ? [" · ", timeNode(a.decided_at)] : null);
    const feedback = a.feedback ? h("p", { class: "feedback" }, h("span", { class: "label" }, "Feedback: "), untrusted(a.feedback)) : null;
    const meta = h("dl", { class: "meta" },
      h("dt", {}, "Agent"), h("dd", {}, untrusted(a.agent_name, { max: 200 })),
      h("dt", {}, "Run"), h("dd", {}, h("a", { href: `#/runs/${encodeURIComponent(a.run_id)}` }, a.run_id)),
      h("dt", {}, "Created"), h("dd", {}, timeNode(a.created_at), " (", relative("age", a.created_at), ")"),
      h("dt", {}, "Expires"), h("dd", {}, a.expires_at ? [timeNode(a.expires_at), a.status === "pending" ? [" (", relative("left", a.expires_at), ")"] : null, ` · on expiry: ${a.on_expiry}`] : "never"),
      a.initiator ? [h("dt", {}, "Started by"), h("dd", {}, untrusted(a.initiator, { max: 200 }))] : null);
    const args = h("div", { class: "tree" }, jsonTree(a.arguments));
    if (messages) replace(messagesBox, messagesNode(messages));
    replace(main,
      h("p", { class: "back" }, h("a", { href: ctx.lastList }, "← Approvals")),
      h("h1", {}, untrusted(a.tool_name, { cls: "tool", max: 200 })),
      outcome, feedback, actions, message,
      a.description ? section("Why it asks", "h-policy", renderMarkdown(a.description)) : null,
      section("Arguments", "h-args", args),
      section("Preview", "h-preview", previewBox),
      section("Details", "h-meta", meta, h("p", { class: "tool-description" }, h("span", { class: "label" }, "Tool: "), untrusted(a.tool_description || "(no description)"))),
      section("Conversation", "h-messages", messagesBox),
      section("Audit trail", "h-audit", auditBox));
    renderActions();
    if (panel) actions.after(panel.node);
  };

  const load = async () => {
    try {
      const { data, response } = await getApproval(id);
      if (disposed) return;
      approval = data.approval;
      etag = response.headers.get("ETag");
      panel = null;
      replace(message);
      render(data.messages);
      loadAudit();
    } catch (error) {
      if (disposed) return;
      if (error.status === 401) ctx.fail(error);
      else replace(main, h("p", { class: "back" }, h("a", { href: ctx.lastList }, "← Approvals")), ctx.problemNode(error));
    }
  };

  const onKey = (event) => {
    if (event.key === "Escape" && panel) {
      event.preventDefault();
      closePanel();
      for (const b of actions.querySelectorAll("[aria-expanded]")) b.setAttribute("aria-expanded", "false");
    }
  };
  const onClick = (event) => {
    if (event.target.closest?.("[data-cancel]")) onKey({ key: "Escape", preventDefault() {} });
  };
  document.addEventListener("keydown", onKey);
  main.addEventListener("click", onClick);

  load().then(() => {
    if (approval) loadPreview();
  });

  return {
    async onEvent(kind, data) {
      if (data.approval_id !== id || busy) return;
      try {
        const { data: fresh, response } = await getApproval(id, { context: 0 });
        if (disposed || fresh.approval.version === approval?.version) return;
        const wasOpen = panel !== null;
        approval = fresh.approval;
        if (approval.status === "pending" && wasOpen) {
          replace(message, "Someone else acted on this approval; sending now checks your decision against the current version.");
          loadAudit();
          return; // keep the form and the old ETag: a stale decision is refused (412) and the view reloads
        }
        etag = response.headers.get("ETag");
        panel = null;
        render();
        replace(message, `Changed elsewhere: ${outcomeText(approval)}.`);
        loadAudit();
      } catch (error) {
        if (error.status === 401) ctx.fail(error);
      }
    },
    onReset() {
      load();
    },
    dispose() {
      disposed = true;
      document.removeEventListener("keydown", onKey);
      main.removeEventListener("click", onClick);
    },
  };
}
