// 20_host_calls.js: host calls: `hostCall` and its pending replies (`onReply`,
// `rejectAllPending`), and the globals `callMCPTool`, `callMCPToolRaw`, `searchTools`,
// `getToolSchema`, `listServers`, `llm` (`ask`, `think`), `listResources`, `readResource`,
// `listPrompts`, `getPrompt`. Relies on 00-02; reads `finished` (50).

// ---------------------------------------------------------------------------------------------
// Host calls
// ---------------------------------------------------------------------------------------------

let nextCallId = 1;
/** @type {Map<number, {resolve: (v: unknown) => void, reject: (e: unknown) => void, site: {stack?: string}}>} */
const pendingCalls = new MapCtor();

/**
 * Sends a `call` and returns a promise for the host's reply.
 * @param {string} method
 * @param {Record<string, unknown>} params
 * @param {Function} caller the user-facing global, to start the call-site stack below it
 */
function hostCall(method, params, caller) {
  const site = {};
  ErrorCaptureStackTrace(site, caller);
  return new PromiseCtor((resolve, reject) => {
    if (finished) {
      reject(callError(`${method}: the execution has already finished`, site));
      return;
    }
    const id = nextCallId++;
    let line;
    try {
      line = toJson({ v: PROTOCOL_VERSION, type: "call", id, method, params });
    } catch (e) {
      reject(
        callError(
          `${caller.name}: arguments must be JSON-serialisable (${safeString(e?.message ?? e)})`,
          site,
          "TypeError",
        ),
      );
      return;
    }
    const size = utf8Length(line) + 1;
    if (size > MAX_WORKER_LINE) {
      reject(
        callError(
          `${caller.name}: arguments are too large (${size} bytes of JSON, the limit is ${MAX_WORKER_LINE})`,
          site,
          "RangeError",
        ),
      );
      return;
    }
    pendingCalls.set(id, { resolve, reject, site });
    sendLine(line);
  });
}

/** An Error for a failed host call, with the user's call site as its stack. */
function callError(message, site, kind = "Error") {
  const ctor = kind === "TypeError" ? TypeError : kind === "RangeError" ? RangeError : Error;
  const err = new ctor(message);
  const siteStack = typeof site.stack === "string" ? site.stack : "";
  const nl = siteStack.indexOf("\n");
  if (nl >= 0) {
    try {
      ObjectDefineProperty(err, "stack", {
        value: `${err.name}: ${message}${siteStack.slice(nl)}`,
        writable: true,
        configurable: true,
        enumerable: false,
      });
    } catch {
      // keep V8's stack
    }
  }
  return err;
}

/** @param {any} msg */
function onReply(msg) {
  const id = msg.id;
  const entry = typeof id === "number" ? pendingCalls.get(id) : undefined;
  if (entry === undefined) {
    diag("reply for unknown call id " + safeString(id));
    return;
  }
  pendingCalls.delete(id);
  if (msg.ok === true) entry.resolve(msg.value);
  else {entry.reject(
      callError(typeof msg.error === "string" ? msg.error : safeString(msg.error ?? "call failed"), entry.site),
    );}
}

function rejectAllPending(message) {
  for (const [id, entry] of pendingCalls) {
    pendingCalls.delete(id);
    entry.reject(callError(message, entry.site));
  }
}

function isPlainArgs(v) {
  return v !== null && typeof v === "object" && !ArrayIsArray(v);
}

function optionsObject(v, fn) {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object") throw new TypeError(`${fn}: options must be an object`);
  return v;
}

/**
 * `callMCPTool(name, args?, options?)` or `callMCPTool(server, tool, args?, options?)`.
 * `options.raw: true` asks the host for the tool's untouched result.
 */
