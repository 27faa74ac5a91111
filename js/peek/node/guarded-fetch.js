'use strict';
// The fetch a run sees, as globalThis.fetch and as api.network.fetch: the
// platform fetch, allowed only to the manifest's domains, every request
// reported (allowed or not), each one given the run's signal so a run past
// its deadline stops issuing requests. Redirects are followed here, not by
// the platform (redirect: 'manual'), so every hop is checked and reported:
// an allowed host cannot send the request on to one that is not. A
// guard-rail, not a wall: code in the same process can reach the network
// without fetch (docs/peek.md).
const { hostAllowed } = require('../domains');
const { codes, peekError } = require('../errors');

/** Hops followed before giving up, as the Fetch standard does. */
const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Headers not carried to another origin (the Fetch standard drops Authorization; cookies go too). */
const CROSS_ORIGIN_DROP = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * @param {{ domains: string[], signal: AbortSignal, report: (r: { method: string, url: string, allowed: boolean }) => void, fetch?: typeof fetch }} options
 * @returns {typeof fetch}
 */
function guardedFetch({ domains, signal, report, fetch: platformFetch = globalThis.fetch }) {
  const check = (method, href) => {
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
    return url;
  };

  return async function fetch(input, init = {}) {
    const isRequest = typeof Request === 'function' && input instanceof Request;
    const href = isRequest ? input.url : input instanceof URL ? input.href : String(input);
    let method = String(init.method ?? (isRequest ? input.method : 'GET')).toUpperCase();
    let url = check(method, href);
    const mode = init.redirect ?? (isRequest ? input.redirect : 'follow');
    const signals = [signal, init.signal, isRequest ? input.signal : null].filter(Boolean);
    const runSignal = signals.length === 1 ? signals[0] : AbortSignal.any(signals);

    // The first hop goes out as the caller made it; later hops are rebuilt
    // from it (method, headers, body per the Fetch standard's redirect rules).
    let request = new Request(input, { ...init, signal: runSignal, redirect: 'manual' });
    for (let hop = 0; ; hop++) {
      const replay = request.body !== null ? request.clone() : null;
      const response = await platformFetch(request);
      if (!REDIRECTS.has(response.status) || mode === 'manual') return response;
      const location = response.headers.get('location');
      if (location === null) return response;
      if (mode === 'error') throw new TypeError(`fetch ${method} ${url.href}: redirected to ${location} (redirect: 'error')`);
      if (hop >= MAX_REDIRECTS) throw new TypeError(`fetch ${method} ${href}: more than ${MAX_REDIRECTS} redirects`);
      let next;
      try {
        next = new URL(location, url);
      } catch {
        throw new TypeError(`fetch ${method} ${url.href}: the redirect to ${JSON.stringify(location)} is not a URL`);
      }
      await response.body?.cancel().catch(() => {});
      // 303 turns anything but HEAD into GET; 301/302 turn POST into GET. Then the body goes.
      const toGet = (response.status === 303 && method !== 'HEAD') || ((response.status === 301 || response.status === 302) && method === 'POST');
      const headers = new Headers(request.headers);
      if (toGet) {
        method = 'GET';
        for (const h of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) headers.delete(h);
      }
      if (next.origin !== url.origin) for (const h of CROSS_ORIGIN_DROP) headers.delete(h);
      url = check(method, next.href);
      const body = toGet || replay === null ? null : replay.body;
      request = new Request(url.href, { method, headers, body, signal: runSignal, redirect: 'manual', ...(body !== null ? { duplex: 'half' } : {}) });
    }
  };
}

module.exports = { guardedFetch };
