'use strict';
// One materialized worker: its instance, its state, its mailbox.
//
// Status, and what comes next:
//   'starting' — the first mailbox entry loads the file and runs start().
//                Next: 'live', or 'failed' if that threw.
//   'live'     — calls run. Next: 'closing' (evicted, deleted, host closed),
//                or 'failed' if a commit failed.
//   'failed'   — every queued entry is refused with the failure; the host
//                drops the instance when the mailbox drains, and the next call
//                starts again from the file. Next: 'closed'.
//   'closing'  — stop() runs, the last writes commit, the file closes; calls
//                that arrive meanwhile wait for it and then start a new
//                instance. Next: 'closed'.
const { Mailbox } = require('./mailbox');
const { QueuedWorker } = require('./queued-worker');
const { DurableState } = require('../state/resident-state');
const { construct } = require('../api/worker');
const { runIn, frameFor } = require('./call-chain');
const { clone } = require('../state/codec');
const { fromNative, label } = require('../api/errors');
const { alarmBackoff } = require('../api/rules');
const { backfill } = require('../collections/backfill');
const { unpackRows } = require('../collections/result-rows');
const { performance } = require('node:perf_hooks');
const { tracedCommit, tracedAlarm, tracedSocketEvent, batchShape } = require('../observe/trace');

/** What a worker that has never been written loads. */
const NO_FILE = Object.freeze({ exists: false, keys: [], tags: [], values: [], alarms: null });

/**
 * How long a worker's alarm firing waits for the firing of an earlier-due
 * alarm of another worker to start: long enough for that worker's file to
 * open on a loaded machine (50 ms was not), short enough that a worker busy
 * with a long call holds the others up for a second at most.
 */
const ORDER_WAIT_MS = 1000;

/**
 * Most keys, documents and alarms, and most bytes, a commit may carry and
 * still be made on the JS thread (./commits.js): a bulk write would hold the
 * event loop for its whole transaction.
 */
const INLINE_MAX = Object.freeze({ entries: 64, bytes: 256 * 1024 });

function inlineable(batch) {
  const s = batchShape(batch);
  return s.keys + s.documents + s.alarms <= INLINE_MAX.entries && s.bytes <= INLINE_MAX.bytes;
}

/**
 * A find with nothing uncommitted to overlay, in the positional form
 * NativeWorker.findNow takes: [order + 1, desc, limit + 1, n, fields…, ops…,
 * counts…], 0 for no order or limit.
 */
function findShape(q) {
  const n = q.fields.length;
  const shape = new Uint32Array(4 + 3 * n);
  shape[0] = q.order === undefined ? 0 : q.order + 1;
  shape[1] = q.desc ? 1 : 0;
  shape[2] = q.limit === undefined ? 0 : q.limit + 1;
  shape[3] = n;
  for (let i = 0; i < n; i++) {
    shape[4 + i] = q.fields[i];
    shape[4 + n + i] = q.ops[i];
    shape[4 + 2 * n + i] = q.counts[i];
  }
  return shape;
}

function waitAtMost(promise, ms) {
  let timer;
  return Promise.race([promise, new Promise((r) => (timer = setTimeout(r, ms)))]).finally(() => clearTimeout(timer));
}

class LiveWorker extends QueuedWorker {
  /** Closes the worker's file on a commit thread. */
  #closeFile;
  /** @type {ReturnType<typeof DurableState.runtimeOf>} what this worker's runtime sees of its state */
  #stateRuntime;
  /** The traced call the next commit is attributed to: the first to flush since the last commit started. */
  #commitTrace = undefined;
  /** When that call flushed (performance.now()): the commit's wait starts there. */
  #commitWaitFrom = 0;

