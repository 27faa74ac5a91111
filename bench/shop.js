#!/usr/bin/env node
'use strict';
// The shop against what users would pick instead, over the same node:http:
// 32 customers running journeys of six calls (four of them writes) against
// each system's server, every server in a process of its own and the load
// driver (examples/shop/load.js, which checks every answer) in this one.
//
//   node bench/shop.js [--customers N] [--seconds S] [--runs R] [--shards K] [--curve 1,8,32,64] [--svg FILE] [--json FILE] [--slow-ms M]
//   node bench/shop.js --ramp S     journeys/s in each of the first S seconds of a fresh server, no warm-up
//
// With --slow-ms, every server runs under the slow-sync shim (bench/slowsync:
// M ms added to every fsync), the emulated slow device of bench/run.js.
//
// With --curve, every system is also driven at each of those numbers of
// customers (for --seconds each), and --svg writes the chart of journeys/s
// against customers (docs/bench.svg comes from this).
//
// With --runs R (R > 1), the baseline and durable-workers each run R times,
// interleaved, and their rows give the medians (the CPU target compares the
// two; with one run of each, its ratio ranged 1.37–1.94× over the full runs
// of 2026-12-02 and 03 in docs/bench.md).
//
// Systems: durable-workers (examples/shop/server.js), durable-workers on K
// shards, and the hand-rolled better-sqlite3 server (bench/shop/baseline-server.js).
// Every ratio is against the baseline measured in this run.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const { runLoad } = require('../examples/shop/load');
const { measureDeviceSync } = require('./device');
const { renderTable, formatNumber, formatRatio } = require('./table');
const { lineChart } = require('./chart');
const { slowSyncEnv } = require('./slowsync');

