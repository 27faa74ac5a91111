'use strict';
// The realm protocol, host side: one run's realm as the shared host sees it,
// whatever carries the messages (IPC to a forked Node process, a WebSocket to
// a workerd service). Both adapters' realms extend RealmClient and supply the
// transport: `_send(message)`, `ready()`, `close()`, and call `_receive(m)` for
// every message that arrives and `_ended(err)` when the transport is gone.
//
// Messages out: job { shape, domains, …extra }, invoke { name, trigger, deadline }, reply, abort.
// Messages in:  loaded, result, settled (answers), call, cast, net.
//
// State, and what comes next:
//   open     — the realm is booted or booting. Next: loaded (module imported), or closed.
//   loaded   — the entry may be invoked. Next: running.
//   running  — the entry runs; api calls are answered. Next: settling (waitUntil work), done, or closed.
//   settling — the entry returned, waitUntil promises are pending; api calls still answered. Next: done.
//   done     — nothing of the worker runs any more in our view: api calls are ignored
//              (a timer left behind by a throwing entry cannot act). Next: closed.
//   closed   — the transport is gone (process exited, socket closed).
//
// Answers (loaded, result, settled) are kept in an inbox until asked for:
// a transport may deliver 'result' and 'settled' in one tick, before the code
// that awaited 'result' has asked for 'settled'. A waiter registered late
// finds its answer there instead of waiting for one that already came.
//
// Nothing from a realm is believed: every message is checked against the
// protocol (./frames.js, checkRealmMessage: its type, its fields and their
// types) and only the checked copy is used; an answer comes once, in its
// turn. A message that fails is a violation: `_violation(reason)` ends the
// run with ERR_PEEK_PROTOCOL, logged, and the transport's `_terminate()`
// ends the realm (the Node adapter SIGKILLs the process).
const { describeShape, functionAt } = require('../api-shape');
const { LOCAL } = require('../api');
const { guardedFetch } = require('../node/guarded-fetch');
const { FetchRelay } = require('../node/fetch-relay');
const { codes, peekError, toPlainError, fromPlainError } = require('../errors');
const { checkRealmMessage, ProtocolViolation } = require('./frames');

const ANSWERS = new Set(['loaded', 'result', 'settled']);
/** What a realm may send once it has a job ('ready' is the Node process's own, before). */
const FROM_REALM = new Set(['loaded', 'result', 'settled', 'call', 'cast', 'net']);
/**
 * What a sandboxed realm may send: its fetches are relayed and reported
 * here, so it has no 'net' report of its own to make (nor forge).
 */
const FROM_RELAYING_REALM = new Set(['loaded', 'result', 'settled', 'call', 'cast', 'fetch', 'fetch-abort']);

class RealmClient {
  #manifest;
  #log;
  #status = 'open';
  #api = null;
  #domains = [];
  #waiters = new Map();
  #inbox = new Map();
  #ended = null;
  #violation = null;
  #answered = new Set();
  #allow = FROM_REALM;
  #relay = null;
  #signal = null;
  /** Timestamps (epoch ms, fractional) for the benchmark's breakdown, where the transport reports them. */
  timing = {};

  /**
   * @param {import('../../../peek').Manifest} manifest
   * @param {{ log: (record: object) => void, relayFetch?: boolean }} options
   *   relayFetch: the realm has no network and sends its fetches here (a sandboxed Node run)
   */
  constructor(manifest, { log, relayFetch = false }) {
    this.#manifest = manifest;
    this.#log = log;
    if (relayFetch) this.#allow = FROM_RELAYING_REALM;
  }

  get manifest() {
    return this.#manifest;
  }

  get status() {
    return this.#status;
  }

