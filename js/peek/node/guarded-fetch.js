'use strict';
// The fetch a run sees, as globalThis.fetch and as api.network.fetch: the
// platform fetch, allowed only to the manifest's domains, every request
// reported (allowed or not), each one given the run's signal so a run past
// its deadline stops issuing requests.
//
// It decides once (issue 24, item 5). The input is read once: a Request's
// url through the platform's own getter, anything else turned into a string
// once; that string is parsed by the platform URL, checked, and the same
// string is what the platform Request is built from. URL, Request, Headers
// and their getters are the platform's, taken before any worker code runs
// (when this module loads, or, for Node's lazily loaded Request, when the
// first guard is made: a run's process makes it before importing the
// worker), so a worker that replaces globalThis.URL or patches a prototype
// changes what it sees, not what the guard checks. Only the fields of `init`
// that a fetch means are carried (never `dispatcher`).
//
// Addresses: a granted name that resolves to a loopback, private, link-local
// or otherwise non-public address is refused unless that address is itself
// granted (./fetch-policy.js); the name is resolved once per run, and on Node
// the connection goes to that checked address and nowhere else: the request
// carries a dispatcher of our own, an Agent of the platform's HTTP client
// (undici, as bundled with Node) whose connect() opens the socket itself, to
// an address the guard approved for that scheme, host and port, with no
// second lookup. The report names the URL fetched and the address connected.
// On workerd, which has no such client, names are not resolved here and the
// platform's outbound policy decides. On Node without it (another dispatcher
// replaced Node's before the first guard was made), nothing would hold the
// connection to the address checked, so the guard refuses every request
// rather than fetch unchecked.
//
// Redirects are followed here, not by the platform (redirect: 'manual'), so
// every hop is checked and reported: an allowed host cannot send the request
// on to one that is not. A guard-rail, not a wall: code in the same process
// can reach the network without fetch (docs/peek.md).
const { codes, peekError } = require('../errors');
const { compileGrants, hostGranted, addressGranted, normalize, parseIp } = require('./fetch-policy');

/** Hops followed before giving up, as the Fetch standard does. */
const MAX_REDIRECTS = 20;
const isRedirect = (s) => s === 301 || s === 302 || s === 303 || s === 307 || s === 308;
/** Headers not carried to another origin (the Fetch standard drops Authorization; cookies go too). */
const CROSS_ORIGIN_DROP = Object.freeze(['authorization', 'cookie', 'proxy-authorization']);
const BODY_HEADERS = Object.freeze(['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']);
/** The init members a fetch means, carried to the platform's Request when given. */
const CARRIED = Object.freeze(['cache', 'credentials', 'integrity', 'keepalive', 'mode', 'referrer', 'referrerPolicy']);
const CONNECT_TIMEOUT_MS = 10_000;

