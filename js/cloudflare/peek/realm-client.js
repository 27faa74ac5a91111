'use strict';
// Node side: one run's realm in workerd, seen from the host. The same
// operations and states as ../../peek/node/realm.js (the Node adapter's
// process realm), over a WebSocket to the worker's service instead of IPC
// to a child: the run's api calls come back as messages and are answered
// against the api object the host built, which stays in Node with the store
// and the credential it closes over.
const { describeShape, functionAt } = require('../../peek/api-shape');
const { LOCAL } = require('../../peek/api');
const { guardedFetch } = require('../../peek/node/guarded-fetch');
const { codes, peekError, toPlainError, fromPlainError } = require('../../peek/errors');
const wire = require('../wire');

class WorkerdRealm {
  #ws;
  #manifest;
  #log;
  #status = 'open';
  #api = null;
  #domains = [];
  #waiters = new Map();
  #opened;
  #closed;

  /**
   * @param {string} url ws://…/peek/realm/<name>
   * @param {string} token the deployment's admin token
   * @param {import('../../../peek').Manifest} manifest
   * @param {{ signal: AbortSignal, log: (record: object) => void }} options
   */
  constructor(url, token, manifest, { signal, log }) {
    const WebSocket = require('ws');
    this.#manifest = manifest;
    this.#log = log;
    this.#ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    this.#opened = new Promise((resolve, reject) => {
      this.#ws.once('open', resolve);
      this.#ws.once('error', (err) => reject(peekError(codes.CRASHED, `worker ${manifest.name}: cannot open its realm in workerd (${err.message})`)));
      this.#ws.once('unexpected-response', (req, res) => reject(peekError(codes.CRASHED, `worker ${manifest.name}: workerd answered ${res.statusCode} to the realm's upgrade`)));
    });
    this.#opened.catch(() => {});
    this.#closed = new Promise((resolve) => this.#ws.once('close', resolve));
    this.#closed.then(() => this.#onClose());
    this.#ws.on('message', (data) => this.#onMessage(wire.decode(String(data))));
    const onAbort = () => this.#send({ t: 'abort', reason: toPlainError(signal.reason) });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  ready() {
    return this.#opened;
  }

  installGlobals(globals) {
    if (!globals || typeof globals.app !== 'object') throw new TypeError('installGlobals({ app }): app must be the api object');
    if (globals.window !== undefined && globals.window?.app !== globals.app) throw new TypeError('installGlobals: window.app must be app itself');
    if (globals.fetch !== undefined && globals.fetch[LOCAL] !== 'fetch') throw new TypeError('installGlobals: fetch must come from this realm’s makeFetch');
    this.#api = globals.app;
  }

  /** The guarded fetch; the realm in workerd uses its own copy of the same guard. */
  makeFetch(domains, signal) {
    this.#domains = [...domains];
    const fetch = guardedFetch({ domains: this.#domains, signal, report: (r) => this.#netLog(r) });
    Object.defineProperty(fetch, LOCAL, { value: 'fetch' });
    return fetch;
  }

  async loadWorkerModule(manifest) {
    if (this.#api === null) throw new Error('installGlobals must come before loadWorkerModule: a module may read window.app as it loads');
    await this.ready();
    const loaded = this.#expect('loaded');
    this.#send({ t: 'job', shape: describeShape(this.#api), domains: this.#domains });
    const m = await loaded;
    if (!m.ok) throw fromPlainError(m.error);
    this.#status = 'loaded';
    const ns = Object.create(null);
    for (const [name, type] of m.exports) if (type === 'function') ns[name] = (api, ctx) => this.#invoke(name, api, ctx);
    Object.defineProperty(ns, Symbol.toStringTag, { value: 'Module' });
    return Object.freeze(ns);
  }

  async #invoke(name, api, ctx) {
    if (this.#status !== 'loaded') throw new Error('a realm runs one entry, once');
    if (api !== this.#api) throw new TypeError('the entry must be given the api installed as globalThis.app');
    this.#status = 'running';
    const result = this.#expect('result');
    this.#send({ t: 'invoke', name, trigger: ctx.trigger, deadline: ctx.deadline });
    const r = await result;
    if (!r.ok) {
      this.#status = 'done';
      throw fromPlainError(r.error);
    }
    if (r.pending > 0) {
      this.#status = 'settling';
      ctx.waitUntil(
        this.#expect('settled').then((s) => {
          this.#status = 'done';
          if (s.errors.length > 0) throw fromPlainError(s.errors[0]);
        }),
      );
    } else this.#status = 'done';
    return r.value;
  }

  /**
   * Ends the run: after `graceMs` (so an aborted signal can reach the
   * worker), closes the socket. From then on nothing of the run reaches the
   * host. A synchronous loop in the isolate is not stopped by this (local
   * workerd has no CPU limit; Cloudflare's stops it).
   */
  async close({ graceMs = 0 } = {}) {
    if (this.#status === 'closed') return;
    if (graceMs > 0) await Promise.race([this.#closed, new Promise((r) => setTimeout(r, graceMs))]);
    if (this.#status !== 'closed') this.#status = 'done';
    try {
      this.#ws.close(1000, 'run over');
    } catch {
      this.#ws.terminate();
    }
    const t = setTimeout(() => this.#ws.terminate(), 1000);
    await this.#closed;
    clearTimeout(t);
    this.#status = 'closed';
  }

  #send(m) {
    if (this.#ws.readyState !== 1) return;
    this.#ws.send(wire.encode(m, () => `a ${m.t} message to the realm`));
  }

  #expect(kind) {
    return new Promise((resolve, reject) => this.#waiters.set(kind, { resolve, reject }));
  }

  #onMessage(m) {
    if (!m || typeof m.t !== 'string') return;
    const waiter = this.#waiters.get(m.t);
    if (waiter) {
      this.#waiters.delete(m.t);
      waiter.resolve(m);
      return;
    }
    if (this.#status === 'done' || this.#status === 'closed') return;
    if (m.t === 'call' || m.t === 'cast') this.#answer(m);
    else if (m.t === 'net') this.#netLog(m);
  }

  async #answer(m) {
    const fn = this.#api === null ? null : functionAt(this.#api, m.path);
    let reply;
    if (fn === null) reply = { t: 'reply', id: m.id, ok: false, error: toPlainError(new TypeError(`api.${m.path.join('.')} is not a function`)) };
    else {
      try {
        reply = { t: 'reply', id: m.id, ok: true, value: await fn(...m.args) };
      } catch (err) {
        reply = { t: 'reply', id: m.id, ok: false, error: toPlainError(err) };
      }
    }
    if (m.t === 'call') {
      try {
        this.#send(reply);
      } catch (err) {
        this.#send({ t: 'reply', id: m.id, ok: false, error: toPlainError(err) });
      }
    }
  }

  #netLog({ method, url, allowed }) {
    this.#log({ level: allowed ? 'info' : 'warn', worker: this.#manifest.name, args: ['fetch', method, url, allowed ? 'allowed' : 'denied'] });
  }

  #onClose() {
    const byUs = this.#status === 'done' || this.#status === 'closed';
    this.#status = 'closed';
    if (this.#waiters.size === 0) return;
    const err = peekError(codes.CRASHED, `worker ${this.#manifest.name}: the realm's socket closed before the run finished; ${byUs ? 'it was stopped' : 'workerd ended it'}`);
    for (const w of this.#waiters.values()) w.reject(err);
    this.#waiters.clear();
  }
}

module.exports = { WorkerdRealm };
