'use strict';
// Closed-loop load for bench/do.js: `width` loops, loop i calling op(i) and
// awaiting it before its next call (a client waits for its answer), for a
// warm-up and then `rounds` equal rounds; the figure is the median round's
// rate, as bench/measure.js's timed() reports it. Loops rather than batches
// of 64 awaited together: no loop waits for the slowest answer of a batch.
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const { median } = require('../measure');

/**
 * @param {{ seconds: number, rounds?: number, warmupSeconds?: number, width: number, op: (i: number) => Promise<unknown> }} o
 * @returns {Promise<{ rate: number, min: number, max: number, ops: number, allOps: number }>} rate: operations per second; allOps: the warm-up's too
 */
async function closedLoop({ seconds, rounds = 3, warmupSeconds = Math.min(0.5, seconds / 3), width, op }) {
  const warm = await runFor(warmupSeconds * 1000, width, op);
  const rates = [];
  let ops = 0;
  for (let r = 0; r < rounds; r++) {
    const round = await runFor((seconds * 1000) / rounds, width, op);
    rates.push(round.ops / (round.ms / 1000));
    ops += round.ops;
  }
  return { rate: median(rates), min: Math.min(...rates), max: Math.max(...rates), ops, allOps: ops + warm.ops };
}

/** Every loop calls op until `ms` have passed (at least once); the round ends when the last answer arrives. */
async function runFor(ms, width, op) {
  const start = performance.now();
  const deadline = start + ms;
  let ops = 0;
  await Promise.all(
    Array.from({ length: width }, async (_, i) => {
      do {
        await op(i);
        ops++;
      } while (performance.now() < deadline);
    }),
  );
  return { ops, ms: performance.now() - start };
}

/** Resident set of a process, in bytes (Linux /proc). */
function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc; 100 clock ticks a second, as on every Linux Node runs on). */
function cpuMsOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime: fields 14 and 15 of the line, 11 and 12 after the name.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU time the whole machine has been busy, in ms summed over its CPUs
 * (/proc/stat: user, nice, system, irq, softirq, steal): less the server's
 * and the driver's own, what else ran during a measurement.
 */
function machineCpuMs() {
  const [, user, nice, system, , , irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  return (user + nice + system + irq + softirq + steal) * 10;
}

module.exports = { closedLoop, runFor, rssOf, cpuMsOf, machineCpuMs };
