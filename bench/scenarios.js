'use strict';
// The benchmark scenarios, written once against a minimal "system" shape so
// that durable-workers and the better-sqlite3 baseline run exactly the same
// workload. Each system module (durable.js, baseline.js) supplies an opener.

const { performance } = require('node:perf_hooks');
const { percentile, timed, settledRss, mappedFilesRss, inBatches } = require('./measure');

/**
 * @typedef {object} Worker
 * @property {() => Promise<number>} incr reads the counter, stores it + 1, returns it once durable
 * @property {() => Promise<number> | number} read returns the counter (0 if never written)
 * @property {(count: number) => Promise<number>} fillDocs writes documents [0, count) in one transaction
 * @property {(from: number, count: number) => Promise<number> | number} getDocs reads documents [from, from + count) by id, one at a time; how many were found
 * @property {(from: number, count: number) => Promise<number> | number} findDocs runs `count` indexed finds of kind (from + i) % KINDS, limit FIND_LIMIT; the documents found in all
 */

/** Documents in the worker the document-read rows query, their kinds, and a find's limit. */
const DOCS = { count: 10_000, kinds: 100, findLimit: 10 };

/**
 * Document i of the document-read rows: a declared kind, a number and a
 * 100-byte body, the same for every system.
 */
function docOf(i) {
  return { kind: `k${i % DOCS.kinds}`, n: i, body: `${i.toString(36)} ${'The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. '.repeat(2)}`.slice(0, 100) };
}
const docId = (i) => `d${String(i % DOCS.count).padStart(6, '0')}`;

/**
 * @typedef {object} System
 * @property {(id: string) => Worker} worker a handle on one worker; does no I/O by itself
 * @property {() => Record<string, number>} counters cumulative cost counters (commits, syncs, ...)
 * @property {boolean} [sync] reads answer synchronously (a plain prepared statement): the read rows
 *   then call them without Promise.all, as their user would
 * @property {() => Promise<void>} close
 */

/**
 * @typedef {object} OpenOptions
 * @property {string} dir data directory
 * @property {number} [maxLive] open workers at most (the LRU bound)
 */

/** Default widths and sizes, shared so the table can name them. */
const DEFAULTS = { width: 64, count: 1000, warmWorkers: 64, createCount: 1024 };
/** Extra calls to each warm-up worker before RSS is measured (a read and a write each). */
const WARM_ROUNDS = 40;

/**
 * Builds the scenario functions for one system.
 * @param {(opts: OpenOptions) => Promise<System>} openSystem
 * @returns {Record<string, (opts: object) => Promise<import('./child').ScenarioResult>>}
 */
