#!/usr/bin/env node
'use strict';
// The serial/burst/read scenarios and RSS per 1,000 objects on a local
// workerd (the pinned one, started as bench/shop/workerd-server.js does),
// next to the same calls to open() — each host in its own process, each
// reached the same way: one HTTP POST per call to a gateway (workerd: the
// Worker's fetch handler, handleCall; Node: a small node:http server around
// open()), the wire codec both ways, Node's fetch as the client. Every
// figure is measured in this run; the ratio is workerd ÷ open().
//
//   node bench/workerd.js [--seconds S] [--objects N]
//
// Bounded: the whole run stops at 30 s (each timed scenario is S seconds per
// host; the defaults take about 20 s here).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const http = require('node:http');
const { fork } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { parseArgs } = require('node:util');
const { renderTable, formatNumber, formatRatio } = require('./table');

const ROOT = path.join(__dirname, '..');
const WIDTH = 64;
const DEADLINE_MS = 30_000;

/** The worker module both hosts run, written to a temporary directory (durable-workers linked in its node_modules). */
const MODULE_SOURCE = `'use strict';
const { DurableWorker } = require('durable-workers');
const { handleCall } = require('durable-workers/cloudflare');

class Counter extends DurableWorker {
  incr() {
    const n = (this.state.get('n') ?? 0) + 1;
    this.state.set('n', n);
    return n;
  }

  read() {
    return this.state.get('n') ?? 0;
  }
}

async function fetch(request, env) {
  return handleCall(request, env, [Counter]);
}

module.exports = { Counter, fetch };
`;

function writeModule(dir) {
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'durable-workers'), 'dir');
  const file = path.join(dir, 'counter.js');
  fs.writeFileSync(file, MODULE_SOURCE);
  return file;
}

/** Resident set of a process, in bytes (Linux /proc). */
function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

// ----- the Node side: open() behind node:http, in a child process -----

