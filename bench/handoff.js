#!/usr/bin/env node
'use strict';
// What handing one commit to a commit thread costs the JS thread: the time
// `NativeWorker.write` takes to return (the commit itself runs elsewhere),
// when a commit thread is still polling after the previous commit (back to
// back) and when every commit thread has gone to sleep and must be woken.
// docs/bench.md quotes these figures.
//
//   node bench/handoff.js [--calls N]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { parseArgs } = require('node:util');
const { NativeHost } = require('../js/native/load');
const { Commits } = require('../js/runtime/commits');
const { packChanges } = require('../js/native/changes');
const { median, percentile } = require('./measure');
const { renderTable, formatMicros } = require('./table');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function measure({ calls = 300 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-handoff-'));
  const commits = new Commits();
  const host = NativeHost.open(dir, { durability: 'full', maxLive: 128, evictAfterMs: 60_000 }, commits.done);
  const worker = host.worker('Handoff', 'w');
  const changes = { keys: ['k'], tags: [1], values: [Buffer.from([1, 2, 3, 4])], deletes: [] };
  const handOff = async (gapMs) => {
    const times = [];
    for (let i = 0; i < calls; i++) {
      if (gapMs > 0) await sleep(gapMs);
      const t0 = performance.now();
      const p = commits.submit((id) => worker.write(id, ...packChanges(changes)));
      times.push((performance.now() - t0) * 1000);
      await p;
    }
    times.sort((a, b) => a - b);
    return { p50: median(times), p90: percentile(times, 90) };
  };
  try {
    await worker.register();
    await commits.submit((id) => worker.write(id, ...packChanges(changes)));
    return { calls, awake: await handOff(0), asleep: await handOff(2) };
  } finally {
    await host.close();
    commits.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function report(r) {
  return [
    `Commit hand-off: time on the JS thread per write handed to a commit thread (${r.calls} writes each)`,
    '',
    renderTable(
      ['commit threads', 'p50', 'p90'],
      [
        ['awake (back to back: one is still polling)', formatMicros(r.awake.p50), formatMicros(r.awake.p90)],
        ['asleep (2 ms apart: one must be woken)', formatMicros(r.asleep.p50), formatMicros(r.asleep.p90)],
      ],
      ['left', 'right', 'right'],
    ),
  ].join('\n');
}

if (require.main === module) {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '300' } } });
  measure({ calls: Number(values.calls) }).then(
    (r) => console.log(report(r)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

module.exports = { measure, report };
