// The list of approvals: counts per status, filters kept in the URL (#/?status=pending&tool_name=...), rows with
// tool, agent, age, time left and a one-line summary of the arguments, a "Load more" button for next_cursor.
// Rows appear and change in place as events arrive.

import { getApproval, listApprovals, query } from "./api.js";
import { badge, h, relative, replace, summary, untrusted } from "./dom.js";

export const STATUSES = ["pending", "approved", "edited", "rejected", "expired", "cancelled"];
const FILTERS = ["tool_name", "agent_name", "run_id"];
const LABELS = { tool_name: "Tool", agent_name: "Agent", run_id: "Run" };
const PAGE = 25;

/** "approved by alice", "expired", "pending (1 of 2 approvals)" */
export function outcomeText(a) {
  if (a.status === "pending") {
    const votes = (a.votes || []).length;
    return a.quorum > 1 ? `waiting for a decision (${votes} of ${a.quorum} approvals)` : "waiting for a decision";
  }
  if (a.status === "expired") return `expired (${a.on_expiry === "approve" ? "approved" : "rejected"} on expiry)`;
  return a.decided_by ? `${a.status} by ${a.decided_by}` : a.status;
}

/** One approval as a list row (a link to its detail). */
export function approvalRow(a) {
  return h("li", { class: `row s-${a.status}`, dataset: { id: a.id } },
    h("a", { href: `#/approvals/${encodeURIComponent(a.id)}`, class: "row-link" },
      h("span", { class: "row-head" }, h("strong", { class: "tool" }, untrusted(a.tool_name, { max: 200, button: false })), " ", badge(a.status),
        a.status !== "pending" ? h("span", { class: "outcome" }, outcomeText(a)) : null),
      h("span", { class: "row-meta" }, h("span", { class: "agent" }, untrusted(a.agent_name, { max: 200, button: false })), " · ", relative("age", a.created_at),
        a.status === "pending" ? [" · ", relative("left", a.expires_at)] : null),
      untrusted(summary(a.arguments) || "(no arguments)", { cls: "summary", max: 200, button: false })));
}

function filtersOf(params) {
  const asked = params.get("status");
  const filters = { status: asked || "pending" };
  if (asked && ![...STATUSES, "all"].includes(asked)) {
    filters.status = "pending";
    // not enumerable: shown as a note, never sent nor put in the counts' links
    Object.defineProperty(filters, "ignored", { value: asked });
  }
  for (const key of FILTERS) filters[key] = params.get(key) || "";
  return filters;
}

function apiParams(filters) {
  const params = { ...filters };
  if (params.status === "all") delete params.status;
  return params;
}

function matches(a, filters) {
  if (filters.status !== "all" && a.status !== filters.status) return false;
  return FILTERS.every((key) => !filters[key] || a[key] === filters[key]);
}

function countsNode(counts, filters) {
  const total = Object.values(counts).reduce((x, y) => x + y, 0);
  const link = (status, n) => {
    const here = { ...filters, status };
    const attrs = { href: `#/${query(here)}`, class: `count s-${status}` };
    if (filters.status === status) attrs["aria-current"] = "page";
    return h("li", {}, h("a", attrs, h("span", { class: "count-label" }, status), " ", h("span", { class: "count-n" }, String(n))));
  };
  return h("ul", { class: "counts", "aria-label": "Approvals per status" },
    STATUSES.map((s) => link(s, counts[s] ?? 0)), link("all", total));
}

function filterForm(filters) {
  const status = h("select", { id: "f-status", name: "status" },
    [...STATUSES, "all"].map((s) => h("option", { value: s, selected: filters.status === s }, s)));
  const inputs = FILTERS.map((key) => {
    const input = h("input", { id: `f-${key}`, name: key, type: "text", autocomplete: "off", spellcheck: "false" });
    input.value = filters[key];
    return h("div", { class: "filter" }, h("label", { for: `f-${key}` }, LABELS[key]), input);
  });
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter approvals" },
    h("div", { class: "filter" }, h("label", { for: "f-status" }, "Status"), status), inputs,
    h("div", { class: "filter-buttons" }, h("button", { type: "submit" }, "Filter"),
      h("a", { href: "#/", class: "button-like" }, "Clear")));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = { status: status.value };
    for (const key of FILTERS) next[key] = form.elements[key].value.trim();
    const hash = `#/${query(next)}`;
    if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
    else location.hash = hash;
  });
  return form;
}

/** Mount the list in main; returns the view ({onEvent, onReset, dispose}). */
export function mountList(main, params, ctx) {
  const filters = filtersOf(params);
  const counts = h("div", { class: "counts-box" });
  const rows = h("ul", { class: "rows", "aria-label": "Approvals", "aria-live": "polite" });
  const stateLine = h("div", { class: "state", role: "status" }, "Loading…");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let cursor = null;
  let disposed = false;
  let countTimer = null;
  const byId = new Map();

  const note = filters.ignored === undefined ? null
    : h("p", { class: "note", role: "note" }, "Unknown status ", untrusted(JSON.stringify(filters.ignored), { max: 100, button: false }),
      ` ignored: showing pending (the statuses are ${[...STATUSES, "all"].join(", ")}).`);
  replace(main, h("h1", {}, "Approvals"), counts, note, filterForm(filters), stateLine, rows, more);

  const showEmpty = () => {
    stateLine.replaceChildren(byId.size ? "" : (filters.status === "pending" ? "Nothing is waiting for a decision." : "No approvals match."));
  };

  const add = (a, where = "end") => {
    const row = approvalRow(a);
    const old = byId.get(a.id);
    if (old) {
      const focused = old.contains(document.activeElement);
      old.replaceWith(row);
      if (focused) row.querySelector("a").focus();
    } else if (where === "start") rows.prepend(row);
    else rows.append(row);
    byId.set(a.id, row);
  };

  const loadPage = async (first) => {
    try {
      const { data } = await listApprovals({ ...apiParams(filters), cursor: first ? null : cursor, limit: PAGE });
      if (disposed) return;
      if (first) {
        rows.replaceChildren();
        byId.clear();
      }
      replace(counts, countsNode(data.counts, filters));
      data.items.forEach((a) => add(a));
      cursor = data.next_cursor;
      more.hidden = !cursor;
      showEmpty();
    } catch (error) {
      if (disposed) return;
      if (error.status === 401) ctx.fail(error);
      else replace(stateLine, ctx.problemNode(error));
    }
  };

  const refreshCounts = () => {
    clearTimeout(countTimer);
    countTimer = setTimeout(async () => {
      try {
        const { data } = await listApprovals({ ...apiParams(filters), limit: 1 });
        if (!disposed) replace(counts, countsNode(data.counts, filters));
      } catch (error) {
        if (error.status === 401) ctx.fail(error);
      }
    }, 150);
  };

  more.addEventListener("click", () => loadPage(false));
  loadPage(true);

  return {
    async onEvent(kind, data) {
      if (!kind.startsWith("approval.") || !data.approval_id) return;
      refreshCounts();
      if (!byId.has(data.approval_id) && kind !== "approval.created") return;
      try {
        const { data: detail } = await getApproval(data.approval_id, { context: 0 });
        if (disposed) return;
        const a = detail.approval;
        if (byId.has(a.id)) add(a);
        else if (matches(a, filters)) add(a, "start");
        showEmpty();
      } catch (error) {
        if (error.status === 401) ctx.fail(error);
      }
    },
    onReset() {
      loadPage(true);
    },
    dispose() {
      disposed = true;
      clearTimeout(countTimer);
    },
  };
}
