'use strict';
// What a worker running on a shard sees as `this.ctx`: calls to other workers
// and WebSockets, both of which really live on the host thread.
//
// Sockets are mirrored: the shard keeps each accepted socket's tags,
// attachment and ready state, so `getWebSockets()`, `getTags()` and
// `deserializeAttachment()` stay synchronous, and tells the host of every
// change, so the mirror can be rebuilt on any shard the worker moves to. A
// send is output, gated on the owning worker's writes here, in the shard, then
// handed to the host, which sends it at once.
const { DurableError, codes } = require('../api/errors');
const { nameOf: workerName } = require('../runtime/calls');
const { TAG_V8, decode, clone, isPrimitive } = require('../state/codec');
const { current, refuseStale } = require('../runtime/call-chain');
const { makeStub } = require('../api/stub');
const { label } = require('../api/errors');
const { stubTimeout } = require('../api/rules');
const { DurableWorker } = require('../api/worker');
const { OP, SOCKET, isSocketMarker, deserializeError } = require('./protocol');
const { encodeAttachment, checkTags } = require('../sockets/websockets');
const { sendInOrder, broadcastOptions, reaches } = require('../sockets/broadcast');

const OPEN = 1;
const CLOSED = 3;

/** @type {WeakMap<ProxySocket, object>} */
const records = new WeakMap();

class ProxySocket {
  /** Sends once the owning worker's writes so far have committed. */
  send(data) {
    const r = records.get(this);
    r.mirror.send(r, data);
  }

  close(code, reason) {
    const r = records.get(this);
    r.mirror.post({ op: OP.socketClose, sid: r.sid, code, reason });
  }

  get readyState() {
    return records.get(this).readyState;
  }

  /** Keeps a structured clone of `value` with the socket (≤ 16 KiB encoded); survives eviction. */
  serializeAttachment(value) {
    const r = records.get(this);
    const bytes = encodeAttachment(value, r.who ?? 'a socket');
    r.attachment = bytes;
    r.mirror.post({ op: OP.socketAttach, sid: r.sid, bytes });
  }

  /** The attachment, or null. */
  deserializeAttachment() {
    const r = records.get(this);
    return r.attachment === null ? null : decode(TAG_V8, r.attachment, () => r.who ?? 'a socket');
  }
}

/** The shard's mirror of the host's sockets. */
class SocketMirror {
  /** @type {Map<number, object>} socket number → record */
  #bySid = new Map();
  /** @type {Map<string, Set<object>>} worker key → its accepted sockets */
  #byKey = new Map();
  #ownerGate;

  /**
   * @param {(msg: object) => void} post to the host
   * @param {(key: string) => Promise<void> | null} ownerGate the owning worker's flush, if it runs here
   */
  constructor(post, ownerGate) {
    this.post = post;
    this.#ownerGate = ownerGate;
  }

  /** The proxy for a socket the host described (in a call's arguments or a worker's start). */
  fromMarker(m) {
    const d = m[SOCKET];
    let r = this.#bySid.get(d.sid);
    if (r === undefined) {
      const handle = new ProxySocket();
      r = { mirror: this, sid: d.sid, handle, key: null, who: null, tags: [], attachment: null, readyState: OPEN, chain: null };
      records.set(handle, r);
      this.#bySid.set(d.sid, r);
    }
    if (d.tags !== undefined) r.tags = d.tags;
    if (d.attachment !== undefined) r.attachment = d.attachment;
    if (d.readyState !== undefined) r.readyState = d.readyState;
    if (d.key !== undefined && d.key !== null && r.key === null) this.#own(r, d.key, d.who);
    return r.handle;
  }

  /** A socket's marker, to send it to the host. */
  toMarker(handle) {
    return { [SOCKET]: { sid: records.get(handle).sid } };
  }

  /** A worker starts here: its sockets as the host holds them. */
  load(list) {
    for (const m of list) this.fromMarker(m);
  }

