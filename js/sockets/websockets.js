'use strict';
// WebSockets that hibernate: the host holds the socket, not the worker.
//
// A worker that installed its own listeners on a socket would lose them when
// evicted while the socket stayed open. So `ctx.acceptWebSocket(ws)` installs
// the listeners here, keyed to the worker's class and id, not to its instance:
// eviction frees the instance and leaves the socket connected, and a message
// for a worker that is not live materializes it and runs webSocketMessage as
// one mailbox entry. Tags and the attachment live here too, so they survive
// eviction; nothing survives a process restart (a TCP connection dies with its
// process), so clients reconnect.
//
// A send is output: it waits for the owning worker's writes so far to commit,
// and sends leave in the order they were made. An auto-response is answered
// here, from the exact text of a message, without materializing anything.
const { DurableError, codes } = require('../api/errors');
const { TAG_V8, encode, decode } = require('../state/codec');
const { Buffer } = require('node:buffer');
const { OP, SOCKET, isSocketMarker, serializeError } = require('../shards/protocol');
const { sendInOrder, broadcastOptions, reaches } = require('./broadcast');

const MAX_ATTACHMENT = 16 * 1024;
const MAX_TAGS = 10;
const MAX_TAG = 256;
const GOING_AWAY = 1001;
const OPEN = 1;

/** @type {WeakMap<WebSocketHandle, object>} handle → its record */
const records = new WeakMap();

/** Whether `v` looks like a server-side socket of the `ws` package. */
function isSocket(v) {
  return v !== null && typeof v === 'object' && !(v instanceof WebSocketHandle) && typeof v.send === 'function' && typeof v.close === 'function' && typeof v.on === 'function';
}

/**
 * An attachment's bytes: a structured clone of `value`, at most 16 KiB.
 * @param {string} who names the socket's worker in the error
 */
function encodeAttachment(value, who) {
  const bytes = encode(value, () => `${who}: the attachment`);
  if (bytes.length > MAX_ATTACHMENT) {
    throw new DurableError(codes.STATE_TOO_LARGE, `${who}: an attachment may be at most ${MAX_ATTACHMENT} bytes encoded (16 KiB), got ${bytes.length}`);
  }
  return bytes;
}

/** Refuses tags that are not at most 10 strings of at most 256 characters. */
function checkTags(who, tags) {
  if (!Array.isArray(tags) || tags.length > MAX_TAGS || tags.some((t) => typeof t !== 'string' || t.length > MAX_TAG)) {
    throw new DurableError(codes.NAME, `${who}: tags are at most ${MAX_TAGS} strings of at most ${MAX_TAG} characters`);
  }
}

/** What a worker holds: the socket's handle, the same object across evictions. */
class WebSocketHandle {
  /** Sends once the owning worker's writes so far have committed. */
  send(data) {
    const r = records.get(this);
    r.registry.send(r, data);
  }

  close(code, reason) {
    records.get(this).ws.close(code, reason);
  }

  get readyState() {
    return records.get(this).ws.readyState;
  }

  /** Keeps a structured clone of `value` with the socket (≤ 16 KiB encoded); survives eviction. */
  serializeAttachment(value) {
    const r = records.get(this);
    r.attachment = encodeAttachment(value, r.who ?? 'a socket');
  }

  /** The attachment, or null. */
  deserializeAttachment() {
    const r = records.get(this);
    return r.attachment === null ? null : decode(TAG_V8, r.attachment, () => r.who ?? 'a socket');
  }
}

/** Sends `message` on every record's socket; a string is encoded to UTF-8 once and sent as text. */
function sendEach(records, message) {
  const text = typeof message === 'string';
  const data = text ? Buffer.from(message) : message;
  const opts = { binary: !text };
  for (const r of records) r.ws.send(data, opts);
}

class SocketRegistry {
  /** @type {Map<string, Set<object>>} worker key → its accepted sockets' records */
  #byWorker = new Map();
  /** @type {WeakMap<object, object>} raw socket → record */
  #byWs = new WeakMap();
  /** @type {Map<string, { request: string, response: string }>} */
  #auto = new Map();
  /** @type {Set<string>} workers whose sockets are not being read (their mailbox is full) */
  #paused = new Set();
  /** @type {Map<number, object>} socket number → record: how a shard names a socket */
  #bySid = new Map();
  #nextSid = 1;
  #face;
  autoResponses = 0;
  /** Times a worker's sockets were paused for a full mailbox. */
  paused = 0;

