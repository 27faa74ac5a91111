'use strict';
// The remote datastore: the same methods over HTTP. Each call is
//   POST <remoteUrl>/datastore/<method>   Authorization: Bearer <credential>
//   body {"args": [...]}  →  2xx {"data": ...}  |  non-2xx {"error": "..."}
// The credential lives in this closure only; the api a worker sees closes
// over the client, never over the token.
const { codes, peekError } = require('./errors');
const { STORE_METHODS } = require('./store-methods');

/**
 * @param {{ url: string, credential: string, timeoutMs?: number, beforeSend?: () => void }} options
 *   beforeSend: runs before each request, and may refuse it by throwing (node/port-holder.js)
 */
function remoteStore({ url, credential, timeoutMs = 30_000, beforeSend = () => {} }) {
  const base = url.replace(/\/+$/, '');
  const request = async (method, args) => {
    beforeSend();
    let res;
    try {
      res = await fetch(`${base}/datastore/${method}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ args }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw peekError(codes.STORE, `remote store ${base}: ${method} failed to connect (${err.cause?.code ?? err.message})`, { cause: err });
    }
    let body = null;
    try {
      body = await res.json();
    } catch {
      // A body that is not JSON: reported by status below.
    }
    if (!res.ok) throw peekError(codes.STORE, `remote store ${base}: ${method} answered ${res.status}${body?.error ? `: ${body.error}` : ''}`);
    return body?.data;
  };
  const client = {};
  for (const name of STORE_METHODS) client[name] = (...args) => request(name, args);
  return Object.freeze(client);
}

module.exports = { remoteStore };
