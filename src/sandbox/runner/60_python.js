// 60_python.js: Python (Pyodide): the in-sandbox Python module `sandbox` (`PY_PRELUDE`), the
// Pyodide state, the host-call bridge, stdout/stderr writers and loading Pyodide
// (`startPyodide`). Relies on 00, 01, `emitOutput` (10), `hostCall` (20); calls
// `checkTypeScriptSkill` (56, for a TypeScript skill saved from Python) and `defineGlobal` (90).

// ---------------------------------------------------------------------------------------------
// Python (Pyodide)
// ---------------------------------------------------------------------------------------------

/**
 * The in-sandbox Python API and the execution driver, module `sandbox` (file `<sandbox>`; its
 * frames and Pyodide's are cut from user tracebacks). Installed when the memory snapshot is
 * made (so a worker starting from it does not compile it again), or in `prepare` without one.
 * It holds no JavaScript object until `_connect` gives it `_sandbox_host.call` (`pyHostCall`
 * below) in each worker.
 */
const PY_PRELUDE = String.raw`
import base64, builtins, json, linecache, math, re, sys, traceback, types
from collections.abc import Mapping
from pyodide.code import eval_code_async
from pyodide.ffi import JsException, JsProxy
_F = "<user code>"
_INTERNAL = re.compile(r"<sandbox>$|/lib/python[0-9.]*(?:\.zip)?/(?:_?pyodide|site-packages/_?pyodide)/")

class ToolCallError(Exception):
    "A tool call or lookup was refused or failed (the message is the host's)."
ToolCallError.__module__ = "builtins"

async def _call(method, params):
    try:
        s = json.dumps(params, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"arguments must be JSON-serialisable ({e})") from None
    try:
        r = await _host_call(method, s)
    except JsException as e:
        err = {"TypeError": TypeError, "RangeError": ValueError}.get(getattr(e, "name", ""), ToolCallError)
        raise err(getattr(e, "message", str(e))) from None
    return None if r is None else json.loads(r)

def _str(v, what, fn):
    if not isinstance(v, str) or not v:
        raise TypeError(f"{fn}: {what} must be a non-empty string")
    return v

async def call_mcp_tool(name, tool=None, args=None, *, raw=False):
    """call_mcp_tool("mcp__server__tool", args) or call_mcp_tool("server", "tool", args); raw=True: the untouched result."""
    fn = "call_mcp_tool"
    if isinstance(tool, str):
        p = {"server": _str(name, "server name", fn), "tool": _str(tool, "tool name", fn)}
    else:
        if args is not None:
            raise TypeError(f"{fn}: expected {fn}(name, args) or {fn}(server, tool, args)")
        p = {"name": _str(name, "tool name", fn)}
        args = tool
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise TypeError(f"{fn}: args must be a dict, not {type(args).__name__}")
    p["args"] = dict(args)
    if raw:
        p["raw"] = True
    return await _call("callTool", p)

async def search_tools(query, server=None, limit=None, detail=None):
    "Tools matching a query, as the MCP tool searchTools answers: {matches: [{name, server, tool, description}...], ...}; detail: 'name', 'summary' or 'full'."
    if not isinstance(query, str):
        raise TypeError("search_tools: query must be a string")
    p = {"query": query}
    if server is not None:
        p["server"] = _str(server, "server", "search_tools")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise TypeError("search_tools: limit must be a non-negative integer")
        p["limit"] = limit
    if detail is not None:
        if detail not in ("name", "summary", "full"):
            raise TypeError("search_tools: detail must be 'name', 'summary' or 'full'")
        p["detail"] = detail
    return await _call("searchTools", p)

async def get_tool_schema(name):
    "The input schema and description of a tool (qualified name mcp__server__tool)."
    return await _call("getToolSchema", {"name": _str(name, "name", "get_tool_schema")})

async def list_servers():
    "The configured MCP servers, as the MCP tool listServers answers: {servers: [{name, state, tools, ...}...]}."
    return await _call("listServers", {})

def _sampling(fn, system, max_tokens, model):
    p = {}
    if system is not None:
        if not isinstance(system, str):
            raise TypeError(f"{fn}: system must be a string")
        p["system"] = system
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise TypeError(f"{fn}: max_tokens must be a positive integer")
        p["maxTokens"] = max_tokens
    if model is not None:
        p["model"] = _str(model, "model", fn)
    return p

class _Llm:
    "Sampling through the connected client: await llm.ask(prompt), await llm.think(messages)."
    __slots__ = ()

    async def ask(self, prompt, system=None, max_tokens=None, model=None):
        "The client's LLM's answer to one prompt, as text."
        p = _sampling("llm.ask", system, max_tokens, model)
        p["messages"] = [{"role": "user", "content": _str(prompt, "prompt", "llm.ask")}]
        return (await _call("sample", p))["text"]

    async def think(self, messages, system=None, max_tokens=None, model=None):
        "A conversation [{'role': 'user'|'assistant', 'content': str}...] -> {text, model, stopReason}."
        if not isinstance(messages, (list, tuple)) or not messages:
            raise TypeError("llm.think: messages must be a non-empty list of {role, content}")
        checked = []
        for m in messages:
            if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant") or not isinstance(m.get("content"), str):
                raise TypeError("llm.think: each message must be {'role': 'user' | 'assistant', 'content': str}")
            checked.append({"role": m["role"], "content": m["content"]})
        p = _sampling("llm.think", system, max_tokens, model)
        p["messages"] = checked
        return await _call("sample", p)

llm = _Llm()

def _server(server, fn):
    return {} if server is None else {"server": _str(server, "server", fn)}

async def list_resources(server=None):
    "Resources of the servers this execution may read: [{server, uri, name, ...}]."
    return await _call("listResources", _server(server, "list_resources"))

async def read_resource(uri, server=None):
    "The contents of a resource: {contents: [...]}."
    p = _server(server, "read_resource")
    p["uri"] = _str(uri, "uri", "read_resource")
    return await _call("readResource", p)

async def list_prompts(server=None):
    "Prompts of the servers this execution may read: [{server, name: 'mcp__server__prompt', ...}]."
    return await _call("listPrompts", _server(server, "list_prompts"))

async def get_prompt(name, args=None):
    "A prompt by its qualified name, filled with args: {description, messages}."
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise TypeError(f"get_prompt: args must be a dict, not {type(args).__name__}")
    return await _call("getPrompt", {"name": _str(name, "name", "get_prompt"), "args": dict(args)})

_SKILL_LANGUAGES = {"python": "python", "py": "python", "typescript": "typescript", "ts": "typescript"}

async def save_skill(name, code, description=None, language=None):
    "Saves a module later executions import (from skills import name; TypeScript: skills/name.ts): {name, language, import, usage, exports, size}."
    fn = "save_skill"
    if not isinstance(name, str):
        raise TypeError(f'{fn}: name must be a string such as "fetch_report"')
    if not isinstance(code, str) or not code.strip():
        raise TypeError(f"{fn}: code must be a non-empty string")
    lang = "python" if language is None else _SKILL_LANGUAGES.get(language) if isinstance(language, str) else None
    if lang is None:
        raise TypeError(f'{fn}: language must be "python" or "typescript"')
    if lang == "python":
        try:
            compile(code, f"skills/{name}.py", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            raise SyntaxError(f"{fn}: skill {name} was not saved, its Python does not compile: {e}") from None
    p = {"name": name, "code": code, "language": lang}
    if description is not None:
        if not isinstance(description, str):
            raise TypeError(f"{fn}: description must be a string")
        p["description"] = description
    return await _call("saveSkill", p)
class WorkspaceError(OSError):
    "A workspace operation was refused or failed (the message is the host's)."
WorkspaceError.__module__ = "builtins"

def _ws_path(path, fn):
    if not isinstance(path, str):
        raise TypeError(f'workspace.{fn}: path must be a str, such as "notes/today.txt"')
    return path

class _Workspace:
    "The project's files, kept between executions: await workspace.read_text(path), write_text(path, text), read_bytes, write_bytes, list(path=''), remove(path)."
    __slots__ = ()

    async def _op(self, params):
        try:
            return await _call("workspace", params)
        except ToolCallError as e:
            raise WorkspaceError(str(e)) from None

    async def read_bytes(self, path):
        "The file's bytes."
        r = await self._op({"op": "read", "path": _ws_path(path, "read_bytes")})
        return base64.b64decode(r["data"])

    async def read_text(self, path):
        "The file's text (UTF-8)."
        b = await self.read_bytes(_ws_path(path, "read_text"))
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"workspace.read_text: {path!r} is not UTF-8 text; read it with workspace.read_bytes") from None

    async def write_bytes(self, path, data):
        "Creates or replaces the file (and makes its directories)."
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"workspace.write_bytes: data must be bytes, not {type(data).__name__} (for text, use workspace.write_text)")
        data = bytes(data)
        if len(data) > 3141632:
            raise ValueError(f"workspace.write_bytes: {len(data)} bytes, over the largest file a workspace takes (3141632 bytes; workspace_max_file_bytes may set less)")
        p = {"op": "write", "path": _ws_path(path, "write_bytes"), "data": base64.b64encode(data).decode("ascii")}
        await self._op(p)

    async def write_text(self, path, text):
        "Creates or replaces the file with the text's UTF-8."
        if not isinstance(text, str):
            raise TypeError(f"workspace.write_text: text must be a str, not {type(text).__name__} (for bytes, use workspace.write_bytes)")
        await self.write_bytes(_ws_path(path, "write_text"), text.encode("utf-8"))

    async def list(self, path=""):
        "{'entries': [{'path', 'kind', 'size'}...], 'truncated': bool}: every level beneath a directory ('' for all)."
        return await self._op({"op": "list", "path": _ws_path(path, "list")})

    async def remove(self, path):
        "Removes a file, or a directory with all it holds."
        await self._op({"op": "remove", "path": _ws_path(path, "remove")})

workspace = _Workspace()

_IMAGE_MIME = re.compile(r"image/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*")

def image(data, mime_type="image/png"):
    "An image content block (bytes, or their base64): returned, it reaches the client as an image."
    if not isinstance(mime_type, str) or not _IMAGE_MIME.fullmatch(mime_type):
        raise TypeError(f'image: mime_type must be an image type such as "image/png", not {mime_type!r}')
    if isinstance(data, str):
        try:
            data = base64.b64decode(data, validate=True)
        except ValueError:
            raise TypeError("image: a string must be the image's base64") from None
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"image: data must be bytes or a base64 string, not {type(data).__name__}")
    return {"type": "image", "data": base64.b64encode(bytes(data)).decode("ascii"), "mimeType": mime_type}

API = {"call_mcp_tool": call_mcp_tool, "search_tools": search_tools, "get_tool_schema": get_tool_schema,
       "list_servers": list_servers, "ToolCallError": ToolCallError,
       "callMCPTool": call_mcp_tool, "searchTools": search_tools, "getToolSchema": get_tool_schema,
       "listServers": list_servers, "llm": llm, "list_resources": list_resources,
       "read_resource": read_resource, "list_prompts": list_prompts, "get_prompt": get_prompt,
       "image": image, "save_skill": save_skill, "saveSkill": save_skill,
       "workspace": workspace, "WorkspaceError": WorkspaceError}

def _jsonable(v, depth=0, seen=None):
    "JSON-safe copy: dict/list/tuple/str/int/float/bool/None as such, anything else as repr."
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v) if -2**53 < v < 2**53 else str(v)
    if isinstance(v, float):
        return float(v) if math.isfinite(v) else repr(v)
    if isinstance(v, JsProxy) and depth < 100:
        try:
            w = v.to_py()
        except BaseException:
            w = v
        if not isinstance(w, JsProxy):
            return _jsonable(w, depth + 1, seen)
    if isinstance(v, (dict, list, tuple)):
        if depth >= 100:
            return f"<{type(v).__name__} nested too deeply>"
        seen = seen if seen is not None else set()
        if id(v) not in seen:
            seen.add(id(v))
            try:
                if isinstance(v, dict):
                    return {k if isinstance(k, str) else _repr(k): _jsonable(x, depth + 1, seen) for k, x in v.items()}
                return [_jsonable(x, depth + 1, seen) for x in v]
            finally:
                seen.discard(id(v))
    return _repr(v)

def _repr(v):
    try:
        return repr(v)
    except BaseException:
        return f"<{type(v).__name__} object>"

def _trim(te, seen):
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    fs = list(te.stack)
    first = next((i for i, f in enumerate(fs) if f.filename == _F), 0)
    te.stack = traceback.StackSummary.from_list([f for f in fs[first:] if not _INTERNAL.search(f.filename or "")])
    for t in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        _trim(t, seen)

_NETWORK = re.compile(r"/(?:socket|ssl|urllib/request|http/client)\.py$")
_NO_NETWORK = "network access is not available in the sandbox; reach other systems through call_mcp_tool"

def _explain(e):
    "A network error (Pyodide has sockets but nowhere to connect) says what to do instead."
    try:
        if isinstance(e, OSError) and any(_NETWORK.search(f.filename or "") for f in traceback.extract_tb(e.__traceback__)):
            e.add_note(_NO_NETWORK)
    except BaseException:
        pass

def _error(e):
    _explain(e)
    try:
        te = traceback.TracebackException.from_exception(e, limit=-300)
        _trim(te, set())
        stack = "".join(te.format()).rstrip("\n")
    except BaseException as f:
        stack = f"(traceback unavailable: {_repr(f)})"
    try:
        msg = str(e)
    except BaseException:
        msg = _repr(e)
    return {"name": type(e).__name__, "message": msg, "stack": stack}

def _flush():
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass

async def run(code):
    "Runs one user program in a fresh __main__; returns the outcome as JSON."
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    g = main.__dict__
    g["__builtins__"] = builtins
    g.update(API)
    linecache.cache[_F] = (len(code), None, code.splitlines(True), _F)
    try:
        r = await eval_code_async(code, g, filename=_F)
        out = {"ok": True} if r is None else {"ok": True, "value": _jsonable(r)}
    except SystemExit as e:
        c = e.code
        if c is None or c == 0:
            out = {"ok": True}
        else:
            out = {"ok": False, "error": {"name": "SystemExit", "message": f"the code called sys.exit({_repr(c)})"}}
    except BaseException as e:
        out = {"ok": False, "error": _error(e)}
    finally:
        _flush()
    return json.dumps(out, ensure_ascii=False)

_host_call = None

def _connect(host_call):
    "Per worker: the host-call bridge, and line-buffered output through the worker's writers."
    global _host_call
    _host_call = host_call
    for s in (sys.stdout, sys.stderr):
        try:
            s.reconfigure(line_buffering=True)
        except BaseException:
            pass

# Emscripten would run these through Node APIs the worker may not use (a fatal error for Pyodide).
def _system(command):
    raise OSError(38, "processes are not available in the sandbox")
def _exit(status):
    raise SystemExit(status)
import os, posix
os.system = posix.system = _system
os._exit = posix._exit = _exit
`;

