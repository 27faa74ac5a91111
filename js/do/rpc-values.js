'use strict';
// The values of Workers RPC (./rpc.js): what crosses by reference, and a
// structured clone made by hand for a value that holds any of it. Instances
// of classes neither cloneable nor RpcTargets are refused as workerd's
// serializer refuses them (structuredClone would copy their fields).

const { types } = require('node:util');

/** Marks a class whose instances cross RPC by reference. */
class RpcTarget {}

/** Durable Object stubs (./namespace.js): they cross as themselves. */
const objectStubs = new WeakSet();

/** @param {object} stub a Durable Object stub, passed through RPC as itself */
function markObjectStub(stub) {
  objectStubs.add(stub);
  return stub;
}

/** RpcPromises and RpcProperties (./rpc.js), by the name workerd's serializer refuses them with. */
const pipelines = new WeakMap();

/**
 * @param {Function} v an RpcPromise or a stub's member: refused as a value, as workerd refuses it
 * @param {'RpcPromise' | 'RpcProperty'} kind
 */
function markPipeline(v, kind) {
  pipelines.set(v, kind);
  return v;
}

/** The DataCloneError workerd's serializer throws for a value of type `name`. */
function unserializable(name) {
  return new DOMException(`Could not serialize object of type "${name}". This type does not support serialization.`, 'DataCloneError');
}

/** Whether a value crosses by reference (a stub is made or it is kept as itself). */
function byReference(v) {
  return typeof v === 'function' || v instanceof RpcTarget || objectStubs.has(v) || v instanceof ReadableStream || v instanceof WritableStream || v instanceof Request || v instanceof Response;
}

/**
 * Whether `value` holds anything that crosses by reference; true too past
 * `SCAN_BUDGET` objects, where the copy below (which follows shared and
 * cyclic references once) takes over. Throws a DataCloneError for an
 * instance of a class neither cloneable nor an RpcTarget, as workerd's
 * serializer does (structuredClone would copy its fields into a plain object).
 * @param {unknown} value
 * @param {{ left: number, seen: Set<object> | null }} scan
 */
function hasReferences(value, scan = { left: SCAN_BUDGET, seen: null }) {
  if (typeof value !== 'object' || value === null) return typeof value === 'function';
  if (byReference(value) || --scan.left < 0) return true;
  const kind = containerKind(value);
  if (kind === null) return false;
  if (scan.seen === null) scan.seen = new Set();
  else if (scan.seen.has(value)) return false;
  scan.seen.add(value);
  switch (kind) {
    case 'array':
      // A sparse array by its keys: `a[1e9] = 1` has one element.
      if (value.length > 4096) return true;
      for (let i = 0; i < value.length; i++) if (hasReferences(value[i], scan)) return true;
      return false;
    case 'object':
      for (const k in value) if (Object.hasOwn(value, k) && hasReferences(value[k], scan)) return true;
      return false;
    case 'map':
      for (const [k, x] of value) if (hasReferences(k, scan) || hasReferences(x, scan)) return true;
      return false;
    default:
      for (const x of value) if (hasReferences(x, scan)) return true;
      return false;
  }
}

/** How many objects `hasReferences` looks at before leaving a value to the copy. */
const SCAN_BUDGET = 10_000;

/** 'array', 'object', 'map' or 'set'; null for a cloneable leaf (a Date, bytes, an Error…); throws for anything else. */
function containerKind(v) {
  if (Array.isArray(v)) return 'array';
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return 'object';
  if (v instanceof Map) return 'map';
  if (v instanceof Set) return 'set';
  if (v instanceof Date || v instanceof RegExp || v instanceof Error || types.isArrayBuffer(v) || types.isSharedArrayBuffer(v) || ArrayBuffer.isView(v) || types.isBoxedPrimitive(v)) return null;
  const name = typeof proto?.constructor === 'function' && proto.constructor.name ? proto.constructor.name : 'Object';
  throw unserializable(name);
}

/**
 * A structured clone of `v` made by hand, following shared and cyclic
 * references once; a function or an RpcTarget becomes `stubOf(it)`.
 * @param {unknown} v
 * @param {(v: Function | RpcTarget) => Function} stubOf
 * @param {Map<object, unknown>} memo
 */
function copyOf(v, stubOf, memo = new Map()) {
  if (pipelines.has(v)) throw unserializable(pipelines.get(v));
  if (typeof v === 'function' || v instanceof RpcTarget) return stubOf(v);
  if (typeof v === 'symbol') return structuredClone(v); // throws, as for a symbol anywhere else
  if (typeof v !== 'object' || v === null) return v;
  if (byReference(v)) return v;
  if (memo.has(v)) return memo.get(v);
  const kind = containerKind(v);
  if (kind === null) {
    const leaf = structuredClone(v);
    memo.set(v, leaf);
    return leaf;
  }
  let out;
  switch (kind) {
    case 'array':
      out = new Array(v.length);
      memo.set(v, out);
      for (const k of Object.keys(v)) own(out, k, copyOf(v[k], stubOf, memo));
      return out;
    case 'map':
      out = new Map();
      memo.set(v, out);
      for (const [k, x] of v) out.set(copyOf(k, stubOf, memo), copyOf(x, stubOf, memo));
      return out;
    case 'set':
      out = new Set();
      memo.set(v, out);
      for (const x of v) out.add(copyOf(x, stubOf, memo));
      return out;
    default:
      out = {};
      memo.set(v, out);
      for (const k of Object.keys(v)) own(out, k, copyOf(v[k], stubOf, memo));
      return out;
  }
}

/** `o[k] = x` as an own property, even for `__proto__` (a JSON key), as structuredClone makes it. */
function own(o, k, x) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: x, enumerable: true, writable: true, configurable: true });
  else o[k] = x;
}

/** Standard error classes a copy keeps (as the structured clone of an error does). */
const ERRORS = [TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError];

/**
 * What the caller of an RPC call catches for `err` thrown on the other side:
 * a copy, as workerd's is (its standard class or Error, message, stack, its
 * cause and own enumerable properties, each cloned where it can be), marked `remote: true`, with `durableObjectId`
 * when it was thrown inside an object. A thrown value that is not an error
 * is left as it is.
 * @param {unknown} err
 * @param {{ id: { toString(): string } } | null} owner the object it was thrown in
 */
function remoteError(err, owner) {
  if (!(err instanceof Error)) return err;
  let copy;
  if (err instanceof DOMException) copy = new DOMException(err.message, err.name);
  else copy = new (ERRORS.find((E) => err instanceof E) ?? Error)(err.message);
  Object.defineProperty(copy, 'stack', { value: err.stack, writable: true, configurable: true });
  // workerd's copy has the cause as an own enumerable property, first.
  if (Object.hasOwn(err, 'cause')) copy.cause = copied(err.cause);
  for (const k of Object.keys(err)) if (k !== 'cause' && k !== 'durableObjectId' && k !== 'remote') own(copy, k, copied(err[k]));
  if (owner !== null) copy.durableObjectId = owner.id.toString();
  copy.remote = true;
  return copy;
}

/** A structured clone of `v` where it has one; `v` itself where not (a function, say). */
function copied(v) {
  try {
    return structuredClone(v);
  } catch {
    return v;
  }
}

module.exports = { RpcTarget, markObjectStub, markPipeline, byReference, hasReferences, copyOf, remoteError };
