#!/usr/bin/env node
'use strict';
// Snapshots and restore (docs/backups.md): how long a snapshot of N workers
// takes while the host serves them, against copying the same files with
// fs.cpSync and one `sync` (what a user would do with the directory not
// served); how fast a restore goes; and what a snapshot costs callers: p50
// and p99 call latency of 32 concurrent callers over 1,000 of the workers,
// without and with snapshots taken back to back; and what the continuous
// archive costs the shop over node:http (bench/shop.js's server, with and
// without `archive`, interleaved --runs times, medians: runs on this shared
// machine swing by a fifth, so only interleaved ones are compared), and the
// shop's p99 journey latency with snapshots taken back to back, interleaved
// with the same runs.
//
//   node bench/backup.js [--workers N] [--seconds S] [--runs R]

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { open, restore, DurableWorker } = require('..');
const { renderTable, formatNumber, formatRatio } = require('./table');

const CALLERS = 32;
const HOT = 1000;

class Account extends DurableWorker {
  static collections = { entries: { amount: 'real' } };

  post(amount) {
    const balance = (this.state.get('balance') ?? 0) + amount;
    this.state.set('balance', balance);
    this.state.collection('entries').put(String(balance), { amount, note: 'x'.repeat(200) });
    return balance;
  }
}

async function main() {
  const { values } = parseArgs({ options: { workers: { type: 'string', default: '10000' }, seconds: { type: 'string', default: '3' }, runs: { type: 'string', default: '5' } } });
  const n = Number(values.workers);
  const seconds = Number(values.seconds);
  const runs = Number(values.runs);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-backup-'));
  try {
    const dir = path.join(root, 'data');
    const host = await open({ dir, control: false });
    for (let i = 0; i < n; i += 64) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + 64); j++) batch.push(host.get(Account, `a${j}`).post(1));
      await Promise.all(batch);
    }

    const snap = await host.backup(path.join(root, 'snap'));
    const mb = snap.bytes / 1e6;

    let started = process.hrtime.bigint();
    fs.cpSync(dir, path.join(root, 'copy'), { recursive: true });
    execFileSync('sync');
    const copyMs = Number(process.hrtime.bigint() - started) / 1e6;

    started = process.hrtime.bigint();
    const restored = await restore(snap.dest, path.join(root, 'restored'));
    const restoreMs = Number(process.hrtime.bigint() - started) / 1e6;
    if (restored.workers.length !== n || restored.failed.length !== 0) throw new Error(`restore: ${restored.workers.length} of ${n}, ${restored.failed.length} failed`);

    const quiet = await latency(host, seconds, null);
    let taken = 0;
    const during = await latency(host, seconds, async (stopped) => {
      while (!stopped()) {
        const dest = path.join(root, `during-${taken}`);
        await host.backup(dest);
        taken++;
      }
    });
    await host.close();
    const shop = await archiveCost(root, runs, seconds);

    const rows = [
      [
        'snapshot of the served directory',
        `${formatNumber(snap.ms)} ms`,
        `${formatNumber(copyMs)} ms`,
        formatRatio(copyMs / snap.ms),
        `${formatNumber(n / (snap.ms / 1000))} workers/s, ${formatNumber(mb / (snap.ms / 1000))} MB/s`,
      ],
      [
        'restore (hash and integrity_check each file, rebuild the catalog)',
        `${formatNumber(restoreMs)} ms`,
        `${formatNumber(copyMs)} ms`,
        formatRatio(copyMs / restoreMs),
        `${formatNumber(n / (restoreMs / 1000))} workers/s, ${formatNumber(mb / (restoreMs / 1000))} MB/s`,
      ],
      [
        'shop journeys/s, 32 customers, continuous archive to a directory',
        formatNumber(shop.archived.journeys),
        formatNumber(shop.plain.journeys),
        formatRatio(shop.archived.journeys / shop.plain.journeys),
        `per server CPU-second ${formatNumber(shop.archived.perCpu)} vs ${formatNumber(shop.plain.perCpu)} (${formatRatio(shop.archived.perCpu / shop.plain.perCpu)}); medians of ${runs} interleaved runs; target ≥ 0.9×: ${shop.archived.journeys / shop.plain.journeys >= 0.9 ? 'met' : 'NOT met'}`,
      ],
      [
        'shop p99 journey latency, 32 customers, snapshots back to back',
        `${formatNumber(shop.snapshots.p99)} ms`,
        `${formatNumber(shop.plain.p99)} ms`,
        formatRatio(shop.snapshots.p99 / shop.plain.p99),
        `journeys/s ${formatNumber(shop.snapshots.journeys)} vs ${formatNumber(shop.plain.journeys)} (${formatRatio(shop.snapshots.journeys / shop.plain.journeys)}); medians of ${runs} interleaved runs`,
      ],
      [
        `p99 call latency, ${CALLERS} callers over ${formatNumber(HOT)} workers`,
        `${formatNumber(during.p99)} µs`,
        `${formatNumber(quiet.p99)} µs`,
        formatRatio(during.p99 / quiet.p99),
        `p50 ${formatNumber(during.p50)} vs ${formatNumber(quiet.p50)} µs; ${formatNumber(during.rate)} vs ${formatNumber(quiet.rate)} calls/s; ${taken} snapshots taken meanwhile`,
      ],
    ];
    console.log(`Snapshots: ${formatNumber(n)} workers written once (one key and one document each), ${formatNumber(mb)} MB (bench/backup.js)`);
    console.log(renderTable(['scenario', 'durable-workers', 'baseline', 'ratio', 'notes'], rows, ['left', 'right', 'right', 'right', 'left']));
    console.log(
      'baselines: fs.cpSync of the same directory and one `sync` (a copy of files nobody writes); for the shop, the same server with no archive and no snapshots; for latency, the same callers with no snapshot running.',
    );
    console.log('ratio: baseline ÷ durable-workers for times (higher is better), durable-workers ÷ baseline for the shop and latency (lower latency is better)');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** The shop's server (bench/shop/durable-server.js) with and without the archive, interleaved: medians. */
