'use strict';
// The WebSocket Hibernation API of `ctx` (DurableObjectState): sockets the
// runtime holds for an object, with tags and an auto-response, whose events
// go to the instance's `webSocketMessage`, `webSocketClose` and
// `webSocketError` handlers instead of listeners on the socket.
//
// Guarantees, as on Cloudflare: each event runs as one of the object's events
// (through its input gate, its sends after its output gate: ./websocket.js);
// an auto-response is answered at the socket from the exact text of a
// message, without running the object, and records its time; tags and
// attachments stay with the socket; the limits and messages are workerd's.
//
// Hibernation: an object whose only connections are these sockets may be
// evicted (./residents.js). Its sockets stay open, with their tags,
// attachments and the auto-response, which goes on answering; their next
// event makes a new instance of the object, which adopts them
// (`sleep`, `adopt`). Not matched: the event timeout is kept and reported,
// but a handler that outlives it is not cancelled (running JS cannot be
// stopped); it is logged and the socket goes on.

const { WebSocket, kState, kReceive, kAbort, flushHeld } = require('./websocket');

const MAX_TAGS = 10;
const MAX_TAG = 256;
const MAX_SOCKETS = 32_768;
const MAX_AUTO = 2048;
const MAX_TIMEOUT = 604_800_000;

/** `new WebSocketRequestResponsePair(request, response)`: an auto-response. */
class WebSocketRequestResponsePair {
  #request;
  #response;

  /**
   * @param {string} request
   * @param {string} response
   */
  constructor(request, response) {
    this.#request = String(request);
    this.#response = String(response);
  }
  get request() {
    return this.#request;
  }
  get response() {
    return this.#response;
  }
}

/** One object's hibernatable sockets and settings. */
class Hibernation {
  /** @type {Set<WebSocket>} */
  #sockets = new Set();
  /** @type {Set<WebSocket>} sockets accepted with accept() inside the object */
  #standard = new Set();
  /** @type {WebSocketRequestResponsePair | null} */
  #auto = null;
  #timeout = null;
  #actor;
  #log;

  /**
   * @param {object} actor the object's Actor
   * @param {(line: string) => void} [log] where a handler's failure goes
   */
  constructor(actor, log) {
    this.#actor = actor;
    this.#log = log ?? ((line) => process.stderr.write(`durable-workers: ${line}\n`));
  }

