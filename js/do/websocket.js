'use strict';
// workerd's `WebSocket` and `WebSocketPair` for Durable Objects on Node.
//
// Guarantees, as on Cloudflare:
// * A `WebSocketPair` is two linked in-memory ends; what one end sends the
//   other receives, in order. Either end may be accepted in-process
//   (`accept()`, or `ctx.acceptWebSocket()`: ./hibernation.js) or coupled to
//   a network socket by `serve` (./upgrade.js).
// * What an object sends (messages and its close) waits for the object's
//   output gate: it leaves only once the writes made before it are durable,
//   and in the order it was sent (./turns.js). A broken gate drops it and
//   the peer sees an abnormal close (1006).
// * What arrives at an end owned by an object is delivered as one of that
//   object's events, through its input gate (Actor.event).
// * Messages that arrive before `accept()` are held and delivered after it,
//   to the listeners added right after it (what an object sends before its
//   101 reaches the client).
// * Sockets are ordinary extensible objects (partyserver assigns onto them);
//   internal state lives behind a symbol.
//
// Which object owns an end: the Actor whose event is running when the end
// is accepted, found with an AsyncLocalStorage that Actor.event enters.

const { AsyncLocalStorage } = require('node:async_hooks');
const { setImmediate } = require('node:timers');
const { serialize, decode } = require('./storage-values');

/** The Actor whose event (or constructor) is running, if any. */
const actorContext = new AsyncLocalStorage();

/** Internal state of a socket (not enumerable, not reachable from app code by name). */
const kState = Symbol('websocket.state');
/** Internal entry points used by ./hibernation.js and ./upgrade.js. */
const kReceive = Symbol('websocket.receive');
const kAbort = Symbol('websocket.abort');

const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;
const MAX_ATTACHMENT = 16 * 1024;
/** Constructor guard: pair ends are made here only. */
const PAIR = Symbol('pair');

/** The `close` event: code, reason, wasClean (Node 20 has no global CloseEvent). */
class CloseEvent extends Event {
  constructor(type, init = {}) {
    super(type);
    this.code = init.code ?? 0;
    this.reason = init.reason ?? '';
    this.wasClean = init.wasClean ?? false;
  }
}

/** The `error` event: the error and its message. */
class ErrorEvent extends Event {
  constructor(type, init = {}) {
    super(type);
    this.error = init.error;
    this.message = init.message ?? String(init.error?.message ?? init.error ?? '');
  }
}

/** A workerd `WebSocket`: one end of a WebSocketPair, or an outgoing client (`new WebSocket(url)`). */
class WebSocket extends EventTarget {
  static READY_STATE_CONNECTING = CONNECTING;
  static READY_STATE_OPEN = OPEN;
  static READY_STATE_CLOSING = CLOSING;
  static READY_STATE_CLOSED = CLOSED;
  static CONNECTING = CONNECTING;
  static OPEN = OPEN;
  static CLOSING = CLOSING;
  static CLOSED = CLOSED;

  /**
   * `new WebSocket(url, protocols?)`: an outgoing client over `ws`.
   * @param {string | URL} url
   * @param {string | string[]} [protocols]
   */
  constructor(url, protocols) {
    super();
    Object.defineProperty(this, kState, {
      value: {
        ready: CONNECTING,
        accepted: false,
        peer: null,
        // Set by accept()/acceptWebSocket(), not here: the client end of a
        // pair made inside an object is handed out, not owned by it.
        actor: null,
        held: [], // arrived before accept(), or while those are being delivered
        flushing: false,
        out: Promise.resolve(), // this end's sends, in order, each after the output gate
        closeSent: false,
        attachment: null,
        hib: null, // set by ./hibernation.js: { onMessage, onClose, onError }
        url: null,
        protocol: '',
        binaryType: 'arraybuffer',
      },
    });
    if (url === PAIR) return;
    require('./upgrade').connectClient(this, String(url), protocols);
  }

  /**
   * As EventTarget's, but a listener that throws is reported (to serve's
   * log when the socket belongs to an object) instead of surfacing as an
   * uncaught exception, which would end the process: workerd logs it too.
   */
  addEventListener(type, listener, options) {
    if (typeof listener !== 'function') return super.addEventListener(type, listener, options);
    let wrapped = wrappers.get(listener);
    if (wrapped === undefined) {
      wrapped = function (ev) {
        try {
          return listener.call(this, ev);
        } catch (err) {
          // `this` is the socket the event was dispatched on.
          report(this, `WebSocket '${ev.type}' listener: ${err?.stack ?? err}`);
        }
      };
      wrappers.set(listener, wrapped);
    }
    return super.addEventListener(type, wrapped, options);
  }