async function archiveCost(root, runs, seconds) {
  const { drive } = require('./shop');
  const server = path.join(__dirname, 'shop', 'durable-server.js');
  const kinds = [
    ['plain', {}],
    ['archived', { DW_SHOP_ARCHIVE: '1' }],
    ['snapshots', { DW_SHOP_SNAPSHOTS: '1' }],
  ];
  const got = { plain: [], archived: [], snapshots: [] };
  for (let i = 0; i < runs; i++) {
    // Each goes first in turn: a run leaves the disk busier for the next.
    for (const [name, env] of [...kinds.slice(i % kinds.length), ...kinds.slice(0, i % kinds.length)]) {
      const r = await drive(server, [path.join(root, `shop-${name}-${i}`)], { customers: 32, seconds, env: { ...process.env, ...env } });
      got[name].push({ journeys: r.journeysPerSec, perCpu: r.serverCpu > 0 ? r.journeysPerSec / r.serverCpu : NaN, p99: r.p99 });
    }
  }
  const median = (rs, k) => rs.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(rs.length / 2)];
  const of = (rs) => ({ journeys: median(rs, 'journeys'), perCpu: median(rs, 'perCpu'), p99: median(rs, 'p99') });
  return { plain: of(got.plain), archived: of(got.archived), snapshots: of(got.snapshots) };
}

/**
 * Per-call latency of CALLERS closed loops: for `seconds`, or, with
 * `alongside`, for as long as it runs (it is told when `seconds` have passed
 * and ends after the snapshot it is taking).
 */
async function latency(host, seconds, alongside) {
  const times = [];
  const until = Date.now() + seconds * 1000;
  let done = false;
  const started = Date.now();
  const side = alongside?.(() => Date.now() >= until).then(() => (done = true));
  const stopped = () => (alongside ? done : Date.now() >= until);
  await Promise.all(
    Array.from({ length: CALLERS }, async (_, k) => {
      for (let i = k; !stopped(); i += CALLERS) {
        const t0 = process.hrtime.bigint();
        await host.get(Account, `a${i % HOT}`).post(1);
        times.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
    }),
  );
  await side;
  const elapsed = (Date.now() - started) / 1000;
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { p50: at(0.5), p99: at(0.99), rate: times.length / elapsed };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