  /**
   * @param {WebSocket} ws the server end of a WebSocketPair, not accepted
   * @param {string[]} [tags]
   */
  accept(ws, tags = []) {
    if (!(ws instanceof WebSocket)) throw new TypeError("Failed to execute 'acceptWebSocket' on 'DurableObjectState': parameter 1 is not of type 'WebSocket'.");
    const s = ws[kState];
    if (s.accepted) throw new TypeError('Cannot call `acceptWebSocket()` if the WebSocket was already accepted via `accept()`');
    if (s.hib !== null) throw new TypeError('WebSocket was already accepted via `acceptWebSocket()`.');
    const distinct = [...new Set(Array.from(tags, String))];
    if (distinct.length > MAX_TAGS) throw new Error(`a Hibernatable WebSocket cannot have more than ${MAX_TAGS} tags`);
    for (const tag of distinct) {
      if (tag.length > MAX_TAG) throw new Error(`"${tag}" is longer than the max tag length (${MAX_TAG} characters).`);
    }
    if (this.#sockets.size >= MAX_SOCKETS) throw new Error(`only ${MAX_SOCKETS} hibernatable WebSockets can be accepted per Durable Object`);
    s.actor = this.#actor;
    s.hib = { tags: distinct, autoAt: null, deliver: (w, m) => this.#deliver(w, m), auto: (w, m) => this.#autoRespond(w, m) };
    if (s.ready === 0) s.ready = 1;
    this.#sockets.add(ws);
    // What arrived before is delivered now, to the handlers.
    flushHeld(ws);
  }

  /**
   * The object was evicted: its sockets' events go to `waker`, which makes a
   * new instance of the object (which adopts them) and runs them there.
   * @param {{ event(run: () => unknown): Promise<unknown> }} waker
   */
  sleep(waker) {
    const asleep = { event: (run) => waker.event(run), hibernation: this, output: { wait: () => Promise.resolve() } };
    for (const ws of this.#sockets) ws[kState].actor = asleep;
  }

  /**
   * A new instance of the evicted object takes over its sockets and settings.
   * @param {object} actor its Actor
   * @returns {this}
   */
  adopt(actor) {
    this.#actor = actor;
    for (const ws of this.#sockets) ws[kState].actor = actor;
    return this;
  }

  /** Hibernatable sockets not yet closed. */
  open() {
    return this.getWebSockets().length;
  }

  /** Whether a socket accepted with accept() is open: it keeps the object in memory. */
  holdsStandard() {
    for (const ws of this.#standard) {
      if (ws[kState].ready !== 3) return true;
      this.#standard.delete(ws);
    }
    return false;
  }

  /** Reports a failure of the app's WebSocket code (a handler or a listener). */
  log(line) {
    this.#log(line);
  }

  /** @param {WebSocket} ws accepted with accept() inside this object */
  track(ws) {
    // Closed sockets are swept now and then rather than tracked on every path that closes one.
    if (this.#standard.size >= 1024) for (const w of this.#standard) if (w[kState].ready === 3) this.#standard.delete(w);
    this.#standard.add(ws);
  }

  /**
   * The object broke (a failed commit, `ctx.abort()`): as on workerd its
   * connections are lost; each peer sees an abnormal close (1006).
   */
  disconnect() {
    for (const ws of [...this.#sockets, ...this.#standard]) {
      const s = ws[kState];
      if (s.ready === 3) continue;
      s.ready = 3;
      s.peer?.[kAbort](1006, '');
    }
    this.#sockets.clear();
    this.#standard.clear();
  }

  /** The sockets not yet disconnected (closing ones included), with `tag` if given. */
  getWebSockets(tag) {
    const out = [];
    for (const ws of this.#sockets) {
      const s = ws[kState];
      if (s.ready === 3) {
        this.#sockets.delete(ws);
        continue;
      }
      if (tag === undefined || s.hib.tags.includes(String(tag))) out.push(ws);
    }
    return out;
  }

  /** @param {WebSocket} ws */
  getTags(ws) {
    const hib = ws instanceof WebSocket ? ws[kState].hib : null;
    if (hib === null) throw new TypeError('only hibernatable websockets can have tags');
    return [...hib.tags];
  }

  /** @param {WebSocketRequestResponsePair} [pair] none: cleared */
  setAutoResponse(pair) {
    if (pair === undefined || pair === null) {
      this.#auto = null;
      return;
    }
    if (!(pair instanceof WebSocketRequestResponsePair))
      throw new TypeError("Failed to execute 'setWebSocketAutoResponse' on 'DurableObjectState': parameter 1 is not of type 'WebSocketRequestResponsePair'.");
    const req = Buffer.byteLength(pair.request);
    const res = Buffer.byteLength(pair.response);
    if (req > MAX_AUTO) throw new RangeError(`Request cannot be larger than ${MAX_AUTO} bytes. A request of size ${req} was provided.`);
    if (res > MAX_AUTO) throw new RangeError(`Response cannot be larger than ${MAX_AUTO} bytes. A response of size ${res} was provided.`);
    this.#auto = pair;
  }

  getAutoResponse() {
    return this.#auto;
  }

  /** @param {WebSocket} ws */
  getAutoResponseTimestamp(ws) {
    const at = ws instanceof WebSocket ? ws[kState].hib?.autoAt : null;
    return at == null ? null : new Date(at);
  }

  /** @param {number} [ms] 0 or none: cleared */
  setEventTimeout(ms) {
    if (ms === undefined || ms === null || ms === 0) {
      this.#timeout = null;
      return;
    }
    ms = Number(ms);
    if (!(ms >= 0)) throw new RangeError('Event timeout must be a non-negative number of milliseconds.');
    if (ms > MAX_TIMEOUT) throw new RangeError(`Event timeout should not exceed ${MAX_TIMEOUT} ms.`);
    this.#timeout = ms;
  }

  getEventTimeout() {
    return this.#timeout;
  }

  /** Runs the instance's handler for `m`, inside one of the object's events (./websocket.js enters it). */
  async #deliver(ws, m) {
    if (m.type === 'close') this.#sockets.delete(ws);
    const instance = this.#actor.instance;
    let name;
    let args;
    if (m.type === 'message') [name, args] = ['webSocketMessage', [ws, m.data]];
    else if (m.type === 'close') [name, args] = ['webSocketClose', [ws, m.code, m.reason, m.wasClean]];
    else [name, args] = ['webSocketError', [ws, m.error]];
    if (typeof instance?.[name] !== 'function') return;
    const started = Date.now();
    try {
      await instance[name](...args);
    } catch (err) {
      this.#log(`${name}: ${err?.stack ?? err}`);
    }
    const took = Date.now() - started;
    if (this.#timeout !== null && took > this.#timeout) this.#log(`${name} took ${took} ms, over the hibernatable event timeout of ${this.#timeout} ms`);
  }

  /**
   * Answers `m` at the socket if it is the auto-response's request: the
   * response goes straight back, not through the object. Whether it did.
   * @param {WebSocket} ws
   * @param {{ type: string, data?: unknown }} m
   */
  #autoRespond(ws, m) {
    const pair = this.#auto;
    if (pair === null || m.type !== 'message' || m.data !== pair.request) return false;
    const s = ws[kState];
    s.hib.autoAt = Date.now();
    if (s.ready === 1 && s.peer !== null) {
      const peer = s.peer;
      const response = pair.response;
      // Not behind the output gate: the object has not run, so there is nothing for it to wait for.
      s.out = s.out.then(() => peer[kReceive]({ type: 'message', data: response }));
    }
    return true;
  }
}

module.exports = { Hibernation, WebSocketRequestResponsePair };
