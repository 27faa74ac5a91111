'use strict';
// Timing and memory helpers shared by every scenario.

const fs = require('node:fs');
const { performance } = require('node:perf_hooks');

/**
 * Median of a list of numbers (the list is not modified).
 * @param {number[]} values
 * @returns {number}
 */
function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The p-th percentile (0..100) of an ascending list, nearest-rank.
 * @param {number[]} sorted
 * @param {number} p
 * @returns {number}
 */
function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/**
 * Runs `step` repeatedly for a fixed time and reports its throughput.
 *
 * The window is split into `rounds` equal rounds and the median round rate is
 * reported, so one GC pause or checkpoint does not decide the figure while the
 * spread (min..max) shows how noisy it was. A short warm-up first lets V8
 * optimise the hot path and the storage create its files.
 *
 * @param {object} o
 * @param {number} o.seconds measured time in total
 * @param {number} [o.rounds=3]
 * @param {number} [o.warmupSeconds] defaults to a tenth of `seconds`, at most 0.5
 * @param {() => Promise<number> | number} o.step does some work, returns how many operations it did
 * @returns {Promise<{ rate: number, min: number, max: number, ops: number, elapsed: number }>}
 *   rate in operations per second
 */
async function timed({ seconds, rounds = 3, warmupSeconds, step }) {
  const warmup = warmupSeconds ?? Math.min(0.5, seconds / 10);
  await runFor(warmup * 1000, step);
  const rates = [];
  let ops = 0;
  let elapsed = 0;
  for (let r = 0; r < rounds; r++) {
    const round = await runFor((seconds * 1000) / rounds, step);
    rates.push(round.ops / (round.ms / 1000));
    ops += round.ops;
    elapsed += round.ms / 1000;
  }
  return { rate: median(rates), min: Math.min(...rates), max: Math.max(...rates), ops, elapsed };
}

/** Calls `step` until `ms` have passed; at least once. */
async function runFor(ms, step) {
  const start = performance.now();
  const deadline = start + ms;
  let ops = 0;
  do {
    ops += await step();
  } while (performance.now() < deadline);
  return { ops, ms: performance.now() - start };
}

/**
 * Resident set size after a full garbage collection, in bytes. Needs the
 * process to run with --expose-gc (the child runner adds it); without it the
 * figure includes whatever garbage happens to be uncollected.
 * @returns {Promise<number>}
 */
async function settledRss() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    // Let finalizers and native frees queued by the GC run before sampling.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage.rss();
}

/**
 * Resident bytes in mappings of files (the node binary, the addon, shared
 * libraries: their code and static data as the process touched them), from
 * /proc/self/smaps; null where there is none.
 * @returns {number | null}
 */
function mappedFilesRss() {
  let text;
  try {
    text = fs.readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return null;
  }
  let kb = 0;
  let named = false;
  for (const line of text.split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (mapping !== null) named = mapping[1].startsWith('/');
    else if (named && line.startsWith('Rss:')) kb += Number(/\d+/.exec(line)[0]);
  }
  return kb * 1024;
}

/**
 * Calls `fn(i)` for i in [0, count) with at most `width` calls in flight,
 * awaiting each batch as a whole (the way a server answers bursts).
 * @param {number} count
 * @param {number} width
 * @param {(i: number) => Promise<unknown>} fn
 * @returns {Promise<void>}
 */
async function inBatches(count, width, fn) {
  for (let start = 0; start < count; start += width) {
    const batch = [];
    for (let i = start; i < Math.min(count, start + width); i++) batch.push(fn(i));
    await Promise.all(batch);
  }
}

module.exports = { median, percentile, timed, settledRss, mappedFilesRss, inBatches };
