'use strict';
// One run's process, seen from the supervisor. The host drives it through
// the realm operations (installGlobals, makeFetch, loadWorkerModule, close);
// this file turns each into messages to child.js and answers the child's api
// calls against the api object the host built, which stays in this process
// with the store and the credential it closes over.
//
// State, and what comes next:
//   open     — the process is booted or booting. Next: loaded (module imported), or closed.
//   loaded   — the entry may be invoked. Next: running.
//   running  — the entry runs; api calls are answered. Next: settling (waitUntil work), done, or closed.
//   settling — the entry returned, waitUntil promises are pending; api calls still answered. Next: done.
//   done     — nothing of the worker runs any more in our view: api calls are ignored
//              (a timer left behind by a throwing entry cannot act). Next: closed.
//   closed   — the process was killed and has exited.
const readline = require('node:readline');
const { describeShape, functionAt } = require('../api-shape');
const { LOCAL } = require('../api');
const { guardedFetch } = require('./guarded-fetch');
const { codes, peekError, toPlainError, fromPlainError } = require('../errors');
const { now } = require('./process');

class NodeRealm {
  #p;
  #manifest;
  #log;
  #memoryMb;
  #status = 'open';
  #api = null;
  #domains = [];
  #waiters = new Map();
  #stderrTail = [];
  #sawOom = false;
  #killedByUs = false;
  /** Timestamps (epoch ms, fractional) for the benchmark's breakdown. */
  timing = {};

