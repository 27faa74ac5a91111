#!/usr/bin/env node
'use strict';
// Serial write calls of one worker against better-sqlite3's, in one process:
// blocks of each in turn, so both meet the disk in the same state (runs in
// separate processes, minutes apart, differ here by more than most changes).
// Each side's call is split in two: the native write with its sync, timed
// from JS around the addon's `writeInline` (and around better-sqlite3's
// transaction), and the rest, the call's JS. Calls over 400 µs are counted:
// on this disk they are the checkpoints.
//
//   node bench/serial-split.js [--blocks 16] [--per 1000] [--dir DIR]
//
// Both sides are the benchmark's own (durable.js's Counter.incr,
// baseline.js's transaction), opened as bench/run.js opens them.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { performance } = require('node:perf_hooks');
const { openDurable } = require('./durable');
const { openBaseline } = require('./baseline');

const { values } = parseArgs({ options: { blocks: { type: 'string', default: '16' }, per: { type: 'string', default: '1000' }, dir: { type: 'string', default: os.tmpdir() } } });
const BLOCKS = Number(values.blocks);
const PER = Number(values.per);
const SLOW_MS = 0.4;

/** Wraps `obj[name]` so that the time spent in it is added to `clock.ms`. */
function timeInside(obj, name, clock) {
  const fn = obj[name];
  obj[name] = function (...args) {
    const t0 = performance.now();
    try {
      return fn.apply(this, args);
    } finally {
      clock.ms += performance.now() - t0;
    }
  };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(values.dir, 'serial-split-'));
  // The addon's worker class, as the package loads it: its writeInline is the native write of a serial call.
  const { NativeWorker } = require('../js/native/load');
  const native = { ms: 0 };
  timeInside(NativeWorker.prototype, 'writeInline', native);
  const dw = await openDurable({ dir: path.join(dir, 'dw') });
  const bsq = await openBaseline({ dir: path.join(dir, 'bsq') });
  const sides = { dw: { worker: dw.worker('c'), inner: native }, bsq: { worker: bsq.worker('c'), inner: { ms: 0 } } };
  // better-sqlite3's call is its transaction and nothing else to split off: the async wrapper is the rest.
  const tx = sides.bsq.worker.incr;
  sides.bsq.worker.incr = () => {
    const t0 = performance.now();
    const p = tx();
    sides.bsq.inner.ms += performance.now() - t0;
    return p;
  };
  try {
    for (let i = 0; i < 2000; i++) {
      await sides.dw.worker.incr();
      await sides.bsq.worker.incr();
    }
    const out = { dw: { total: 0, inner: 0, slow: 0, calls: 0 }, bsq: { total: 0, inner: 0, slow: 0, calls: 0 } };
    for (let b = 0; b < BLOCKS * 2; b++) {
      const key = b % 2 === 0 ? 'dw' : 'bsq';
      const { worker, inner } = sides[key];
      const o = out[key];
      inner.ms = 0;
      const t0 = performance.now();
      for (let i = 0; i < PER; i++) {
        const c0 = performance.now();
        await worker.incr();
        if (performance.now() - c0 > SLOW_MS) o.slow++;
      }
      o.total += performance.now() - t0;
      o.inner += inner.ms;
      o.calls += PER;
    }
    const us = (ms, n) => ((ms * 1000) / n).toFixed(1);
    for (const [key, label] of [
      ['dw', 'durable-workers'],
      ['bsq', 'better-sqlite3 '],
    ]) {
      const o = out[key];
      console.log(
        `${label}  ${us(o.total, o.calls)} µs a call: native ${us(o.inner, o.calls)}, the rest ${us(o.total - o.inner, o.calls)}; over ${SLOW_MS * 1000} µs: ${((100 * o.slow) / o.calls).toFixed(2)}%`,
      );
    }
    console.log(`ratio (better-sqlite3's time ÷ durable-workers'): ${(out.bsq.total / out.dw.total).toFixed(3)}×`);
  } finally {
    await dw.close();
    await bsq.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
