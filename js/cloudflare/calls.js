'use strict';
// Reaching workers on Cloudflare from the caller's side: hostOf(env) for a
// Worker's fetch handler (get, connect, delete), stubs that call a worker's
// Durable Object over RPC with the call chain (cycle refusal, as on Node),
// the checks that run before an RPC (arguments that cannot be cloned, by
// name), and the JSON-over-HTTP gateway tests and tools use. The object's own
// side is ./runtime.js.
const { DurableError, codes, label } = require('../api/errors');
const { checkWorkerId, stubTimeout } = require('../api/rules');
const { makeStub } = require('../api/stub');
const { DurableWorker } = require('../api/worker');
const { WebSocketHandle } = require('./sockets');
const { encodedSize } = require('./size');
const wire = require('./wire');
const { AsyncLocalStorage } = require('node:async_hooks');

/**
 * The call chain of the code running now (nodejs_compat gives workerd
 * node:async_hooks): every mailbox entry runs inside the chain of the call it
 * serves, and a stub reads it when it is called, not when it was made, so a
 * stub kept on `this` (made in start() or in an earlier call) carries the
 * chain of the call using it, as on Node (js/runtime/call-chain.js).
 */
const chains = new AsyncLocalStorage();
/**
 * Runs `fn` in the chain `chain`, under `deadline` (epoch ms; undefined:
 * none): the running call's, which bounds the calls it makes until it ends
 * (work it leaves running, a timer, has none).
 */
function inChain(chain, deadline, fn) {
  const store = { chain, deadline };
  const p = chains.run(store, fn);
  if (deadline !== undefined) {
    Promise.resolve(p)
      .finally(() => (store.deadline = undefined))
      .catch(() => {});
  }
  return p;
}
const currentChain = () => chains.getStore()?.chain ?? [];
const currentDeadline = () => chains.getStore()?.deadline;

/** The header a WebSocket upgrade carries its call in (hostOf(env).connect → the object's fetch). */
const CALL_HEADER = 'x-durable-workers-call';

/** Class → { name, binding } for every class made into a Durable Object here. */
const registry = new Map();

/** Records the Durable Object entry of `Class` (toDurableObject). */
function register(Class, entry) {
  registry.set(Class, entry);
}

function isWorkerClass(C) {
  return typeof C === 'function' && C.prototype instanceof DurableWorker;
}

/** An error that crossed an RPC boundary, with its DurableError class back. */
function revive(err) {
  if (err instanceof DurableError || typeof err?.code !== 'string' || !err.code.startsWith('ERR_DURABLE_')) return err;
  return new DurableError(err.code, err.message);
}

function entryOf(Class) {
  const e = registry.get(Class);
  if (e === undefined) {
    throw new DurableError(
      codes.NAME,
      `${Class?.name ?? String(Class)} is not a Durable Object class of this deployment: pass it to toDurableObject() and export the result (durable-workers workerd does this for every exported DurableWorker class)`,
    );
  }
  return e;
}

/**
 * Refuses arguments that cannot be cloned, before the RPC, as the Node host
 * does (its stubs structuredClone them): DO RPC would pass a function as an
 * RPC stub to the caller and refuse a symbol with a platform error.
 * encodedSize walks each argument as the serializer would and refuses
 * functions, symbols, promises and weak collections by name.
 */
function checkArgs(args, who, method) {
  for (const a of args) {
    if (a === null || (typeof a !== 'object' && typeof a !== 'function' && typeof a !== 'symbol')) continue;
    if (a instanceof WebSocketHandle) continue;
    encodedSize(a, () => who, `the arguments of ${method}() cannot be sent`);
  }
}

/**
 * A platform error as the package's: a serialization error (DataCloneError
 * and its kin) as ERR_DURABLE_UNCLONEABLE, naming the worker; the platform's
 * reset (ctx.abort(), a deadline) as ERR_DURABLE_RESET or ERR_DURABLE_TIMEOUT.
 */
function cloneError(err, who, method) {
  if (err instanceof DurableError) return err;
  const msg = String(err?.message ?? '');
  if (err?.name === 'DataCloneError' || / could not be cloned\.?$/.test(msg)) {
    return new DurableError(codes.UNCLONEABLE, `${who}: a value of ${method}() could not be cloned (${msg})`, { cause: err });
  }
  // The platform's reset carries the message it was given (./runtime.js), not the code; calls
  // queued behind the one that overran fail with its message too, and are told of a reset.
  if (msg.startsWith(`${who}: reset by ctx.abort()`)) return new DurableError(codes.RESET, msg, { cause: err });
  if (msg.startsWith(`${who}: `) && /past its deadline|was not started: the deadline/.test(msg)) {
    return new DurableError(msg.startsWith(`${who}: ${method}() `) ? codes.TIMEOUT : codes.RESET, msg, { cause: err });
  }
  return err;
}