  /**
   * @param {import('./host-port').HostPort} host
   * @param {{ Class: Function, name: string }} binding
   * @param {string} id
   * @param {string} key
   * @param {number} slot
   */
  constructor(host, binding, id, key, slot) {
    super();
    this.host = host;
    this.binding = binding;
    this.id = id;
    this.key = key;
    this.slot = slot;
    this.who = label(binding.name, id);
    this.status = 'starting';
    this.failure = null;
    this.instance = null;
    this.inCall = false;
    const who = () => this.who;
    const native = host.native.worker(binding.name, id);
    this.native = native;
    const { commits } = host;
    const commitTime = host.metrics?.commitSeries(binding.name);
    const write = (changes) => {
      const trace = this.#commitTrace;
      this.#commitTrace = undefined;
      const submit =
        native.writeInline === undefined
          ? () => commits.submit((cid) => native.write(cid, changes, trace))
          : () =>
              commits.write(
                (cid, inline) => (inline ? native.writeInline(cid, changes) : (native.write(cid, changes), -1)),
                () => inlineable(changes),
              );
      return tracedCommit(binding.name, id, changes, trace, this.#commitWaitFrom, commitTime, submit);
    };
    const storage = {
      write,
      // A shard's storage is on another thread: it has no read to answer now.
      queryNow:
        native.queryNow === undefined
          ? undefined
          : (q) => {
              const r = q.kind === 'find' && q.overlay === undefined && native.findNow !== undefined ? native.findNow(q.collection, findShape(q), q.values) : native.queryNow(q);
              return r === null ? null : unpackRows(r);
            },
      getNow: native.getNow === undefined ? undefined : (coll, id) => native.getNow(coll, id),
      query: (q) => native.query(q).then(unpackRows),
      // The catalog row first, then the file (see NativeWorker.register).
      create: (changes) => native.register().then(() => write(changes)),
    };
    this.#closeFile = () => commits.submit((id) => native.close(id));
    this.state = new DurableState(who, storage, () => this.#dirtyOutsideCall(), host.alarmIndex(binding.name, id), binding.collections);
    this.#stateRuntime = DurableState.runtimeOf(this.state);
    this.mailbox = new Mailbox(
      host.mailboxLimit,
      (entry) => this.#run(entry),
      () => host.busy(this),
      () => host.idle(this),
    );
    this.mailbox.push({ kind: 'start' });
  }

  async #run(entry) {
    switch (entry.kind) {
      case 'call':
        if (this.failure !== null) return entry.reject(this.failure);
        return this.#call(entry);
      case 'start':
        return this.#start();
      case 'alarm':
        return this.#fireAlarms(entry);
      case 'event':
        return this.#socketEvent(entry);
      case 'close':
        return this.#close(entry);
    }
  }

  async #start() {
    try {
      let loaded = NO_FILE;
      if (this.native.exists()) {
        try {
          loaded = await this.native.load();
        } catch (err) {
          throw fromNative(err, this.who);
        }
      }
      this.#stateRuntime.load(loaded);
      // A field declared since the last wake is filled in before anything
      // can query it: one slow start rather than queries that miss documents.
      if (loaded.backfill?.length) await backfill(this.native, this.binding.collections, loaded.backfill, this.who);
      // Opening a worker reconciles the index with its file (a crash between
      // an alarm's writes leaves the index early; this puts it right).
      if (this.#stateRuntime.alarms.size > 0) await this.#stateRuntime.settleAlarms();
      this.instance = construct(this.binding.Class, { id: this.id, state: this.state, ctx: this.host.ctxFor(this) });
      if (typeof this.instance.start === 'function') {
        await this.#hook(() => this.instance.start());
      }
      this.status = 'live';
    } catch (err) {
      // Storage errors arrive coded; an error thrown by start() reaches the
      // queued callers as itself.
      this.#fail(err, false);
    }
  }

  async #call(e) {
    e.frame.worker = this;
    this.inCall = true;
    let ok = false;
    let out;
    try {
      const fn = this.instance[e.method];
      const run = () => runIn(e.frame, () => fn.apply(this.instance, e.args));
      out = await (e.frame.scope === undefined ? run() : e.frame.scope.runInAsyncScope(run));
      ok = true;
    } catch (err) {
      out = err;
    }
    this.inCall = false;
    if (ok) {
      try {
        out = clone(out, () => `${this.who}: the result of ${e.method}() cannot be returned`);
      } catch (err) {
        ok = false;
        out = err;
      }
    }
    // The gate: the result leaves only once the commit carrying this call's
    // writes (and every earlier one) has landed.
    if (e.frame.trace !== undefined && this.#commitTrace === undefined) {
      this.#commitTrace = e.frame.trace;
      this.#commitWaitFrom = performance.now();
    }
    const barrier = this.state.flush();
    if (barrier === null) {
      if (ok) e.resolve(out);
      else e.reject(out);
      return;
    }
    barrier.then(
      () => (ok ? e.resolve(out) : e.reject(out)),
      (err) => e.reject(this.#fail(err)),
    );
  }

  /**
   * Runs every due alarm through alarm(), one after another, as one mailbox
   * entry. An alarm leaves the disk only after its handler finished; one
   * that threw is put back with its attempt count and a backoff.
   */
  async #fireAlarms(entry) {
    try {
      if (this.failure !== null) return;
      await waitAtMost(entry.after, ORDER_WAIT_MS);
      entry.started();
      const alarms = this.#stateRuntime.alarms;
      const due = alarms.due(Date.now());
      for (const a of due) {
        alarms.beginFiring(a.name);
        let error = null;
        try {
          if (typeof this.instance.alarm !== 'function') {
            throw new TypeError(`${this.binding.name} has alarms set but no alarm() method`);
          }
          await tracedAlarm(this.host, this.binding.name, this.id, a, () => this.#hook(() => this.instance.alarm({ name: a.name, scheduledTime: a.scheduled, retryCount: a.attempt })));
        } catch (err) {
          error = err;
        }
        const setAgain = alarms.endFiring(a.name);
        if (error === null) {
          if (!setAgain) alarms.remove(a.name);
        } else if (!setAgain) {
          const attempt = a.attempt + 1;
          const retryAt = Date.now() + alarmBackoff(attempt);
          alarms.put(a.name, retryAt, attempt, a.scheduled);
          this.host.alarmFailed(error, { class: this.binding.name, id: this.id, name: a.name, attempt, retryAt });
        } else {
          this.host.alarmFailed(error, { class: this.binding.name, id: this.id, name: a.name, attempt: a.attempt + 1, retryAt: alarms.time(a.name) });
        }
      }
      // Also the repair: an index that woke this worker early is put right.
      await this.#stateRuntime.settleAlarms();
    } catch (err) {
      this.#fail(err);
    } finally {
      entry.started();
      entry.resolve();
    }
  }

  async #socketEvent(entry) {
    if (this.failure !== null) return;
    this.inCall = true;
    try {
      await tracedSocketEvent(this.binding.name, this.id, entry.desc, () => this.#hook(() => entry.run(this.instance)));
    } catch (err) {
      process.emitWarning(`${this.who}: a WebSocket hook threw: ${err?.stack ?? err}`, { code: 'DURABLE_SOCKET_HOOK_FAILED' });
    }
    this.inCall = false;
    const barrier = this.state.flush();
    if (barrier !== null) barrier.catch((err) => this.#fail(err));
  }

  async #close(entry) {
    this.status = 'closing';
    if (entry.reason !== null && this.failure === null && typeof this.instance?.stop === 'function') {
      try {
        await this.#hook(() => this.instance.stop(entry.reason));
      } catch (err) {
        process.emitWarning(`${this.who}: stop('${entry.reason}') threw: ${err?.message ?? err}`, { code: 'DURABLE_STOP_FAILED' });
      }
    }
    let existed = false;
    try {
      if (this.failure === null) await this.state.flush();
    } catch {
      // The failure has been reported to the calls it concerned.
    }
    try {
      if (entry.destroy) existed = await this.native.destroy();
      // A worker that never had a file, or whose file its first write made
      // and left closed, holds no connection: nothing to close on a commit
      // thread, whose answer would need a turn of the event loop (a loop of
      // read-only calls awaiting only microtasks would then never see an
      // evicted worker finish closing, and `live` would grow; under a burst
      // of new workers, closes queued behind their creations did).
      else if (this.#stateRuntime.hasFile() && this.native.closeNow?.() !== true) await this.#closeFile();
    } catch (err) {
      if (entry.destroy) {
        this.status = 'closed';
        entry.resolve(Promise.reject(fromNative(err, this.who)));
        return;
      }
    }
    this.status = 'closed';
    entry.resolve(existed);
  }

  /** Runs a lifecycle hook as this worker's code. */
  #hook(fn) {
    return runIn(frameFor(undefined, this.key, this.who, this), fn);
  }

  /** A write made outside any call (a timer, say) still gets its commit. */
  #dirtyOutsideCall() {
    if (this.inCall || this.status !== 'live') return;
    queueMicrotask(() => {
      const p = this.state.flush();
      if (p !== null) p.catch((err) => this.#fail(err));
    });
  }

  #fail(err, fromStorage = true) {
    if (this.failure === null) {
      this.failure = fromStorage ? fromNative(err, this.who) : err;
      this.status = 'failed';
      this.host.failed(this);
    }
    return this.failure;
  }
}

module.exports = { LiveWorker, waitAtMost, ORDER_WAIT_MS };
