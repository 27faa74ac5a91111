'use strict';
// Workers RPC between the objects and the Worker of one process, as
// Cloudflare passes values: structured clones, except functions and
// `RpcTarget` instances, which cross by reference (the receiver gets a stub
// whose calls run where the value lives: inside its object, as that object's
// events), and Durable Object stubs, streams, requests and responses, which
// cross as themselves. A call answers an RpcPromise (pipelining: a method of
// a result not yet awaited); a member of a stub is callable and awaitable (a
// prototype getter); instance fields are not exposed; stubs are disposable,
// and a stub received as an argument is disposed when its call ends unless
// the receiver keeps a `dup()`. Checked against workerd by the probe's RPC
// scenarios (__test__/fixtures/do-probe-rpc.mjs).

const { types } = require('node:util');
const { actorContext } = require('./websocket');

/** Marks a class whose instances cross RPC by reference. */
class RpcTarget {}

const DISPOSED = 'RPC stub used after being disposed.';

/** Durable Object stubs (./namespace.js): they cross as themselves. */
const objectStubs = new WeakSet();
/** @type {WeakMap<Function, StubState>} each RPC stub's state */
const stubs = new WeakMap();

/**
 * Where a value passed by reference lives.
 * @typedef {{ value: object, owner: import('./actor').Actor | null, refs: number }} Hook
 * @typedef {{ hook: Hook, disposed: boolean }} StubState
 */

/** @param {object} stub a Durable Object stub, passed through RPC as itself */
function markObjectStub(stub) {
  objectStubs.add(stub);
  return stub;
}

/** The object whose event is running (null in the Worker): where values sent from here live. */
function here() {
  return actorContext.getStore() ?? null;
}

/**
 * Runs `body` where `owner` lives: as an event of its object (the gates and
 * eviction count it), or outside every object's context.
 * @param {import('./actor').Actor | null} owner
 * @param {() => unknown} body
 */
function runIn(owner, body) {
  if (owner !== null) return owner.event(body);
  return actorContext.exit(async () => body());
}

/**
 * The member `name` of `target` as RPC exposes it: found on its prototype
 * chain, not an own (instance) property, not Object's.
 */
function exposed(target, name) {
  if (typeof name !== 'string' || Object.hasOwn(target, name) || Object.hasOwn(Object.prototype, name) || name === 'constructor') {
    throw new TypeError(`The RPC receiver does not implement the method "${String(name)}".`);
  }
  if (!(name in target)) throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
  return target[name];
}

/** The method `name` of `target`, as `exposed`, and a function. */
function method(target, name) {
  const fn = exposed(target, name);
  if (typeof fn !== 'function') throw new TypeError(`"${name}" is not a function.`);
  return fn;
}

/**
 * A call: `resolve(instance)` gives `[self, fn]` on the value's side (the
 * instance is the object's, when the value is one), called with arguments
 * sent from the caller's side; its result is sent back from `owner`'s.
 * Argument stubs are disposed once the call ends.
 * @param {import('./actor').Actor | null} owner
 * @param {(instance?: object) => [unknown, unknown]} resolve
 * @param {unknown[]} args
 * @param {import('./actor').Actor | null} from
 */
function invoke(owner, resolve, args, from) {
  let sent;
  try {
    sent = send(args, from);
  } catch (err) {
    return Promise.reject(err);
  }
  return runIn(owner, async (instance) => {
    try {
      const [self, fn] = resolve(instance);
      if (typeof fn !== 'function') throw new TypeError('The RPC receiver is not a function.');
      return reply(await fn.apply(self, sent.value), owner);
    } finally {
      sent.dispose();
    }
  });
}

/**
 * A read of the member `name` of `target(instance)`, on its side.
 * @param {import('./actor').Actor | null} owner
 * @param {(instance?: object) => object} target
 * @param {string} name
 */
function read(owner, target, name) {
  return runIn(owner, async (instance) => reply(await exposed(target(instance), name), owner));
}

