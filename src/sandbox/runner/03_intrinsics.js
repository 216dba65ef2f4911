// 03_intrinsics.js: the built-in functions the import guard calls (the tokenizer, the module
// references, the import rules, linking skills and wrappers), taken before any user code runs
// and called without a property look-up (`uncurryThis`), and lists without a prototype. Code
// runs before some of the guard does (`eval`, `import()` of a skill, `saveSkill`) and may have
// replaced `String.prototype.includes` or `Set.prototype.has`, or put a setter on
// `Array.prototype[0]`: the guard neither sees nor calls any of it. Relies on nothing.

/** `uncurryThis(String.prototype.slice)(s, 1)` is `s.slice(1)` as it was when taken. */
const uncurryThis = Function.prototype.bind.bind(Function.prototype.call);
const StringPrototypeCharCodeAt = uncurryThis(String.prototype.charCodeAt);
const StringPrototypeSlice = uncurryThis(String.prototype.slice);
const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
const StringPrototypeStartsWith = uncurryThis(String.prototype.startsWith);
const RegExpPrototypeExec = uncurryThis(RegExp.prototype.exec);
const MapPrototypeGet = uncurryThis(Map.prototype.get);
const MapPrototypeSet = uncurryThis(Map.prototype.set);
const MapPrototypeHas = uncurryThis(Map.prototype.has);
const SetPrototypeHas = uncurryThis(Set.prototype.has);
const StringFromCodePoint = String.fromCodePoint;
const NumberParseInt = Number.parseInt;
const ObjectSetPrototypeOf = Object.setPrototypeOf;
const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
const ObjectGetPrototypeOf = Object.getPrototypeOf;
const ObjectCreate = Object.create;

/**
 * A new empty list: an array without a prototype, so that filling it (`append`) or reading past
 * its end looks nothing up. Read it with index loops (it has no methods and is not iterable).
 */
function list() {
  return ObjectSetPrototypeOf([], null);
}

/** Appends `value` to list `l`. */
function append(l, value) {
  l[l.length] = value;
}

/** Whether list `l` holds `value` (`===`). */
function listHas(l, value) {
  for (let i = 0; i < l.length; i++) if (l[i] === value) return true;
  return false;
}
