'use strict';
// A shard: a worker thread that runs the worker classes of one module.
//
// It holds no database handle. Each worker here is the same LiveWorker as on
// the host thread, with its resident state, its gate and its hooks, but its
// storage is a proxy: loads, reads and commits are messages to the host
// thread, which runs them and answers. The host sends a worker one mailbox
// entry at a time (its queue stays on the host, so entries not yet sent can
// run elsewhere if this shard dies) and hears back when the entry's code has
// run ('ran') and, separately, when a call's result has passed the gate.
//
// The shard speaks first: 'ready' is posted only once the module has loaded
// and every handler below is installed.
const { parentPort, workerData } = require('node:worker_threads');
const { LiveWorker } = require('../runtime/live');
const { Commits } = require('../runtime/commits');
const { DurableWorker, callableMethods } = require('../api/worker');
const { declaredCollections } = require('../collections/declarations');
const { label } = require('../api/errors');
const { keyOf } = require('../runtime/calls');
const { OP, serializeError, deserializeError, buf } = require('./protocol');
const { shardContextPort, SocketMirror, Outgoing, nameOf, revive } = require('./context');
const { WorkerContext } = require('../api/worker-context');
const { current, refuseStale } = require('../runtime/call-chain');

const post = (msg) => parentPort.postMessage(msg);

/** @type {Map<string, LiveWorker>} */
const live = new Map();
const commits = new Commits();
const mirror = new SocketMirror(post, (key) => {
  refuseStale(current(), 'a WebSocket send');
  return live.get(key)?.state.flush() ?? null;
});
const outgoing = new Outgoing(post, mirror);
const ctxPort = shardContextPort(mirror, outgoing);

// --- requests to the host ---------------------------------------------------

let nextRid = 1;
/** @type {Map<number, { resolve: Function, reject: Function }>} */
const rpcs = new Map();

function rpc(key, method, args) {
  return new Promise((resolve, reject) => {
    const rid = nextRid++;
    rpcs.set(rid, { resolve, reject });
    post({ op: OP.rpc, rid, key, method, args });
  });
}

/** A worker's storage, as LiveWorker and DurableState use it. */
function storageFor(key) {
  return {
    // The host answers a load for a worker with no file with an empty page.
    exists: () => true,
    load: () => rpc(key, 'load', []).then((page) => ({ ...page, values: page.values.map(buf) })),
    register: () => rpc(key, 'register', []),
    write: (cid, changes, trace) => post({ op: OP.write, key, cid, changes, trace }),
    close: (cid) => post({ op: OP.closeFile, key, cid }),
    destroy: () => rpc(key, 'destroy', []),
    // Packed as the addon returns it (../collections/result-rows.js unpacks it).
    query: (q) => rpc(key, 'query', [q]),
    backfill: (...args) => rpc(key, 'backfill', args),
  };
}

/** What LiveWorker sees as its host, answered by messages to the host thread. @type {import('../runtime/host-port').HostPort} */
const inner = {
  native: { worker: (className, id) => storageFor(keyOf(className, id)) },
  commits,
  // The host thread bounds the mailbox; here an entry never waits behind another.
  mailboxLimit: Infinity,
  callTimeout: workerData.callTimeout,
  reset: (info) => post({ op: OP.reset, info: { ...info, error: serializeError(info.error) } }),
  busy: () => {},
  idle: (w) => {
    if (w.status !== 'closed') post({ op: OP.ran, key: w.key });
  },
  failed: (w) => post({ op: OP.failed, key: w.key, error: serializeError(w.failure) }),
  ctxFor: (w) => new WorkerContext(ctxPort, w),
  alarmIndex: (className, id) => ({
    earlier: (at) => rpc(null, 'alarmEarlier', [className, id, at]),
    exact: (at) => rpc(null, 'alarmExact', [className, id, at]),
    wake: (at) => post({ op: OP.wake, className, at }),
  }),
  alarmFailed: (err, info) => post({ op: OP.alarmFailed, error: serializeError(err), info }),
  // The host counts and publishes every alarm handler a shard runs (observe/trace.js).
  alarmRan: (info, err) => post({ op: OP.alarmRan, ...info, error: err === undefined ? undefined : serializeError(err) }),
};

// --- the module's classes ---------------------------------------------------

const mod = require(workerData.module);
/** @type {Map<string, object>} name → binding, as LiveWorker takes it */
const bindings = new Map();
for (const v of Object.values(mod)) {
  if (typeof v !== 'function' || !(v.prototype instanceof DurableWorker)) continue;
  const name = nameOf(v);
  bindings.set(name, { Class: v, name, methods: callableMethods(v), collections: declaredCollections(v, name) });
}

// --- entries from the host --------------------------------------------------

function entry({ key, className, id, fresh, sockets, entry: e }) {
  let w = live.get(key);
  if (fresh || w === undefined) {
    const binding = bindings.get(className);
    if (binding === undefined) {
      post({ op: OP.failed, key, error: serializeError(new Error(`${label(className, id)}: class ${className} is not exported by ${workerData.module}`)) });
      post({ op: OP.ran, key });
      return;
    }
    if (sockets) mirror.load(sockets);
    w = new LiveWorker(inner, binding, id, key, 0);
    live.set(key, w);
  }
  switch (e.kind) {
    case 'call': {
      const args = e.args.map((a) => revive(a, mirror));
      const frame = { key, chain: e.frame.chain, keys: e.frame.keys, worker: w, trace: e.frame.trace, timeout: e.frame.timeout, outer: e.frame.outer, epoch: undefined, deadline: undefined };
      const settle = (ok) => (v) => post(ok ? { op: OP.result, key, cid: e.cid, ok, value: v } : { op: OP.result, key, cid: e.cid, ok, error: serializeError(v) });
      w.call(e.method, args, frame, settle(true), settle(false));
      return;
    }
    case 'alarm':
      w.fireAlarms(Promise.resolve());
      return;
    case 'event':
      w.socketEvent(mirror.event(e.desc));
      return;
    case 'close':
      w.close(e.reason, { destroy: e.destroy }).then(
        (existed) => closed(w, { op: OP.closed, key, ok: true, existed }),
        (err) => closed(w, { op: OP.closed, key, ok: false, error: serializeError(err) }),
      );
      return;
  }
}

function closed(w, msg) {
  if (live.get(w.key) === w) live.delete(w.key);
  mirror.drop(w.key);
  post(msg);
}

parentPort.on('message', (msg) => {
  switch (msg.op) {
    case OP.entry:
      return entry(msg);
    case OP.reply: {
      const r = rpcs.get(msg.rid);
      rpcs.delete(msg.rid);
      if (msg.ok) r?.resolve(msg.value);
      else r?.reject(deserializeError(msg.error));
      return;
    }
    case OP.done:
      return commits.done([msg.cid, msg.code, msg.message]);
    case OP.callReply:
      return outgoing.settle(msg);
    case OP.ping:
      return post({ op: OP.pong, n: msg.n });
  }
});

post({ op: OP.ready, classes: [...bindings.keys()] });
