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

const { actorContext } = require('./websocket');
const { RpcTarget, markObjectStub, markPipeline, byReference, hasReferences, copyOf, remoteError } = require('./rpc-values');

const DISPOSED = 'RPC stub used after being disposed.';

/** @type {WeakMap<Function, StubState>} each RPC stub's state */
const stubs = new WeakMap();

/**
 * Where a value passed by reference lives.
 * @typedef {{ value: object, owner: import('./actor').Actor | null, refs: number }} Hook
 * @typedef {{ hook: Hook, disposed: boolean }} StubState
 */

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
 * properties; of anything else, what its prototype chain has below Object's,
 * not an own (instance) property. Found without running a getter twice.
 */
function exposed(target, name) {
  let holder = null;
  if (typeof name === 'string' && name !== 'constructor') {
    if (typeof target === 'function') holder = Object.hasOwn(target, name) ? target : null;
    else if (!Object.hasOwn(target, name)) {
      for (let o = Object.getPrototypeOf(target); o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
        if (Object.hasOwn(o, name)) {
          holder = o;
          break;
        }
      }
    }
  }
  if (holder === null) throw new TypeError(`The RPC receiver does not implement the method "${String(name)}".`);
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
    // The arguments array is this call's own (a rest or Proxy argument list):
    // all primitives, the callee can have it as it is.
    sent = args.every(primitive) ? { value: args, dispose: noop } : send(args, from);
  } catch (err) {
    return Promise.reject(err);
  }
  const run = () =>
    runIn(owner, async (instance) => {
      const [self, fn] = resolve(instance);
      if (typeof fn !== 'function') throw new TypeError('"(this)" is not a function.');
      return reply(await fn.apply(self, sent.value), owner);
    }).then(undefined, (err) => Promise.reject(remoteError(err, owner)));
  // A call out of an object leaves once the writes it made before are durable
  // (workerd's output gate); that wait's own failure is the caller's, not remote.
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
  return runIn(owner, async (instance) => reply(await exposed(target(instance), name), owner)).then(undefined, (err) => Promise.reject(remoteError(err, owner)));
}

/**
 * A call's or a read's result, as the caller receives it: object results
 * get a disposer for the stubs inside; a body or stream returned keeps its
 * object in memory until it has been read.
 */
function reply(value, owner) {
  const sent = send(value, owner);
  const out = sent.value;
  owner?.hold(out);
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
function property(call, get, kind = 'RpcProperty') {
  const p = new Proxy(function RpcProperty() {}, {
    get(_, prop) {
      if (prop === 'then') return (ok, fail) => get().then(ok, fail);
      if (prop === 'catch') return (fail) => get().catch(fail);
      if (prop === 'finally') return (fn) => get().finally(fn);
      // `using p = stub.make()`: disposes what it settles to.
      if (prop === Symbol.dispose) return () => void get().then((r) => r?.[Symbol.dispose]?.(), noop);
      if (typeof prop === 'symbol') return undefined;
      return pipelined(get, prop);
    },
    apply(_, __, args) {
      return rpcPromise(call(args));
    },
  });
  return markPipeline(p, kind);
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
    'RpcPromise',
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
  if (primitive(value)) return { value, dispose: noop };
  if (!hasReferences(value)) return { value: structuredClone(value), dispose: noop };
  const made = [];
  const stubOf = (v) => {
    const state = stubs.get(v);
    // An RPC stub passed on: a new stub of the same value, where it lives.
    const stub = makeStub(state !== undefined ? state.hook : { value: v, owner, refs: 0 });
    made.push(stub);
    return stub;
  };
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
    return { value: copyOf(value, stubOf), dispose: disposeAll };
  } catch (err) {
    disposeAll();
    throw err;
  }
}

function noop() {}

/** Whether `v` crosses as it is (structuredClone would give it back unchanged; a symbol it refuses). */
function primitive(v) {
  return v === null || (typeof v !== 'object' && typeof v !== 'function' && typeof v !== 'symbol');
}

module.exports = { RpcTarget, markObjectStub, here, invoke, read, method, property };
