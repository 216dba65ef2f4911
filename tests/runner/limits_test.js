// What the sandbox does not offer, in words code can act on: `sandboxLimitsText`
// (41_limits.js) replaces Deno's advice to run again with a permission or unstable flag.

import { assertEquals } from "./harness.js";

const text = await Deno.readTextFile(new URL("../../src/sandbox/runner/41_limits.js", import.meta.url));
const { sandboxLimitsText } = new Function(`"use strict";\n${text}\nreturn { sandboxLimitsText };`)();

Deno.test("sandboxLimitsText: each permission Deno refuses, in the sandbox's words", () => {
  const denied = (kind, target) => `NotCapable: Requires ${kind} access to ${target}, run again with the --allow-${kind} flag`;
  assertEquals(
    sandboxLimitsText(denied("net", '"example.com:443"'), false),
    'NotCapable: network access to "example.com:443" is not available in the sandbox; reach other systems through callMCPTool',
  );
  assertEquals(
    sandboxLimitsText(denied("net", '"example.com:443"'), true),
    'NotCapable: network access to "example.com:443" is not available in the sandbox; reach other systems through call_mcp_tool',
  );
  assertEquals(
    sandboxLimitsText(denied("read", '"/etc/passwd"'), false),
    'NotCapable: file system access (reading "/etc/passwd") is not available in the sandbox; reach files through the tools of an MCP server with callMCPTool',
  );
  assertEquals(
    sandboxLimitsText(denied("env", '"HOME"'), false),
    'NotCapable: environment variables ("HOME") are not available in the sandbox; put the values the code needs in the code itself',
  );
  for (const kind of ["net", "read", "write", "env", "run", "ffi", "sys", "import", "future"]) {
    const out = sandboxLimitsText(`${denied(kind, '"x, y"')}\n    at user.ts:1:7`, false);
    assertEquals(out.includes("--allow-") || out.includes("again with"), false, out);
    assertEquals(out.includes("not available in the sandbox") && out.endsWith("\n    at user.ts:1:7"), true, out);
  }
});

Deno.test("sandboxLimitsText: other mentions of a flag, unstable APIs, and text left alone", () => {
  assertEquals(
    sandboxLimitsText("Module not found (not capable, requires --allow-import)", false),
    "Module not found (not capable (importing from other places is not available in the sandbox; code may import only wrappers/<name>.ts and node: built-in modules))",
  );
  assertEquals(
    sandboxLimitsText("Deno.openKv() is an unstable API. Run again with `--unstable-kv` flag to enable this API.", false),
    "Deno.openKv() is not available in the sandbox.",
  );
  assertEquals(
    sandboxLimitsText("Failed to spawn 'ls': no path to search and provided name is not an absolute path", false),
    'running programs ("ls") is not available in the sandbox; reach other systems through callMCPTool',
  );
  for (const plain of ["hello", "--allowance", "run again with care", "PermissionDenied: Permission denied (os error 13)"]) {
    assertEquals(sandboxLimitsText(plain, false), plain);
  }
});