/** @type {any} the Pyodide API, once loaded */
let pyodide = null;
/** @type {((code: string) => Promise<string>) | null} the prelude's `run` */
let pyRun = null;

/** Bridge for the prelude's `_call`: params and result travel as JSON text. */
function pyHostCall(method, paramsJson) {
  let params;
  try {
    params = JSONParse(String(paramsJson));
  } catch (e) {
    return PromiseCtor.reject(e);
  }
  const checked = method === "saveSkill" && params?.language === "typescript"
    ? checkTypeScriptSkill(params.name, params.code)
    : PromiseCtor.resolve();
  return checked
    .then(() => hostCall(String(method), params, pyHostCall))
    .then((v) => (v === undefined ? undefined : JSONStringify(v)));
}

/** Resets the UTF-8 decoders of `pyWriter`s (a lane's next execution starts on a clean slate). */
const pyWriters = [];

/** Writes Python's stdout/stderr bytes into the output messages (UTF-8 decoded across writes). */
function pyWriter(stream) {
  let decoder = new TextDecoder();
  pyWriters.push({ reset: () => (decoder = new TextDecoder()) });
  return {
    isatty: false,
    write(buf) {
      emitOutput(stream, decoder.decode(buf, { stream: true }));
      return buf.length;
    },
  };
}

