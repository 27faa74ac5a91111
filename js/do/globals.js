'use strict';
// The globals a Worker expects from workerd that Node lacks or has in another
// shape: `WebSocket` (workerd's, with READY_STATE_* and attachments, not
// undici's client), `WebSocketPair`, and a `Response` that takes
// `{ status: 101, webSocket }` (Node's throws a RangeError for 101).
//
// Guarantee: every Response Node makes (`fetch()`, `Response.json()`) is
// still `instanceof Response`; a 101 with a socket reports status 101 and
// carries `webSocket`, which `serve` completes as an upgrade (./upgrade.js).

const { WebSocket, WebSocketPair } = require('./websocket');

const NodeResponse = globalThis.Response;
const kSocket = Symbol('response.webSocket');

/** workerd's Response: Node's, plus `webSocket` and status 101. */
class Response extends NodeResponse {
  /**
   * @param {BodyInit | null} [body]
   * @param {ResponseInit & { webSocket?: WebSocket | null }} [init]
   */
  constructor(body, init) {
    const ws = init?.webSocket ?? null;
    if (ws !== null && !(ws instanceof WebSocket)) throw new TypeError("Failed to construct 'Response': webSocket must be a WebSocket.");
    const upgrade = init?.status === 101;
    if (upgrade && ws === null) throw new RangeError('Responses with a 101 status must carry a webSocket (new Response(null, { status: 101, webSocket: client })).');
    if (!upgrade && ws !== null) throw new RangeError('Responses with a webSocket must have status 101.');
    // Node refuses 101: the head is built as a 200 and reports 101.
    super(body, upgrade ? { ...init, status: 200 } : init);
    Object.defineProperty(this, kSocket, { value: ws });
  }

  get status() {
    return this[kSocket] !== null && this[kSocket] !== undefined ? 101 : super.status;
  }

  get ok() {
    return this.status >= 200 && this.status < 300;
  }

  /** The client end of the pair, for a 101; null otherwise. */
  get webSocket() {
    return this[kSocket] ?? null;
  }

  // Responses Node makes itself (fetch(), Response.json()) are Node's class.
  static [Symbol.hasInstance](v) {
    return v instanceof NodeResponse;
  }
}

/** The WebSocket a response upgrades with, or null (any Response, Node's too). */
function webSocketOf(response) {
  return response instanceof NodeResponse ? (response[kSocket] ?? null) : null;
}

let installed = false;

/** Installs `WebSocket`, `WebSocketPair` and the 101-capable `Response` on globalThis (once). */
function installGlobals() {
  if (installed) return;
  installed = true;
  for (const [name, value] of Object.entries({ WebSocket, WebSocketPair, Response })) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }
}

module.exports = { installGlobals, Response, webSocketOf };