/**
 * A stub for worker `id` of `Class`, calling it over RPC.
 * @param {object} env the Worker's bindings
 * @param {Function} Class
 * @param {string} id
 * @param {() => string[]} chainOf the labels of the calls waiting on this one, read at each call
 */
function stubFor(env, Class, id, chainOf, options) {
  const { name, binding } = entryOf(Class);
  checkWorkerId(name, id);
  const ns = env[binding];
  if (ns === undefined || typeof ns.idFromName !== 'function') {
    throw new DurableError(codes.NAME, `${name}: the Worker has no Durable Object binding ${binding} (a durableObjectNamespace binding named ${binding} is needed)`);
  }
  const who = label(name, id);
  const timeout = stubTimeout(options, who);
  let remote = null;
  return makeStub(async (method, args) => {
    const chain = chainOf();
    if (chain.includes(who)) {
      throw new DurableError(codes.CYCLE, `a call to ${who} would wait on itself: ${[...chain, who].join(' → ')} (a worker runs one call at a time, so this would never finish)`);
    }
    checkArgs(args, who, method);
    remote ??= ns.get(ns.idFromName(id));
    try {
      return await remote.__call(method, args, chain, id, { timeout, outer: currentDeadline() });
    } catch (err) {
      throw cloneError(revive(err), who, method);
    }
  }, who);
}

/**
 * What a Worker's fetch handler uses to reach workers: the Node host's
 * get(Class, id), plus connect() for WebSocket upgrades. The rest of the Node
 * Host has no Durable Object counterpart and is refused by name.
 * @param {object} env the Worker's bindings
 */
function hostOf(env) {
  const refuse = (what, why) => () => {
    throw new DurableError(codes.METHOD, `hostOf(env).${what}() does not exist on Cloudflare: ${why}`);
  };
  return Object.freeze({
    get: (Class, id, options) => stubFor(env, Class, id, currentChain, options),
    /**
     * Hands a WebSocket upgrade request to `method(ws, ...args)` of the worker; resolves to the Response to return (101 when accepted).
     */
    async connect(Class, id, method, request, ...args) {
      const { name, binding } = entryOf(Class);
      checkWorkerId(name, id);
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return new Response('expected a WebSocket upgrade', { status: 426 });
      const headers = new Headers(request.headers);
      headers.set(CALL_HEADER, wire.encode({ method, args, chain: [], id }));
      const ns = env[binding];
      return ns.get(ns.idFromName(id)).fetch(new Request(request.url, { headers }));
    },
    async delete(Class, id) {
      const { name, binding } = entryOf(Class);
      checkWorkerId(name, id);
      const ns = env[binding];
      return ns.get(ns.idFromName(id)).__deleteAll(id);
    },
    ids: refuse('ids', 'a namespace cannot list its objects (keep an index worker if you need one)'),
    stats: refuse('stats', 'the platform keeps its own metrics'),
    startAlarms: refuse('startAlarms', 'alarms always fire on Durable Objects; there is nothing to start'),
    close: refuse('close', 'the platform owns the objects’ lifetime'),
  });
}

/**
 * A JSON-over-HTTP gateway to the workers of `classes`, for tests, benchmarks
 * and local tools: POST a wire-encoded { class, id, method, args } and get
 * back { ok, value } or { ok: false, error }. Not for the open internet: it
 * lets the caller invoke any method.
 * @param {Request} request
 * @param {object} env
 * @param {Function[]} classes
 */
async function handleCall(request, env, classes) {
  let body;
  try {
    body = wire.decode(await request.text());
  } catch (err) {
    return new Response(wire.encode({ ok: false, error: err }), { status: 400 });
  }
  const Class = classes.find((C) => registry.get(C)?.name === body.class);
  try {
    if (Class === undefined) throw new DurableError(codes.NAME, `no worker class named ${JSON.stringify(body.class)} here`);
    const host = hostOf(env);
    const value = body.method === '__delete' ? await host.delete(Class, body.id) : await host.get(Class, body.id)[body.method](...(body.args ?? []));
    return new Response(wire.encode({ ok: true, value }));
  } catch (err) {
    return new Response(wire.encode({ ok: false, error: err instanceof Error ? err : new Error(String(err)) }));
  }
}

module.exports = { inChain, currentChain, CALL_HEADER, register, registry, entryOf, isWorkerClass, stubFor, hostOf, handleCall };
