'use strict';
// workerd's `Response` on Node: Node's, plus `{ status: 101, webSocket }`
// (Node's throws a RangeError for 101), and a body made from a string or
// bytes kept as they are until something asks for it.
//
// Guarantees: every Response Node makes (`fetch()`, `Response.json()`) is
// still `instanceof Response`; a 101 with a socket reports status 101 and
// carries `webSocket`, which `serve` completes as an upgrade (./upgrade.js).
// A body kept whole behaves as Node's own through every public member
// (`body`, `bodyUsed`, `text()`, `json()`, `arrayBuffer()`, `bytes()`,
// `blob()`, `formData()`, `clone()`): the first of them hands it to a Node
// Response made then, which serves it from there on.
//
// Why: Node builds a web stream for every body at construction, a third of
// the CPU of a small answer through `serve` on Node 20 (docs/internals.md).
// A Worker's answer is mostly a string that `serve` writes as it is
// (`Response.takeWhole`), and nothing else ever reads it.

const { WebSocket } = require('./websocket');

const NodeResponse = globalThis.Response;
/** Statuses whose responses may not have a body (the fetch standard's null body statuses). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** workerd's Response: Node's, plus `webSocket` and status 101. */
class Response extends NodeResponse {
  /** The client end of the pair, for a 101; null otherwise. */
  #socket = null;
  /** The body as given (a string, or a copy of the bytes) until something asks for it. */
  #source = null;
  /** The Node Response holding the body from then on. */
  #inner = null;

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
    // A null-body status (given as a number or not) takes Node's path, which refuses a body with it.
    const source = upgrade || (init?.status !== undefined && NULL_BODY.has(Number(init.status))) ? null : keepable(body);
    // Node refuses 101: the head is built as a 200 and reports 101.
    super(source === null ? body : null, upgrade ? { ...init, status: 200 } : init);
    this.#socket = ws;
    // Statuses the check above cannot see (204.5, 65740: Web IDL makes both 204), refused as Node refuses them.
    if (source !== null && NULL_BODY.has(super.status)) throw new TypeError(`Response constructor: Invalid response status code ${super.status}`);
    if (source !== null) {
      this.#source = source;
      // What Node's body extraction sets for a string, unless given.
      if (typeof source === 'string' && !this.headers.has('content-type')) this.headers.set('content-type', 'text/plain;charset=UTF-8');
    }
  }

  get status() {
    // Node's constructor reads it before this class's fields exist.
    return #socket in this && this.#socket !== null ? 101 : super.status;
  }

  get ok() {
    return this.status >= 200 && this.status < 300;
  }

  /** The client end of the pair, for a 101; null otherwise. */
  get webSocket() {
    return this.#socket;
  }

  get body() {
    return this.#kept() ? this.#held().body : super.body;
  }

  get bodyUsed() {
    return this.#kept() ? this.#inner !== null && this.#inner.bodyUsed : super.bodyUsed;
  }

  text() {
    return this.#kept() ? this.#held().text() : super.text();
  }

  json() {
    return this.#kept() ? this.#held().json() : super.json();
  }

  arrayBuffer() {
    return this.#kept() ? this.#held().arrayBuffer() : super.arrayBuffer();
  }

  bytes() {
    return this.#kept() ? this.#held().bytes() : super.bytes();
  }

  blob() {
    return this.#kept() ? this.#typed().blob() : super.blob();
  }

  formData() {
    return this.#kept() ? this.#typed().formData() : super.formData();
  }

  clone() {
    if (!this.#kept()) return super.clone();
    if (this.bodyUsed) throw new TypeError('Response.clone: Body has already been consumed.');
    const copy = new Response(null, { status: super.status, statusText: this.statusText, headers: this.headers });
    if (this.#inner === null) copy.#source = this.#source;
    else copy.#inner = this.#inner.clone();
    return copy;
  }

  /** Whether the body was kept whole (given, or handed on since): then the members here serve it. */
  #kept() {
    return this.#source !== null || this.#inner !== null;
  }

  /** The Node Response that holds the body from its first use on. */
  #held() {
    if (this.#inner === null) {
      this.#inner = new NodeResponse(this.#source);
      this.#source = null;
    }
    return this.#inner;
  }

  /** #held(), its Content-Type this response's now (blob() and formData() read it). */
  #typed() {
    const inner = this.#held();
    if (inner.bodyUsed) return inner;
    const type = this.headers.get('content-type');
    if (type === null) inner.headers.delete('content-type');
    else inner.headers.set('content-type', type);
    return inner;
  }

  /**
   * The body of `response` as it was given, if it is still kept whole (a
   * string or bytes); it is then taken, as a read would, and the response's
   * body reads as used. Undefined for any other response.
   * @param {unknown} response
   * @returns {string | Uint8Array | undefined}
   */
  static takeWhole(response) {
    if (!Response.isWhole(response)) return undefined;
    const source = response.#source;
    response.#source = null;
    response.#inner = spent();
    return source;
  }

  /** The WebSocket a response upgrades with, or null (any Response, Node's too). */
  static socketOf(response) {
    return typeof response === 'object' && response !== null && #socket in response ? response.#socket : null;
  }

  /** Whether `response` is one whose body is kept whole and still unread (nothing streams from it). */
  static isWhole(response) {
    return typeof response === 'object' && response !== null && #source in response && response.#source !== null;
  }

  // Responses Node makes itself (fetch(), Response.json()) are Node's class.
  static [Symbol.hasInstance](v) {
    return v instanceof NodeResponse;
  }
}

/**
 * What a body may be kept as: a string as it is, bytes copied (Node copies
 * them at construction too, so a later change to the caller's buffer does
 * not show); null for anything else (streams, blobs, forms…), which Node's
 * own constructor takes.
 * @param {unknown} body
 * @returns {string | Uint8Array | null}
 */
function keepable(body) {
  if (typeof body === 'string') return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body.slice(0));
  if (ArrayBuffer.isView(body) && body.buffer instanceof ArrayBuffer) return new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  return null;
}

/** A Node Response whose body has been read: what a body taken by takeWhole() reads as. */
let SPENT = null;
function spent() {
  if (SPENT === null) {
    SPENT = new NodeResponse('');
    SPENT.arrayBuffer().catch(() => {});
  }
  return SPENT;
}

module.exports = { Response, NodeResponse };