// The platform, taken now: before any worker code runs.
const uncurry = Function.prototype.bind.bind(Function.prototype.call);
const getOwn = Object.getOwnPropertyDescriptor;
const getter = (proto, name) => {
  const d = proto ? getOwn(proto, name) : undefined;
  return d && typeof d.get === 'function' ? uncurry(d.get) : (o) => o[name];
};
const method = (proto, name) => {
  const f = proto ? proto[name] : undefined;
  return typeof f === 'function' ? uncurry(f) : (o, a, b) => o[name](a, b);
};
const dataProperty = (name) => {
  const d = getOwn(globalThis, name);
  return d && 'value' in d ? d.value : undefined;
};
const TypeErrorClass = TypeError;
const PromiseClass = Promise;
const toUpperCase = uncurry(String.prototype.toUpperCase);
const NativeURL = globalThis.URL;
const url = {
  href: getter(NativeURL.prototype, 'href'),
  protocol: getter(NativeURL.prototype, 'protocol'),
  hostname: getter(NativeURL.prototype, 'hostname'),
  port: getter(NativeURL.prototype, 'port'),
  origin: getter(NativeURL.prototype, 'origin'),
};
const loadFetch = dataProperty('fetch');
const abortAny = typeof AbortSignal === 'function' && typeof AbortSignal.any === 'function' ? AbortSignal.any.bind(AbortSignal) : null;
const weakSet = { make: () => new WeakSet(), add: method(WeakSet.prototype, 'add'), has: method(WeakSet.prototype, 'has') };
// Node, and not workerd (whose nodejs_compat may set process.versions.node too): taken before worker code runs.
const onNode = typeof process === 'object' && typeof process?.versions?.node === 'string' && !(typeof navigator === 'object' && navigator !== null && navigator.userAgent === 'Cloudflare-Workers');
const getBuiltinModule = typeof process === 'object' && typeof process?.getBuiltinModule === 'function' ? process.getBuiltinModule.bind(process) : null;
// Where undici keeps its global dispatcher: '.2' from undici 8 (Node 26, with a wrapper at '.1'), '.1' before.
const UNDICI_DISPATCHERS = Object.freeze([Symbol.for('undici.globalDispatcher.2'), Symbol.for('undici.globalDispatcher.1')]);

/** Request, Headers, Response and the members the guard uses. Node loads them lazily: taken at the first guard that may fetch. */
let web = null;
function takeWeb() {
  if (web !== null) return web;
  const Request = globalThis.Request;
  const Headers = globalThis.Headers;
  const Response = globalThis.Response;
  const stream = typeof ReadableStream === 'function' ? ReadableStream.prototype : null;
  web = Object.freeze({
    Request,
    Headers,
    request: {
      url: getter(Request.prototype, 'url'),
      method: getter(Request.prototype, 'method'),
      headers: getter(Request.prototype, 'headers'),
      body: getter(Request.prototype, 'body'),
      redirect: getter(Request.prototype, 'redirect'),
      signal: getter(Request.prototype, 'signal'),
      referrer: getter(Request.prototype, 'referrer'),
      referrerPolicy: getter(Request.prototype, 'referrerPolicy'),
      clone: method(Request.prototype, 'clone'),
      arrayBuffer: method(Request.prototype, 'arrayBuffer'),
    },
    headers: { get: method(Headers.prototype, 'get'), delete: method(Headers.prototype, 'delete') },
    response: { status: getter(Response.prototype, 'status'), headers: getter(Response.prototype, 'headers'), body: getter(Response.prototype, 'body') },
    cancel: method(stream, 'cancel'),
  });
  return web;
}
if (dataProperty('Request') !== undefined && dataProperty('Headers') !== undefined && dataProperty('Response') !== undefined) takeWeb();

/**
 * Node: the resolver, the socket openers and the Agent class of the undici
 * that Node's fetch is (found through the global dispatcher it installs when
 * it loads; Node exposes no Agent). Null elsewhere, and if another dispatcher
 * replaced Node's before the first guard was made: then, on Node, every
 * request is refused; on workerd names are not resolved here.
 */
let node;
function takeNode() {
  if (node !== undefined) return node;
  node = null;
  if (getBuiltinModule === null || loadFetch === undefined) return null;
  takeWeb(); // loads Node's undici, which installs its global dispatcher
  let Agent = null;
  for (let i = 0; i < UNDICI_DISPATCHERS.length && Agent === null; i++) {
    const ctor = globalThis[UNDICI_DISPATCHERS[i]]?.constructor;
    if (typeof ctor === 'function' && ctor.name === 'Agent') Agent = ctor;
  }
  if (Agent === null) return null; // not Node's fetch (workerd has getBuiltinModule too)
  const dns = getBuiltinModule('node:dns');
  const net = getBuiltinModule('node:net');
  const tls = getBuiltinModule('node:tls');
  if (!dns || !net || !tls) return null;
  node = Object.freeze({
    Agent,
    lookup: dns.lookup,
    netConnect: net.connect,
    tlsConnect: tls.connect,
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
  });
  return node;
}

