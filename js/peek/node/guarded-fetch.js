'use strict';
// The fetch a run sees, as globalThis.fetch and as api.network.fetch: the
// platform fetch, allowed only to the manifest's domains, every request
// reported (allowed or not), each one given the run's signal so a run past
// its deadline stops issuing requests. A guard-rail, not a wall: code in the
// same process can reach the network without fetch (docs/peek.md).
const { hostAllowed } = require('../domains');
const { codes, peekError } = require('../errors');

/**
 * @param {{ domains: string[], signal: AbortSignal, report: (r: { method: string, url: string, allowed: boolean }) => void, fetch?: typeof fetch }} options
 * @returns {typeof fetch}
 */
function guardedFetch({ domains, signal, report, fetch: platformFetch = globalThis.fetch }) {
  return async function fetch(input, init = {}) {
    const isRequest = typeof Request === 'function' && input instanceof Request;
    const href = isRequest ? input.url : input instanceof URL ? input.href : String(input);
    const method = String(init.method ?? (isRequest ? input.method : 'GET')).toUpperCase();
    let url;
    try {
      url = new URL(href);
    } catch {
      throw new TypeError(`fetch: ${JSON.stringify(href)} is not an absolute URL`);
    }
    const allowed = (url.protocol === 'http:' || url.protocol === 'https:') && hostAllowed(domains, url.hostname);
    report({ method, url: url.href, allowed });
    if (!allowed) {
      throw peekError(
        codes.NETWORK_DENIED,
        `fetch ${method} ${url.href}: ${url.hostname} is not in capabilities.network.domains (${domains.length ? domains.join(', ') : 'none granted'})`,
      );
    }
    const signals = [signal, init.signal, isRequest ? input.signal : null].filter(Boolean);
    return platformFetch(input, { ...init, signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) });
  };
}

module.exports = { guardedFetch };
