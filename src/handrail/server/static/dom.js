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
export function summary(args, max = 120) {
  const parts = Object.entries(args || {}).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  const text = parts.join(", ").replace(/\s+/g, " ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** JSON data as a readable tree of nested lists (text only). */
export function jsonTree(value) {
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return h("span", { class: `j-${kind}` }, typeof value === "string" ? JSON.stringify(value) : String(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  if (entries.length === 0) return h("span", { class: "j-empty" }, Array.isArray(value) ? "[]" : "{}");
  return h("ul", { class: "json" }, entries.map(([k, v]) => h("li", {}, h("span", { class: "j-key" }, k), ": ", jsonTree(v))));
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
