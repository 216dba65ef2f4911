// 40_values.js: errors and values: cleaning stack traces and code frames of user code
// (`cleanErrorText`, `currentModuleMapper`), `describeError`, `valueToJson` (a Map or Set
// written as an object or array), and `image` (an image content block code can return). Relies on 01, 02, `inspectValue` (10), `WRAPPER_PREFIX`
// (31) and `sandboxLimitsText` (41); reads `pyodide` (60).

// ---------------------------------------------------------------------------------------------
// Errors and values
// ---------------------------------------------------------------------------------------------

/** Names the plain-JavaScript function in stack traces (`cleanErrorText` maps it to `user.ts`). */
const PLAIN_JS_NAME = "user-code.js";
/** Where user code runs: its module's data: URL, or the plain-JavaScript function's name. */
const USER_LOCATION_RE = new RegExp(
  "(?:data:application/typescript;base64,[A-Za-z0-9+/=]*(?:\\.{3,}[A-Za-z0-9+/=]*)?|" +
    PLAIN_JS_NAME.replace(".", "\\.") + "(?:, <anonymous>)?)(?::(\\d+)(?::(\\d+))?)?",
  "g",
);
const RUNNER_URL_RE = /data:application\/javascript;base64,[A-Za-z0-9+\/=]*(?:\.{3,}[A-Za-z0-9+\/=]*)?/g;
/** Stack frames that are not the user's: this runner's and Deno's internal (`ext:`) ones. */
const FOREIGN_FRAME_RE = /^\s*at (?:.*[( ])?(?:data:application\/javascript;base64,|ext:|code-executor-context\.js)/;

/** `1 | <wrapper>` in a code frame, with the caret line below it (if any) to shift left too. */
const FRAME_LINE1_RE = new RegExp(
  "^( *)1 \\| " + WRAPPER_PREFIX.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") +
    "(.*)(?:\\n( *\\| )" + " ".repeat(WRAPPER_PREFIX.length) + ")?",
  "gm",
);

/** @type {((line: number, col: number) => [number, number]) | null} */
let currentModuleMapper = null;

/**
 * Removes colours, replaces the user module's data: URL by `user.ts` (with user line numbers),
 * drops stack frames that belong to this runner, and puts Deno's advice to run again with a
 * permission flag in the sandbox's words (`sandboxLimitsText`).
 */
function cleanErrorText(text, mapper) {
  let s = stripAnsi(text);
  s = s.replace(USER_LOCATION_RE, (_m, line, col) => {
    if (line === undefined) return "user.ts";
    let l = Number(line);
    let c = col === undefined ? undefined : Number(col);
    if (mapper !== null) {
      const [ml, mc] = mapper(l, c ?? 1);
      l = ml;
      if (c !== undefined) c = mc;
    }
    return c === undefined ? `user.ts:${l}` : `user.ts:${l}:${c}`;
  });
  const lines = s.split("\n").filter((l) => !FOREIGN_FRAME_RE.test(l));
  s = lines.join("\n").replace(RUNNER_URL_RE, "runner.js");
  // The plain-JavaScript function's frames are named `eval` by V8 (its callbacks `X.eval`).
  s = s.replace(/\bat (?:async )?(?:Module\.__user__|eval) \((user\.ts[^)]*)\)/g, "at $1")
    .replace(/\.eval \((user\.ts[^)]*)\)/g, ".<anonymous> ($1)")
    .replace(/\bModule\.__user__\b/g, "<main>");
  // Code frames of parse errors: user line 1 shares its module line with the wrapper.
  s = s.replace(
    FRAME_LINE1_RE,
    (_m, pad, rest, caretPad) => `${pad}1 | ${rest}` + (caretPad === undefined ? "" : `\n${caretPad}`),
  );
  return sandboxLimitsText(s, pyodide !== null);
}

/**
 * Converts anything thrown into the protocol's error object.
 * @returns {{name: string, message: string, stack?: string}}
 */
function describeError(e, mapper) {
  if (!isErrorLike(e)) {
    let message;
    if (e !== null && (typeof e === "object" || typeof e === "function")) message = inspectValue(e);
    else message = safeString(e);
    return { name: "Error", message: cleanErrorText(message, mapper) };
  }
  let name = "Error";
  let message = "";
  let stack;
  try {
    name = safeString(e.name ?? "Error");
  } catch {
    // keep default
  }
  try {
    message = safeString(e.message ?? "");
  } catch {
    // keep default
  }
  try {
    if (typeof e.stack === "string") stack = e.stack;
  } catch {
    // no stack
  }
  // Deno reports TypeScript parse errors as TypeError("SyntaxError: ...").
  if (name === "TypeError" && message.startsWith("SyntaxError: ")) {
    name = "SyntaxError";
    message = message.slice("SyntaxError: ".length);
    if (stack !== undefined && stack.startsWith("TypeError: SyntaxError: ")) stack = stack.slice("TypeError: ".length);
  }
  message = cleanErrorText(message, mapper);
  if (stack !== undefined) {
    stack = cleanErrorText(stack, mapper);
    try {
      const cause = e.cause;
      if (cause !== undefined) {
        const c = isErrorLike(cause) ? safeString(cause.stack ?? cause) : inspectValue(cause);
        stack += "\nCaused by: " + cleanErrorText(c, mapper);
      }
    } catch {
      // ignore
    }
  }
  /** @type {{name: string, message: string, stack?: string}} */
  const out = { name, message };
  if (stack !== undefined) out.stack = stack;
  return out;
}

