'use strict';
// One materialized worker: its instance, its state, its mailbox.
//
// Status, and what comes next:
//   'starting' — the first mailbox entry loads the file and runs start().
//                Next: 'live', or 'failed' if that threw.
//   'live'     — calls run. Next: 'closing' (evicted, deleted, host closed),
//                'failed' if a commit failed, or 'starting' again when reset
//                (a deadline passed, or ctx.abort(): see #abandon).
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
const { runIn, applyIn, frameFor } = require('./call-chain');
const { clone } = require('../state/codec');
const { fromNative, label, codes } = require('../api/errors');
const { backfill } = require('../collections/backfill');
const { performance } = require('node:perf_hooks');
const { tracedAlarm, tracedSocketEvent } = require('../observe/trace');
const { workerStorage } = require('./worker-storage');
const { NONE, TIMED_OUT, deadlineOf, timeoutError, expiredError, abortError, abandonedError, within } = require('./deadline');
const { ABORT } = require('../api/worker-context');
const { waitAtMost, ORDER_WAIT_MS } = require('../alarms/order');
const { fireDue, runHandler } = require('../alarms/firing');
const { schedulesOf } = require('../alarms/state-alarms');
const { SYSTEM } = require('../alarms/clock');

/** What a worker that has never been written loads. */
const NO_FILE = Object.freeze({ exists: false, keys: [], tags: [], values: [], alarms: null });

