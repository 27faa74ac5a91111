'use strict';
// The shards: worker threads that run the classes of one module, started on
// first use, watched while they have work, replaced on next use when lost.
//
// A shard is lost when its thread throws outside a call, runs out of memory
// (its heap is capped at `memoryMb`), exits, or misses `missedHeartbeats`
// heartbeats in a row. Heartbeats go only to shards that have work in flight,
// every `heartbeatMs`; a shard with nothing in flight is not referenced, so a
// script that used shards exits by itself after its last call, and a shard
// stuck in a loop of its own while idle costs a core but holds nothing up.
//
// A lost slot is refilled by the next call routed to it, never by a timer: a
// module that fails every start gives failing calls, not a restart loop.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const channels = require('../observe/channels');
const { DurableError, codes } = require('../api/errors');
const { OP, shardOf } = require('./protocol');

const RUNTIME = path.join(__dirname, 'runtime.js');

class Shard {
  /** Work the host is waiting on: entries sent and not yet run, results not yet back. */
  #holds = 0;
  #timer = null;
  #missed = 0;
  #answered = true;
  #pings = 0;

  /**
   * @param {ShardPool} pool
   * @param {number} index
   * @param {Worker} thread
   */
  constructor(pool, index, thread) {
    this.pool = pool;
    this.index = index;
    this.thread = thread;
    this.alive = true;
    /** @type {Map<string, object>} the RemoteWorkers placed here */
    this.workers = new Map();
  }

  post(msg) {
    if (this.alive) this.thread.postMessage(msg);
  }

