#!/usr/bin/env node
'use strict';
// Fork per run: what a no-op Peek worker run costs on the Node adapter, cold
// (a process forked when the run asks) and with a warm spare (forked ahead,
// booted, nothing of any worker imported). Prints runs/s, the p50 added
// latency (run() wall time minus the entry's own time), and where the time
// goes at p50: fork (spawn to the child's first instruction), bootstrap (to
// 'ready': import refusal in place), import (the worker module), exit
// (SIGKILL to exit), and host (the rest: manifest read, api built, IPC each
// way, waiting on a spare still booting); per run, these add up to "added".
// The entry's own time (run) is outside "added". Also: bare `node -e 0` on
// this machine, in a run's environment: the floor under any cold figure.
// Each mode without the sandbox and, where bubblewrap can make one, with it
// (fork then includes the sandbox's setup). Bounded to about 45 s.
//
//   node bench/peek.js [--runs N] [--json]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { spawnSync } = require('node:child_process');
const { nodeAdapter, createWorkerHost } = require('../js/peek');
const { runEnv } = require('../js/peek/node/process');
const { sandboxStatus } = require('../js/peek/node/sandbox');

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' }, json: { type: 'boolean' } } });
const RUNS = Number(values.runs);
const BUDGET_MS = 6000; // per mode; four modes

const p50 = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[s.length >> 1] : NaN;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function noopWorker() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-bench-'));
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(dir, 'worker.js'), 'export default async () => null;\n');
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name: 'noop', worker: { url: 'worker.js' } }));
  return { dir, manifest: path.join(dir, 'manifest.json') };
}

/** Runs the no-op worker; `pause` ms between runs lets the spare finish booting. */
async function mode(name, { warm, pause, spares, sandbox = 'off', dir }, manifest) {
  const adapter = nodeAdapter({ warm, spares, sandbox, dir, log: () => {} });
  const realms = [];
  const open = adapter.openRealm;
  adapter.openRealm = async (...args) => {
    const realm = await open(...args);
    realms.push(realm);
    return realm;
  };
  const host = createWorkerHost({ adapter });
  if (warm) {
    // Let the first spare boot: the steady state of a supervisor.
    await host.run(manifest, { kind: 'command', name: 'warmup', params: null });
    await sleep(300);
    realms.length = 0;
  }
  const rows = [];
  let busy = 0;
  const end = Date.now() + BUDGET_MS;
  for (let i = 0; i < RUNS && Date.now() < end; i++) {
    if (pause) await sleep(pause);
    const t0 = performance.timeOrigin + performance.now();
    const r = await host.run(manifest, { kind: 'command', name: 'bench', params: null });
    const t1 = performance.timeOrigin + performance.now();
    if (!r.ok) throw r.error;
    busy += t1 - t0;
    const tm = realms[realms.length - 1].timing;
    const own = tm.runEnd - tm.runStart;
    const row = {
      added: t1 - t0 - own,
      // Cold: the whole fork and boot lie inside the run; warm: before it.
      fork: Math.max(0, tm.childOrigin - Math.max(tm.forkAt, t0)),
      bootstrap: Math.max(0, tm.readyAt - Math.max(tm.childOrigin, t0)),
      import: tm.importEnd - tm.importStart,
      exit: tm.exitAt - tm.killAt,
      run: own,
    };
    row.host = row.added - row.fork - row.bootstrap - row.import - row.exit;
    rows.push(row);
  }
  await host.close();
  await adapter.close();
  const stat = (k) => Math.round(p50(rows.map((r) => r[k])) * 10) / 10;
  // The breakdown of the run at the median of "added", so its parts add up to it.
  const median = [...rows].sort((a, b) => a.added - b.added)[rows.length >> 1];
  const r1 = (v) => Math.round(v * 10) / 10;
  return {
    mode: name,
    runs: rows.length,
    runsPerSecond: Math.round((rows.length / busy) * 1000 * 10) / 10,
    p50AddedMs: stat('added'),
    breakdownAtMedianMs: { fork: r1(median.fork), bootstrap: r1(median.bootstrap), import: r1(median.import), exit: r1(median.exit), host: r1(median.host) },
    runP50Ms: stat('run'),
  };
}

async function main() {
  const { dir, manifest } = noopWorker();
  try {
    const bare = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      // In the environment a run's process gets: variables such as
      // NODE_EXTRA_CA_CERTS (set here: 35–40 ms of every start) are not passed on.
      spawnSync(process.execPath, ['-e', '0'], { env: runEnv() });
      bare.push(performance.now() - t0);
    }
    const results = [
      await mode('cold (fork when the run asks)', { warm: false, pause: 0 }, manifest),
      await mode('warm spare, ready (runs 150 ms apart)', { warm: true, pause: 150 }, manifest),
      // With a directory each run is numbered and its start and end lines kept (js/peek/run-log.js): the cost of kept logs.
      await mode('warm spare, ready, runs kept in a dir', { warm: true, pause: 150, dir: path.join(dir, 'state') }, manifest),
      await mode('warm spare, back to back', { warm: true, pause: 0 }, manifest),
      await mode('3 warm spares, back to back', { warm: true, spares: 3, pause: 0 }, manifest),
    ];
    const sandbox = sandboxStatus();
    if (sandbox.ok) {
      results.push(
        await mode(`sandboxed (${sandbox.mode}), cold`, { warm: false, pause: 0, sandbox: 'required' }, manifest),
        await mode(`sandboxed (${sandbox.mode}), warm spare, ready`, { warm: true, pause: 150, sandbox: 'required' }, manifest),
      );
    }
    const bareNodeP50Ms = Math.round(p50(bare) * 10) / 10;
    if (values.json) {
      console.log(JSON.stringify({ node: process.version, cpus: os.cpus().length, bareNodeP50Ms, results }, null, 2));
      return;
    }
    console.log(`Peek fork-per-run, no-op worker (Node ${process.version}, ${os.cpus().length} cpus); bare \`node -e 0\` p50 ${bareNodeP50Ms} ms`);
    for (const r of results) {
      const b = r.breakdownAtMedianMs;
      console.log(
        `${r.mode.padEnd(40)} ${String(r.runsPerSecond).padStart(6)} runs/s  p50 added ${String(r.p50AddedMs).padStart(6)} ms  ` +
          `= fork ${b.fork} + bootstrap ${b.bootstrap} + import ${b.import} + exit ${b.exit} + host ${b.host}  (entry ${r.runP50Ms})  n=${r.runs}`,
      );
    }
    if (!sandbox.ok) console.log(`sandboxed modes not measured: ${sandbox.reason}`);
    console.log('runs/s counts time inside run() only; "added" is run() wall time minus the entry\'s own.');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
