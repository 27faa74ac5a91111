'use strict';
// What the shop's two HTTP fronts share, so they answer alike: server.js on
// Node and ../cloudflare/shop.js on workerd. How a thrown error reads over
// HTTP, how a request body is checked, and the shape of an error answer.

/** A request body larger than this is refused: a cart line is a few dozen bytes. */
const MAX_BODY = 64 * 1024;

/**
 * How each DurableError code reads over HTTP. The ones a client can cause or
 * retry get a 4xx or 503; the rest are the server's fault.
 * @type {Record<string, number>}
 */
const STATUS = {
  ERR_DURABLE_BUSY: 503, // the customer's mailbox is full: retry later
  ERR_DURABLE_CLOSED: 503, // shutting down
  ERR_DURABLE_SHARD_LOST: 503,
  ERR_DURABLE_ID: 400, // the id in the URL is not usable (too long, say)
  ERR_DURABLE_NAME: 400,
  ERR_DURABLE_STATE_TOO_LARGE: 413,
  ERR_DURABLE_UNCLONEABLE: 400,
};

/**
 * The status and code an error is answered with.
 * @param {any} err whatever was thrown
 * @returns {{ status: number, code: string }}
 */
function answerFor(err) {
  // Switch on the code, not on instanceof: codes are the stable contract.
  if (typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_')) return { status: STATUS[err.code] ?? 500, code: err.code };
  if (err instanceof URIError) return { status: 400, code: 'BAD_URL' };
  // Thrown by Cart's own checks; it reaches us as the same kind of error
  // (Durable Object RPC keeps the error's type too).
  if (err instanceof TypeError || err instanceof RangeError) return { status: 400, code: 'BAD_REQUEST' };
  const status = err?.status ?? 500;
  return { status, code: status === 500 ? 'INTERNAL' : err.code };
}

/** The error a body over MAX_BODY is refused with. */
function bodyTooLarge() {
  return Object.assign(new Error(`the body is over ${MAX_BODY} bytes`), { status: 413, code: 'BODY_TOO_LARGE' });
}

/**
 * A request body's text as a JSON object; anything else is refused.
 * @param {string} text
 * @returns {Record<string, any>}
 */
function parseBody(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw Object.assign(new Error('the body is not valid JSON'), { status: 400, code: 'BAD_JSON' });
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw Object.assign(new Error('the body must be a JSON object'), { status: 400, code: 'BAD_JSON' });
  }
  return body;
}

/**
 * @param {string} code
 * @param {string} message
 */
function errorBody(code, message) {
  return { error: { code, message } };
}

module.exports = { MAX_BODY, STATUS, answerFor, bodyTooLarge, parseBody, errorBody };
