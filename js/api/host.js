'use strict';
// The host: one open durable directory, the workers in it, and the calls to them.
const { EventEmitter } = require('node:events');
const { label } = require('./errors');
const { checkWorkerId, mailboxFull } = require('./rules');
const { DurableWorker } = require('./worker');
const { LiveWorker } = require('../runtime/live');
const { QueuedWorker } = require('../runtime/queued-worker');
const { makeStub } = require('./stub');
const { WorkerContext } = require('./worker-context');
const { nameOf, keyOf, cloneArgs, methodError, closedError } = require('../runtime/calls');
const { LiveSet } = require('../runtime/live-set');
const { current, frameFor, refuseStale, WaitGraph } = require('../runtime/call-chain');
const { stubTimeout } = require('./rules');
const { AlarmScheduler, servedClasses } = require('../alarms/scheduler');
const { catalogIndex } = require('../alarms/index-writes');
const { SocketRegistry } = require('../sockets/websockets');
const { ShardPool } = require('../shards/pool');
const { RemoteWorker } = require('../shards/remote');
const { shardRouter } = require('../shards/host-router');
const { Bindings } = require('./bindings');
const { pageIds } = require('./ids');
const { takeSnapshot } = require('../tools/backup');
const { Observer } = require('../observe/observer');
const { hostReports } = require('../observe/reports');
const { alarmRanOnShard } = require('../observe/trace');

/** A worker the host runs: here (LiveWorker) or on a shard (RemoteWorker). */
function isWorker(w) {
  return w instanceof QueuedWorker;
}

/** The key of the host's view for its control socket (js/control/): internal, not API. */
const CONTROL_VIEW = Symbol('durable-workers.controlView');