  /**
   * @param {ReturnType<import('./process').forkRunProcess>} p the process, from the spare pool
   * @param {import('../../../peek').Manifest} manifest
   * @param {{ signal: AbortSignal, log: (record: object) => void, memoryMb: number }} options
   */
  constructor(p, manifest, { signal, log, memoryMb }) {
    this.#p = p;
    this.#manifest = manifest;
    this.#log = log;
    this.#memoryMb = memoryMb;
    this.timing.forkAt = p.forkAt;
    const { proc } = p;
    proc.on('message', (m) => this.#onMessage(m));
    this.#pipe(proc.stdout, 'info');
    this.#pipe(proc.stderr, 'warn');
    p.exited.then((exit) => this.#onExit(exit));
    const onAbort = () => {
      if (proc.connected) proc.send({ t: 'abort', reason: toPlainError(signal.reason) }, () => {});
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }

  /** Waits for the process to have booted. */
  async ready() {
    const r = await this.#p.ready;
    this.timing.childOrigin = r.origin;
    this.timing.readyAt = r.at;
  }

  /**
   * Records the globals for the run's process: `app` (with window.app the
   * same object) is described by shape, never sent as itself.
   * @param {{ app: object, window?: { app: object }, fetch?: Function }} globals
   */
  installGlobals(globals) {
    if (!globals || typeof globals.app !== 'object') throw new TypeError('installGlobals({ app }): app must be the api object');
    if (globals.window !== undefined && globals.window?.app !== globals.app) throw new TypeError('installGlobals: window.app must be app itself');
    if (globals.fetch !== undefined && globals.fetch[LOCAL] !== 'fetch') throw new TypeError('installGlobals: fetch must come from this realm’s makeFetch');
    this.#api = globals.app;
  }

  /**
   * The guarded fetch for this run. In the run's process the child's own copy
   * is used (api.network.fetch and globalThis.fetch alike); this function is
   * the same guard, should the host call it here.
   */
  makeFetch(domains, signal) {
    this.#domains = [...domains];
    const fetch = guardedFetch({ domains: this.#domains, signal, report: (r) => this.#netLog(r) });
    Object.defineProperty(fetch, LOCAL, { value: 'fetch' });
    return fetch;
  }

  /**
   * Imports the worker in the run's process and returns a namespace whose
   * functions run the real exports there.
   */
  async loadWorkerModule(manifest) {
    if (this.#api === null) throw new Error('installGlobals must come before loadWorkerModule: a module may read window.app as it loads');
    await this.ready();
    const loaded = this.#expect('loaded');
    this.timing.jobAt = now();
    this.#p.proc.send({ t: 'job', shape: describeShape(this.#api), domains: this.#domains, href: manifest.worker.href });
    const m = await loaded;
    Object.assign(this.timing, m.timing);
    if (!m.ok) throw fromPlainError(m.error);
    this.#status = 'loaded';
    const ns = Object.create(null);
    for (const [name, type] of m.exports) {
      if (type === 'function') ns[name] = (api, ctx) => this.#invoke(name, api, ctx);
    }
    Object.defineProperty(ns, Symbol.toStringTag, { value: 'Module' });
    return Object.freeze(ns);
  }

  async #invoke(name, api, ctx) {
    if (this.#status !== 'loaded') throw new Error('a realm runs one entry, once');
    if (api !== this.#api) throw new TypeError('the entry must be given the api installed as globalThis.app');
    this.#status = 'running';
    const result = this.#expect('result');
    this.#p.proc.send({ t: 'invoke', name, trigger: ctx.trigger, deadline: ctx.deadline });
    const r = await result;
    Object.assign(this.timing, r.timing);
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
    } else {
      this.#status = 'done';
    }
    return r.value;
  }

  /**
   * Ends the run's process: waits `graceMs` (so an aborted signal can reach
   * it), then SIGKILL, which also stops a synchronous loop. Resolves on exit.
   */
  async close({ graceMs = 0 } = {}) {
    if (this.#status === 'closed') return;
    const { proc } = this.#p;
    if (graceMs > 0) {
      // The worker may still act on the abort meanwhile (log, give up a fetch).
      await Promise.race([this.#p.exited, new Promise((r) => setTimeout(r, graceMs))]);
    }
    if (this.#status !== 'closed') this.#status = 'done';
    this.timing.killAt = now();
    this.#killedByUs = true;
    proc.kill('SIGKILL');
    const exit = await this.#p.exited;
    this.timing.exitAt = exit.at;
    this.#status = 'closed';
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
    // Once the run is over, nothing of the worker may act any more.
    if (this.#status === 'done' || this.#status === 'closed') return;
    if (m.t === 'call' || m.t === 'cast') this.#answer(m);
    else if (m.t === 'net') this.#netLog(m);
  }

  async #answer(m) {
    const fn = this.#api === null ? null : functionAt(this.#api, m.path);
    let reply;
    if (fn === null) {
      reply = { t: 'reply', id: m.id, ok: false, error: toPlainError(new TypeError(`api.${m.path.join('.')} is not a function`)) };
    } else {
      try {
        reply = { t: 'reply', id: m.id, ok: true, value: await fn(...m.args) };
      } catch (err) {
        reply = { t: 'reply', id: m.id, ok: false, error: toPlainError(err) };
      }
    }
    if (m.t === 'call' && this.#p.proc.connected) this.#p.proc.send(reply, () => {});
  }

  #netLog({ method, url, allowed }) {
    this.#log({ level: allowed ? 'info' : 'warn', worker: this.#manifest.name, args: ['fetch', method, url, allowed ? 'allowed' : 'denied'] });
  }

  #pipe(stream, level) {
    if (!stream) return;
    const lines = readline.createInterface({ input: stream });
    lines.on('line', (line) => {
      if (level === 'warn') {
        if (/Reached heap limit|JavaScript heap out of memory/.test(line)) this.#sawOom = true;
        this.#stderrTail.push(line);
        if (this.#stderrTail.length > 5) this.#stderrTail.shift();
      }
      this.#log({ level, worker: this.#manifest.name, args: [line] });
    });
  }

  #onExit({ code, signal }) {
    this.#status = 'closed';
    if (this.#waiters.size === 0) return;
    const oom = this.#sawOom;
    const why = this.#killedByUs
      ? 'it was stopped'
      : oom
        ? `it ran out of memory (the ceiling is ${this.#memoryMb} MB)`
        : `it exited (code ${code}, signal ${signal})${this.#stderrTail.length ? `: ${this.#stderrTail.join(' | ')}` : ''}`;
    const err = peekError(codes.CRASHED, `worker ${this.#manifest.name}: the run's process ended before the run finished; ${why}`);
    for (const w of this.#waiters.values()) w.reject(err);
    this.#waiters.clear();
  }
}

module.exports = { NodeRealm };