  removeEventListener(type, listener, options) {
    return super.removeEventListener(type, (typeof listener === 'function' && wrappers.get(listener)) || listener, options);
  }

  get readyState() {
    return this[kState].ready;
  }
  get url() {
    return this[kState].url;
  }
  get protocol() {
    return this[kState].protocol;
  }
  get extensions() {
    return '';
  }
  get binaryType() {
    return this[kState].binaryType;
  }
  set binaryType(v) {
    // workerd delivers binary as ArrayBuffer only; 'blob' is refused there too.
    if (v !== 'arraybuffer') throw new TypeError(`WebSocket binaryType must be "arraybuffer" (got ${String(v)}).`);
    this[kState].binaryType = v;
  }

  /**
   * Accepts this end for use in this process with event listeners (the
   * standard API). Messages held until now are delivered.
   * @param {{ allowHalfOpen?: boolean }} [options]
   */
  accept(options) {
    const s = this[kState];
    if (s.hib !== null) throw new TypeError("Can't call accept() on a WebSocket accepted via acceptWebSocket().");
    if (s.accepted) return;
    void options;
    s.accepted = true;
    s.actor ??= actorContext.getStore() ?? null;
    // The object keeps its sockets so that breaking it disconnects them.
    s.actor?.hibernation.track(this);
    if (s.ready === CONNECTING) s.ready = OPEN;
    flushHeld(this);
  }

  /**
   * Sends a message to the other end: after the owning object's output gate, in order.
   * @param {string | ArrayBuffer | ArrayBufferView} message
   */
  send(message) {
    const s = this[kState];
    if (!s.accepted && s.hib === null) throw new TypeError('You must call one of accept() or state.acceptWebSocket() on this WebSocket before sending messages.');
    if (s.closeSent || s.ready === CLOSED) throw new TypeError("Can't call WebSocket send() after close().");
    let data;
    if (typeof message === 'string') data = message;
    else if (message instanceof ArrayBuffer) data = message.slice(0);
    else if (ArrayBuffer.isView(message)) data = message.buffer.slice(message.byteOffset, message.byteOffset + message.byteLength);
    else data = String(message);
    output(this, { type: 'message', data });
  }

  /**
   * Starts the closing handshake: the peer gets a close event; its reply closes this end.
   * @param {number} [code]
   * @param {string} [reason]
   */
  close(code, reason) {
    if (code !== undefined) {
      code = Number(code);
      if (!(code >= 1000 && code < 5000 && code !== 1004 && code !== 1005 && code !== 1006 && code !== 1015)) {
        throw new TypeError(`Invalid WebSocket close code: ${code}.`);
      }
    }
    if (reason !== undefined && code === undefined) throw new TypeError('If you specify a WebSocket close reason, you must also specify a code.');
    if (reason !== undefined && Buffer.byteLength(String(reason)) > 123) throw new TypeError('The WebSocket close reason must be at most 123 bytes.');
    const s = this[kState];
    if (s.closeSent || s.ready === CLOSED) return;
    s.closeSent = true;
    if (s.ready !== CLOSED) s.ready = CLOSING;
    output(this, { type: 'close', code: code ?? 1005, reason: reason === undefined ? '' : String(reason), wasClean: true });
  }

  /**
   * Keeps a value with the socket (V8 serializer bytes, at most 16 KiB), as
   * workerd keeps it across hibernation.
   * @param {unknown} value
   */
  serializeAttachment(value) {
    const bytes = serialize(value);
    if (bytes.length > MAX_ATTACHMENT) {
      // Sic: workerd's message has no space after the first sentence.
      throw new RangeError(`A WebSocket 'attachment' cannot be larger than ${MAX_ATTACHMENT} bytes.'attachment' was ${bytes.length} bytes.`);
    }
    this[kState].attachment = bytes;
  }

  /** A fresh copy of the value `serializeAttachment` kept, or null. */
  deserializeAttachment() {
    const bytes = this[kState].attachment;
    return bytes === null ? null : decode(bytes);
  }

  /**
   * @internal Something arrives at this end from its peer (or its network
   * socket). Resolves once it has been handled (for flow control).
   * @param {{ type: 'message', data: string | ArrayBuffer } | { type: 'close', code: number, reason: string, wasClean: boolean } | { type: 'error', error: Error }} m
   * @returns {Promise<void>}
   */
  [kReceive](m) {
    const s = this[kState];
    if (s.ready === CLOSED) return Promise.resolve();
    if (m.type === 'close') {
      // Clean close: this end replies at once with the same code (workerd
      // answers a close frame itself from 2026-04-07); then it is closed.
      if (!s.closeSent && m.wasClean && s.peer !== null) {
        s.closeSent = true;
        const code = m.code === 1005 ? undefined : m.code;
        s.out = s.out.then(() => s.peer?.[kReceive]({ type: 'close', code: code ?? 1005, reason: m.reason, wasClean: true }));
      }
      s.ready = CLOSED;
    }
    if ((!s.accepted && s.hib === null) || s.flushing) {
      return new Promise((resolve) => s.held.push({ m, resolve }));
    }
    return deliver(this, m);
  }