/** A call's or a read's result, as the caller receives it: object results get a disposer for the stubs inside. */
function reply(value, owner) {
  const sent = send(value, owner);
  const out = sent.value;
  if (out !== null && typeof out === 'object' && !byReference(out)) {
    Object.defineProperty(out, Symbol.dispose, { value: sent.dispose, configurable: true, writable: true });
  }
  return out;
}

// -- stubs --------------------------------------------------------------------

/** @param {Hook} hook */
function makeStub(hook) {
  /** @type {StubState} */
  const state = { hook, disposed: false };
  hook.refs++;
  const stub = new Proxy(function RpcStub() {}, {
    get(_, prop) {
      if (prop === Symbol.dispose) return () => dispose(state);
      if (typeof prop === 'symbol' || prop === 'then') return undefined; // `await stub` is the stub
      if (prop === 'dup') return () => (state.disposed ? refuse() : makeStub(hook));
      return member(state, prop);
    },
    apply(_, __, args) {
      if (state.disposed) return rpcPromise(Promise.reject(new Error(DISPOSED)));
      return rpcPromise(invoke(hook.owner, () => [undefined, hook.value], args, here()));
    },
  });
  stubs.set(stub, state);
  return stub;
}

function refuse() {
  throw new Error(DISPOSED);
}

/** @param {StubState} state */
function dispose(state) {
  if (state.disposed) return;
  state.disposed = true;
  const { hook } = state;
  if (--hook.refs > 0) return;
  const disposer = hook.value[Symbol.dispose];
  if (typeof disposer !== 'function') return;
  // The target learns it is no longer referenced, on its side; nobody waits for it.
  Promise.resolve(runIn(hook.owner, () => disposer.call(hook.value))).catch(() => {});
}

/**
 * `stub.name`: called, a method call; awaited, a read of the member.
 * @param {StubState} state
 * @param {string} name
 */
function member(state, name) {
  const { hook } = state;
  const call = (args) => {
    if (state.disposed) return Promise.reject(new Error(DISPOSED));
    return invoke(hook.owner, () => [hook.value, method(hook.value, name)], args, here());
  };
  const get = () => (state.disposed ? Promise.reject(new Error(DISPOSED)) : read(hook.owner, () => hook.value, name));
  return property(call, get);
}

/**
 * A callable, awaitable member: `call(args)` and `get()` each answer a promise.
 * @param {(args: unknown[]) => Promise<unknown>} call
 * @param {() => Promise<unknown>} get
 */
function property(call, get) {
  let got = null;
  const value = () => (got ??= get());
  return new Proxy(function RpcProperty() {}, {
    get(_, prop) {
      if (prop === 'then') return (ok, fail) => value().then(ok, fail);
      if (prop === 'catch') return (fail) => value().catch(fail);
      if (prop === 'finally') return (fn) => value().finally(fn);
      if (typeof prop === 'symbol') return undefined;
      return pipelined(() => value(), prop);
    },
    apply(_, __, args) {
      return rpcPromise(call(args));
    },
  });
}

/**
 * What a call answers: a promise of its result whose members may be used
 * before it settles (`stub.make().increment(1)`). Not a `Promise` instance,
 * as on Cloudflare.
 * @param {Promise<unknown>} promise
 */
function rpcPromise(promise) {
  return property(
    (args) =>
      promise.then((r) => {
        if (typeof r !== 'function') throw new TypeError('The RPC result is not a function.');
        return r(...args);
      }),
    () => promise,
  );
}

/** The member `name` of what `value()` settles to. */
function pipelined(value, name) {
  return property(
    (args) =>
      value().then((r) => {
        const m = r?.[name];
        if (typeof m !== 'function') throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
        return m(...args);
      }),
    () => value().then((r) => r?.[name]),
  );
}

// -- sending values -----------------------------------------------------------

/**
 * What the receiver gets for `value` sent from `owner`'s side: a structured
 * clone, with functions and RpcTargets replaced by new stubs, and Durable
 * Object stubs, RPC stubs (dup'd), streams, requests and responses kept.
 * `dispose()` disposes the stubs made.
 * @param {unknown} value
 * @param {import('./actor').Actor | null} owner
 * @returns {{ value: unknown, dispose: () => void }}
 */