/**
 * Pyodide's WebAssembly module, compiled once by the process's main thread (its code shared by
 * every isolate of the process): it comes in a message of its own after `init`, so that the
 * isolate boots, reads its snapshot and evaluates the Emscripten source while it compiles.
 */
const pyodideModule = launch.mode === "python" || launch.mode === "snapshot"
  ? new Promise((resolve) => {
    addEventListenerPrivate("message", (event) => resolve(event.data?.module), { once: true });
  })
  : null;

/**
 * Swaps what Pyodide loads its parts with, while it starts: `fetch` answers for the two files the
 * process's main thread already read (`pyodide.asm.wasm`, `python_stdlib.zip`) without reading
 * them again, and `WebAssembly.instantiate`/`instantiateStreaming` instantiate the module the
 * main thread compiled (its code shared by every isolate of the process) instead of compiling
 * bytes again (`module`: a promise of it); anything else passes through. Returns the function
 * that puts the originals back.
 */
function loadFromProcess(p, dirUrl, module) {
  const wasm = globalThis.WebAssembly;
  const { instantiate, instantiateStreaming } = wasm;
  const realFetch = globalThis.fetch;
  const wasmUrl = new URL("pyodide.asm.wasm", dirUrl).href;
  const stdlibUrl = new URL("python_stdlib.zip", dirUrl).href;
  // Stands for pyodide.asm.wasm: `instantiateStreaming` knows it by identity.
  const wasmResponse = new Response(null);
  let stdlib = p.stdlib instanceof Uint8Array ? p.stdlib : null;
  p.stdlib = null; // (MEMFS keeps the one copy a lane needs)
  const fromModule = async (imports) => {
    const compiled = await module;
    return { instance: await ReflectApply(instantiate, wasm, [compiled, imports]), module: compiled };
  };
  globalThis.fetch = function (input, init) {
    const url = typeof input === "string" ? input : safeString(input?.url ?? input);
    if (url === wasmUrl) return Promise.resolve(wasmResponse);
    if (url === stdlibUrl && stdlib !== null) {
      const body = stdlib;
      stdlib = null;
      return Promise.resolve(new Response(body));
    }
    return ReflectApply(realFetch, globalThis, [input, init]);
  };
  wasm.instantiate = function (source, imports) {
    if (source?.byteLength > 1000000) return fromModule(imports);
    return ReflectApply(instantiate, wasm, [source, imports]);
  };
  wasm.instantiateStreaming = async function (response, imports) {
    const r = await response;
    if (r === wasmResponse) return fromModule(imports);
    return ReflectApply(instantiateStreaming, wasm, [r, imports]);
  };
  return () => {
    globalThis.fetch = realFetch;
    wasm.instantiate = instantiate;
    wasm.instantiateStreaming = instantiateStreaming;
  };
}

