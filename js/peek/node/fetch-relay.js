'use strict';
// A sandboxed run has no network (./sandbox.js): its fetch is a relay. The
// run's side (relayFetch) turns the request into a message on the frame
// pipe; the supervisor's side (FetchRelay) checks it with the same guard as
// everywhere (./guarded-fetch.js), fetches it from the supervisor's network,
// and sends the response back. The decision, the connection and the audit
// record are all the supervisor's: nothing the worker does in its own
// process changes what is fetched or what the log says was. This is what
// makes the adapter's network.enforcement 'egress-control'.
//
// Bodies are buffered, not streamed, and bounded both ways, and at most
// MAX_IN_FLIGHT requests of a run are open at once (the rest wait, up to
// MAX_WAITING): the supervisor's memory does not follow what a run asks for.
const { codes, peekError, toPlainError } = require('../errors');
const { guardedFetch } = require('./guarded-fetch');

const MAX_BODY_BYTES = 8 * 1024 * 1024;
const MAX_IN_FLIGHT = 8;
const MAX_WAITING = 64;
/** What waiting requests hold (bodies, URLs, headers), at most. */
const MAX_WAITING_BYTES = 32 * 1024 * 1024;
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

// The platform's classes, taken before any worker code runs.
const { Request: PlatformRequest, Response: PlatformResponse, Headers: PlatformHeaders } = globalThis;

/**
 * The run's fetch, inside the sandbox.
 * @param {{ ask: (fields: object) => { id: number, answer: Promise<any> }, cancel: (id: number) => void }} io
 */
function relayFetch(io) {
  return async function fetch(input, init) {
    // A Request is read as the platform reads it; anything else is the URL,
    // turned into a string once and left for the supervisor's guard to parse
    // (a URL the platform's Request would refuse, credentials in it say, is
    // then refused there, and logged). The init's method, headers and body go
    // through a Request all the same: the platform's rules for them hold.
    const isRequest = input instanceof PlatformRequest;
    const url = isRequest ? undefined : `${input}`;
    const request = isRequest ? new PlatformRequest(input, init) : new PlatformRequest('http://relay.invalid/', init);
    const signal = request.signal;
    signal.throwIfAborted?.();
    const body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
    const { id, answer } = io.ask({
      url: url ?? request.url,
      method: request.method,
      headers: [...new PlatformHeaders(request.headers)],
      body,
      redirect: request.redirect,
    });
    // One listener: an abort cancels the request at the supervisor and rejects here.
    let onAbort;
    const aborted = new Promise((_, reject) => {
      onAbort = () => {
        io.cancel(id);
        reject(signal.reason);
      };
    });
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const r = await Promise.race([answer, aborted]);
      const response = new PlatformResponse(NULL_BODY.has(r.status) ? null : r.body, { status: r.status, statusText: r.statusText, headers: r.headers });
      Object.defineProperty(response, 'url', { value: r.url });
      Object.defineProperty(response, 'redirected', { value: r.redirected });
      return response;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
}

/**
 * The supervisor's side for one run.
 */
class FetchRelay {
  #fetch;
  #send;
  #open = 0;
  #waiting = [];
  #waitingBytes = 0;
  #controllers = new Map();
  #ended = false;

  /**
   * @param {{ domains: string[], signal: AbortSignal, report: (r: object) => void, send: (m: object) => void }} options
   *   send: the reply to the run ({ t: 'reply', id, ok, value | error })
   */
  constructor({ domains, signal, report, send }) {
    this.#fetch = guardedFetch({ domains, signal, report });
    this.#send = send;
  }

  /** Whether request `id` is open or waiting (an id reused while in use is a protocol violation). */
  has(id) {
    return this.#controllers.has(id) || this.#waiting.some((w) => w.id === id);
  }

  /** A checked 'fetch' message from the run. */
  request(m) {
    if (this.#ended) return;
    const bodySize = m.body?.byteLength ?? 0;
    if (bodySize > MAX_BODY_BYTES) return this.#fail(m.id, `a request body of ${bodySize} bytes is over the relay's ${MAX_BODY_BYTES}`);
    // What a waiting request holds: its body, URL and headers.
    const size = bodySize + m.url.length + m.headers.reduce((n, [k, v]) => n + k.length + v.length, 0);
    m.size = size;
    if (this.#open < MAX_IN_FLIGHT) return this.#begin(m);
    if (this.#waiting.length >= MAX_WAITING || this.#waitingBytes + size > MAX_WAITING_BYTES) {
      return this.#fail(m.id, `more than ${MAX_IN_FLIGHT} requests are open and ${this.#waiting.length} wait (${this.#waitingBytes} bytes of bodies, URLs and headers)`);
    }
    this.#waiting.push(m);
    this.#waitingBytes += size;
  }

  /** The run gave up on a request ('fetch-abort'). */
  abort(id) {
    const i = this.#waiting.findIndex((w) => w.id === id);
    if (i >= 0) {
      const [m] = this.#waiting.splice(i, 1);
      this.#waitingBytes -= m.size;
      return;
    }
    this.#controllers.get(id)?.abort(peekError(codes.CLOSED, 'the run aborted this fetch'));
  }

  /** The run is over: open requests are aborted, waiting ones dropped. */
  end() {
    this.#ended = true;
    this.#waiting = [];
    this.#waitingBytes = 0;
    for (const c of this.#controllers.values()) c.abort(peekError(codes.CLOSED, 'the run has ended'));
  }

  #fail(id, why) {
    this.#send({ t: 'reply', id, ok: false, error: forRun(peekError(codes.FETCH_LIMIT, `fetch refused: ${why}`)) });
  }

  async #start(m) {
    this.#open++;
    const controller = new AbortController();
    this.#controllers.set(m.id, controller);
    let reply;
    try {
      const res = await this.#fetch(m.url, { method: m.method, headers: m.headers, body: m.body, redirect: m.redirect, signal: controller.signal });
      const body = await readBounded(res, controller);
      reply = { t: 'reply', id: m.id, ok: true, value: { status: res.status, statusText: res.statusText, headers: [...res.headers], url: res.url, redirected: res.redirected, body } };
    } catch (err) {
      reply = { t: 'reply', id: m.id, ok: false, error: forRun(err) };
    } finally {
      this.#controllers.delete(m.id);
      this.#open--;
    }
    if (!this.#ended) this.#send(reply);
    const next = this.#waiting.shift();
    if (next !== undefined && !this.#ended) {
      this.#waitingBytes -= next.size;
      this.#begin(next);
    }
  }

  /** Starts a request; whatever goes wrong answers the run, never throws here. */
  #begin(m) {
    this.#start(m).catch(() => {});
  }
}

/** The response's body, refused past MAX_BODY_BYTES (and the rest not read). */
async function readBounded(res, controller) {
  if (res.body === null) return new Uint8Array(0);
  const chunks = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      controller.abort();
      throw peekError(codes.FETCH_LIMIT, `fetch refused: the response from ${res.url} is over the relay's ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** An error as the run is told it: its name, code and message; the supervisor's stack stays here. */
function forRun(err) {
  const e = toPlainError(err);
  return { name: e.name, code: e.code, message: e.message };
}

module.exports = { relayFetch, FetchRelay, MAX_BODY_BYTES, MAX_IN_FLIGHT };