  /**
   * @internal The connection ended without a closing handshake (or failed):
   * this end gets `error` (if `error` is given) and `close` with `code`, not clean.
   * @param {number} code
   * @param {string} reason
   * @param {Error} [error]
   */
  [kAbort](code, reason, error) {
    const s = this[kState];
    if (s.ready === CLOSED) return;
    if (error !== undefined) this[kReceive]({ type: 'error', error });
    this[kReceive]({ type: 'close', code, reason, wasClean: false });
  }
}

/** listener → its reporting wrapper (one per listener, so removeEventListener finds it). */
const wrappers = new WeakMap();

function report(ws, line) {
  const actor = ws?.[kState]?.actor ?? null;
  if (actor !== null) actor.hibernation.log(line);
  else process.stderr.write(`durable-workers: ${line}\n`);
}

/**
 * Delivers what arrived before accept(), in order, once the code that
 * accepted has run on (it may add its listeners after `accept()`, even after
 * an await; workerd dispatches from its event loop too); what arrives
 * meanwhile waits behind it.
 */
function flushHeld(ws) {
  const s = ws[kState];
  if (s.held.length === 0 || s.flushing) return;
  s.flushing = true;
  setImmediate(() => {
    try {
      while (s.held.length > 0) {
        const held = s.held;
        s.held = [];
        for (const { m, resolve } of held) deliver(ws, m).then(resolve, resolve);
      }
    } finally {
      s.flushing = false;
    }
  });
}

/** One arrival as an event: of the owning object (through its input gate) if there is one. */
function deliver(ws, m) {
  const s = ws[kState];
  // The auto-response is answered here, before (and without) the object's event.
  if (s.hib !== null && s.hib.auto(ws, m)) return Promise.resolve();
  const run = () => (s.hib !== null ? s.hib.deliver(ws, m) : dispatch(ws, m));
  if (s.actor === null) {
    try {
      return Promise.resolve(run()).catch(() => {});
    } catch {
      return Promise.resolve();
    }
  }
  // A failing handler is the app's: logged by the hibernation layer, and
  // never stops later messages. A broken object drops what arrives.
  return s.actor.event(run).then(
    () => {},
    () => {},
  );
}

/** The standard API: an event on the socket itself. */
function dispatch(ws, m) {
  if (m.type === 'message') ws.dispatchEvent(new MessageEvent('message', { data: m.data }));
  else if (m.type === 'close') ws.dispatchEvent(new CloseEvent('close', { code: m.code, reason: m.reason, wasClean: m.wasClean }));
  else ws.dispatchEvent(new ErrorEvent('error', { error: m.error }));
}

/** Queues `m` to the peer after the owning object's output gate, behind this end's earlier sends. */
function output(ws, m) {
  const s = ws[kState];
  const actor = s.actor ?? actorContext.getStore() ?? null;
  // The locks taken so far, captured now: a later write does not hold this send back.
  const gate = actor === null ? null : actor.output.wait();
  gate?.catch(() => {});
  s.out = s.out.then(async () => {
    try {
      await gate;
    } catch {
      // The object broke before its writes were durable: what it sent never
      // leaves, and the peer loses the connection.
      s.peer?.[kAbort](1006, '');
      s.ready = CLOSED;
      return;
    }
    await s.peer?.[kReceive](m);
  });
  s.out.catch(() => {});
}

/** `new WebSocketPair()`: `{ 0: client, 1: server }`, two linked ends. */
class WebSocketPair {
  constructor() {
    const a = new WebSocket(PAIR);
    const b = new WebSocket(PAIR);
    a[kState].peer = b;
    b[kState].peer = a;
    this[0] = a;
    this[1] = b;
  }

  *[Symbol.iterator]() {
    yield this[0];
    yield this[1];
  }
}

/** @internal A pair made by the runtime (the outgoing client, tests). */
function makePair() {
  const p = new WebSocketPair();
  return [p[0], p[1]];
}

module.exports = { WebSocket, WebSocketPair, CloseEvent, ErrorEvent, actorContext, kState, kReceive, kAbort, makePair, flushHeld };
