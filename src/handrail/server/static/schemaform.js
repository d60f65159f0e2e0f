// An edit form from a tool's JSON Schema: one labelled field per property for simple types (string, number,
// integer, boolean, enum) with required, minimum/maximum, minLength/maxLength and pattern checked before
// anything is sent, errors shown next to their field; a JSON editor otherwise (its value parsed and checked
// against the schema by validate.js before anything is sent, the errors listed with their JSON pointers).
// showErrors() puts the server's 422 errors (JSON pointers such as /arguments/amount) next to the same fields.

import { h } from "./dom.js";
import { validate } from "./validate.js";

const SIMPLE = new Set(["string", "number", "integer", "boolean"]);

function typeOf(schema) {
  if (Array.isArray(schema.enum)) return "enum";
  const type = Array.isArray(schema.type) ? schema.type.filter((t) => t !== "null") : [schema.type];
  return type.length === 1 && SIMPLE.has(type[0]) ? type[0] : null;
}

/** Whether the schema (and the current arguments) fit a generated form. */
export function fitsForm(schema, args) {
  if (!schema || schema.type !== "object" || typeof schema.properties !== "object") return false;
  const props = schema.properties;
  if (Object.keys(args || {}).some((k) => !(k in props))) return false;
  return Object.values(props).every((p) => p && typeof p === "object" && typeOf(p) !== null);
}

function inputFor(name, schema, value, id, describedBy) {
  const kind = typeOf(schema);
  const common = { id, name, "aria-describedby": describedBy };
  if (kind === "boolean") return h("input", { ...common, type: "checkbox", checked: value === true });
  if (kind === "enum") {
    const select = h("select", common, h("option", { value: "" }, "—"));
    schema.enum.forEach((option, i) => {
      select.append(h("option", { value: String(i), selected: option === value }, JSON.stringify(option)));
    });
    return select;
  }
  const text = value === undefined || value === null ? "" : String(value);
  if (kind === "string" && (text.includes("\n") || text.length > 80 || (schema.maxLength || 0) > 200)) {
    const area = h("textarea", { ...common, rows: Math.min(12, Math.max(3, text.split("\n").length + 1)) });
    area.value = text;
    return area;
  }
  const input = h("input", { ...common, type: "text", autocomplete: "off", spellcheck: kind === "string" ? "true" : "false" });
  if (kind === "integer") input.setAttribute("inputmode", "numeric");
  if (kind === "number") input.setAttribute("inputmode", "decimal");
  input.value = text;
  return input;
}

function numberProblems(kind, raw, schema) {
  const pattern = kind === "integer" ? /^-?\d+$/ : /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
  if (!pattern.test(raw.trim())) return [kind === "integer" ? "must be a whole number" : "must be a number"];
  const n = Number(raw);
  const problems = [];
  if (typeof schema.minimum === "number" && n < schema.minimum) problems.push(`must be at least ${schema.minimum}`);
  if (typeof schema.maximum === "number" && n > schema.maximum) problems.push(`must be at most ${schema.maximum}`);
  if (typeof schema.exclusiveMinimum === "number" && n <= schema.exclusiveMinimum) problems.push(`must be more than ${schema.exclusiveMinimum}`);
  if (typeof schema.exclusiveMaximum === "number" && n >= schema.exclusiveMaximum) problems.push(`must be less than ${schema.exclusiveMaximum}`);
  return problems;
}

function stringProblems(raw, schema) {
  const problems = [];
  const length = [...raw].length;
  if (typeof schema.minLength === "number" && length < schema.minLength) problems.push(`must be at least ${schema.minLength} characters`);
  if (typeof schema.maxLength === "number" && length > schema.maxLength) problems.push(`must be at most ${schema.maxLength} characters`);
  if (typeof schema.pattern === "string") {
    try {
      if (!new RegExp(schema.pattern, "u").test(raw)) problems.push(`must match the pattern ${schema.pattern}`);
    } catch {
      // a pattern JavaScript cannot read: the server judges it
    }
  }
  return problems;
}

/** Read one field: {value, present, problems}. */
function readField(field) {
  const { kind, schema, input, required } = field;
  if (kind === "boolean") return { value: input.checked, present: true, problems: [] };
  if (kind === "enum") {
    if (input.value === "") return { present: false, problems: required ? ["is required"] : [] };
    return { value: schema.enum[Number(input.value)], present: true, problems: [] };
  }
  const raw = input.value;
  if (raw === "" && kind !== "string") return { present: false, problems: required ? ["is required"] : [] };
  if (raw === "" && !required) return { present: false, problems: [] };
  if (kind === "string") return { value: raw, present: true, problems: stringProblems(raw, schema) };
  return { value: Number(raw), present: true, problems: numberProblems(kind, raw, schema) };
}

