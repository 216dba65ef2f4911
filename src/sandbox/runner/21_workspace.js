// 21_workspace.js: the `workspace` global (`makeWorkspace`): the project's files that persist
// between executions, each operation one `workspace` host call (the host checks and resolves
// every path beneath the project's workspace; the worker has no permission on it). Relies on
// 00-02, `hostCall` (20).

// ---------------------------------------------------------------------------------------------
// The workspace
// ---------------------------------------------------------------------------------------------

/** Taken when the runner is evaluated, before user code runs. */
const U8FromBase64 = typeof Uint8Array.fromBase64 === "function" ? Uint8Array.fromBase64 : null;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const decodeStrictUtf8 = strictUtf8.decode.bind(strictUtf8);

/** @param {string} text base64 */
function bytesFromBase64(text) {
  if (U8FromBase64 !== null) return ReflectApply(U8FromBase64, Uint8Array, [text]);
  const bin = atobPrivate(text);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

function workspacePath(path, fn) {
  if (typeof path !== "string") throw new TypeError(`${fn}: path must be a string, such as "notes/today.txt"`);
  return path;
}

/** The bytes of `data` (a Uint8Array, another typed array or DataView, or an ArrayBuffer). */
function bytesOf(data, fn) {
  if (data instanceof Uint8Array) return data;
  if (isArrayBuffer(data)) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`${fn}: bytes must be a Uint8Array or an ArrayBuffer (for text, use workspace.writeText)`);
}

/** The largest file a `write` line carries (src/config/settings.rs `MAX_WORKSPACE_FILE_BYTES`). */
const MAX_WORKSPACE_FILE = 3 * 1024 * 1024 - 4 * 1024;

function wsRead(path, caller) {
  try {
    const params = { op: "read", path: workspacePath(path, caller.name) };
    return hostCall("workspace", params, caller).then((reply) => bytesFromBase64(reply.data));
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

function wsWrite(path, bytes, caller) {
  try {
    const params = { op: "write", path: workspacePath(path, caller.name) };
    if (bytes.length > MAX_WORKSPACE_FILE) {
      throw new RangeError(
        `${caller.name}: ${bytes.length} bytes, over the largest file a workspace takes (${MAX_WORKSPACE_FILE} bytes; workspace_max_file_bytes may set less)`,
      );
    }
    params.data = base64Bytes(bytes);
    return hostCall("workspace", params, caller).then(() => undefined);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `workspace.readBytes(path)`: the file's bytes, a Uint8Array. */
function wsReadBytes(path) {
  return wsRead(path, wsReadBytes);
}

/** `workspace.readText(path)`: the file's text (UTF-8). */
function wsReadText(path) {
  return wsRead(path, wsReadText).then((bytes) => {
    try {
      return decodeStrictUtf8(bytes);
    } catch {
      throw new TypeError(`workspace.readText: ${toJson(path)} is not UTF-8 text; read it with workspace.readBytes`);
    }
  });
}

/** `workspace.writeBytes(path, bytes)`: creates or replaces the file (and makes its directories). */
function wsWriteBytes(path, bytes) {
  try {
    return wsWrite(path, bytesOf(bytes, wsWriteBytes.name), wsWriteBytes);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `workspace.writeText(path, text)`: creates or replaces the file with the text's UTF-8. */
function wsWriteText(path, text) {
  if (typeof text !== "string") {
    return PromiseCtor.reject(new TypeError("workspace.writeText: text must be a string (for bytes, use workspace.writeBytes)"));
  }
  return wsWrite(path, encodeUtf8(text), wsWriteText);
}

/** `workspace.list(path?)`: `{entries: [{path, kind, size}], truncated}`, every level beneath a directory. */
function wsList(path) {
  try {
    const params = { op: "list", path: path === undefined || path === null ? "" : workspacePath(path, wsList.name) };
    return hostCall("workspace", params, wsList);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** `workspace.remove(path)`: removes a file, or a directory with all it holds. */
function wsRemove(path) {
  try {
    return hostCall("workspace", { op: "remove", path: workspacePath(path, wsRemove.name) }, wsRemove).then(() => undefined);
  } catch (e) {
    return PromiseCtor.reject(e);
  }
}

/** The `workspace` global, frozen; each function named as code calls it (in its errors). */
function makeWorkspace() {
  const api = {
    readText: wsReadText,
    writeText: wsWriteText,
    readBytes: wsReadBytes,
    writeBytes: wsWriteBytes,
    list: wsList,
    remove: wsRemove,
  };
  for (const [name, fn] of Object.entries(api)) {
    ObjectDefineProperty(fn, "name", { value: `workspace.${name}` });
  }
  return ObjectFreeze(api);
}