  /** A worker left this shard: forget its sockets. */
  drop(key) {
    for (const r of this.#byKey.get(key) ?? []) this.#bySid.delete(r.sid);
    this.#byKey.delete(key);
  }

  /** `ctx.acceptWebSocket` for `worker`. */
  accept(worker, ws, tags = []) {
    if (!(ws instanceof ProxySocket)) {
      throw new TypeError(`${worker.who}: acceptWebSocket(ws) takes the socket handle the worker was given`);
    }
    checkTags(worker.who, tags);
    const r = records.get(ws);
    if (r.key !== null) throw new DurableError(codes.NAME, `${worker.who}: this socket was already accepted by ${r.who}`);
    r.tags = [...tags];
    this.#own(r, worker.key, worker.who);
    this.post({ op: OP.socketAccept, key: worker.key, sid: r.sid, tags: r.tags });
    return ws;
  }

  list(key, tag) {
    const out = [];
    for (const r of this.#byKey.get(key) ?? []) if (tag === undefined || r.tags.includes(tag)) out.push(r.handle);
    return out;
  }

  tags(ws) {
    const r = ws instanceof ProxySocket ? records.get(ws) : undefined;
    return r ? [...r.tags] : [];
  }

  setAutoResponse(key, who, pair) {
    if (pair !== null && pair !== undefined && (typeof pair.request !== 'string' || typeof pair.response !== 'string')) {
      throw new TypeError(`${who}: setWebSocketAutoResponse takes { request, response } strings, or null`);
    }
    this.post({ op: OP.socketAuto, key, pair: pair ?? null });
  }

  /** A gated send, in order with the socket's earlier sends. */
  send(r, data) {
    sendInOrder([r], r.key === null ? null : this.#ownerGate(r.key), () => this.post({ op: OP.socketSend, sid: r.sid, data }));
  }

  /** `ctx.broadcast` for the worker `key`: one gate wait here, one message to the host. */
  broadcast(key, who, message, options) {
    const opts = broadcastOptions(who, message, options);
    const targets = [];
    for (const r of this.#byKey.get(key) ?? []) if (r.readyState === OPEN && reaches(opts, r.handle, r.tags)) targets.push(r);
    if (targets.length > 0) sendInOrder(targets, this.#ownerGate(key), (rs) => this.post({ op: OP.socketBroadcast, key, sids: rs.map((r) => r.sid), data: message }));
    return targets.length;
  }

  /**
   * The handle and arguments for a socket event the host delivered.
   * @returns {(instance: object) => unknown}
   */
  event(desc) {
    const ws = this.fromMarker(desc.socket);
    const r = records.get(ws);
    switch (desc.type) {
      case 'message':
        return (w) => w.webSocketMessage?.(ws, desc.data);
      case 'close': {
        r.readyState = CLOSED;
        this.#byKey.get(r.key)?.delete(r);
        return (w) => w.webSocketClose?.(ws, desc.code, desc.reason, desc.wasClean);
      }
      default: {
        const err = deserializeError(desc.error);
        return (w) => w.webSocketError?.(ws, err);
      }
    }
  }

  #own(r, key, who) {
    r.key = key;
    r.who = who ?? null;
    let set = this.#byKey.get(key);
    if (set === undefined) this.#byKey.set(key, (set = new Set()));
    set.add(r);
  }
}

/** The name a class is known by on disk and to the host; a class that is not a worker's is refused. */
function nameOf(Class) {
  if (typeof Class !== 'function' || !(Class.prototype instanceof DurableWorker)) {
    throw new DurableError(codes.NAME, `${Class?.name ?? String(Class)} is not a class extending DurableWorker`);
  }
  return workerName(Class);
}

/**
 * Calls from shard code to any worker: checked and queued by the host, after
 * the calling worker's writes so far have committed.
 */
class Outgoing {
  #post;
  #mirror;
  #next = 1;
  /** @type {Map<number, { resolve: Function, reject: Function }>} */
  #waiting = new Map();

  constructor(post, mirror) {
    this.#post = post;
    this.#mirror = mirror;
  }

  call(className, id, method, args, timeout) {
    const caller = current();
    let wire;
    try {
      wire = args.map((a) =>
        a instanceof ProxySocket ? this.#mirror.toMarker(a) : isPrimitive(a) ? a : clone(a, () => `${label(className, String(id))}: the arguments of ${method}() cannot be sent`),
      );
    } catch (err) {
      return Promise.reject(err);
    }
    try {
      refuseStale(caller, `a call to ${label(className, String(id))}`);
    } catch (err) {
      return Promise.reject(err);
    }
    const deadline = caller?.deadline === Infinity ? undefined : caller?.deadline;
    const frame = caller === undefined ? (timeout === undefined ? null : { timeout }) : { key: caller.key, chain: caller.chain, keys: caller.keys, trace: caller.trace, deadline, timeout };
    const send = () =>
      new Promise((resolve, reject) => {
        const cid = this.#next++;
        this.#waiting.set(cid, { resolve, reject });
        this.#post({ op: OP.call, cid, className, id, method, args: wire, frame });
      });
    const gate = caller === undefined ? null : caller.worker.state.flush();
    return gate === null ? send() : gate.then(send);
  }

  /** The host's answer to call `cid`. */
  settle({ cid, ok, value, error }) {
    const w = this.#waiting.get(cid);
    if (w === undefined) return;
    this.#waiting.delete(cid);
    if (ok) w.resolve(revive(value, this.#mirror));
    else w.reject(deserializeError(error));
  }
}

/** Turns socket markers in a value that crossed back into proxies (top level only, as arguments are). */
function revive(value, mirror) {
  return isSocketMarker(value) ? mirror.fromMarker(value) : value;
}

/**
 * How a shard does what a worker's `this.ctx` offers (api/worker-context.js):
 * calls go to the host thread, sockets are the mirror of the host's.
 */
function shardContextPort(mirror, outgoing) {
  return {
    get: (worker, Class, id, options) => {
      const name = nameOf(Class);
      const who = label(name, String(id));
      const timeout = stubTimeout(options, who);
      return makeStub((method, args) => outgoing.call(name, id, method, args, timeout), who);
    },
    accept: (worker, ws, tags) => mirror.accept(worker, ws, tags),
    list: (worker, tag) => mirror.list(worker.key, tag),
    tags: (worker, ws) => mirror.tags(ws),
    autoResponse: (worker, pair) => mirror.setAutoResponse(worker.key, worker.who, pair),
    abort: (worker, reason, epoch) => worker.abort(reason, epoch),
    broadcast: (worker, message, options) => mirror.broadcast(worker.key, worker.who, message, options),
  };
}

module.exports = { shardContextPort, SocketMirror, Outgoing, ProxySocket, nameOf, revive };