class LiveWorker extends QueuedWorker {
  /** The worker's storage, as its state uses it. */
  #storage;
  /** @type {ReturnType<typeof DurableState.runtimeOf>} what this worker's runtime sees of its state */
  #stateRuntime;
  /** The traced call the next commit is attributed to: the first to flush since the last commit started. */
  #commitTrace = undefined;
  /** When that call flushed (performance.now()): the commit's wait starts there. */
  #commitWaitFrom = 0;
  /** What alarms and schedules fall due by (../alarms/clock.js). */
  #clock;
  /** Names the worker in the state's messages. */
  #who = () => this.who;
  /** The instance's `this.ctx`. */
  #ctx = null;
  /** The error of a reset not yet followed by a reload (see #abandon), else null. */
  #resetBy = null;
  /** The commit in flight when the instance was abandoned: the reload waits for it. */
  #landing = null;
  /** An alarm whose handler timed out: its retry is written on the fresh state. */
  #retry = null;
  /** Counts resets: a frame or a ctx made before the last one belongs to an abandoned instance. */
  epoch = 0;
  /** The error of the last reset (what an abandoned instance's outputs are refused with). */
  lastReset = null;

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
    this.#clock = host.clock ?? SYSTEM;
    this.#open();
    this.mailbox = new Mailbox(
      host.mailboxLimit,
      (entry) => this.#run(entry),
      () => host.busy(this),
      () => host.idle(this),
    );
    this.mailbox.push({ kind: 'start' });
  }

  /** A handle on the worker's file, and a state over it: at materialization, and after a reset. */
  #open() {
    const native = this.host.native.worker(this.binding.name, this.id);
    this.native = native;
    this.#storage = workerStorage(this.host, this.binding.name, this.id, native, () => {
      const trace = this.#commitTrace;
      this.#commitTrace = undefined;
      return { trace, from: this.#commitWaitFrom };
    });
    this.state = new DurableState(this.#who, this.#storage, () => this.#dirtyOutsideCall(), this.host.alarmIndex(this.binding.name, this.id), this.binding.collections);
    this.#stateRuntime = DurableState.runtimeOf(this.state);
    this.#stateRuntime.methods = this.binding.methods;
    this.#stateRuntime.clock = this.#clock;
  }

  /** Runs a mailbox entry: the usual one, a call with no reset pending, without a second async frame. */
  #run(entry) {
    if (entry.kind !== 'call' || this.#resetBy !== null) return this.#runAny(entry);
    return this.failure !== null ? entry.reject(this.failure) : this.#call(entry);
  }

  async #runAny(entry) {
    // A reset while the mailbox was idle (ctx.abort() from a timer) reloads before the next entry.
    if (this.#resetBy !== null && this.failure === null && entry.kind !== 'close') await this.#reload();
    switch (entry.kind) {
      case 'call':
        if (this.failure !== null) return entry.reject(this.failure);
        return this.#call(entry);
      case 'start':
        return this.#start();
      case 'alarm':
        await this.#fireAlarms(entry);
        break;
      case 'event':
        await this.#socketEvent(entry);
        break;
      case 'close':
        return this.#close(entry);
    }
    // A reset while it ran (its deadline, ctx.abort()) reloads the worker before the next entry.
    if (this.#resetBy !== null && this.failure === null) await this.#reload();
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
      if (this.#retry !== null) {
        const { name, attempt, scheduled, retryAt } = this.#retry;
        this.#retry = null;
        if (this.#stateRuntime.alarms.time(name) !== null) this.#stateRuntime.alarms.put(name, retryAt, attempt, scheduled);
      }
      // Opening a worker reconciles the index with its file (a crash between
      // an alarm's writes leaves the index early; this puts it right).
      if (this.#stateRuntime.alarms.size > 0) await this.#stateRuntime.settleAlarms();
      this.#ctx = this.host.ctxFor(this);
      this.instance = construct(this.binding.Class, { id: this.id, state: this.state, ctx: this.#ctx });
      if (typeof this.instance.start === 'function') {
        await this.#hook(() => this.instance.start(), 'start()');
      }
      this.status = 'live';
    } catch (err) {
      // Storage errors arrive coded; an error thrown by start() reaches the
      // queued callers as itself.
      this.#fail(err, false);
    }
  }

  async #call(e) {
    try {
      const timeout = e.frame.timeout ?? this.host.callTimeout;
      const began = timeout === undefined && e.frame.outer === undefined ? 0 : Date.now();
      const deadline = deadlineOf(timeout, e.frame.outer, began);
      if (deadline <= began) return e.reject(expiredError(this.who, e.method));
      const frame = e.frame;
      frame.worker = this;
      frame.epoch = this.epoch;
      frame.deadline = deadline;
      this.inCall = true;
      let ok = false;
      let out;
      try {
        const fn = this.instance[e.method];
        const p = frame.scope === undefined ? applyIn(frame, fn, this.instance, e.args) : frame.scope.runInAsyncScope(applyIn, null, frame, fn, this.instance, e.args);
        out = await (deadline === NONE ? p : within(Promise.resolve(p), deadline, TIMED_OUT));
        ok = true;
      } catch (err) {
        out = err === TIMED_OUT ? this.#timedOut(`${e.method}()`, began, deadline, e.method) : err;
      }
      // Work the call left running (a timer, a promise not awaited) has no deadline of the call's.
      frame.deadline = NONE;
      this.inCall = false;
      // Reset while it ran (its deadline, or ctx.abort()): its writes were dropped.
      if (frame.epoch !== this.epoch) return e.reject(this.lastReset);
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
      if (frame.trace !== undefined && this.#commitTrace === undefined) {
        this.#commitTrace = frame.trace;
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
        (err) => e.reject(this.#failUnlessReset(err)),
      );
    } finally {
      // Reset while it ran (its deadline, or ctx.abort()): the next entry finds the worker reloaded.
      if (this.#resetBy !== null && this.failure === null) await this.#reload();
    }
  }

  /** Runs every due alarm and schedule, as one mailbox entry (../alarms/firing.js). */
  async #fireAlarms(entry) {
    try {
      if (this.failure !== null) return;
      await waitAtMost(entry.after, ORDER_WAIT_MS);
      entry.started();
      const who = { class: this.binding.name, id: this.id };
      const cut = await fireDue(this.#stateRuntime.alarms, schedulesOf(this.state), {
        run: (a, call) =>
          tracedAlarm(this.host, this.binding.name, this.id, call === null ? a : { ...a, name: `schedule ${call.id}` }, () =>
            this.#hook(() => runHandler(this.instance, this.binding.name, a, call), call === null ? 'alarm()' : `${call.method}()`),
          ),
        failed: (err, info) => this.host.alarmFailed(err, { ...who, ...info }),
        cut: () => this.#resetBy !== null,
        now: () => this.#clock.now(),
      });
      if (cut !== null) {
        // Reset during the handler: the retry is written on the fresh state, the rest wait for it.
        this.#retry = cut;
        this.host.alarmFailed(cut.error ?? this.lastReset, { ...who, ...cut.info, retryAt: cut.retryAt });
        return;
      }
      // Also the repair: an index that woke this worker early is put right.
      await this.#stateRuntime.settleAlarms();
    } catch (err) {
      if (this.#resetBy === null) this.#fail(err);
    } finally {
      entry.started();
      entry.resolve();
    }
  }

  async #socketEvent(entry) {
    if (this.failure !== null) return;
    this.inCall = true;
    try {
      await tracedSocketEvent(this.binding.name, this.id, entry.desc, () => this.#hook(() => entry.run(this.instance), 'a WebSocket handler'));
    } catch (err) {
      process.emitWarning(`${this.who}: a WebSocket hook threw: ${err?.stack ?? err}`, { code: 'DURABLE_SOCKET_HOOK_FAILED' });
    }
    this.inCall = false;
    if (this.#resetBy !== null) return;
    const barrier = this.state.flush();
    if (barrier !== null) barrier.catch((err) => this.#failUnlessReset(err));
  }

  async #close(entry) {
    this.status = 'closing';
    if (entry.reason !== null && this.failure === null && this.#resetBy === null && typeof this.instance?.stop === 'function') {
      try {
        await this.#hook(() => this.instance.stop(entry.reason), `stop('${entry.reason}')`);
      } catch (err) {
        process.emitWarning(`${this.who}: stop('${entry.reason}') threw: ${err?.message ?? err}`, { code: 'DURABLE_STOP_FAILED' });
      }
    }
    let existed = false;
    try {
      if (this.#resetBy !== null) await this.#landing;
      else if (this.failure === null) await this.state.flush();
    } catch {
      // The failure has been reported to the calls it concerned.
    }
    try {
      if (entry.destroy) existed = await this.native.destroy();
      else await this.#release();
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

  /**
   * Closes the worker's file. One that never had a file, or whose first write
   * made it and left it closed, holds no connection, and an open one closes on
   * this thread when it can: a close on a commit thread needs a turn of the
   * event loop, which a loop of calls awaiting only microtasks never gives.
   */
  async #release() {
    if (this.#stateRuntime.hasFile() && this.native.closeNow?.() !== true) await this.host.commits.submit((cid) => this.native.close(cid));
  }

  /**
   * Runs a lifecycle hook (`what`: start(), alarm(), a socket handler,
   * stop()) as this worker's code, within the host's callTimeout.
   */
  async #hook(fn, what) {
    const began = Date.now();
    const deadline = deadlineOf(this.host.callTimeout, undefined, began);
    const frame = Object.assign(frameFor(undefined, this.key, this.who, this), { epoch: this.epoch, deadline });
    if (deadline === NONE) return runIn(frame, fn);
    try {
      return await within(Promise.resolve(runIn(frame, fn)), deadline, TIMED_OUT);
    } catch (err) {
      throw err === TIMED_OUT ? this.#timedOut(what, began, deadline, /^(\w+)\(/.exec(what)?.[1]) : err;
    } finally {
      frame.deadline = NONE; // a timer start() set outlives start()'s deadline
    }
  }

  /** `what` overran its deadline: the worker is reset; the error its caller gets. */
  #timedOut(what, began, deadline, method) {
    return this.#abandon('timeout', timeoutError(this.who, what, Date.now() - began, deadline - began), method);
  }

  /** ctx.abort(reason), from the instance of `epoch`: resets the worker and throws, so its code stops there. */
  abort(reason, epoch) {
    if (epoch !== this.epoch) throw abandonedError(this.who, 'ctx.abort()', this.lastReset);
    throw this.#abandon('abort', abortError(this.who, reason), undefined);
  }

  /**
   * Abandons the instance: its ctx.signal aborts, every later write, call and
   * send it makes is refused, and writes of no commit yet started are dropped.
   * The mailbox reloads the worker from its file before its next entry.
   * @returns {Error} `err`
   */
  #abandon(reason, err, method) {
    if (this.#resetBy !== null) return this.#resetBy;
    this.#resetBy = err;
    this.lastReset = err;
    this.epoch++;
    this.#landing = this.#stateRuntime.abandon(abandonedError(this.who, 'a write', err));
    this.#landing?.catch(() => {});
    this.#ctx?.[ABORT](err);
    this.host.reset?.({ class: this.binding.name, id: this.id, reason, method, error: err });
    return err;
  }

  /** After a reset: the commit in flight lands, the file closes, a fresh instance loads it through a new handle. */
  async #reload() {
    this.#resetBy = null;
    try {
      await this.#landing;
      await this.#release();
    } catch (err) {
      return void this.#fail(err);
    }
    this.#landing = null;
    this.instance = null;
    this.status = 'starting';
    this.#open();
    await this.#start();
  }

  /** A write made outside any call (a timer, say) still gets its commit. */
  #dirtyOutsideCall() {
    if (this.inCall || this.status !== 'live') return;
    queueMicrotask(() => {
      const p = this.state.flush();
      if (p !== null) p.catch((err) => this.#failUnlessReset(err));
    });
  }

  /** A flush refused because the instance was abandoned is the reset's doing, not a failed commit. */
  #failUnlessReset(err) {
    return err?.code === codes.RESET && this.lastReset !== null ? err : this.#fail(err);
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

module.exports = { LiveWorker };
