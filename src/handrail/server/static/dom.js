// Building DOM nodes from text only: nothing here ever parses a string as HTML.

/** An element: h("p", {class: "x"}, "text", child, ...). Strings become text nodes; null/false are skipped. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children (strings as text, arrays flattened). */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace every child of node. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A <time> in the browser's local time, the UTC ISO value in its title. */
export function timeNode(iso) {
  if (!iso) return h("span", {}, "—");
  const when = new Date(iso);
  return h("time", { datetime: iso, title: when.toISOString() }, when.toLocaleString());
}

function span(seconds) {
  const s = Math.abs(seconds);
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/** "5 min ago" */
export function age(iso, now = Date.now()) {
  return `${span((now - Date.parse(iso)) / 1000)} ago`;
}

/** "expires in 9 min", "past its expiry", "never expires" */
export function timeLeft(iso, now = Date.now()) {
  if (!iso) return "never expires";
  const left = (Date.parse(iso) - now) / 1000;
  return left > 0 ? `expires in ${span(left)}` : "past its expiry";
}

/** A relative time that keeps itself current (see refreshRelative). */
export function relative(kind, iso) {
  const text = kind === "age" ? age(iso) : timeLeft(iso);
  const attrs = { class: "rel", dataset: { rel: kind, at: iso || "" } };
  if (iso) attrs.title = new Date(iso).toISOString();
  return h("span", attrs, text);
}

/** Update every relative time on the page. */
export function refreshRelative(root = document) {
  for (const node of root.querySelectorAll("[data-rel]")) {
    const iso = node.dataset.at || null;
    node.textContent = node.dataset.rel === "age" ? age(iso) : timeLeft(iso);
  }
}

/** One line of text from JSON arguments, at most max characters. */
export function summary(args, max = 200) {
  const parts = Object.entries(args || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v.slice(0, max + 1) : JSON.stringify(v)}`);
  const text = parts.join(", ").slice(0, max + 1).replace(/\s+/g, " ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

// Characters that hide or reorder text: bidi controls, zero-width and invisible ones, C0/C1 controls (not \n, \t).
const HIDDEN = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\u200B-\u200D\u2060\uFEFF\u00AD\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
export const LIMIT = 2000;

/** Whether text holds hidden or direction-changing characters. */
export function hasHidden(text) {
  HIDDEN.lastIndex = 0;
  return HIDDEN.test(String(text ?? ""));
}

/** Text as nodes, each hidden or direction-changing character shown as a visible ⟪U+XXXX⟫ escape. */
export function escaped(text) {
  const nodes = [];
  let at = 0;
  for (const found of text.matchAll(HIDDEN)) {
    if (found.index > at) nodes.push(document.createTextNode(text.slice(at, found.index)));
    const code = found[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
    nodes.push(h("span", { class: "hidden-char", title: "a hidden or direction-changing character" }, `⟪U+${code}⟫`));
    at = found.index + found[0].length;
  }
  if (at < text.length) nodes.push(document.createTextNode(text.slice(at)));
  return nodes;
}

/** The warning a field holding hidden characters gets. */
export function hiddenWarning() {
  return h("span", { class: "hidden-warning" }, "⚠ hidden or direction-changing characters");
}

/**
 * Untrusted (model-written) text: isolated from what follows, hidden characters escaped, cut at max characters
 * with a "show all N characters" button (the whole text then in a scrollable box); a warning when it hides any.
 */
export function untrusted(value, { tag = "span", cls = "", max = LIMIT, button = true } = {}) {
  const text = String(value ?? "");
  const node = h(tag, { class: `untrusted ${cls}`.trim() });
  const long = text.length > max;
  append(node, escaped(long ? text.slice(0, max) : text));
  if (long) {
    node.append("…");
    if (button) {
      const show = h("button", { type: "button", class: "show-all" }, `show all ${text.length.toLocaleString("en")} characters`);
      show.addEventListener("click", () => {
        node.classList.add("long");
        node.tabIndex = 0; // a scrollable box the keyboard can scroll
        replace(node, escaped(text));
        node.focus();
      });
      append(node, [" ", show]);
    }
  }
  if (!hasHidden(text)) return node;
  return h(tag === "span" ? "span" : "div", { class: "untrusted-field" }, node, " ", hiddenWarning());
}

/** JSON data as a readable tree of nested lists (text only, long strings cut). */
export function jsonTree(value) {
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    if (typeof value === "string") return untrusted(JSON.stringify(value), { cls: "j-string" });
    return h("span", { class: `j-${kind}` }, String(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  if (entries.length === 0) return h("span", { class: "j-empty" }, Array.isArray(value) ? "[]" : "{}");
  return h("ul", { class: "json" }, entries.map(([k, v]) => h("li", {}, untrusted(k, { cls: "j-key", max: 200 }), ": ", jsonTree(v))));
}

/** The status badge of an approval or run. */
export function badge(status) {
  return h("span", { class: `badge s-${status}` }, status);
}

/** A random key for Idempotency-Key. */
export function randomKey() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