function send(value, owner) {
  if (!hasReferences(value, 0)) return { value: structuredClone(value), dispose: noop };
  const made = [];
  const copy = copyOf(value, owner, made, new Map());
  return {
    value: copy,
    dispose() {
      for (const stub of made) stub[Symbol.dispose]();
    },
  };
}

function noop() {}

/** Whether a value crosses by reference (a stub is made or it is kept as itself). */
function byReference(v) {
  return typeof v === 'function' || v instanceof RpcTarget || objectStubs.has(v) || v instanceof ReadableStream || v instanceof WritableStream || v instanceof Request || v instanceof Response;
}

/**
 * Whether `value` holds anything that crosses by reference (or nests deeper
 * than `DEEP`, where the copy below, which follows cycles, takes over).
 * Throws a DataCloneError for an instance of a class neither cloneable nor
 * an RpcTarget, as workerd's serializer does (structuredClone would copy its
 * fields into a plain object).
 * @param {unknown} value
 * @param {number} depth
 */
function hasReferences(value, depth) {
  if (typeof value !== 'object' || value === null) return typeof value === 'function';
  if (byReference(value) || depth > DEEP) return true;
  switch (containerKind(value)) {
    case 'array':
      for (let i = 0; i < value.length; i++) if (hasReferences(value[i], depth + 1)) return true;
      return false;
    case 'object':
      for (const k in value) if (Object.hasOwn(value, k) && hasReferences(value[k], depth + 1)) return true;
      return false;
    case 'map':
      for (const [k, x] of value) if (hasReferences(k, depth + 1) || hasReferences(x, depth + 1)) return true;
      return false;
    case 'set':
      for (const x of value) if (hasReferences(x, depth + 1)) return true;
      return false;
    default:
      return false;
  }
}

/** How deep `hasReferences` looks before leaving a value to the copy (a cycle goes on forever). */
const DEEP = 32;

/** 'array', 'object', 'map' or 'set'; null for a cloneable leaf (a Date, bytes, an Error…); throws for anything else. */
function containerKind(v) {
  if (Array.isArray(v)) return 'array';
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return 'object';
  if (v instanceof Map) return 'map';
  if (v instanceof Set) return 'set';
  if (v instanceof Date || v instanceof RegExp || v instanceof Error || types.isArrayBuffer(v) || types.isSharedArrayBuffer(v) || ArrayBuffer.isView(v) || types.isBoxedPrimitive(v)) return null;
  const name = typeof proto?.constructor === 'function' && proto.constructor.name ? proto.constructor.name : 'Object';
  throw new DOMException(`Could not serialize object of type "${name}". This type does not support serialization.`, 'DataCloneError');
}

function copyOf(v, owner, made, memo) {
  if (typeof v === 'function') {
    const state = stubs.get(v);
    // An RPC stub passed on: a new stub of the same value, where it lives.
    const stub = makeStub(state !== undefined ? state.hook : { value: v, owner, refs: 0 });
    made.push(stub);
    return stub;
  }
  if (typeof v !== 'object' || v === null) return v;
  if (v instanceof RpcTarget) {
    const stub = makeStub({ value: v, owner, refs: 0 });
    made.push(stub);
    return stub;
  }
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
      for (let i = 0; i < v.length; i++) out[i] = copyOf(v[i], owner, made, memo);
      return out;
    case 'map':
      out = new Map();
      memo.set(v, out);
      for (const [k, x] of v) out.set(copyOf(k, owner, made, memo), copyOf(x, owner, made, memo));
      return out;
    case 'set':
      out = new Set();
      memo.set(v, out);
      for (const x of v) out.add(copyOf(x, owner, made, memo));
      return out;
    default:
      out = {};
      memo.set(v, out);
      for (const k of Object.keys(v)) out[k] = copyOf(v[k], owner, made, memo);
      return out;
  }
}

module.exports = { RpcTarget, markObjectStub, here, invoke, read, method, property };