  /** The transport's way to mark the run over (close() does this before killing). */
  _markDone() {
    if (this.#status !== 'closed') this.#status = 'done';
    this.#relay?.end();
  }

  _markClosed() {
    this.#status = 'closed';
    this.#relay?.end();
  }

  /**
   * Records the globals for the run's realm: `app` (with window.app the
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
   * The guarded fetch for this run. The realm uses its own copy of the same
   * guard (api.network.fetch and globalThis.fetch alike); this function is
   * the same guard, should the host call it here.
   */
  makeFetch(domains, signal) {
    this.#domains = [...domains];
    this.#signal = signal;
    const fetch = guardedFetch({ domains: this.#domains, signal, report: (r) => this.#netLog(r) });
    Object.defineProperty(fetch, LOCAL, { value: 'fetch' });
    return fetch;
  }

  /** Extra fields of the job message (the Node realm sends the module's URL). */
  _job(manifest) {
    return {};
  }

  /**
   * Imports the worker in the realm and returns a namespace whose functions
   * run the real exports there.
   */
  async loadWorkerModule(manifest) {
    if (this.#api === null) throw new Error('installGlobals must come before loadWorkerModule: a module may read window.app as it loads');
    await this.ready();
    // Made before the answer is awaited: a job that cannot be made leaves no waiter behind.
    const job = { t: 'job', shape: describeShape(this.#api), domains: this.#domains, grants: grantsOf(manifest), ...this._job(manifest) };
    const loaded = this.#expect('loaded');
    this.timing.jobAt = performance.timeOrigin + performance.now();
    this.#sendExpecting(job, ['loaded']);
    const m = await loaded;
    if (m.timing) Object.assign(this.timing, m.timing);
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
    // Both answers are asked for before the invoke goes out: nothing that
    // arrives for this run can come before its waiter.
    const result = this.#expect('result');
    const settled = this.#expect('settled');
    settled.catch(() => {});
    this.#sendExpecting({ t: 'invoke', name, trigger: ctx.trigger, deadline: ctx.deadline }, ['result', 'settled']);
    let r;
    try {
      r = await result;
    } catch (err) {
      this.#drop('settled');
      throw err;
    }
    if (r.timing) Object.assign(this.timing, r.timing);
    if (!r.ok) {
      this.#status = 'done';
      this.#drop('settled');
      throw fromPlainError(r.error);
    }
    if (r.pending > 0) {
      this.#status = 'settling';
      ctx.waitUntil(
        settled.then((s) => {
          this.#status = 'done';
          if (s.errors.length > 0) throw fromPlainError(s.errors[0]);
        }),
      );
    } else {
      this.#status = 'done';
      this.#drop('settled');
    }
    return r.value;
  }

  /** Sends `m`; if it cannot be sent (a value the frame cannot carry), the answers it was to bring are no longer awaited. */
  #sendExpecting(m, kinds) {
    try {
      this._send(m);
    } catch (err) {
      for (const k of kinds) this.#drop(k);
      throw err;
    }
  }

  #expect(kind) {
    if (this.#inbox.has(kind)) {
      const m = this.#inbox.get(kind);
      this.#inbox.delete(kind);
      return Promise.resolve(m);
    }
    if (this.#ended !== null) return Promise.reject(this.#ended);
    return new Promise((resolve, reject) => this.#waiters.set(kind, { resolve, reject }));
  }

  #drop(kind) {
    this.#waiters.delete(kind);
    this.#inbox.delete(kind);
  }

  /** Every message from the realm comes through here; it never throws. */
  _receive(raw) {
    if (this.#violation !== null) return;
    let m;
    try {
      m = this._translate(checkRealmMessage(raw, { allow: this.#allow }));
    } catch (err) {
      this._violation(err instanceof ProtocolViolation ? err.message : `a message could not be checked (${err?.message ?? err})`);
      return;
    }
    // Once the run is over, nothing of the worker may act any more.
    if (this.#status === 'done' || this.#status === 'closed') {
      this.#relay?.end();
      return;
    }
    if (ANSWERS.has(m.t)) {
      if (this.#answered.has(m.t)) return this._violation(`it sent a second '${m.t}'`);
      const inTurn = m.t === 'loaded' ? this.#status === 'open' : m.t === 'result' ? this.#status === 'running' : this.#answered.has('result');
      if (!inTurn) return this._violation(`it sent '${m.t}' out of turn (the run is ${this.#status})`);
      this.#answered.add(m.t);
      const waiter = this.#waiters.get(m.t);
      if (waiter) {
        this.#waiters.delete(m.t);
        waiter.resolve(m);
      } else if (this.#status !== 'closed') {
        this.#inbox.set(m.t, m);
      }
      return;
    }
    if (m.t === 'call' || m.t === 'cast') {
      this.#answer(m).catch((err) => this.#log({ level: 'error', worker: this.#manifest.name, args: [`answering api.${m.path.join('.')} failed:`, err?.message ?? String(err)] }));
    } else if (m.t === 'net') this.#netLog(m);
    else if (m.t === 'fetch') {
      const relay = this.#fetchRelay();
      if (relay.has(m.id)) return this._violation(`it reused fetch id ${m.id} while that request was in flight`);
      relay.request(m);
    } else if (m.t === 'fetch-abort') this.#relay?.abort(m.id);
  }

  #fetchRelay() {
    this.#relay ??= new FetchRelay({
      domains: this.#domains,
      signal: this.#signal ?? AbortSignal.abort(peekError(codes.CLOSED, 'the run has no signal')),
      report: (r) => this.#netLog(r),
      send: (reply) => {
        if (this.#status !== 'done' && this.#status !== 'closed') this._send(reply);
      },
    });
    return this.#relay;
  }

  /**
   * The realm broke the protocol or a budget: the run ends with
   * ERR_PEEK_PROTOCOL naming the worker and `reason`, logged; every answer
   * still awaited fails with it; the transport ends the realm. Once only.
   */
  _violation(reason) {
    if (this.#violation !== null) return;
    const name = this.#manifest.name;
    const err = peekError(codes.PROTOCOL, `worker ${name}: the run was ended for breaking the realm protocol: ${reason}`);
    this.#violation = err;
    this.#log({ level: 'error', worker: name, args: [err.message] });
    try {
      this._terminate(reason);
    } finally {
      if (this.#status !== 'closed') this.#status = 'done';
      this.#relay?.end();
      this.#ended = err;
      const waiting = [...this.#waiters.values()];
      this.#waiters.clear();
      this.#inbox.clear();
      for (const w of waiting) w.reject(err);
    }
  }

  /** The violation that ended the run, or null. */
  get violation() {
    return this.#violation;
  }

  /** A checked message, as the transport wants the host to see it (by default as it is). */
  _translate(m) {
    return m;
  }

  /** Ends the realm after a violation (the transport's; by default nothing: close() follows). */
  _terminate(reason) {}

  /**
   * The transport is gone: every answer still awaited fails with `err`
   * (made lazily: `why(byUs)` says whether we ended it).
   * @param {(byUs: boolean) => Error} why
   */
  _ended(why) {
    const byUs = this.#status === 'done' || this.#status === 'closed';
    this.#status = 'closed';
    this.#relay?.end();
    const err = this.#violation ?? why(byUs);
    this.#ended = err;
    const waiting = [...this.#waiters.values()];
    this.#waiters.clear();
    for (const w of waiting) w.reject(err);
  }

  /** Whether any answer is still awaited (for the transport's crash report). */
  get _waiting() {
    return this.#waiters.size > 0;
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
    if (m.t !== 'call') return;
    try {
      this._send(reply);
    } catch (err) {
      // A value that cannot cross: the caller hears why instead of waiting.
      this._send({ t: 'reply', id: m.id, ok: false, error: toPlainError(err) });
    }
  }

  #netLog({ method, url, allowed, address }) {
    const args = ['fetch', method, url, allowed ? 'allowed' : 'denied'];
    if (address !== undefined) args.push(address);
    this.#log({ level: allowed ? 'info' : 'warn', worker: this.#manifest.name, args });
  }

  /** Sends the abort to the realm when `signal` aborts. */
  _forwardAbort(signal) {
    const onAbort = () => this._send({ t: 'abort', reason: toPlainError(signal.reason) });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  }
}

/** What the realm checks registrations against (./lifecycle.js): the topics and commands the manifest grants. */
function grantsOf(manifest) {
  return { topics: [...(manifest.capabilities?.pubsub?.subscribe ?? [])], commands: manifest.commandsDeclared ? [...manifest.commands] : [] };
}

module.exports = { RealmClient };
