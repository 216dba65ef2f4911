// 41_limits.js: what the sandbox does not offer, in words code can act on (`sandboxLimitsText`):
// Deno's permission errors end with "run again with the --allow-net flag" and its unstable APIs
// with "Run again with `--unstable-kv` flag", advice for a person starting Deno that the code (and
// the LLM that wrote it) cannot follow; a program run by a bare name fails for want of a PATH. Every error that leaves an execution (`describeError`) and
// every line of output (`emitOutput`) goes through here. Relies on nothing: its test loads it
// alone (tests/runner/limits_test.js).

// ---------------------------------------------------------------------------------------------
// The sandbox's limits, in words
// ---------------------------------------------------------------------------------------------

/**
 * What each kind of Deno permission stands for in the sandbox: `what(target)` names the refused
 * access, `advice(call)` says what to do instead (`call` is `callMCPTool` or `call_mcp_tool`).
 */
const SANDBOX_LIMITS = {
  net: {
    what: (t) => `network access${t === "" ? "" : ` to ${t}`} is`,
    advice: (call) => `reach other systems through ${call}`,
  },
  read: {
    what: (t) => `file system access${t === "" ? "" : ` (reading ${t})`} is`,
    advice: (call) => `reach files through the tools of an MCP server with ${call}`,
  },
  write: {
    what: (t) => `file system access${t === "" ? "" : ` (writing ${t})`} is`,
    advice: (call) => `reach files through the tools of an MCP server with ${call}`,
  },
  env: {
    what: (t) => `environment variables${t === "" ? "" : ` (${t})`} are`,
    advice: () => "put the values the code needs in the code itself",
  },
  run: {
    what: (t) => `running programs${t === "" ? "" : ` (${t})`} is`,
    advice: (call) => `reach other systems through ${call}`,
  },
  ffi: {
    what: (t) => `native libraries${t === "" ? "" : ` (${t})`} are`,
    advice: (call) => `reach other systems through ${call}`,
  },
  sys: {
    what: (t) => `system information${t === "" ? "" : ` (${t})`} is`,
    advice: () => "the code runs in an isolate that shares nothing with the host",
  },
  import: {
    what: (t) => `importing from${t === "" ? " other places" : ` ${t}`} is`,
    advice: () => "code may import only wrappers/<name>.ts and node: built-in modules",
  },
};

/** Any other kind Deno may name one day. */
const OTHER_LIMIT = {
  what: (t) => `this access${t === "" ? "" : ` (${t})`} is`,
  advice: (call) => `reach other systems through ${call}`,
};

/** `Requires net access to "example.com:443", run again with the --allow-net flag` */
const DENO_REQUIRES_RE = /Requires (\w+) access to (.+?), run again with the --allow-[\w-]+ flag/g;
/** Any other mention of a permission flag: `run again with the --allow-net flag`, `requires --allow-import`. */
const DENO_ALLOW_FLAG_RE = /,?\s*(?:[Rr]un again with|[Rr]equires|[Uu]se|specify)(?: the)? `?--allow-(\w+)(?:=\S*?)?`?(?: flag)?\b/g;
/** `Failed to spawn 'ls': no path to search and provided name is not an absolute path` (no PATH here). */
const DENO_SPAWN_RE = /Failed to spawn '([^'\n]*)': no path to search and provided name is not an absolute path/g;
/** `Deno.openKv() is an unstable API. Run again with `--unstable-kv` flag to enable this API.` */
const DENO_UNSTABLE_RE = /(\S+) is an unstable API\.?\s*Run again with `?--unstable-[\w-]+`? flag to enable this API\.?/g;

/**
 * `text` with Deno's advice about permission and unstable flags replaced by what the sandbox
 * offers. `python` picks the name of the tool-calling function.
 */
function sandboxLimitsText(text, python) {
  if (!text.includes(" again with ") && !text.includes("--allow-") && !text.includes("Failed to spawn")) return text;
  const call = python ? "call_mcp_tool" : "callMCPTool";
  const limit = (kind) => SANDBOX_LIMITS[kind] ?? OTHER_LIMIT;
  return text
    .replace(DENO_REQUIRES_RE, (_m, kind, target) => {
      const l = limit(kind);
      return `${l.what(target)} not available in the sandbox; ${l.advice(call)}`;
    })
    .replace(DENO_SPAWN_RE, (_m, program) => {
      const l = limit("run");
      return `${l.what(`"${program}"`)} not available in the sandbox; ${l.advice(call)}`;
    })
    .replace(DENO_UNSTABLE_RE, (_m, api) => `${api} is not available in the sandbox.`)
    .replace(DENO_ALLOW_FLAG_RE, (_m, kind) => {
      const l = limit(kind);
      return ` (${l.what("")} not available in the sandbox; ${l.advice(call)})`;
    });
}
