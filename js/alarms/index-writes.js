'use strict';
// The alarm index protocol: how a worker's alarms reach the disk.
//
// The worker's file is the truth; the catalog keeps one index entry per
// worker (its earliest alarm) so the scheduler finds what is due without
// opening every worker. No transaction spans the two files, so the order of
// the writes is the design: the index moved earlier only, then the worker's
// file, then the index set exactly. A crash anywhere leaves the index early,
// never late; an early index costs one wake that finds nothing due and puts
// the index right (alarms/scheduler.js). `__test__/alarms/alarms.test.js` kills a
// process at each crash point below and checks exactly that.
//
// The index is a port (runtime/host-port.js, AlarmIndex): the catalog on the
// host thread, messages to it from a shard.

const { fromNative, label } = require('../api/errors');

// Test-only: kill this process between the writes of an alarm change, to
// check that a crash anywhere in them leaves the index early, never late.
const CRASH = process.env.DURABLE_WORKERS_TEST_CRASH;
function crashPoint(name) {
  if (CRASH === name) process.kill(process.pid, 'SIGKILL');
}

/**
 * One worker's entry in the catalog's index on the host thread (a shard's
 * asks the host thread for the same writes: shards/runtime.js).
 * @returns {import('../runtime/host-port').AlarmIndex}
 */
function catalogIndex(native, className, id, wake) {
  const coded = (err) => Promise.reject(fromNative(err, label(className, id)));
  return {
    earlier: (at) => native.alarmEarlier(className, id, at).catch(coded),
    exact: (at) => native.alarmExact(className, id, at).catch(coded),
    wake,
  };
}

/** No index: a state made without one (tests of the gate alone). */
const NO_INDEX = Object.freeze({ earlier: async () => {}, exact: async () => {}, wake: () => {} });

class AlarmIndexWrites {
  #alarms;
  #index;
  #state;

  /**
   * @param {import('./worker-alarms').WorkerAlarms} alarms the worker's alarms
   * @param {import('../runtime/host-port').AlarmIndex} index its entry in the catalog's index
   * @param {{ flush(): Promise<void> | null }} state whose flush() commits the worker's writes so far (the gate)
   */
  constructor(alarms, index, state) {
    this.#alarms = alarms;
    this.#index = index;
    this.#state = state;
  }

  /** Sets alarm `name` to fire at `when`; resolves once it is on disk and findable. */
  async set(name, when) {
    await this.#index.earlier(when);
    crashPoint('alarm-after-index-earlier');
    this.#alarms.put(name, when, 0);
    await this.#state.flush();
    crashPoint('alarm-after-worker-write');
    await this.#index.exact(this.#alarms.indexAt());
    this.#index.wake(when);
  }

  /** Removes alarm `name`; the index follows once the file no longer holds it. */
  async delete(name) {
    if (!this.#alarms.remove(name)) return;
    await this.#state.flush();
    await this.#index.exact(this.#alarms.indexAt());
  }

  /** Removes every alarm, in the commit that carries the worker's other writes so far. */
  async clear() {
    const had = this.#alarms.size > 0;
    this.#alarms.clear();
    await this.#state.flush();
    if (had) await this.#index.exact(this.#alarms.indexAt());
  }

  /** After alarms fired (and were cleared, retried or set again): commits that, then sets the index exactly. */
  async settle() {
    await this.#state.flush();
    const at = this.#alarms.indexAt();
    await this.#index.exact(at);
    if (at !== null) this.#index.wake(at);
  }
}

module.exports = { AlarmIndexWrites, NO_INDEX, catalogIndex };
