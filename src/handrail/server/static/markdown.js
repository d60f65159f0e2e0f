// A small, safe markdown renderer: paragraphs, headings, lists, code blocks, inline code, bold, italics and
// links. It builds DOM nodes with text only (never innerHTML): raw HTML in the source stays visible text, and a
// link becomes an <a> only for http:, https: and mailto: URLs (any other, e.g. javascript:, stays text).

import { escaped, h } from "./dom.js";

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);
const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\s][^*\n]*\*|(?<!\w)_[^_\s][^_\n]*_(?!\w))|(\[[^\]\n]*\]\([^()\s]*\))/;

/** The URL when it is absolute with a safe scheme, else null. */
export function safeUrl(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  return SAFE_SCHEMES.has(url.protocol) ? url.href : null;
}

function link(source) {
  const close = source.indexOf("](");
  const label = source.slice(1, close);
  const href = safeUrl(source.slice(close + 2, -1));
  if (href === null) return escaped(source);
  return h("a", { href, rel: "noopener noreferrer", target: "_blank" }, ...inline(label));
}

/** Inline markdown of one text run: an array of nodes. */
export function inline(text) {
  const nodes = [];
  let rest = text;
  while (rest) {
    const found = INLINE.exec(rest);
    if (!found) {
      nodes.push(...escaped(rest));
      break;
    }
    if (found.index > 0) nodes.push(...escaped(rest.slice(0, found.index)));
    const [token] = found;
    if (found[1]) nodes.push(h("code", {}, escaped(token.slice(1, -1))));
    else if (found[2]) nodes.push(h("strong", {}, ...inline(token.slice(2, -2))));
    else if (found[3]) nodes.push(h("em", {}, ...inline(token.slice(1, -1))));
    else nodes.push(...[link(token)].flat());
    rest = rest.slice(found.index + token.length);
  }
  return nodes;
}

function listItems(lines, pattern) {
  return lines.map((line) => h("li", {}, ...inline(line.replace(pattern, ""))));
}

const BULLET = /^\s*[-*+]\s+/;
const NUMBER = /^\s*\d{1,9}[.)]\s+/;

function block(lines) {
  const first = lines[0];
  const heading = /^(#{1,6})\s+(.*)$/.exec(first);
  if (heading && lines.length === 1) {
    const level = Math.min(heading[1].length + 2, 6); // inside a page section: h3 and below
    return h(`h${level}`, { class: "md-h" }, ...inline(heading[2])); // styled as body text (app.css)
  }
  if (lines.every((l) => BULLET.test(l))) return h("ul", {}, listItems(lines, BULLET));
  if (lines.every((l) => NUMBER.test(l))) return h("ol", {}, listItems(lines, NUMBER));
  if (lines.every((l) => /^>\s?/.test(l))) return h("blockquote", {}, ...inline(lines.map((l) => l.replace(/^>\s?/, "")).join(" ")));
  return h("p", {}, ...inline(lines.join(" ")));
}

/** Render markdown source into a <div class="md"> (text nodes and a few safe elements only). */
export function renderMarkdown(source) {
  const root = h("div", { class: "md" });
  const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  const flush = () => {
    if (para.length) root.append(block(para));
    para = [];
  };
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    if (/^```/.test(line)) {
      flush();
      const code = [];
      for (i += 1; i < lines.length && !/^```/.test(lines[i]); i += 1) code.push(lines[i]);
      root.append(h("pre", {}, h("code", {}, escaped(code.join("\n")))));
    } else if (/^#{1,6}\s/.test(line)) {
      flush();
      para = [line];
      flush();
    } else if (line.trim() === "") {
      flush();
    } else {
      para.push(line);
    }
  }
  flush();
  return root;
}