function setError(slot, input, messages) {
  slot.replaceChildren(...messages.map((m) => h("span", {}, m)));
  slot.hidden = messages.length === 0;
  if (input) input.setAttribute("aria-invalid", messages.length ? "true" : "false");
}

/** A form-like editor for args under schema. Returns {node, read(), showErrors(errors), focus()}. */
export function schemaForm(schema, args, idPrefix = "edit") {
  return fitsForm(schema, args) ? fieldsEditor(schema, args, idPrefix) : jsonEditor(schema, args, idPrefix);
}

function fieldsEditor(schema, args, idPrefix) {
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = new Map();
  const general = h("p", { class: "field-error", role: "alert", hidden: true });
  const node = h("div", { class: "fields" });
  Object.entries(schema.properties).forEach(([name, prop], index) => {
    const id = `${idPrefix}-f${index}`;
    const errorId = `${id}-error`;
    const helpId = prop.description ? `${id}-help` : null;
    const input = inputFor(name, prop, args?.[name], id, [helpId, errorId].filter(Boolean).join(" "));
    if (required.has(name)) input.setAttribute("aria-required", "true");
    const slot = h("p", { class: "field-error", id: errorId, hidden: true, dataset: { field: name } });
    const kind = typeOf(prop);
    const label = h("label", { for: id }, name, required.has(name) ? h("span", { class: "req" }, " (required)") : null,
      kind && kind !== "enum" && kind !== "string" ? h("span", { class: "hint" }, ` ${kind}`) : null);
    const help = helpId ? h("p", { class: "help", id: helpId }, prop.description) : null;
    node.append(h("div", { class: `field k-${kind}` }, label, help, input, slot));
    fields.set(name, { kind, schema: prop, input, slot, required: required.has(name) });
  });
  node.append(general);
  return {
    node,
    read() {
      const value = {};
      let ok = true;
      for (const [name, field] of fields) {
        const read = readField(field);
        setError(field.slot, field.input, read.problems.map((p) => `${name} ${p}`));
        if (read.problems.length) ok = false;
        else if (read.present) value[name] = read.value;
      }
      setError(general, null, []);
      return ok ? value : null;
    },
    showErrors(errors) {
      const rest = [];
      for (const error of errors) {
        const name = decodePointer(error.pointer);
        const field = name === null ? null : fields.get(name);
        if (field) setError(field.slot, field.input, [`${name}: ${error.detail}`]);
        else rest.push(`${error.pointer || error.parameter || ""} ${error.detail}`.trim());
      }
      setError(general, null, rest);
    },
    focus() {
      const bad = [...fields.values()].find((f) => !f.slot.hidden) || fields.values().next().value;
      bad?.input.focus();
    },
  };
}

/** The property an /arguments/NAME pointer names (its first segment), or null. */
export function decodePointer(pointer) {
  const match = /^\/arguments\/([^/]*)/.exec(pointer || "");
  return match ? match[1].replace(/~1/g, "/").replace(/~0/g, "~") : null;
}

function jsonEditor(schema, args, idPrefix) {
  const id = `${idPrefix}-json`;
  const area = h("textarea", { id, class: "json-editor", rows: 10, spellcheck: "false", "aria-describedby": `${id}-error` });
  area.value = JSON.stringify(args ?? {}, null, 2);
  const slot = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
  const node = h("div", { class: "fields" }, h("label", { for: id }, "Arguments (JSON)"), area, slot);
  return {
    node,
    read() {
      let value;
      try {
        value = JSON.parse(area.value);
      } catch (error) {
        setError(slot, area, [`Not valid JSON: ${error.message}`]);
        return null;
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        setError(slot, area, ["The arguments must be a JSON object."]);
        return null;
      }
      const problems = validate(schema, value);
      setError(slot, area, problems.map((p) => `${p.pointer}: ${p.detail}`));
      if (problems.length) return null;
      return value;
    },
    showErrors(errors) {
      setError(slot, area, errors.map((e) => `${e.pointer || e.parameter || ""}: ${e.detail}`));
    },
    focus() {
      area.focus();
    },
  };
}