/** The port a URL means: its own, or its scheme's. */
const portOf = (protocol, port) => (port === '' || port === undefined || port === null ? (protocol === 'https:' ? 443 : 80) : +port);
/** What the connector is asked for, as the guard checked it (the platform gives IPv6 hosts without brackets). */
const keyOf = (protocol, hostname, port) => `${protocol}//${normalize(`${hostname}`)}:${portOf(protocol, port)}`;

/**
 * @param {{
 *   domains: string[],
 *   signal: AbortSignal,
 *   report: (r: { method: string, url: string, allowed: boolean, address?: string }) => void,
 *   fetch?: typeof fetch,
 *   lookup?: (hostname: string, callback: (err: Error | null, answers?: { address: string, family: number }[]) => void) => void,
 * }} options  `lookup` replaces the name resolver (tests); `fetch` the platform's fetch, taken before worker code runs.
 * @returns {typeof fetch}
 */
function guardedFetch({ domains, signal, report, fetch: platformFetch = loadFetch, lookup }) {
  const grants = compileGrants(domains);
  const listed = domains.length ? domains.join(', ') : 'none granted';
  const mayFetch = domains.length > 0;
  // Taken now, in a run's process before the worker is imported; a guard that grants nothing never fetches.
  const w = mayFetch ? takeWeb() : web;
  const n = mayFetch ? takeNode() : null;
  const resolver = lookup ?? (n ? (hostname, cb) => n.lookup(hostname, { all: true, verbatim: true }, cb) : null);
  // The run's one answer per name, and what the connector may open: `${protocol}//${hostname}:${port}` → address.
  const answers = { __proto__: null };
  const approved = { __proto__: null };
  const denials = weakSet.make();

  const denial = (message) => {
    const err = peekError(codes.NETWORK_DENIED, message);
    weakSet.add(denials, err);
    return err;
  };

  // The socket of every connection the platform opens for this guard: to the approved address, or none.
  const connect = (opts, callback) => {
    let done = false;
    const finish = (err, socket) => {
      if (done) return;
      done = true;
      callback(err, socket);
    };
    const protocol = `${opts.protocol}`;
    const hostname = `${opts.hostname}`;
    const port = portOf(protocol, opts.port);
    const key = keyOf(protocol, hostname, port);
    // The address approved, parsed and checked again here: this is the one the socket goes to.
    const text = approved[key];
    const ip = typeof text === 'string' ? parseIp(text) : null;
    if (ip === null || !addressGranted(grants, hostname, ip)) {
      report({ method: 'CONNECT', url: key, allowed: false });
      return finish(denial(`fetch: a connection to ${key} that the guard did not check`));
    }
    let socket;
    try {
      socket =
        protocol === 'https:'
          ? n.tlsConnect({ host: ip.text, port, servername: parseIp(normalize(hostname)) === null ? normalize(hostname) : undefined, ALPNProtocols: ['http/1.1'] })
          : n.netConnect({ host: ip.text, port });
    } catch (err) {
      return finish(err);
    }
    const timer = n.setTimeout(() => socket.destroy(new TypeErrorClass(`fetch: connecting to ${ip.text}:${port} timed out`)), CONNECT_TIMEOUT_MS);
    socket.once(protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      n.clearTimeout(timer);
      finish(null, socket);
    });
    socket.once('error', (err) => {
      n.clearTimeout(timer);
      finish(err);
    });
  };
  const dispatcher = n ? new n.Agent({ connect }) : null;
  // Node without its HTTP client: no request could be held to the address checked (nor a name checked at all), so none is made.
  const unpinned =
    onNode && dispatcher === null
      ? "Node's HTTP client (the undici Agent behind its fetch, through which the guard connects only to the address it checked) was not found in this process: another dispatcher replaced it before the run, so no request is made"
      : null;

  /** The one answer for a name in this run: { ip, refused } where refused is an answer not granted. */
  const resolve = (hostname) =>
    new PromiseClass((done, fail) => {
      resolver(hostname, (err, list) => {
        if (err) return fail(new TypeErrorClass('fetch failed', { cause: err }));
        let first = null;
        let refused = null;
        const count = list?.length ?? 0;
        for (let i = 0; i < count; i++) {
          const text = `${list[i]?.address}`;
          const ip = parseIp(text);
          if (first === null && ip !== null) first = ip;
          if (refused === null && (ip === null || !addressGranted(grants, hostname, ip))) refused = ip ?? { text };
        }
        if (first === null && refused === null) return fail(new TypeErrorClass('fetch failed', { cause: new Error(`${hostname}: no address`) }));
        done({ ip: first, refused });
      });
    });

  /** Checks one hop; reports it; returns the parsed URL's parts. */
  const check = async (method, href) => {
    let u;
    try {
      u = new NativeURL(href);
    } catch {
      throw new TypeErrorClass(`fetch: "${href}" is not an absolute URL`);
    }
    const full = url.href(u);
    const protocol = url.protocol(u);
    const hostname = url.hostname(u);
    const deny = (why, address) => {
      report(address === undefined ? { method, url: full, allowed: false } : { method, url: full, allowed: false, address });
      throw denial(`fetch ${method} ${full}: ${why}`);
    };
    if (protocol !== 'http:' && protocol !== 'https:') deny(`${protocol} is not http: or https:`);
    const byName = hostGranted(grants, hostname);
    if (byName === false) deny(`${hostname} is not in capabilities.network.domains (${listed})`);
    if (unpinned !== null) deny(unpinned);
    let ip = null;
    if (byName !== true) {
      ip = byName;
      if (!addressGranted(grants, hostname, ip)) deny(`${ip.text} is a loopback, private or reserved address, and not granted as such`, ip.text);
    } else if (resolver !== null) {
      let answer = answers[hostname];
      if (answer === undefined) {
        try {
          answer = await resolve(hostname);
        } catch (err) {
          report({ method, url: full, allowed: true });
          throw err;
        }
        answers[hostname] = answer;
      }
      if (answer.refused !== null) {
        deny(`${hostname} resolves to ${answer.refused.text}, a loopback, private or reserved address, not granted as such`, answer.refused.text);
      }
      ip = answer.ip;
    }
    if (ip !== null) approved[keyOf(protocol, hostname, url.port(u))] = ip.text;
    report(ip === null ? { method, url: full, allowed: true } : { method, url: full, allowed: true, address: ip.text });
    return { href: full, origin: url.origin(u) };
  };

  const newRequest = (href, init) => {
    if (dispatcher !== null) init.dispatcher = dispatcher;
    return new w.Request(href, init);
  };
  // The platform's fetch reads its init's dispatcher before the Request's, and an init it is not given is an
  // object whose prototype is Object.prototype, which the worker can give a dispatcher: ours goes in the init
  // too, with what a non-empty init resets (the referrer and its policy) as the Request has them.
  const send = (request) =>
    dispatcher === null ? platformFetch(request) : platformFetch(request, { __proto__: null, dispatcher, referrer: w.request.referrer(request), referrerPolicy: w.request.referrerPolicy(request) });

  return async function fetch(input, init) {
    // The input, read once.
    let source = null;
    let href;
    if (w !== null && typeof input === 'object' && input !== null) {
      try {
        href = w.request.url(input);
        source = input;
      } catch {}
    }
    // Nothing granted: nothing will be fetched, and the platform's Request may not be loaded; the URL is for the report.
    if (source === null) href = w === null && typeof input?.url === 'string' ? input.url : `${input}`;
    const given = init === undefined || init === null ? {} : init;
    const initMethod = given.method;
    const initHeaders = given.headers;
    const initBody = given.body;
    const initRedirect = given.redirect;
    const initSignal = given.signal;
    const initDuplex = given.duplex;
    let method = toUpperCase(`${initMethod ?? (source !== null ? w.request.method(source) : 'GET')}`);
    let current = await check(method, href);

    const mode = `${initRedirect ?? (source !== null ? w.request.redirect(source) : 'follow')}`;
    const signals = [signal];
    if (initSignal !== undefined && initSignal !== null) signals[signals.length] = initSignal;
    if (source !== null) signals[signals.length] = w.request.signal(source);
    const runSignal = signals.length === 1 || abortAny === null ? signal : abortAny(signals);

    // The first hop: the caller's method, headers and body, on the URL checked.
    const first = { __proto__: null, method, signal: runSignal, redirect: 'manual' };
    for (let i = 0; i < CARRIED.length; i++) {
      const v = given[CARRIED[i]];
      if (v !== undefined) first[CARRIED[i]] = v;
    }
    if (initHeaders !== undefined) first.headers = initHeaders;
    else if (source !== null) first.headers = new w.Headers(w.request.headers(source));
    if (initBody !== undefined) {
      first.body = initBody;
      if (initDuplex !== undefined) first.duplex = initDuplex;
    } else if (source !== null && w.request.body(source) !== null) {
      first.body = await w.request.arrayBuffer(source);
    }
    let request = newRequest(current.href, first);
    for (let hop = 0; ; hop++) {
      const replay = w.request.body(request) !== null ? w.request.clone(request) : null;
      let response;
      try {
        response = await send(request);
      } catch (err) {
        const cause = err?.cause;
        if (cause !== null && typeof cause === 'object' && weakSet.has(denials, cause)) throw cause;
        throw err;
      }
      const status = w.response.status(response);
      if (!isRedirect(status) || mode === 'manual') return response;
      const location = w.headers.get(w.response.headers(response), 'location');
      if (location === null) return response;
      if (mode === 'error') throw new TypeErrorClass(`fetch ${method} ${current.href}: redirected to ${location} (redirect: 'error')`);
      if (hop >= MAX_REDIRECTS) throw new TypeErrorClass(`fetch ${method} ${href}: more than ${MAX_REDIRECTS} redirects`);
      let next;
      try {
        next = new NativeURL(location, current.href);
      } catch {
        throw new TypeErrorClass(`fetch ${method} ${current.href}: the redirect to "${location}" is not a URL`);
      }
      const body = w.response.body(response);
      if (body !== null) {
        try {
          await w.cancel(body);
        } catch {}
      }
      // 303 turns anything but HEAD into GET; 301/302 turn POST into GET. Then the body goes.
      const toGet = (status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST');
      const headers = new w.Headers(w.request.headers(request));
      if (toGet) {
        method = 'GET';
        for (let i = 0; i < BODY_HEADERS.length; i++) w.headers.delete(headers, BODY_HEADERS[i]);
      }
      if (url.origin(next) !== current.origin) for (let i = 0; i < CROSS_ORIGIN_DROP.length; i++) w.headers.delete(headers, CROSS_ORIGIN_DROP[i]);
      current = await check(method, url.href(next));
      const nextBody = toGet || replay === null ? null : w.request.body(replay);
      const hopInit = { __proto__: null, method, headers, body: nextBody, signal: runSignal, redirect: 'manual' };
      if (nextBody !== null) hopInit.duplex = 'half';
      request = newRequest(current.href, hopInit);
    }
  };
}

/**
 * Takes the platform's Request, Headers and (on Node) its HTTP client now, as
 * the first guard that may fetch would (~25 ms: Node loads fetch lazily). A
 * warm spare does it before it is ready (child.js). Never after worker code ran.
 */
function preparePlatform() {
  takeWeb();
  takeNode();
}

module.exports = { guardedFetch, preparePlatform };