class Host extends EventEmitter {
  #native;
  #options;
  #closed = false;
  #closing = null;
  /** @type {Bindings} the worker classes, bound on first use */
  #bindings;
  /** @type {LiveSet} the materialized workers, and their eviction */
  #live;
  #graph = new WaitGraph();
  #counts = { calls: 0, refused: 0, alarmsFired: 0, alarmsFailed: 0, resets: 0 };
  /** Channels and metrics of calls. */
  #observe = new Observer();
  #metrics = this.#observe.metrics;
  /** @type {Set<AlarmScheduler>} */ #schedulers = new Set();
  #sockets = new SocketRegistry({
    deliver: (key, binding, id, run, desc) => this.#socketEvent(key, binding, id, run, desc),
    gateOf: (key) => {
      const w = this.#live.get(key);
      if (!(w instanceof LiveWorker)) return null;
      refuseStale(current(), 'a WebSocket send');
      return w.state.flush();
    },
  });
  /** @type {ShardPool | null} */ #pool = null;
  /** @type {Set<Function>} the classes the shard module exports */
  #sharded = new Set();
  /** @type {import('../runtime/host-port').HostPort} what LiveWorker and RemoteWorker see of the host */
  #inner;

  /** @internal use open() */
  constructor(native, commits, options) {
    super();
    this.#native = native;
    this.#options = options;
    this.#bindings = new Bindings(native, (Class) => this.#sharded.has(Class));
    const host = this;
    const reports = hostReports(this, this.#counts, this.#metrics);
    /** @type {import('./worker-context').ContextPort} one for every worker's ctx */
    const ctxPort = {
      get: (w, Class, id, options) => host.get(Class, id, options),
      accept: (w, ws, tags) => host.#sockets.accept(w, ws, tags),
      list: (w, tag) => host.#sockets.list(w.key, tag),
      tags: (w, ws) => host.#sockets.tags(ws),
      autoResponse: (w, pair) => host.#sockets.setAutoResponse(w.key, w.who, pair),
      abort: (w, reason, epoch) => w.abort(reason, epoch),
      broadcast: (w, message, options) => host.#sockets.broadcast(w.key, w.who, message, options),
    };
    this.#live = new LiveSet({
      native,
      onIdle: (w) => host.#sockets.resume(w.key),
      onEvicted: (info) => reports.evicted(info),
      hostClosed: () => host.#closed,
    });
    if (options.shards !== undefined) {
      this.#pool = new ShardPool(
        { ...options.shards, callTimeout: options.callTimeout },
        shardRouter({
          call: (binding, id, who, method, args, caller, timeout) => host.#call(binding, id, who, method, args, caller, timeout),
          bind: (Class) => host.#bind(Class),
          classNamed: (name) => host.#bindings.named(name) ?? [...host.#sharded].find((C) => nameOf(C) === name),
          sockets: host.#sockets,
          native,
          wake: (className, at) => host.#wake(className, at),
          alarmFailed: reports.alarmFailed,
          alarmRan: (info, err) => alarmRanOnShard(host.#metrics, info, err),
          traceOf: (traceId) => host.#observe.traceOf(traceId),
          lost: (err, info) => reports.shardLost(err, info),
          reset: (info) => reports.reset(info),
        }),
      );
      for (const v of Object.values(options.shards.exports)) {
        if (typeof v === 'function' && v.prototype instanceof DurableWorker) this.#sharded.add(v);
      }
    }
    this.#inner = {
      native,
      commits,
      pool: this.#pool,
      sockets: this.#sockets,
      mailboxLimit: options.mailbox,
      clock: options.clock,
      callTimeout: options.callTimeout,
      busy: (w) => host.#live.busy(w),
      idle: (w) => host.#live.idle(w),
      failed: (w) => host.#live.retire(w, null),
      ctxFor: (w) => new WorkerContext(ctxPort, w),
      alarmIndex: (className, id) => catalogIndex(native, className, id, (at) => host.#wake(className, at)),
      alarmFailed: reports.alarmFailed,
      reset: reports.reset,
      metrics: this.#metrics,
      traceOf: (traceId) => host.#observe.traceOf(traceId),
    };
  }

  /** The directory this host owns. */
  get dir() {
    return this.#options.dir;
  }

  /**
   * A stub for the worker `id` of `Class`. Does no I/O: the worker is
   * materialized by its first call.
   * @param {Function} Class a subclass of DurableWorker
   * @param {string} id
   * @param {{ timeout?: number }} [options] `timeout`: ms each call through this stub may run (default: open()'s callTimeout)
   */
  get(Class, id, options) {
    const binding = this.#bind(Class);
    checkWorkerId(binding.name, id);
    const who = label(binding.name, id);
    const timeout = stubTimeout(options, who);
    const key = keyOf(binding.name, id);
    return makeStub((method, args) => this.#call(binding, id, who, method, args, current(), timeout, key), who);
  }

  /**
   * Closes the worker and removes its file and catalog entry. No stop() runs.
   * @returns {Promise<boolean>} false if it never existed
   */
  async delete(Class, id) {
    this.#checkOpen();
    const binding = this.#bind(Class);
    checkWorkerId(binding.name, id);
    return this.#live.destroy(keyOf(binding.name, id), () => this.#native.worker(binding.name, id), label(binding.name, id));
  }

  /**
   * Copies every worker file and the catalog into `dest`, a new or empty
   * directory, while calls go on (docs/backups.md).
   * @param {string} dest
   * @returns {Promise<import('../tools/backup').SnapshotReport>}
   */
  backup(dest) {
    this.#checkOpen();
    return takeSnapshot(this.#native, this.#options.dir, dest);
  }

  /**
   * The ids of `Class` that exist, from the catalog, in sorted order.
   * @param {Function} Class
   * @param {{ prefix?: string, limit?: number }} [options]
   * @returns {AsyncIterable<string>}
   */
  async *ids(Class, options = {}) {
    this.#checkOpen();
    yield* pageIds(this.#native, this.#bind(Class).name, options);
  }

  /**
   * Fires the alarms of exactly these classes until stopped. Nothing fires
   * without it, and while it runs it keeps the process alive.
   * @param {{ classes: Function[] }} options
   * @returns {Promise<{ stop(): Promise<void> }>}
   */
  async startAlarms({ classes } = {}) {
    this.#checkOpen();
    const bindings = servedClasses(classes).map((C) => this.#bind(C));
    const scheduler = new AlarmScheduler(this.#native, (b, id, after) => this.#fireAlarms(b, id, after), bindings, this.#options.alarmPoll, this.#options.clock);
    this.#schedulers.add(scheduler);
    return scheduler.start(() => this.#schedulers.delete(scheduler));
  }

  /** Counters: what is open, what durability has cost. */
  stats() {
    return { ...this.#observe.stats(this.#native.stats(), this.#live, this.#counts, this.#sockets), archive: this.#options.archiveStats() ?? null };
  }

  /**
   * The host's metrics in the Prometheus text exposition format (0.0.4),
   * labelled by class, method, code and eviction reason, never worker id.
   * @returns {string}
   */
  metrics() {
    const open = [...this.#live.values()].filter((w) => isWorker(w) && w.closed === null);
    return this.#observe.render(this.#native.stats(), open, this.#sockets.count);
  }

  /**
   * Lets queued calls finish, runs stop('close') on every live worker, commits
   * and releases the directory. Later calls reject with ERR_DURABLE_CLOSED.
   */
  close() {
    if (this.#closing !== null) return this.#closing;
    this.#closed = true;
    this.#sockets.closeAll();
    this.#closing = (async () => {
      await this.#options.onClose?.(); // the control socket (js/index.js), gone before the directory is released
      await Promise.all([...this.#schedulers].map((s) => s.stop()));
      this.#schedulers.clear();
      const waits = [];
      for (const w of this.#live.values()) {
        if (isWorker(w)) waits.push(this.#live.retire(w, 'close'));
        else waits.push(w.closed.catch(() => {}));
      }
      await Promise.all(waits);
      await this.#pool?.close();
      await this.#native.close();
      this.#inner.commits.close();
      await this.#options.afterClose?.(); // an archive's last shipment (js/index.js)
    })();
    return this.#closing;
  }

  /**
   * @internal What the control socket reads (js/control/operations.js): the
   * catalog summary, the open workers, the shards' health, call latency.
   */
  [CONTROL_VIEW]() {
    return {
      summary: (alarms) => this.#native.summary(alarms),
      workers: () => [...this.#live.values()].filter(isWorker),
      shards: () => this.#pool?.health() ?? null,
      latency: () => this.#metrics.latency(),
    };
  }

  // --- calls -------------------------------------------------------------

  #call(binding, id, who, method, args, caller = current(), timeout = undefined, key = keyOf(binding.name, id)) {
    if (!this.#observe.tracing) return this.#untraced(binding, id, who, method, args, caller, timeout, undefined, key);
    return this.#observe.call(binding, id, method, caller, (trace) => this.#untraced(binding, id, who, method, args, caller, timeout, trace, key));
  }

  #untraced(binding, id, who, method, args, caller, timeout, trace, key) {
    if (this.#closed) return this.#refuse(binding, method, closedError(who));
    let release;
    try {
      refuseStale(caller, `a call to ${who}`);
      if (!binding.methods.has(method)) throw methodError(binding, who, method);
      args = cloneArgs(args, who, method, this.#sockets);
      release = this.#graph.enter(caller, key, who);
    } catch (err) {
      return this.#refuse(binding, method, err);
    }
    this.#counts.calls++;
    const frame = frameFor(caller, key, who, null, timeout);
    if (trace !== undefined) this.#observe.enter(frame, trace);
    let p;
    // A call leaving a worker is output: it waits for that worker's writes so far.
    const gate = caller === undefined ? null : caller.worker.state.flush();
    if (gate === null) p = this.#deliver(key, binding, id, method, args, frame);
    else p = gate.then(() => this.#deliver(key, binding, id, method, args, frame));
    if (release !== null) p.then(release, release);
    if (trace !== undefined) this.#observe.until(trace, p);
    return p;
  }

  /** A call refused before it reached the worker: counted, and rejected. */
  #refuse(binding, method, err) {
    this.#metrics.refused(binding.name, method, err);
    return Promise.reject(err);
  }

  #deliver(key, binding, id, method, args, frame) {
    return new Promise((resolve, reject) => {
      const { ok, failed } = this.#observe.timed(binding, method, resolve, reject);
      this.#withWorker(
        key,
        binding,
        id,
        (w) => {
          if (w.call(method, args, frame, ok, failed)) return;
          this.#counts.refused++;
          const err = mailboxFull(w.who, this.#options.mailbox);
          this.#metrics.refused(binding.name, method, err);
          reject(err);
        },
        () => failed(closedError(label(binding.name, id))),
      );
    });
  }

  /**
   * Hands the live instance of a worker to `use`, materializing it if there
   * is none. One that is closing, failed or being deleted is waited for, and
   * a fresh instance started after it. `onClosed` runs instead if the host closes.
   */
  #withWorker(key, binding, id, use, onClosed) {
    const attempt = () => {
      if (this.#closed) return onClosed();
      const w = this.#live.get(key);
      if (w !== undefined && (!isWorker(w) || w.closed !== null)) {
        w.closed.then(attempt, attempt);
        return;
      }
      use(w ?? this.#materialize(key, binding, id));
    };
    attempt();
  }

  /**
   * Runs the due alarms of one worker through its mailbox, its handlers
   * starting after `after` (see LiveWorker.fireAlarms).
   * @returns {{ started: Promise<void>, done: Promise<void> }}
   */
  #fireAlarms(binding, id, after) {
    let started;
    const startedP = new Promise((r) => (started = r));
    const done = new Promise((resolve) => {
      this.#withWorker(
        keyOf(binding.name, id),
        binding,
        id,
        (w) => {
          this.#counts.alarmsFired++;
          const firing = w.fireAlarms(after);
          firing.started.then(started);
          firing.done.then(resolve);
        },
        () => {
          started();
          resolve();
        },
      );
    });
    return { started: startedP, done };
  }

  /** Runs a socket event as one mailbox entry of its worker, materializing it. */
  #socketEvent(key, binding, id, run, desc) {
    this.#withWorker(
      key,
      binding,
      id,
      (w) => {
        w.socketEvent(run, desc);
        // A frame already read is never dropped; past the mailbox bound the
        // worker's sockets stop being read until its mailbox drains, so a
        // flood waits in TCP buffers and at its sender, not in this heap.
        if (w.mailbox.waiting >= this.#options.mailbox) this.#sockets.pause(key);
      },
      () => {},
    );
  }

  /** Wakes the alarm schedulers serving `className` for `at`. */
  #wake(className, at) {
    for (const s of this.#schedulers) if (s.serves(className)) s.wake(at);
  }

  #materialize(key, binding, id) {
    return this.#live.materialize(key, (slot) => (binding.remote ? new RemoteWorker(this.#inner, binding, id, key, slot) : new LiveWorker(this.#inner, binding, id, key, slot)));
  }

  // --- classes -----------------------------------------------------------

  #bind(Class) {
    return this.#bindings.bind(Class);
  }

  #checkOpen() {
    if (this.#closed) throw closedError(`the host for ${this.#options.dir}`);
  }
}

module.exports = { Host, CONTROL_VIEW };
