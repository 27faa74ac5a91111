'use strict';
// Sockets inside workerd, over the hibernation API. The worker sees the same
// handle as on Node (send, close, serializeAttachment, deserializeAttachment,
// readyState); tags, the attachment and the auto-response are the platform's
// own (ctx.acceptWebSocket, ws.serializeAttachment,
// ctx.setWebSocketAutoResponse), so they survive hibernation the way they
// survive eviction on Node. A send needs no gate of ours: the platform's
// output gate holds it until the writes before it are confirmed.
const { DurableError, codes } = require('../api/errors');
const { encodedSize } = require('./size');
const { broadcastOptions, reaches } = require('../sockets/broadcast');

const MAX_ATTACHMENT = 16 * 1024;
const MAX_TAGS = 10;
const MAX_TAG = 256;

/** @type {WeakMap<WebSocketHandle, { ws: WebSocket, who: () => string }>} */
const records = new WeakMap();

class WebSocketHandle {
  send(data) {
    records.get(this).ws.send(data);
  }

  close(code, reason) {
    records.get(this).ws.close(code, reason);
  }

  get readyState() {
    return records.get(this).ws.readyState;
  }

  /** Keeps a structured clone of `value` with the socket (≤ 16 KiB encoded); survives hibernation. */
  serializeAttachment(value) {
    const r = records.get(this);
    const bytes = encodedSize(value, () => `${r.who()}: the attachment`);
    if (bytes > MAX_ATTACHMENT) {
      throw new DurableError(codes.STATE_TOO_LARGE, `${r.who()}: an attachment may be at most ${MAX_ATTACHMENT} bytes encoded (16 KiB), got ${bytes}`);
    }
    try {
      r.ws.serializeAttachment(value);
    } catch (err) {
      throw new DurableError(codes.UNCLONEABLE, `${r.who()}: the attachment cannot be stored (${err?.message ?? err})`, { cause: err });
    }
  }

  deserializeAttachment() {
    return records.get(this).ws.deserializeAttachment() ?? null;
  }
}

/** One Durable Object's sockets. */
class SocketSide {
  #ctx;
  #who;
  /** @type {WeakMap<WebSocket, WebSocketHandle>} */
  #handles = new WeakMap();
  /** Sockets accepted by this instance (a hibernated one is accepted by definition). */
  #accepted = new WeakSet();

  constructor(ctx, who) {
    this.#ctx = ctx;
    this.#who = who;
  }

  /** The handle of a platform socket, the same object for the life of this instance. */
  handleFor(ws) {
    if (ws instanceof WebSocketHandle) return ws;
    let h = this.#handles.get(ws);
    if (h === undefined) {
      h = new WebSocketHandle();
      records.set(h, { ws, who: this.#who });
      this.#handles.set(ws, h);
    }
    return h;
  }

  accept(handle, tags = []) {
    const r = handle instanceof WebSocketHandle ? records.get(handle) : undefined;
    if (r === undefined) throw new TypeError(`${this.#who()}: acceptWebSocket(ws) takes the socket handed to the method by hostOf(env).connect()`);
    if (!Array.isArray(tags) || tags.length > MAX_TAGS || tags.some((t) => typeof t !== 'string' || t.length > MAX_TAG)) {
      throw new DurableError(codes.NAME, `${this.#who()}: tags are at most ${MAX_TAGS} strings of at most ${MAX_TAG} characters`);
    }
    if (this.#accepted.has(r.ws)) throw new DurableError(codes.NAME, `${this.#who()}: this socket was already accepted`);
    this.#ctx.acceptWebSocket(r.ws, tags);
    this.#accepted.add(r.ws);
    return handle;
  }

  isAccepted(ws) {
    return this.#accepted.has(ws);
  }

  list(tag) {
    return this.#ctx.getWebSockets(tag).map((ws) => this.handleFor(ws));
  }

  tags(handle) {
    const r = records.get(handle);
    return r === undefined ? [] : this.#ctx.getTags(r.ws);
  }

  /** `ctx.broadcast`: the platform's output gate holds every send until the writes before it are confirmed. */
  broadcast(message, options) {
    const opts = broadcastOptions(this.#who(), message, options);
    let n = 0;
    for (const ws of this.#ctx.getWebSockets()) {
      if (ws.readyState !== 1 || !reaches(opts, this.handleFor(ws), this.#ctx.getTags(ws))) continue;
      ws.send(message);
      n++;
    }
    return n;
  }

  setAutoResponse(pair) {
    if (pair === null || pair === undefined) {
      this.#ctx.setWebSocketAutoResponse();
      return;
    }
    if (typeof pair.request !== 'string' || typeof pair.response !== 'string') {
      throw new TypeError(`${this.#who()}: setWebSocketAutoResponse takes { request, response } strings, or null`);
    }
    // eslint-disable-next-line no-undef
    this.#ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(pair.request, pair.response));
  }
}

module.exports = { SocketSide, WebSocketHandle };
