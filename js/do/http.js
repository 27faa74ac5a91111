'use strict';
// The bridge between `node:http` and the fetch API a Worker speaks: an
// incoming request becomes a web `Request`, the `Response` the app returns is
// written back, and a failure in the app becomes a 500.
//
// Guarantee: the client never sees the app's error message or stack (they go
// to the log, with the method and path); a response is a 500 only while its
// head has not been sent, and a failure after that cuts the connection, so a
// truncated body never passes for a whole one. Bodies stream both ways: a
// large upload or download is never held in memory here.
//
// Mechanism: the request body is the node stream itself (`Readable.toWeb`,
// `duplex: 'half'`); the response body is read from its web stream and
// written chunk by chunk, waiting for 'drain' (no node stream adapter: for
// the small bodies most answers have, the adapter and `pipeline` cost more
// than the rest of the request). A client that goes away cancels the
// response body, so the app's stream stops producing. `request.signal` never
// aborts, as on workerd without its `enable_request_signal` flag; making one
// per request cost a tenth of the CPU of a small request.

const { Readable } = require('node:stream');
const { ended } = require('./bodies');
const { Response: WorkerdResponse } = require('./response');

/** Methods whose requests cannot carry a body in the fetch API. */
const NO_BODY = new Set(['GET', 'HEAD']);
/** The body of a request whose length is 0 (never written to: shared). */
const EMPTY = new Uint8Array(0);
/** What `soon()` resolves to. */
const SOON = Symbol('soon');

/** A promise that resolves after a few microtasks: a read of a body already whole settles before it. */
function soon() {
  return Promise.resolve(SOON)
    .then((x) => x)
    .then((x) => x)
    .then((x) => x);
}

/** Whether a response of this status has a body (and so a Content-Length). */
function bodyAllowed(status) {
  return status >= 200 && status !== 204 && status !== 304;
}

/**
 * A web `Request` for a node request.
 * @param {import('node:http').IncomingMessage} req
 * @param {{ origin: string }} o origin: used when the request has no Host header
 * @returns {Request}
 */
function toRequest(req, o) {
  // undici keeps the headers an HTTP client may not set (Host, Connection,
  // Upgrade), so the app sees what workerd would show it.
  // As name-value pairs: a Headers object given instead is copied sorted.
  const raw = req.rawHeaders;
  const headers = new Array(raw.length / 2);
  for (let i = 0; i < raw.length; i += 2) headers[i / 2] = [raw[i], raw[i + 1]];
  const init = { method: req.method, headers };
  // A request with neither a length nor chunked encoding has no body (RFC
  // 9112 §6.3); giving it an empty stream would make `request.body` non-null,
  // unlike workerd. A length of 0 is an empty body, made without the stream
  // adapter (a bodiless POST is common, and the adapter costs more than the
  // rest of the Request).
  const length = req.headers['content-length'];
  if (!NO_BODY.has(req.method) && (length !== undefined || req.headers['transfer-encoding'] !== undefined)) {
    if (length === '0' && req.headers['transfer-encoding'] === undefined) {
      init.body = EMPTY;
      req.resume();
    } else {
      init.body = Readable.toWeb(req);
      init.duplex = 'half';
    }
  }
  return new Request(urlOf(req, o.origin), init);
}

/** What a Host header may hold to be put before a path as it is: a name or address, and a port. */
const PLAIN_HOST = /^[\w.-]+(:\d+)?$|^\[[\da-fA-F:.]+\](:\d+)?$/;

/**
 * The request's URL. A path (the usual request target) follows the origin
 * the Host names, as workerd builds it: `//x` stays a path, never a host.
 * Anything else (an absolute URL, `*`) is resolved against that origin.
 * @param {import('node:http').IncomingMessage} req
 * @param {string} origin for a request without a Host header
 */
function urlOf(req, origin) {
  const target = req.url ?? '/';
  const host = req.headers.host;
  // A plain name and port as it is; anything else (non-ASCII, a stray path) parsed down to its origin.
  const base = host === undefined || host === '' ? origin : PLAIN_HOST.test(host) ? `http://${host}` : new URL(`http://${host}`).origin;
  return target.startsWith('/') ? base + target : new URL(target, base).href;
}

/**
 * Writes a web `Response` to a node response: status, headers (each
 * Set-Cookie on its own line), then the body, streamed. Resolves when the
 * body has been handed to the socket, or the client has gone.
 * @param {Response} response
 * @param {import('node:http').ServerResponse} res
 * @returns {Promise<void>}
 */