function defineScenarios(openSystem) {
  /** Opens the system, runs `body`, and always closes it. */
  async function withSystem(openOpts, body) {
    const system = await openSystem(openOpts);
    try {
      return await body(system);
    } finally {
      await system.close();
    }
  }

  return {
    /** (a) `await worker.incr()` in a loop: one call in flight. */
    async serial({ dir, seconds, rounds }) {
      return withSystem({ dir }, async (system) => {
        const worker = system.worker('c');
        const latencies = [];
        let calls = 0;
        const before = system.counters();
        const r = await timed({
          seconds,
          rounds,
          step: async () => {
            const t = performance.now();
            await worker.incr();
            latencies.push(performance.now() - t);
            calls++;
            return 1;
          },
        });
        const cost = perCall(before, system.counters(), calls);
        latencies.sort((a, b) => a - b);
        const result = rateResult(r, 'calls/s', {
          p50us: percentile(latencies, 50) * 1000,
          p99us: percentile(latencies, 99) * 1000,
          ...cost,
        });
        await checkCounter(result, worker, calls);
        return result;
      });
    },

    /** (b) `width` concurrent `incr()` calls on one worker, awaited together, repeated. */
    async burst({ dir, seconds, rounds, width = DEFAULTS.width }) {
      return withSystem({ dir }, async (system) => {
        const worker = system.worker('c');
        let calls = 0;
        const before = system.counters();
        const r = await timed({
          seconds,
          rounds,
          step: async () => {
            await Promise.all(Array.from({ length: width }, () => worker.incr()));
            calls += width;
            return width;
          },
        });
        const result = rateResult(r, 'calls/s', { width, ...perCall(before, system.counters(), calls) });
        await checkCounter(result, worker, calls);
        return result;
      });
    },

    /**
     * (c') `await worker.read()` in a loop: one read in flight, nothing to
     * wait for on disk, so what it measures is the cost of a call itself (for
     * durable-workers: stub, mailbox, the call-chain frame, the addon).
     */
    async serialRead({ dir, seconds, rounds }) {
      return withSystem({ dir }, async (system) => {
        const worker = system.worker('c');
        await worker.incr();
        const latencies = [];
        let wrong = 0;
        const r = await timed({
          seconds,
          rounds,
          step: async () => {
            const t = performance.now();
            if ((await worker.read()) !== 1) wrong++;
            latencies.push(performance.now() - t);
            return 1;
          },
        });
        latencies.sort((a, b) => a - b);
        const result = rateResult(r, 'calls/s', { p50us: percentile(latencies, 50) * 1000, p99us: percentile(latencies, 99) * 1000 });
        if (wrong) warn(result, `${wrong} reads did not return the stored value 1`);
        return result;
      });
    },

    /** (c) `width` concurrent `read()` calls on one written worker, repeated. */
    async read({ dir, seconds, rounds, width = DEFAULTS.width }) {
      return withSystem({ dir }, async (system) => {
        const worker = system.worker('c');
        await worker.incr();
        let wrong = 0;
        const r = await timed({
          seconds,
          rounds,
          step: async () => {
            const calls = new Array(width);
            for (let i = 0; i < width; i++) calls[i] = worker.read();
            const values = system.sync ? calls : await Promise.all(calls);
            for (const v of values) if (v !== 1) wrong++;
            return width;
          },
        });
        const result = rateResult(r, 'calls/s', { width });
        if (wrong) warn(result, `${wrong} reads did not return the stored value 1`);
        return result;
      });
    },

    /**
     * (c'') Collection reads by id on one hot worker holding DOCS.count
     * documents: `width` gets, one after another, in each call.
     */
    async docGet({ dir, seconds, rounds, width = DEFAULTS.width }) {
      return docReads({ dir, seconds, rounds }, (worker, step) => worker.getDocs(step * width, width), width, width);
    },

    /** (c''') Indexed finds of DOCS.findLimit documents, `width` in each call. */
    async docFind({ dir, seconds, rounds, width = DEFAULTS.width }) {
      return docReads({ dir, seconds, rounds }, (worker, step) => worker.findDocs(step * width, width), width, width * DOCS.findLimit);
    },

    /**
     * (d) Resident memory per open worker: `count` workers each written once
     * and kept open. Runs in a fresh process (the child runner), and measures
     * after `warmWorkers` workers are open and called WARM_ROUNDS times more,
     * so one-time costs (code, the optimising compiler, thread pools, the
     * first page caches) are not charged to the workers.
     */
    async rssWrite({ dir, count = DEFAULTS.count, warmWorkers = DEFAULTS.warmWorkers }) {
      return residentPerWorker({ dir, count, warmWorkers, touch: (w) => w.incr(), expected: 1 });
    },

    /**
     * (d') The same for workers written by an earlier rssWrite run on the
     * same `dir`: each is opened from its file, read and written once more,
     * and stays open.
     */
    async rssRead({ dir, count = DEFAULTS.count, warmWorkers = DEFAULTS.warmWorkers }) {
      return residentPerWorker({ dir, count, warmWorkers, touch: async (w) => ((await w.read()) === 1 ? w.incr() : -1), expected: 2 });
    },

    /**
     * (e) New workers, one write each, `width` at a time: `rounds` rounds of
     * `count` each (or until `maxSeconds` pass), the median round's rate. A
     * round is short and the device's syncs vary: one round alone was a noisy
     * figure. The system keeps its default bound on open workers, so older
     * ones are closed as new ones arrive.
     */
    async create({ dir, count = DEFAULTS.createCount, width = DEFAULTS.width, maxSeconds = 10, rounds = 3 }) {
      return withSystem({ dir }, async (system) => {
        let next = 0;
        let wrong = 0;
        const createBatch = async () => {
          const values = await Promise.all(Array.from({ length: width }, () => system.worker(`new-${next++}`).incr()));
          for (const v of values) if (v !== 1) wrong++;
        };
        await createBatch(); // warm-up, not counted
        const before = system.counters();
        // The process's CPU, every thread: on ext4 without a journal, the
        // kernel's inode allocator can take most of it after many recent deletes.
        const cpuBefore = process.cpuUsage();
        const start = performance.now();
        let created = 0;
        const rates = [];
        for (let r = 0; r < rounds && performance.now() - start < maxSeconds * 1000; r++) {
          const roundStart = performance.now();
          let made = 0;
          while (made < count && performance.now() - start < maxSeconds * 1000) {
            await createBatch();
            made += width;
          }
          rates.push(made / ((performance.now() - roundStart) / 1000));
          created += made;
        }
        const elapsed = (performance.now() - start) / 1000;
        const cpu = process.cpuUsage(cpuBefore);
        const sorted = [...rates].sort((a, b) => a - b);
        const result = {
          value: sorted[sorted.length >> 1],
          unit: 'workers/s',
          notes: {
            created,
            elapsed,
            width,
            rounds: rates.map((x) => Math.round(x)).join(' '),
            cpuUserUsPerWorker: cpu.user / created,
            cpuSystemUsPerWorker: cpu.system / created,
            ...perCall(before, system.counters(), created),
          },
        };
        if (wrong) warn(result, `${wrong} new workers did not return 1 from their first incr()`);
        return result;
      });
    },
  };

  /** Shared body of docGet/docFind: `read(worker, step)` must find `expected` documents. */
  async function docReads({ dir, seconds, rounds }, read, perStep, expected) {
    return withSystem({ dir }, async (system) => {
      const worker = system.worker('docs');
      await worker.fillDocs(DOCS.count);
      let wrong = 0;
      let steps = 0;
      const r = await timed({
        seconds,
        rounds,
        step: async () => {
          const found = await read(worker, steps++);
          if (found !== expected) wrong++;
          return perStep;
        },
      });
      const result = rateResult(r, 'reads/s', { width: perStep, docs: DOCS.count });
      if (wrong) warn(result, `${wrong} calls did not find the ${expected} documents expected`);
      return result;
    });
  }

  /** Shared body of rssWrite/rssRead. */
  async function residentPerWorker({ dir, count, warmWorkers, touch, expected }) {
    const maxLive = 2 * (count + warmWorkers);
    return withSystem({ dir, maxLive }, async (system) => {
      let wrong = 0;
      const check = (v) => {
        if (v !== expected) wrong++;
      };
      // Not checked: an earlier run's warm-up called them more often.
      await inBatches(warmWorkers, DEFAULTS.width, (i) => touch(system.worker(`warm-${i}`)));
      // Until the calls' code is optimised: once is not enough, and V8's
      // optimising compiler would otherwise first run (its code paged in,
      // its zones and the code it makes) while the counted workers open.
      for (let round = 0; round < WARM_ROUNDS; round++) {
        await inBatches(warmWorkers, DEFAULTS.width, async (i) => {
          const w = system.worker(`warm-${i}`);
          await w.read();
          await w.incr();
        });
      }
      const before = await settledRss();
      const codeBefore = mappedFilesRss();
      await inBatches(count, DEFAULTS.width, async (i) => check(await touch(system.worker(`w-${i}`))));
      const after = await settledRss();
      const codeAfter = mappedFilesRss();
      const counters = system.counters();
      const result = {
        value: (after - before) / count / 1024,
        unit: 'KB/worker',
        notes: {
          count,
          rssBeforeMB: before / 2 ** 20,
          rssAfterMB: after / 2 ** 20,
          // The binary's and the addon's pages touched while the counted workers opened: near 0 when the warm-up did its job.
          ...(codeBefore !== null && codeAfter !== null ? { mappedFilesGrowthMB: (codeAfter - codeBefore) / 2 ** 20 } : {}),
          ...counters,
        },
      };
      if (wrong) warn(result, `${wrong} of ${count} workers did not return ${expected}`);
      if (typeof counters.live === 'number' && counters.live < count + warmWorkers) {
        warn(result, `only ${counters.live} workers live at the end; the figure is not per open worker`);
      }
      return result;
    });
  }
}

/** A throughput result with its spread. */
function rateResult(r, unit, notes) {
  return { value: r.rate, unit, notes: { min: r.min, max: r.max, ops: r.ops, ...notes } };
}

/** Cost counters divided by calls: e.g. commits per call, syncs per call. */
function perCall(before, after, calls) {
  const out = {};
  for (const [key, value] of Object.entries(after)) {
    if (typeof value === 'number' && typeof before[key] === 'number' && key !== 'live') {
      out[`${key}PerCall`] = (value - before[key]) / calls;
    }
  }
  return out;
}

/**
 * The scenario started on an empty directory and made `calls` increments
 * (warm-up included), each serialised by the worker, so the counter must read
 * exactly `calls`: checks the system did not lose or double updates under load.
 */
async function checkCounter(result, worker, calls) {
  const value = await worker.read();
  if (value !== calls) warn(result, `counter reads ${value} after ${calls} increments`);
  result.notes.counter = value;
}

function warn(result, message) {
  (result.warnings ??= []).push(message);
}

module.exports = { defineScenarios, DEFAULTS, DOCS, docOf, docId };