  /** Something now waits on this shard: keep the process alive and watch it. */
  hold() {
    if (!this.alive) return;
    if (this.#holds++ === 0) {
      this.thread.ref();
      this.#missed = 0;
      this.#timer = setInterval(() => this.#beat(), this.pool.options.heartbeatMs);
      // The first heartbeat goes now: `missedHeartbeats` intervals without
      // an answer end the shard, counted from the moment work was sent.
      this.#answered = false;
      this.post({ op: OP.ping, n: ++this.#pings });
    }
  }

  release() {
    if (!this.alive || this.#holds === 0) return;
    if (--this.#holds === 0) {
      clearInterval(this.#timer);
      this.#timer = null;
      this.thread.unref();
    }
  }

  pong() {
    this.#answered = true;
    this.#missed = 0;
  }

  /** What `durable-workers top` shows of it: workers placed here, entries in flight, heartbeats missed in a row. */
  health() {
    return { workers: this.workers.size, inFlight: this.#holds, missedHeartbeats: this.#missed };
  }

  #beat() {
    if (!this.#answered && ++this.#missed >= this.pool.options.missedHeartbeats) {
      this.lose(`it missed ${this.#missed} heartbeats of ${this.pool.options.heartbeatMs} ms (a call that never yields, such as an endless loop)`);
      return;
    }
    this.#answered = false;
    this.post({ op: OP.ping, n: ++this.#pings });
  }

  /** Ends the shard: every worker on it hears, the slot empties. */
  lose(reason) {
    if (!this.alive) return;
    this.alive = false;
    clearInterval(this.#timer);
    this.#timer = null;
    this.thread.removeAllListeners('message');
    this.thread.terminate().catch(() => {});
    this.pool.lost(this, reason);
  }
}

class ShardPool {
  /** @type {(Shard | null)[]} */
  #slots;
  /** @type {(Promise<Shard> | null)[]} */
  #starting;
  #closed = false;
  /** @type {number[]} shards lost per slot since the pool began, for health() */
  #losses;

  /**
   * @param {{ count: number, module: string, memoryMb?: number, heartbeatMs: number, missedHeartbeats: number, startTimeoutMs: number }} options
   * @param {{ message(shard: Shard, msg: object): void, lost(shard: Shard, err: DurableError): void }} host
   */
  constructor(options, host) {
    this.options = options;
    this.host = host;
    this.#slots = new Array(options.count).fill(null);
    this.#starting = new Array(options.count).fill(null);
    this.#losses = new Array(options.count).fill(0);
  }

  /**
   * Each slot as `durable-workers top` shows it: 'running', 'starting', or
   * 'stopped' (not started yet, or lost and not yet replaced: a slot is
   * filled on first use), with the shards it has lost.
   * @returns {{ index: number, state: 'running' | 'starting' | 'stopped', lost: number, workers: number, inFlight: number, missedHeartbeats: number }[]}
   */
  health() {
    return this.#slots.map((s, index) => {
      const up = s !== null && s.alive;
      const state = up ? 'running' : this.#starting[index] !== null ? 'starting' : 'stopped';
      return { index, state, lost: this.#losses[index], ...(up ? s.health() : { workers: 0, inFlight: 0, missedHeartbeats: 0 }) };
    });
  }

  /** The shard for a worker key, started if its slot is empty. */
  shardFor(key) {
    const i = shardOf(key, this.options.count);
    const s = this.#slots[i];
    if (s !== null && s.alive) return Promise.resolve(s);
    return (this.#starting[i] ??= this.#start(i).finally(() => (this.#starting[i] = null)));
  }

  #start(index) {
    const { module, memoryMb, startTimeoutMs, callTimeout } = this.options;
    if (this.#closed) return Promise.reject(new DurableError(codes.CLOSED, `shard ${index}: the host is closed`));
    return new Promise((resolve, reject) => {
      const thread = new Worker(RUNTIME, {
        workerData: { module, callTimeout },
        resourceLimits: memoryMb === undefined ? undefined : { maxOldGenerationSizeMb: memoryMb },
        stdout: false,
        stderr: false,
      });
      const shard = new Shard(this, index, thread);
      let ready = false;
      const fail = (why, cause) => {
        if (ready) return;
        ready = true;
        clearTimeout(timer);
        shard.alive = false;
        thread.removeAllListeners('message');
        thread.terminate().catch(() => {});
        reject(new DurableError(codes.SHARD_LOST, `shard ${index} could not start ${module}: ${why}`, cause ? { cause } : undefined));
      };
      const timer = setTimeout(() => fail(`it did not report ready within ${startTimeoutMs} ms (startTimeoutMs)`), startTimeoutMs);
      thread.on('message', (msg) => {
        if (!ready) {
          if (msg.op !== OP.ready) return;
          ready = true;
          clearTimeout(timer);
          thread.unref();
          this.#slots[index] = shard;
          if (channels.shard.hasSubscribers) channels.shard.publish({ event: 'start', shard: index, threadId: thread.threadId });
          resolve(shard);
          return;
        }
        if (msg.op === OP.pong) shard.pong();
        else this.host.message(shard, msg);
      });
      thread.on('error', (err) => {
        if (!ready) return fail(err?.message ?? String(err), err);
        const oom = err?.code === 'ERR_WORKER_OUT_OF_MEMORY';
        shard.lose(oom ? `it ran out of memory (memoryMb: ${memoryMb})` : `it threw outside a call: ${err?.message ?? err}`);
      });
      thread.on('exit', (code) => {
        if (!ready) return fail(`its thread exited with code ${code}`);
        shard.lose(`its thread exited with code ${code}`);
      });
    });
  }

  /** Called by a shard that ended. */
  lost(shard, reason) {
    if (this.#slots[shard.index] === shard) this.#slots[shard.index] = null;
    this.#losses[shard.index]++;
    const err = new DurableError(codes.SHARD_LOST, `shard ${shard.index} was lost: ${reason}`);
    this.host.lost(shard, err);
  }

  /** Ends every shard; later starts are refused. */
  async close() {
    this.#closed = true;
    const ends = [];
    for (const s of this.#slots) {
      if (s === null) continue;
      s.alive = false;
      s.thread.removeAllListeners();
      ends.push(s.thread.terminate().catch(() => {}));
    }
    this.#slots.fill(null);
    await Promise.all(ends);
  }
}

module.exports = { ShardPool };
