#!/usr/bin/env node
'use strict';
// Alarm lateness: N workers with alarms all due within the same second, fired
// by one scheduler. Prints fired/s and the distribution of (ran − scheduled).
//
//   node bench/alarms.js [--workers N]
//
// Alarms are set first (with the scheduler stopped), so the figure is the
// firing alone: finding what is due, opening each worker, running alarm(),
// removing the alarm from its file and the index.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { open, DurableWorker } = require('..');

const lateness = [];

class Timer extends DurableWorker {
  async arm(at) {
    await this.state.setAlarm(at);
  }
  alarm({ scheduledTime }) {
    lateness.push(Date.now() - scheduledTime);
  }
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Runs the scenario and returns its figures.
 * @param {{ workers?: number }} [options]
 */
async function measure({ workers = 10_000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-alarms-'));
  try {
    const host = await open({ dir, maxLive: 1024 });
    // All due within one second, after arming (planned at ≥ 1,000/s) and a
    // reopen: the scheduler is running before the first comes due.
    const armStart = Date.now();
    const ids = Array.from({ length: workers }, (_, i) => `t${i}`);
    const base = armStart + workers + 3000;
    for (let i = 0; i < ids.length; i += 256) {
      await Promise.all(ids.slice(i, i + 256).map((id, j) => host.get(Timer, id).arm(base + Math.floor(((i + j) * 1000) / workers))));
    }
    const armMs = Date.now() - armStart;
    if (Date.now() > base) throw new Error(`arming took ${armMs} ms, past the planned due time`);
    await host.close();

    // A fresh process would be more honest still; a fresh host is the same files.
    const again = await open({ dir, maxLive: 1024 });
    const scheduler = await again.startAlarms({ classes: [Timer] });
    await new Promise((r) => setTimeout(r, Math.max(0, base - Date.now())));
    const start = Date.now();
    while (lateness.length < workers && Date.now() - start < 120_000) await new Promise((r) => setTimeout(r, 20));
    const fireMs = Date.now() - start;
    await scheduler.stop();
    await again.close();
    const sorted = [...lateness].sort((a, b) => a - b);
    return {
      workers,
      fired: lateness.length,
      armPerSec: (workers / armMs) * 1000,
      firedPerSec: (lateness.length / fireMs) * 1000,
      latenessP50: percentile(sorted, 50),
      latenessP99: percentile(sorted, 99),
      latenessMax: sorted[sorted.length - 1],
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function idleLateness({ alarms = 200 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-alarms-'));
  lateness.length = 0;
  try {
    const host = await open({ dir });
    const scheduler = await host.startAlarms({ classes: [Timer] });
    // One alarm at a time, each set while the scheduler sleeps: the idle case.
    for (let i = 0; i < alarms; i++) {
      await host.get(Timer, `idle${i}`).arm(Date.now() + 20);
      while (lateness.length <= i) await new Promise((r) => setTimeout(r, 5));
    }
    await scheduler.stop();
    await host.close();
    const sorted = [...lateness].sort((a, b) => a - b);
    return { alarms, latenessP50: percentile(sorted, 50), latenessP99: percentile(sorted, 99) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { measure, idleLateness };

if (require.main === module) {
  const { values } = parseArgs({ options: { workers: { type: 'string', default: '10000' } } });
  (async () => {
    const idle = await idleLateness();
    lateness.length = 0;
    const burst = await measure({ workers: Number(values.workers) });
    console.log(`alarms, idle (one due at a time, ${idle.alarms} in turn): lateness p50 ${idle.latenessP50} ms, p99 ${idle.latenessP99} ms`);
    console.log(
      `alarms, ${burst.workers} workers due within one second: fired ${burst.fired} at ${Math.round(burst.firedPerSec)}/s; ` +
        `lateness p50 ${burst.latenessP50} ms, p99 ${burst.latenessP99} ms, max ${burst.latenessMax} ms (arming: ${Math.round(burst.armPerSec)}/s)`,
    );
  })().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
