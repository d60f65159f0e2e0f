// A small JSON Schema check of edited arguments before they are sent: type, required, properties,
// additionalProperties: false, items, minimum/maximum/exclusive*, minLength/maxLength, pattern, enum, const,
// minItems/maxItems. Any other keyword is left to the server (which answers 422 with the same JSON pointers).

const TYPES = {
  object: (v) => v !== null && typeof v === "object" && !Array.isArray(v),
  array: Array.isArray,
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number",
  integer: Number.isInteger,
  boolean: (v) => typeof v === "boolean",
  null: (v) => v === null,
};

const pointerOf = (base, key) => `${base}/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`;

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b); // enough for the JSON values of an enum or a const
}

/** Problems of value under schema: [{pointer, detail}], the pointers under base (e.g. "/arguments"). */
export function validate(schema, value, base = "/arguments") {
  const problems = [];
  const add = (pointer, detail) => problems.push({ pointer: pointer || "/", detail });
  const check = (s, v, at) => {
    if (!s || typeof s !== "object") return;
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.some((t) => TYPES[t]?.(v) ?? true)) return add(at, `must be of type ${types.join(" or ")}`);
    }
    if (Array.isArray(s.enum) && !s.enum.some((e) => same(e, v))) add(at, `must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`);
    if ("const" in s && !same(s.const, v)) add(at, `must be ${JSON.stringify(s.const)}`);
    if (typeof v === "number") {
      if (typeof s.minimum === "number" && v < s.minimum) add(at, `must be at least ${s.minimum}`);
      if (typeof s.maximum === "number" && v > s.maximum) add(at, `must be at most ${s.maximum}`);
      if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) add(at, `must be more than ${s.exclusiveMinimum}`);
      if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) add(at, `must be less than ${s.exclusiveMaximum}`);
    }
    if (typeof v === "string") {
      const length = [...v].length;
      if (typeof s.minLength === "number" && length < s.minLength) add(at, `must be at least ${s.minLength} characters`);
      if (typeof s.maxLength === "number" && length > s.maxLength) add(at, `must be at most ${s.maxLength} characters`);
      if (typeof s.pattern === "string") {
        try {
          if (!new RegExp(s.pattern, "u").test(v)) add(at, `must match the pattern ${s.pattern}`);
        } catch {
          // a pattern JavaScript cannot read: the server judges it
        }
      }
    }
    if (Array.isArray(v)) {
      if (typeof s.minItems === "number" && v.length < s.minItems) add(at, `must have at least ${s.minItems} items`);
      if (typeof s.maxItems === "number" && v.length > s.maxItems) add(at, `must have at most ${s.maxItems} items`);
      if (s.items && typeof s.items === "object" && !Array.isArray(s.items)) v.forEach((item, i) => check(s.items, item, pointerOf(at, i)));
    }
    if (TYPES.object(v)) {
      const props = s.properties && typeof s.properties === "object" ? s.properties : {};
      for (const name of Array.isArray(s.required) ? s.required : []) if (!(name in v)) add(pointerOf(at, name), "is required");
      for (const [name, item] of Object.entries(v)) {
        if (name in props) check(props[name], item, pointerOf(at, name));
        else if (s.additionalProperties === false) add(pointerOf(at, name), "is not an allowed property");
      }
    }
  };
  check(schema, value, base);
  return problems;
}
