// One run: its status, who started it, its input, the approvals it waits for and, once finished, its result.
// It reloads as events about the run (or its approvals) arrive.

import { getRun } from "./api.js";
import { badge, h, replace, timeNode, untrusted } from "./dom.js";
import { approvalRow } from "./list.js";

function textOf(message) {
  return (message?.content || []).map((p) => (typeof p.text === "string" ? p.text : "")).join("\n").trim();
}

function resultNode(run) {
  if (run.error) return h("div", { class: "error" }, h("strong", {}, "The run failed"), untrusted(typeof run.error === "string" ? run.error : JSON.stringify(run.error), { tag: "p" }));
  if (!run.result) return h("p", { class: "state" }, run.status === "finished" ? "No result." : "Not finished yet.");
  const last = textOf(run.result.last_message);
  return h("div", { class: "result" },
    untrusted(last || "(no text)", { tag: "p", cls: "result-text" }),
    h("p", { class: "help" }, `exit reason: ${run.result.exit_reason ?? "—"} · steps: ${run.result.step_count ?? "—"}`));
}

/** Mount the run view in main; returns the view. */
export function mountRun(main, id, ctx) {
  let disposed = false;
  let timer = null;
  replace(main, h("p", { class: "state" }, "Loading…"));

  const load = async () => {
    try {
      const { data } = await getRun(id);
      if (disposed) return;
      const run = data.run;
      const inputs = (run.input?.messages || []).map(textOf).filter(Boolean);
      replace(main,
        h("p", { class: "back" }, h("a", { href: ctx.lastList }, "← Approvals")),
        h("h1", {}, "Run ", untrusted(run.run_id, { cls: "run-id", max: 200 })),
        h("p", { class: "outcome-line", id: "run-status" }, badge(run.status), " ", run.status),
        h("dl", { class: "meta" },
          h("dt", {}, "Agent"), h("dd", {}, untrusted(run.agent_name, { max: 200 })),
          h("dt", {}, "Started by"), h("dd", {}, untrusted(run.initiator || "—", { max: 200 })),
          h("dt", {}, "Created"), h("dd", {}, timeNode(run.created_at)),
          h("dt", {}, "Updated"), h("dd", {}, timeNode(run.updated_at))),
        h("section", { "aria-labelledby": "h-pending" }, h("h2", { id: "h-pending" }, "Waiting for"),
          data.pending.length ? h("ul", { class: "rows" }, data.pending.map(approvalRow)) : h("p", { class: "state" }, "No pending approvals.")),
        h("section", { "aria-labelledby": "h-result" }, h("h2", { id: "h-result" }, "Result"), resultNode(run)),
        h("section", { "aria-labelledby": "h-input" }, h("h2", { id: "h-input" }, "Input"),
          inputs.length ? inputs.map((t) => untrusted(t, { tag: "p", cls: "msg-text" })) : h("p", { class: "state" }, "—")),
        h("p", {}, h("a", { href: `#/?status=all&run_id=${encodeURIComponent(run.run_id)}` }, "All approvals of this run")));
    } catch (error) {
      if (disposed) return;
      if (error.status === 401) ctx.fail(error);
      else replace(main, h("p", { class: "back" }, h("a", { href: ctx.lastList }, "← Approvals")), ctx.problemNode(error));
    }
  };
  load();
  return {
    onEvent(kind, data) {
      if (data.run_id !== id) return;
      clearTimeout(timer);
      timer = setTimeout(load, 100);
    },
    onReset() {
      load();
    },
    dispose() {
      disposed = true;
      clearTimeout(timer);
    },
  };
}
