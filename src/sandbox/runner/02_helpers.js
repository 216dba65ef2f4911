// 02_helpers.js: small helpers: `safeString`, `isErrorLike`, UTF-8 length and truncation,
// base64 of UTF-8, `stripAnsi`. Relies on 00.

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** `String(v)` that never throws. */
function safeString(v) {
  try {
    return String(v);
  } catch {
    try {
      return inspect(v, { colors: false, customInspect: inspectCustom });
    } catch {
      return "[unprintable value]";
    }
  }
}

const ArrayBufferByteLengthGet = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get;

/** Whether `v` is an ArrayBuffer of any realm (a context's too: `instanceof` is false there, see 51). */
function isArrayBuffer(v) {
  try {
    ReflectApply(ArrayBufferByteLengthGet, v, []);
    return true;
  } catch {
    return false;
  }
}

function isErrorLike(v) {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return false;
  if (ErrorIsError !== null && ErrorIsError(v)) return true;
  return v instanceof Error;
}

/** UTF-8 byte length of a string. */
function utf8Length(s) {
  return encodeUtf8(s).length;
}

/** The longest prefix of `s` whose UTF-8 encoding fits in `maxBytes` (cut on a character boundary). */
function truncateUtf8(s, maxBytes) {
  const bytes = encodeUtf8(s);
  if (bytes.length <= maxBytes) return s;
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return decodeUtf8(bytes.subarray(0, end));
}

function base64Utf8(s) {
  return base64Bytes(encodeUtf8(s));
}

/** @param {Uint8Array} bytes */
function base64Bytes(bytes) {
  if (U8ToBase64 !== null) return ReflectApply(U8ToBase64, bytes, []);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += ReflectApply(StringFromCharCode, null, bytes.subarray(i, i + 0x8000));
  }
  return btoaPrivate(bin);
}

// deno-lint-ignore no-control-regex
const ANSI_RE = /\u001b\[[0-9;?]*[ -\/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

function stripAnsi(s) {
  return s.replace(ANSI_RE, "");
}