/**
 * Loads Pyodide as the supervisor prepared it (`launch.pyodide`): the API module from the
 * distribution, the Emscripten module from the source text the supervisor read (evaluated here,
 * outside the module loader), the WebAssembly instance from the process's compiled module, the
 * standard library from the bytes it read (`loadFromProcess`), and `extra` (snapshot options);
 * `hook`, when given, sees the Emscripten module before Pyodide bootstraps in it.
 * Pyodide runs in its Deno mode: no Node `process` is lent to it.
 */
async function startPyodide(extra, hook = null) {
  const p = launch.pyodide;
  const dirUrl = new URL("file:///");
  dirUrl.pathname = p.dir;
  const url = new URL("pyodide.mjs", dirUrl);
  const create = evalPrivate(p.emscriptenSource);
  const createPyodideModule = hook === null ? create : async (settings) => {
    const module = await create(settings);
    hook(module);
    return module;
  };
  const restore = loadFromProcess(p, dirUrl, pyodideModule);
  const denoDescriptor = Object.getOwnPropertyDescriptor(globalThis, "Deno");
  delete globalThis.Deno;
  try {
    const { loadPyodide } = await import(url.href);
    return await loadPyodide({
      indexURL: dirUrl.href,
      lockFileContents: p.lock,
      createPyodideModule,
      // `_` would otherwise name the worker's real working directory.
      env: { HOME: "/home/pyodide", _: undefined },
      _sysExecutable: "/usr/bin/python3",
      stdin: () => null,
      stdout: (s) => diag("python stdout while loading: " + s),
      stderr: (s) => diag("python stderr while loading: " + s),
      ...extra,
    });
  } finally {
    restore();
    ObjectDefineProperty(globalThis, "Deno", denoDescriptor);
  }
}