/**
 * JSON text for a returned value, or `undefined` when there is no value. Values JSON cannot
 * represent (BigInt, functions, symbols, cycles) become their `Deno.inspect` string.
 */
function valueToJson(v) {
  if (v === undefined) return undefined;
  let json;
  try {
    json = toJson(v);
    // A Map or a Set (of any realm) becomes `{}` in JSON: only then is the value written again,
    // with them converted (`collectionsAsJson`).
    if (json !== undefined && StringPrototypeIndexOf(json, "{}") !== -1) {
      json = toJson(ReflectApply(JSONParse, undefined, [JSONStringify(v, collectionsAsJson)]));
    }
  } catch {
    json = undefined;
  }
  if (json === undefined) json = toJson(inspectValue(v));
  return json;
}

const MapSizeGet = ObjectGetOwnPropertyDescriptor(Map.prototype, "size").get;
const SetSizeGet = ObjectGetOwnPropertyDescriptor(Set.prototype, "size").get;
const MapPrototypeEntries = uncurryThis(Map.prototype.entries);
const SetPrototypeValues = uncurryThis(Set.prototype.values);
const MapIteratorNext = uncurryThis(ObjectGetPrototypeOf(new Map().entries()).next);
const SetIteratorNext = uncurryThis(ObjectGetPrototypeOf(new Set().values()).next);

/** Whether `getter` (a built-in `size` getter) accepts `v`: a brand check that works across realms. */
function hasBrand(getter, v) {
  try {
    ReflectApply(getter, v, []);
    return true;
  } catch {
    return false;
  }
}

/**
 * A `JSON.stringify` replacer that writes a Map as an object when its keys are strings or
 * numbers (else as its `[key, value]` entries) and a Set as an array, so that a model reads what
 * the code returned rather than `{}`. Only built-in iteration is used, taken before code ran.
 */
function collectionsAsJson(_key, v) {
  if (typeof v !== "object" || v === null || ArrayIsArray(v)) return v;
  if (hasBrand(MapSizeGet, v)) {
    const entries = [];
    let plainKeys = true;
    for (let it = MapPrototypeEntries(v), step = MapIteratorNext(it); !step.done; step = MapIteratorNext(it)) {
      const [key, value] = step.value;
      if (typeof key !== "string" && typeof key !== "number") plainKeys = false;
      entries[entries.length] = [key, value];
    }
    if (!plainKeys) return entries;
    const object = ObjectCreate(null);
    for (let i = 0; i < entries.length; i++) object[safeString(entries[i][0])] = entries[i][1];
    return object;
  }
  if (hasBrand(SetSizeGet, v)) {
    const values = [];
    for (let it = SetPrototypeValues(v), step = SetIteratorNext(it); !step.done; step = SetIteratorNext(it)) {
      values[values.length] = step.value;
    }
    return values;
  }
  return v;
}

const IMAGE_MIME_RE = /^image\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$/;

/**
 * `image(bytes, mimeType = "image/png")`: an image content block. Returned (alone, in an array or
 * an object), it reaches the client as an image rather than as text.
 * @param {Uint8Array | ArrayBuffer | ArrayBufferView | string} bytes the image, or its base64
 * @param {string} [mimeType]
 */
function image(bytes, mimeType = "image/png") {
  if (typeof mimeType !== "string" || !IMAGE_MIME_RE.test(mimeType)) {
    throw new TypeError(`image: mimeType must be an image type such as "image/png", not ${inspectValue(mimeType)}`);
  }
  let data;
  if (typeof bytes === "string") {
    let binary;
    try {
      binary = atobPrivate(bytes);
    } catch {
      throw new TypeError("image: a string must be the image's base64");
    }
    // Written again in the strict form the host checks.
    const decoded = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) decoded[i] = binary.charCodeAt(i);
    data = base64Bytes(decoded);
  } else if (bytes instanceof Uint8Array) {
    data = base64Bytes(bytes);
  } else if (isArrayBuffer(bytes)) {
    data = base64Bytes(new Uint8Array(bytes));
  } else if (ArrayBuffer.isView(bytes)) {
    data = base64Bytes(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } else {
    throw new TypeError("image: bytes must be a Uint8Array, an ArrayBuffer or a base64 string");
  }
  return ObjectFreeze({ type: "image", data, mimeType });
}