async function writeResponse(response, res) {
  const head = {};
  // A response from fetch() (it has a URL) has had its body decoded by
  // undici, which keeps the encoding's headers: passed on as they are, the
  // client would decode plain bytes again (workerd encodes them again).
  const decoded = response.url !== '' && response.headers.has('content-encoding');
  for (const [name, value] of response.headers) {
    // Headers iteration joins nothing but Set-Cookie, which cannot be joined; it comes from getSetCookie().
    if (name === 'set-cookie' || (decoded && (name === 'content-encoding' || name === 'content-length'))) continue;
    head[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) head['set-cookie'] = cookies;
  const start = () => res.writeHead(response.status, response.statusText || undefined, head);
  /** A body whole in memory: the head with its length, and the body, in one write. */
  const endWith = (whole) => {
    if (head['content-length'] === undefined && head['transfer-encoding'] === undefined && bodyAllowed(response.status)) {
      head['content-length'] = String(typeof whole === 'string' ? Buffer.byteLength(whole) : whole.byteLength);
    }
    start();
    res.end(whole);
  };
  // A body made from a string or bytes goes out as it was given: no stream is made for it (./response.js).
  const whole = WorkerdResponse.takeWhole(response);
  if (whole !== undefined) {
    endWith(whole);
    return;
  }
  const body = response.body;
  if (body === null) {
    start();
    res.end();
    return;
  }
  // For HEAD, node drops what is written; the loop still drains the app's stream.
  const reader = body.getReader();
  let gone = false;
  let wake = null;
  const onClose = () => {
    if (res.writableFinished) return;
    // The client went away: nothing to tell it; stop the app's stream.
    gone = true;
    reader.cancel(new Error('the client closed the connection')).catch(() => {});
    wake?.();
  };
  const onDrain = () => wake?.();
  res.on('close', onClose);
  res.on('drain', onDrain);
  try {
    let next = reader.read();
    const first = await next;
    if (first.done || gone) {
      start();
      res.end();
      return;
    }
    // A body that was whole when returned (a string, bytes, JSON) ends a
    // microtask or two after its first chunk: it goes out with its length in
    // one write, where a chunked body took a second write for its end. A
    // stream still producing (server-sent events) is written as it comes.
    next = reader.read();
    const second = await Promise.race([next, soon()]);
    if (second !== SOON && second.done && first.value instanceof Uint8Array) {
      endWith(first.value);
      return;
    }
    start();
    if (!res.write(first.value) && !gone) await new Promise((resolve) => (wake = resolve));
    wake = null;
    for (;;) {
      if (gone) break;
      const { done, value } = await next;
      if (done || gone) break;
      if (!res.write(value) && !gone) await new Promise((resolve) => (wake = resolve));
      wake = null;
      next = reader.read();
    }
    if (!gone) res.end();
  } catch (err) {
    // The app's stream failed after the head was sent (or gave something
    // that is not bytes): cut the connection so the body is not taken for
    // complete, and let the caller log it.
    res.destroy();
    if (!gone) throw err;
  } finally {
    res.off('close', onClose);
    res.off('drain', onDrain);
    ended(body);
  }
}

/**
 * A `node:http` request listener that runs `handler` for each request and
 * writes its answer. An error thrown by the handler, or a value that is not a
 * Response, becomes a 500 with a short text body; the detail goes to `log`.
 * @param {(request: Request) => Promise<Response> | Response} handler
 * @param {{ origin: string, log: (line: string) => void }} o
 * @returns {(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => Promise<void>}
 *   resolves once the response is written (or abandoned); never rejects
 */
function requestListener(handler, o) {
  return async (req, res) => {
    let response;
    try {
      const request = toRequest(req, { origin: o.origin });
      response = await handler(request);
      if (!(response instanceof Response)) {
        throw new TypeError(`the fetch handler returned ${describe(response)}, not a Response`);
      }
    } catch (err) {
      o.log(`${req.method} ${req.url}: ${err?.stack ?? err}`);
      sendError(res, 500, 'Internal Server Error\n');
      return;
    }
    try {
      await writeResponse(response, res);
    } catch (err) {
      o.log(`${req.method} ${req.url}: the response body failed after its head was sent: ${err?.stack ?? err}`);
    }
  };
}

/**
 * A short plain-text error answer, or a cut connection when the head has
 * already gone.
 * @param {import('node:http').ServerResponse} res
 * @param {number} status
 * @param {string} text
 */
function sendError(res, status, text) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Answers an HTTP upgrade on its raw socket with `status` and a text body,
 * then closes it (the upgrade path has no ServerResponse).
 * @param {import('node:net').Socket} socket
 * @param {number} status
 * @param {string} reason the status line's reason phrase
 * @param {string} text
 */
function refuseUpgrade(socket, status, reason, text) {
  const body = Buffer.from(text);
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${text}`);
}

function describe(v) {
  if (v === null || v === undefined) return String(v);
  if (typeof v === 'object') return `an object (${v.constructor?.name ?? 'null prototype'})`;
  return `a ${typeof v}`;
}

module.exports = { toRequest, writeResponse, requestListener, sendError, refuseUpgrade };