  /**
   * @param {{ deliver(key: string, binding: object, id: string, run: (instance: object) => unknown, desc: object): void,
   *           gateOf(key: string): Promise<void> | null }} face the host's side
   */
  constructor(face) {
    this.#face = face;
  }

  /** Open accepted sockets. */
  get count() {
    let n = 0;
    for (const set of this.#byWorker.values()) n += set.size;
    return n;
  }

  /** The handle for a raw socket (made on first sight), or the handle itself. */
  handleFor(v) {
    if (v instanceof WebSocketHandle) return v;
    let r = this.#byWs.get(v);
    if (r === undefined) {
      const handle = new WebSocketHandle();
      r = { registry: this, ws: v, handle, sid: this.#nextSid++, key: null, binding: null, id: null, who: null, tags: [], attachment: null, chain: null };
      records.set(handle, r);
      this.#byWs.set(v, r);
      this.#bySid.set(r.sid, r);
    }
    return r.handle;
  }

  /** `ctx.acceptWebSocket`: from now on the host holds this socket for `worker`. */
  accept(worker, socket, tags = []) {
    if (!(socket instanceof WebSocketHandle) && !isSocket(socket)) {
      throw new TypeError(`${worker.who}: acceptWebSocket(ws) takes a server-side socket of the ws package (or its handle)`);
    }
    checkTags(worker.who, tags);
    const handle = this.handleFor(socket);
    const r = records.get(handle);
    if (r.key !== null) {
      throw new DurableError(codes.NAME, `${worker.who}: this socket was already accepted by ${r.who}`);
    }
    Object.assign(r, { key: worker.key, binding: worker.binding, id: worker.id, who: worker.who, tags: [...tags] });
    let set = this.#byWorker.get(r.key);
    if (set === undefined) this.#byWorker.set(r.key, (set = new Set()));
    set.add(r);
    const ws = r.ws;
    if (this.#paused.has(r.key)) ws.pause?.();
    ws.on('message', (data, isBinary) => this.#message(r, typeof data === 'string' || isBinary ? data : data.toString()));
    ws.on('close', (code, reason) => this.#closed(r, code, reason === undefined ? '' : String(reason)));
    ws.on('error', (err) => this.#event(r, (w) => w.webSocketError?.(r.handle, err), { type: 'error', error: serializeError(err) }));
    return handle;
  }

  /** `ctx.getWebSockets(tag?)` for the worker `key`. */
  list(key, tag) {
    const out = [];
    for (const r of this.#byWorker.get(key) ?? []) if (tag === undefined || r.tags.includes(tag)) out.push(r.handle);
    return out;
  }

  /** `ctx.getTags(ws)`. */
  tags(handle) {
    const r = handle instanceof WebSocketHandle ? records.get(handle) : this.#byWs.get(handle);
    return r ? [...r.tags] : [];
  }

  /** `ctx.setWebSocketAutoResponse(pair | null)` for the worker `key`. */
  setAutoResponse(key, who, pair) {
    if (pair === null || pair === undefined) {
      this.#auto.delete(key);
      return;
    }
    if (typeof pair.request !== 'string' || typeof pair.response !== 'string') {
      throw new TypeError(`${who}: setWebSocketAutoResponse takes { request, response } strings, or null`);
    }
    this.#auto.set(key, { request: pair.request, response: pair.response });
  }

  /** A gated send: after the owner's writes so far, and after earlier sends. */
  send(r, data) {
    sendInOrder([r], r.key === null ? null : this.#face.gateOf(r.key), () => r.ws.send(data));
  }

  /**
   * `ctx.broadcast(message, options)` for the worker `key`: every open socket
   * it accepted that the options reach, in acceptance order, after one gate
   * wait. A text message is encoded once for all of them. Returns how many.
   */
  broadcast(key, who, message, options) {
    const opts = broadcastOptions(who, message, options);
    const targets = [];
    for (const r of this.#byWorker.get(key) ?? []) if (r.ws.readyState === OPEN && reaches(opts, r.handle, r.tags)) targets.push(r);
    if (targets.length > 0) sendInOrder(targets, this.#face.gateOf(key), (rs) => sendEach(rs, message));
    return targets.length;
  }

  /** Stops reading the sockets of worker `key`: its mailbox is full. */
  pause(key) {
    if (this.#paused.has(key)) return;
    this.#paused.add(key);
    this.paused++;
    for (const r of this.#byWorker.get(key) ?? []) r.ws.pause?.();
  }

  /** Reads the sockets of worker `key` again (its mailbox drained). */
  resume(key) {
    if (!this.#paused.delete(key)) return;
    for (const r of this.#byWorker.get(key) ?? []) r.ws.resume?.();
  }

  /** Closes every accepted socket (the host is closing: clients reconnect). */
  closeAll() {
    for (const set of this.#byWorker.values()) {
      for (const r of set) {
        try {
          r.ws.close(GOING_AWAY, 'server closing');
        } catch {
          // Already closed.
        }
      }
    }
  }

  // --- for workers on shards ----------------------------------------------

  /** A socket (raw or handle) as a shard names it, with what a shard mirrors; undefined for anything else. */
  markerOf(v) {
    if (!(v instanceof WebSocketHandle) && !isSocket(v)) return undefined;
    const r = records.get(this.handleFor(v));
    return {
      [SOCKET]: { sid: r.sid, key: r.key, who: r.who, tags: [...r.tags], attachment: r.attachment, readyState: r.ws.readyState },
    };
  }

  /** The handle a shard's marker names. */
  fromMarker(m) {
    const r = isSocketMarker(m) ? this.#bySid.get(m[SOCKET].sid) : undefined;
    if (r === undefined) throw new DurableError(codes.CLOSED, 'a socket passed from a shard is no longer held by the host');
    return r.handle;
  }

  /** Every open socket accepted for `key`, as markers: a worker starting on a shard mirrors them. */
  snapshot(key) {
    return [...(this.#byWorker.get(key) ?? [])].map((r) => this.markerOf(r.handle));
  }

  /** What a shard asks of a socket: accept, send or broadcast (already gated there), close, attach, auto-response. */
  fromShard(worker, msg) {
    if (msg.op === OP.socketAuto) return this.setAutoResponse(msg.key, msg.key, msg.pair);
    if (msg.op === OP.socketBroadcast)
      return sendEach(
        msg.sids.map((sid) => this.#bySid.get(sid)).filter((r) => r !== undefined && r.ws.readyState === OPEN),
        msg.data,
      );
    const r = this.#bySid.get(msg.sid);
    if (r === undefined) return;
    switch (msg.op) {
      case OP.socketAccept:
        if (r.key === null && worker !== undefined) this.accept(worker, r.handle, msg.tags);
        return;
      case OP.socketSend:
        if (r.ws.readyState === OPEN) r.ws.send(msg.data);
        return;
      case OP.socketClose:
        return r.ws.close(msg.code, msg.reason);
      case OP.socketAttach:
        r.attachment = Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.bytes.byteLength);
        return;
    }
  }

  #message(r, data) {
    const auto = this.#auto.get(r.key);
    if (auto !== undefined && data === auto.request) {
      this.autoResponses++;
      r.ws.send(auto.response);
      return;
    }
    this.#event(r, (w) => w.webSocketMessage?.(r.handle, data), { type: 'message', data });
  }

  #closed(r, code, reason) {
    const set = this.#byWorker.get(r.key);
    if (set !== undefined) {
      set.delete(r);
      if (set.size === 0) this.#byWorker.delete(r.key);
    }
    this.#bySid.delete(r.sid);
    this.#event(r, (w) => w.webSocketClose?.(r.handle, code, reason, code !== 1006), { type: 'close', code, reason, wasClean: code !== 1006 });
  }

  /**
   * Delivers an event: as a function of the instance on this thread, and as a
   * description (with the socket's handle) that a worker on a shard sends on.
   */
  #event(r, run, desc) {
    if (r.key === null) return;
    desc.handle = r.handle;
    this.#face.deliver(r.key, r.binding, r.id, run, desc);
  }
}

module.exports = { SocketRegistry, WebSocketHandle, isSocket, encodeAttachment, checkTags };
