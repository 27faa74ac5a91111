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
// the receiver keeps a `dup()`. A stub not yet disposed (or collected) keeps
// the object its value lives in from leaving memory, as workerd keeps the
// session open; a call out of an object waits, as workerd's does, until the
// object's writes made before it are durable. Checked against workerd by the
// probe's RPC scenarios (__test__/fixtures/do-probe-rpc.mjs).

const { types } = require('node:util');
const { actorContext } = require('./websocket');
const { holdUntilEnded } = require('./bodies');

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
 * The member `name` of `target` as RPC exposes it: of a function, its own
 * properties; of anything else, what its prototype chain has, not an own
 * (instance) property and not Object's.
 */
function exposed(target, name) {
  const refused =
    typeof name !== 'string' ||
    name === 'constructor' ||
    (typeof target === 'function' ? !Object.hasOwn(target, name) : Object.hasOwn(target, name) || !(name in target) || Object.prototype[name] === target[name]);
  if (refused) throw new TypeError(`The RPC receiver does not implement the method "${String(name)}".`);
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
  const run = () =>
    runIn(owner, async (instance) => {
      const [self, fn] = resolve(instance);
      if (typeof fn !== 'function') throw new TypeError('"(this)" is not a function.');
      return reply(await fn.apply(self, sent.value), owner);
    });
  // A call out of an object leaves once the writes it made before are durable (workerd's output gate).
  const out = from !== null && from.output.busy ? from.output.wait().then(run) : run();
  return out.finally(sent.dispose);
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

/**
 * A call's or a read's result, as the caller receives it: object results
 * get a disposer for the stubs inside; a body or stream returned keeps its
 * object in memory until it has been read.
 */
function reply(value, owner) {
  const sent = send(value, owner);
  const out = sent.value;
  const body = out instanceof Response ? out.body : out instanceof ReadableStream ? out : null;
  if (owner !== null && body !== null) {
    const token = {};
    owner.pending.add(token);
    holdUntilEnded(body, () => owner.pending.delete(token));
  }
  if (out !== null && typeof out === 'object' && !byReference(out)) {
    Object.defineProperty(out, Symbol.dispose, { value: sent.dispose, configurable: true, writable: true });
  }
  return out;
}

// -- stubs --------------------------------------------------------------------

/** Stubs collected without being disposed let their object go. */
const collected = new FinalizationRegistry(({ state, token }) => {
  if (!state.disposed) release(state, token);
});

/**
 * A stub of `hook`'s value. Until it is disposed or collected it keeps the
 * object the value lives in from leaving memory.
 * @param {Hook} hook
 * @param {boolean} [broken] a stub made disposed (a `dup()` of a disposed one)
 */
function makeStub(hook, broken = false) {
  /** @type {StubState} */
  const state = { hook, disposed: broken };
  const token = {};
  const stub = new Proxy(function RpcStub() {}, {
    get(_, prop) {
      if (prop === Symbol.dispose) return () => dispose(state, token, stub);
      if (typeof prop === 'symbol' || prop === 'then') return undefined; // `await stub` is the stub
      if (prop === 'dup') return () => makeStub(hook, state.disposed);
      return member(state, prop);
    },
    apply(_, __, args) {
      if (state.disposed) return rpcPromise(Promise.reject(new Error(DISPOSED)));
      return rpcPromise(invoke(hook.owner, () => [undefined, hook.value], args, here()));
    },
  });
  stubs.set(stub, state);
  if (!broken) {
    hook.refs++;
    hook.owner?.pending.add(token);
    collected.register(stub, { state, token }, stub);
  }
  return stub;
}

/** @param {StubState} state */
function dispose(state, token, stub) {
  if (state.disposed) return;
  state.disposed = true;
  collected.unregister(stub);
  release(state, token);
}

/** One stub fewer: the last one's going runs the target's own `[Symbol.dispose]`, on its side; nobody waits for it. */
function release(state, token) {
  const { hook } = state;
  hook.owner?.pending.delete(token);
  if (--hook.refs > 0) return;
  const { value, owner } = hook;
  Promise.resolve()
    .then(() =>
      runIn(owner, () => {
        const disposer = value[Symbol.dispose];
        if (typeof disposer === 'function') return disposer.call(value);
      }),
    )
    .catch(() => {});
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
  return new Proxy(function RpcProperty() {}, {
    get(_, prop) {
      if (prop === 'then') return (ok, fail) => get().then(ok, fail);
      if (prop === 'catch') return (fail) => get().catch(fail);
      if (prop === 'finally') return (fn) => get().finally(fn);
      if (typeof prop === 'symbol') return undefined;
      return pipelined(get, prop);
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
        if (typeof r !== 'function') throw new TypeError('"(this)" is not a function.');
        return r(...args);
      }),
    () => promise,
  );
}

/** The member `name` of what `value()` settles to; a call's arguments are sent when it is made. */
function pipelined(value, name) {
  return property(
    (args) => {
      let sent;
      try {
        sent = send(args, here());
      } catch (err) {
        return Promise.reject(err);
      }
      return value()
        .then((r) => {
          const m = r?.[name];
          if (typeof m !== 'function') throw new TypeError(`The RPC receiver does not implement the method "${name}".`);
          return m(...sent.value);
        })
        .finally(sent.dispose);
    },
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
  if (!hasReferences(value, { left: SCAN_BUDGET, seen: null })) return { value: structuredClone(value), dispose: noop };
  const made = [];
  const disposeAll = () => {
    for (const stub of made) {
      try {
        stub[Symbol.dispose]();
      } catch {
        // A stub's disposal never stops the others'.
      }
    }
  };
  try {
    return { value: copyOf(value, owner, made, new Map()), dispose: disposeAll };
  } catch (err) {
    disposeAll();
    throw err;
  }
}

function noop() {}

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
function hasReferences(value, scan) {
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
  if (typeof v === 'symbol') return structuredClone(v); // throws, as for a symbol anywhere else
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
      for (const k of Object.keys(v)) own(out, k, copyOf(v[k], owner, made, memo));
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
      for (const k of Object.keys(v)) own(out, k, copyOf(v[k], owner, made, memo));
      return out;
  }
}

/** `o[k] = x` as an own property, even for `__proto__` (a JSON key), as structuredClone makes it. */
function own(o, k, x) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: x, enumerable: true, writable: true, configurable: true });
  else o[k] = x;
}

module.exports = { RpcTarget, markObjectStub, here, invoke, read, method, property };