async function serveNode(dir) {
  const { open } = require('..');
  const { wire } = require('../js/cloudflare');
  const { Counter } = require(writeModule(dir));
  const host = await open({ dir: path.join(dir, 'data') });
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      let out;
      try {
        const body = wire.decode(Buffer.concat(chunks).toString('utf8'));
        if (body.class !== 'Counter') throw new Error(`no worker class named ${JSON.stringify(body.class)} here`);
        out = { ok: true, value: await host.get(Counter, body.id)[body.method](...(body.args ?? [])) };
      } catch (err) {
        out = { ok: false, error: err instanceof Error ? err : new Error(String(err)) };
      }
      res.end(wire.encode(out));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const stop = async () => {
    server.close();
    server.closeAllConnections?.();
    await host.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
  process.send({ url: `http://127.0.0.1:${server.address().port}`, pid: process.pid });
}

async function startNode(dir) {
  const child = fork(__filename, ['--serve-node', dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((r) => child.once('exit', r));
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`the Node gateway exited (code ${code}) before it served`)));
  });
  return {
    ...ready,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function startWorkerdHost(dir, file) {
  const { buildWorkerd, startWorkerd, freePort } = require('../js/cloudflare');
  const port = await freePort();
  const { config } = await buildWorkerd({ module: file, outDir: path.join(dir, 'build'), dataDir: path.join(dir, 'data'), port });
  const w = await startWorkerd({ config, port });
  return { url: w.url, pid: w.pid, stop: () => w.stop() };
}

// ----- the client, the same for both -----

function client(url) {
  const { wire } = require('../js/cloudflare');
  return async (id, method) => {
    const res = await fetch(`${url}/call`, { method: 'POST', body: wire.encode({ class: 'Counter', id, method, args: [] }) });
    const r = wire.decode(await res.text());
    if (!r.ok) throw r.error;
    return r.value;
  };
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs `round()` (resolving to calls made) until `seconds` pass; calls/s and per-call latency from the serial case. */
async function timed(seconds, round) {
  let calls = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  while (performance.now() < until) calls += await round();
  return calls / ((performance.now() - start) / 1000);
}

async function measureHost(host, { seconds, objects }) {
  const call = client(host.url);
  const out = {};
  // Warm-up: the code, the connections, the first objects.
  await Promise.all(Array.from({ length: WIDTH }, (_, i) => call(`warm-${i}`, 'incr')));
  // Serial write calls to one object, with latencies.
  const lat = [];
  out.serial = await timed(seconds, async () => {
    const t0 = performance.now();
    await call('serial', 'incr');
    lat.push(performance.now() - t0);
    return 1;
  });
  lat.sort((a, b) => a - b);
  out.serialP50 = pct(lat, 50);
  out.serialP99 = pct(lat, 99);
  // 64 concurrent write calls to one object, awaited together, repeated.
  let burstCalls = 0;
  out.burst = await timed(seconds, async () => {
    await Promise.all(Array.from({ length: WIDTH }, () => call('burst', 'incr')));
    burstCalls += WIDTH;
    return WIDTH;
  });
  // The counter must hold every increment: a check that nothing was lost or run twice.
  const counted = await call('burst', 'read');
  if (counted !== burstCalls) throw new Error(`the burst counter reads ${counted} after ${burstCalls} increments`);
  // 64 concurrent read-only calls to one written object.
  await call('read', 'incr');
  let wrong = 0;
  out.read = await timed(seconds, async () => {
    const vs = await Promise.all(Array.from({ length: WIDTH }, () => call('read', 'read')));
    wrong += vs.filter((v) => v !== 1).length;
    return WIDTH;
  });
  if (wrong) throw new Error(`${wrong} reads did not return 1`);
  // RSS per 1,000 objects touched once (one write each, 64 at a time).
  await new Promise((r) => setTimeout(r, 200));
  const before = rssOf(host.pid);
  for (let next = 0; next < objects;) {
    const n = Math.min(WIDTH, objects - next);
    await Promise.all(Array.from({ length: n }, (_, i) => call(`obj-${next + i}`, 'incr')));
    next += n;
  }
  const after = rssOf(host.pid);
  out.rssPer1000 = ((after - before) / objects) * 1000;
  out.rss = after;
  return out;
}

/**
 * Both hosts, one after the other, each on its own fresh directory.
 * @param {{ seconds?: number, objects?: number }} [o]
 */
async function measure({ seconds = 1.5, objects = 1000 } = {}) {
  const started = Date.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-workerd-'));
  const stops = [];
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bench/workerd.js: not done within ${DEADLINE_MS / 1000} s`)), DEADLINE_MS);
  });
  try {
    const run = async () => {
      const out = {};
      const nodeDir = path.join(root, 'node');
      fs.mkdirSync(nodeDir);
      const node = await startNode(nodeDir);
      stops.push(node.stop);
      out.node = await measureHost(node, { seconds, objects });
      await node.stop();
      stops.pop();
      const wDir = path.join(root, 'workerd');
      const file = writeModule(wDir);
      const w = await startWorkerdHost(wDir, file);
      stops.push(w.stop);
      out.workerd = await measureHost(w, { seconds, objects });
      await w.stop();
      stops.pop();
      return out;
    };
    const out = await Promise.race([run(), deadline]);
    out.meta = { seconds, objects, width: WIDTH, elapsedSeconds: (Date.now() - started) / 1000, workerd: require('../js/cloudflare/build').WORKERD_VERSION };
    return out;
  } finally {
    clearTimeout(timer);
    for (const stop of stops.reverse()) await stop().catch(() => {});
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function report(r) {
  const { node: a, workerd: b, meta } = r;
  const mb = (x) => `${formatNumber(x / 2 ** 20)} MB`;
  const ms = (x) => `${formatNumber(x)} ms`;
  const rows = [
    ['serial write calls, one object (/s)', formatNumber(a.serial), formatNumber(b.serial), formatRatio(b.serial / a.serial)],
    ['  p50 / p99 of a serial call (ratio of the p50s)', `${ms(a.serialP50)} / ${ms(a.serialP99)}`, `${ms(b.serialP50)} / ${ms(b.serialP99)}`, formatRatio(b.serialP50 / a.serialP50)],
    [`${meta.width} concurrent write calls, one object (/s)`, formatNumber(a.burst), formatNumber(b.burst), formatRatio(b.burst / a.burst)],
    [`read-only calls, ${meta.width} concurrent, one object (/s)`, formatNumber(a.read), formatNumber(b.read), formatRatio(b.read / a.read)],
    [`RSS per 1,000 objects, ${formatNumber(meta.objects)} written once (lower is better)`, mb(a.rssPer1000), mb(b.rssPer1000), formatRatio(b.rssPer1000 / a.rssPer1000)],
    ['RSS of the serving process at the end', mb(a.rss), mb(b.rss), formatRatio(b.rss / a.rss)],
  ];
  return [
    `Local workerd ${meta.workerd} vs open(), each in its own process behind an HTTP gateway (one POST per call, wire codec, ${meta.seconds} s per scenario, ${formatNumber(meta.elapsedSeconds)} s in all; ratio = workerd ÷ open())`,
    '',
    renderTable(['scenario', 'open() behind node:http', 'local workerd (Durable Objects)', 'ratio'], rows, ['left', 'right', 'right', 'right']),
  ].join('\n');
}

async function main() {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '1.5' }, objects: { type: 'string', default: '1000' }, 'serve-node': { type: 'string' } } });
  if (values['serve-node']) return serveNode(values['serve-node']);
  const r = await measure({ seconds: Number(values.seconds), objects: Number(values.objects) });
  console.log(report(r));
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { measure, report };