/** CPU time (user + system) a process has used, in ms, from /proc; null where there is none. */
function cpuMs(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime, fields 14 and 15 of the line (11 and 12 after the name), in clock ticks.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** sysconf(_SC_CLK_TCK): 100 on every Linux Node runs on. */
const CLOCK_TICKS = 100;

/** No counters from a server in another process. */
const REMOTE = { stats: () => ({ commits: 0, syncs: 0 }) };

/**
 * Starts a server script that sends { url } over IPC, hands it to `use`, and
 * stops it. With `execPath`, the server runs on that node binary (another
 * Node line, bench/lines.js) without this process's flags.
 */
async function withServer(script, args, env, use, execPath) {
  const child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env, ...(execPath ? { execPath, execArgv: [] } : {}) });
  try {
    const [msg] = await Promise.race([once(child, 'message'), once(child, 'exit').then(([code]) => Promise.reject(new Error(`${path.basename(script)} exited with ${code} before serving`)))]);
    return await use(msg.url, msg.pid ?? child.pid);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

/** Runs the load against a fresh server, after a warm-up, with the CPU both sides used. */
function drive(script, args, { customers, seconds, env, execPath }) {
  return withServer(
    script,
    args,
    env,
    async (url, pid) => {
      // A warm-up first, not counted: shards start, workerd compiles, files
      // exist, both sides' JIT settles. Every system climbs for its first
      // seconds (`--ramp` prints it: durable-workers ~350 → ~1,000 journeys/s
      // over three, workerd ~170 → ~200 over one); two seconds of it puts each
      // near its steady rate.
      const warm = await runLoad({ url, host: REMOTE, customers, seconds: Math.min(2, seconds) });
      // CPU time of the serving process (workerd's own, for workerd) and of this
      // driver over the measured window: whether a system computes or waits.
      const server0 = cpuMs(pid);
      const driver0 = process.cpuUsage();
      const started = performance.now();
      const r = await runLoad({ url, host: REMOTE, customers, seconds });
      const wallMs = performance.now() - started;
      const server1 = cpuMs(pid);
      const driver = process.cpuUsage(driver0);
      r.serverCpu = server0 === null || server1 === null ? null : (server1 - server0) / wallMs;
      r.driverCpu = (driver.user + driver.system) / 1000 / wallMs;
      r.warmupJourneysPerSec = warm.journeysPerSec;
      return r;
    },
    execPath,
  );
}

/** Journeys/s in each of the first `seconds` one-second windows of a fresh server: the climb the warm-up skips. */
function ramp(script, args, { customers, seconds, env }) {
  return withServer(script, args, env, async (url) => {
    const out = [];
    for (let i = 0; i < seconds; i++) out.push((await runLoad({ url, host: REMOTE, customers, seconds: 1 })).journeysPerSec);
    return out;
  });
}

/** [name, server script, extra arguments, extra environment] of each system measured. */
function systemsOf(shards) {
  const durable = path.join(__dirname, 'shop', 'durable-server.js');
  return [
    ['better-sqlite3, file per customer (baseline)', path.join(__dirname, 'shop', 'baseline-server.js'), []],
    ['durable-workers', durable, []],
    // Every commit shipped to another directory as it commits (docs/backups.md).
    ['durable-workers, archived to a directory', durable, [], { DW_SHOP_ARCHIVE: '1' }],
    // What observing costs: every diagnostics channel with a subscriber
    // that does nothing, then OpenTelemetry making spans (js/observe/otel.js).
    ['durable-workers, channels subscribed', durable, [], { DW_SHOP_OBSERVE: 'channels' }],
    ['durable-workers, OpenTelemetry spans', durable, [], { DW_SHOP_OBSERVE: 'otel' }],
    [`durable-workers, ${shards} shards`, path.join(__dirname, 'shop', 'durable-server.js'), [String(shards)]],
    ['durable-workers on local workerd (Durable Objects)', path.join(__dirname, 'shop', 'workerd-server.js'), []],
  ];
}

/** The ramp of every system: journeys/s per second from a cold start. */
async function measureRamp({ customers = 32, seconds = 8, shards = 2 } = {}) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-shop-'));
  try {
    const rows = [];
    for (const [name, script, extra, more] of systemsOf(shards))
      rows.push([name, await ramp(script, [path.join(root, String(rows.length)), ...extra], { customers, seconds, env: { ...process.env, ...more } })]);
    return rows;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The baseline and durable-workers, the two systems the CPU target compares,
 * in `runs` interleaved runs (each on a fresh server, the first system first
 * in even runs), so that the machine's drift over the minute falls on both:
 * each one's median journeys/s and median journeys per server CPU-second,
 * the latencies of its median run, and every run's figures.
 */
async function interleaved(systems, runs, root, { customers, seconds, env }) {
  const got = systems.map(() => []);
  for (let r = 0; r < runs; r++) {
    for (const i of r % 2 === 0 ? [0, 1] : [1, 0]) {
      const [, script, extra, more] = systems[i];
      const x = await drive(script, [path.join(root, `${i}-run-${r}`), ...extra], { customers, seconds, env: { ...env, ...more } });
      got[i].push({ ...x, perCpu: x.serverCpu > 0 ? x.journeysPerSec / x.serverCpu : null });
    }
  }
  const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return got.map((rs) => {
    const journeysPerSec = mid(rs.map((x) => x.journeysPerSec));
    const at = rs.find((x) => x.journeysPerSec === journeysPerSec);
    const perCpu = rs.every((x) => x.perCpu !== null) ? mid(rs.map((x) => x.perCpu)) : null;
    return { ...at, perCpu, runs: rs.map((x) => ({ journeysPerSec: x.journeysPerSec, perCpu: x.perCpu })) };
  });
}

async function measure({ customers = 32, seconds = 5, shards = 2, curve = [], slowMs = 0, runs = 1 } = {}) {
  const env = slowMs > 0 ? slowSyncEnv(slowMs) : process.env;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-shop-'));
  const systems = systemsOf(shards);
  try {
    const device = measureDeviceSync({ dir: path.join(root, 'device'), seconds: 1 });
    const first = runs > 1 ? await interleaved(systems.slice(0, 2), runs, root, { customers, seconds, env }) : [];
    const rows = [];
    for (const [name, script, extra, more] of systems) {
      const dir = path.join(root, String(rows.length));
      const withMore = { ...env, ...more };
      const r = first[rows.length] ?? (await drive(script, [dir, ...extra], { customers, seconds, env: withMore }));
      const points = [];
      for (const c of curve) {
        const p = c === customers ? r : await drive(script, [path.join(root, `${rows.length}-${c}`), ...extra], { customers: c, seconds, env: withMore });
        points.push([c, p.journeysPerSec]);
      }
      rows.push({ name, ...r, points });
    }
    return { device, customers, seconds, rows, curve, slowMs, runs };
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function report({ device, customers, seconds, rows, curve = [], slowMs = 0, runs = 1 }) {
  const base = rows[0].journeysPerSec;
  const curveTable =
    curve.length === 0
      ? []
      : [
          '',
          'journeys/s by number of customers',
          '',
          renderTable(
            ['system', ...curve.map(String)],
            rows.map((r) => [r.name, ...r.points.map(([, v]) => formatNumber(v))]),
            ['left', ...curve.map(() => 'right')],
          ),
        ];
  return [
    `Shop over node:http: ${customers} customers, ${seconds} s per system${runs > 1 ? ` (the first two: medians of ${runs} interleaved runs)` : ''}, each server in its own process; ` +
      (slowMs > 0 ? `on the emulated ${slowMs} ms device (+${slowMs} ms per fsync)` : `device ${formatNumber(device.syncsPerSec)} syncs/s`),
    '',
    renderTable(
      ['system', 'journeys/s', 'p50', 'p99', 'server CPU', 'journeys per server CPU-s', 'driver CPU', 'ratio'],
      rows.map((r) => [
        r.name,
        formatNumber(r.journeysPerSec),
        `${formatNumber(r.p50)} ms`,
        `${formatNumber(r.p99)} ms`,
        r.serverCpu == null ? '–' : `${Math.round(r.serverCpu * 100)}%`,
        r.perCpu != null ? formatNumber(r.perCpu) : r.serverCpu > 0 ? formatNumber(r.journeysPerSec / r.serverCpu) : '–',
        r.driverCpu == null ? '–' : `${Math.round(r.driverCpu * 100)}%`,
        formatRatio(r.journeysPerSec / base),
      ]),
      ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
    'CPU: of one core over the measured window (100% = one core busy throughout); the driver is this process, checking every answer.',
    ...rows
      .filter((r) => r.runs !== undefined)
      .map((r) => `${r.name}, each run: ${r.runs.map((x) => `${formatNumber(x.journeysPerSec)} journeys/s, ${x.perCpu === null ? '–' : formatNumber(x.perCpu)} per CPU-s`).join('; ')}`),
    ...curveTable,
  ].join('\n');
}

/** The chart of a measurement with a curve. */
function chart(r) {
  return lineChart({
    title: `The shop over node:http: journeys/s against customers (${os.cpus().length} CPUs, ${new Date().toISOString().slice(0, 10)})`,
    xLabel: 'customers shopping at once',
    yLabel: 'journeys per second (6 calls, 4 writes)',
    series: r.rows.map((row) => ({ name: row.name.replace(/ \(.*\)$/, ''), points: row.points })),
  });
}

async function main() {
  const { values } = parseArgs({
    options: {
      customers: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '5' },
      shards: { type: 'string', default: '2' },
      curve: { type: 'string', default: '' },
      svg: { type: 'string' },
      json: { type: 'string' },
      'slow-ms': { type: 'string', default: '0' },
      runs: { type: 'string', default: '1' },
      ramp: { type: 'string' },
    },
  });
  if (values.ramp !== undefined) {
    const seconds = Number(values.ramp);
    const rows = await measureRamp({ customers: Number(values.customers), seconds, shards: Number(values.shards) });
    console.log(`Shop over node:http from a cold start: journeys/s in each second, ${values.customers} customers, no warm-up`);
    console.log('');
    const cols = Array.from({ length: seconds }, (_, i) => `${i + 1} s`);
    console.log(
      renderTable(
        ['system', ...cols],
        rows.map(([name, xs]) => [name, ...xs.map(formatNumber)]),
        ['left', ...cols.map(() => 'right')],
      ),
    );
    return;
  }
  const curve = values.curve === '' ? [] : values.curve.split(',').map(Number);
  const r = await measure({
    customers: Number(values.customers),
    seconds: Number(values.seconds),
    shards: Number(values.shards),
    curve,
    slowMs: Number(values['slow-ms']),
    runs: Number(values.runs),
  });
  console.log(report(r));
  if (values.json) {
    const rows = r.rows.map(({ name, journeysPerSec, p50, p99, serverCpu, perCpu, runs, points }) => ({ name, journeysPerSec, p50, p99, serverCpu, perCpu, runs, points }));
    fs.writeFileSync(values.json, JSON.stringify({ customers: r.customers, seconds: r.seconds, device: r.device, rows }));
  }
  if (values.svg && curve.length > 0) {
    fs.writeFileSync(values.svg, chart(r));
    console.log(`chart written to ${values.svg}`);
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { measure, report, chart, drive };
