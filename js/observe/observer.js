'use strict';
// What a host records about its calls: the call channel (./channels.js) and
// the metrics (./metrics.js). The host hands each call through here; with no
// subscriber a call costs two clock reads and a few additions.
const { AsyncResource } = require('node:async_hooks');
const { performance } = require('node:perf_hooks');
const channels = require('./channels');
const { Metrics } = require('./metrics');

class Observer {
  metrics = new Metrics();
  /** Traced calls in flight by traceId: what shards attribute their commits and calls to. */
  #traces = new Map();
  #nextTraceId = 1;

  /** Whether calls are traced now (the call channel has a subscriber). */
  get tracing() {
    return channels.call.hasSubscribers;
  }

  /**
   * Runs a call, `run(trace)`, as a traced call (the host asks `tracing`
   * first: untraced calls never come here).
   * @param {{ name: string }} binding
   * @param {{ chain: string[], trace?: object } | undefined} caller the calling worker's frame
   * @param {(trace: object) => Promise<unknown>} run
   */
  call(binding, id, method, caller, run) {
    const trace = { class: binding.name, id, method, chain: caller?.chain ?? [], parent: caller?.trace };
    return channels.call.tracePromise(() => run(trace), trace);
  }

  /**
   * Ties a traced call to its frame, before it is delivered: the method will
   * run in the async context of the call's start (so what a subscriber bound
   * there with bindStore is what the method sees), and shards can name the
   * call by its traceId until `until(trace, p)` sees it settle.
   */
  enter(frame, trace) {
    frame.trace = trace;
    frame.scope = new AsyncResource('durable-workers:call');
    trace.traceId = this.#nextTraceId++;
    this.#traces.set(trace.traceId, trace);
  }

  /** Forgets the traced call's id once `p`, its outcome, settles. */
  until(trace, p) {
    const forget = () => this.#traces.delete(trace.traceId);
    p.then(forget, forget);
  }

  /** The traced call in flight with this id, if any. */
  traceOf(traceId) {
    return traceId === undefined ? undefined : this.#traces.get(traceId);
  }

  /**
   * `resolve` and `reject` of a call that records its latency and outcome
   * when it settles. `binding.series` caches each method's metric series.
   */
  timed(binding, method, resolve, reject) {
    const series = (binding.series[method] ??= this.metrics.callSeries(binding.name, method));
    const t0 = performance.now();
    return {
      ok: (v) => {
        series.ok(performance.now() - t0);
        resolve(v);
      },
      failed: (err) => {
        series.failed(err, performance.now() - t0);
        reject(err);
      },
    };
  }

  /**
   * host.stats(): counters of what is open and of what durability has cost.
   * @param {object} n the storage core's counters
   * @param {{ size: number, materialized: number, evicted: number }} live
   * @param {{ calls: number, refused: number, alarmsFired: number, alarmsFailed: number, resets: number }} counts
   * @param {{ count: number, autoResponses: number, paused: number }} sockets
   */
  stats(n, live, counts, sockets) {
    return {
      live: live.size,
      materialized: live.materialized,
      evicted: live.evicted,
      calls: counts.calls,
      refused: counts.refused,
      sockets: sockets.count,
      autoResponses: sockets.autoResponses,
      socketPauses: sockets.paused,
      alarmsFired: counts.alarmsFired,
      alarmsFailed: counts.alarmsFailed,
      resets: counts.resets,
      commits: n.commits,
      syncs: n.syncs,
      commitsInline: n.commitsInline,
      syncsInPlace: n.syncsInPlace,
      catalogCommits: n.catalogCommits,
      created: n.created,
      bytesWritten: n.bytesWritten,
      queries: n.queries,
      queriesDeferred: n.queriesDeferred,
      docsRead: n.docsRead,
    };
  }

  /**
   * The exposition text (./metrics.js), with what is read now: the storage
   * core's counters and the open workers.
   * @param {{ syncs: number, bytesWritten: number, commits: number }} nativeStats
   * @param {Iterable<{ binding: { name: string }, mailbox: { waiting: number } }>} workers open workers
   */
  render(nativeStats, workers, sockets) {
    const live = new Map();
    const waiting = new Map();
    for (const w of workers) {
      const c = w.binding.name;
      live.set(c, (live.get(c) ?? 0) + 1);
      waiting.set(c, (waiting.get(c) ?? 0) + w.mailbox.waiting);
    }
    return this.metrics.render({ syncs: nativeStats.syncs, bytesWritten: nativeStats.bytesWritten, commits: nativeStats.commits, live, waiting, sockets });
  }
}

module.exports = { Observer };