function callMCPTool(first, second, third, fourth) {
  try {
    /** @type {Record<string, unknown>} */
    let params;
    let args;
    let options;
    if (typeof second === "string") {
      if (typeof first !== "string" || first === "") {
        throw new TypeError("callMCPTool: server name must be a non-empty string");
      }
      if (second === "") throw new TypeError("callMCPTool: tool name must be a non-empty string");
      params = { server: first, tool: second };
      args = third;
      options = fourth;
    } else {
      if (typeof first !== "string" || first === "") {
        throw new TypeError("callMCPTool: expected callMCPTool(name, args) or callMCPTool(server, tool, args)");
      }
      params = { name: first };
      args = second;
      options = third;
    }
    if (args === undefined || args === null) args = {};
    if (!isPlainArgs(args)) throw new TypeError("callMCPTool: args must be an object");
    params.args = args;
    if (optionsObject(options, "callMCPTool").raw === true) params.raw = true;
    return hostCall("callTool", params, callMCPTool);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `callMCPToolRaw(name, args?)` or `callMCPToolRaw(server, tool, args?)`: the whole downstream result. */
function callMCPToolRaw(first, second, third) {
  return typeof second === "string"
    ? callMCPTool(first, second, third, { raw: true })
    : callMCPTool(first, second, { raw: true });
}

const SEARCH_DETAILS = ["name", "summary", "full"];

/** `searchTools(query, { server?, limit?, detail? }?)` */
function searchTools(query, options) {
  try {
    if (typeof query !== "string") throw new TypeError("searchTools: query must be a string");
    const opts = optionsObject(options, "searchTools");
    /** @type {Record<string, unknown>} */
    const params = { query };
    if (opts.server !== undefined && opts.server !== null) {
      if (typeof opts.server !== "string") throw new TypeError("searchTools: options.server must be a string");
      params.server = opts.server;
    }
    if (opts.limit !== undefined && opts.limit !== null) {
      if (!NumberIsSafeInteger(opts.limit) || opts.limit < 0) {
        throw new TypeError("searchTools: options.limit must be a non-negative integer");
      }
      params.limit = opts.limit;
    }
    if (opts.detail !== undefined && opts.detail !== null) {
      if (!SEARCH_DETAILS.includes(opts.detail)) {
        throw new TypeError('searchTools: options.detail must be "name", "summary" or "full"');
      }
      params.detail = opts.detail;
    }
    return hostCall("searchTools", params, searchTools);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `getToolSchema(name)` with a qualified name (`mcp__server__tool`). */
function getToolSchema(name) {
  if (typeof name !== "string") return PromiseCtor.reject(new TypeError("getToolSchema: name must be a string"));
  return hostCall("getToolSchema", { name }, getToolSchema);
}

/** `listServers()` */
function listServers() {
  return hostCall("listServers", {}, listServers);
}

// ---------------------------------------------------------------------------------------------
// Questions for the client, resources and prompts
// ---------------------------------------------------------------------------------------------

/** The options `llm.ask` / `llm.think` share, checked and renamed for the host. */
function samplingOptions(opts, fn) {
  /** @type {Record<string, unknown>} */
  const params = {};
  if (opts.system !== undefined && opts.system !== null) {
    if (typeof opts.system !== "string") throw new TypeError(`${fn}: system must be a string`);
    params.system = opts.system;
  }
  if (opts.maxTokens !== undefined && opts.maxTokens !== null) {
    if (!NumberIsSafeInteger(opts.maxTokens) || opts.maxTokens <= 0) {
      throw new TypeError(`${fn}: maxTokens must be a positive integer`);
    }
    params.maxTokens = opts.maxTokens;
  }
  if (opts.model !== undefined && opts.model !== null) {
    if (typeof opts.model !== "string") throw new TypeError(`${fn}: model must be a string`);
    params.model = opts.model;
  }
  return params;
}

/** `llm.think({messages, system?, maxTokens?, model?})`: `{text, model, stopReason}`. */
function llmThink(request) {
  try {
    const opts = optionsObject(request, "llm.think");
    const messages = opts.messages;
    if (!ArrayIsArray(messages) || messages.length === 0) {
      throw new TypeError("llm.think: messages must be a non-empty array of {role, content}");
    }
    const checked = [];
    for (const m of messages) {
      if (m === null || typeof m !== "object" || (m.role !== "user" && m.role !== "assistant") || typeof m.content !== "string") {
        throw new TypeError('llm.think: each message must be {role: "user" | "assistant", content: string}');
      }
      checked.push({ role: m.role, content: m.content });
    }
    const params = samplingOptions(opts, "llm.think");
    params.messages = checked;
    return hostCall("sample", params, llmThink);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `llm.ask(prompt, {system?, maxTokens?, model?}?)`: the answer's text. */
function llmAsk(prompt, options) {
  try {
    if (typeof prompt !== "string" || prompt === "") throw new TypeError("llm.ask: prompt must be a non-empty string");
    const params = samplingOptions(optionsObject(options, "llm.ask"), "llm.ask");
    params.messages = [{ role: "user", content: prompt }];
    return hostCall("sample", params, llmAsk).then((answer) => answer.text);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** The `llm` global: sampling through the connected client. */
function makeLlm() {
  const llm = { ask: llmAsk, think: llmThink };
  return Object.freeze(llm);
}

function optionalServer(server, fn) {
  if (server === undefined || server === null) return {};
  if (typeof server !== "string" || server === "") throw new TypeError(`${fn}: server must be a non-empty string`);
  return { server };
}

/** `listResources(server?)`: `[{server, uri, name, ...}]` of the servers this execution may read. */
function listResources(server) {
  try {
    return hostCall("listResources", optionalServer(server, "listResources"), listResources);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `readResource(uri, {server}?)`: `{contents: [...]}`. */
function readResource(uri, options) {
  try {
    if (typeof uri !== "string" || uri === "") throw new TypeError("readResource: uri must be a non-empty string");
    const params = optionalServer(optionsObject(options, "readResource").server, "readResource");
    params.uri = uri;
    return hostCall("readResource", params, readResource);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `listPrompts(server?)`: `[{server, name: "mcp__server__prompt", ...}]`. */
function listPrompts(server) {
  try {
    return hostCall("listPrompts", optionalServer(server, "listPrompts"), listPrompts);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `getPrompt("mcp__server__prompt", args?)`: `{description, messages}`. */
function getPrompt(name, args) {
  try {
    if (typeof name !== "string" || name === "") throw new TypeError("getPrompt: name must be a non-empty string");
    if (args === undefined || args === null) args = {};
    if (!isPlainArgs(args)) throw new TypeError("getPrompt: args must be an object");
    return hostCall("getPrompt", { name, args }, getPrompt);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}
