#!/usr/bin/env node
'use strict';
// What observing costs (docs/bench.md, "What observing costs"):
//
//   node bench/observe.js [--runs N] [--seconds S] [--against <tree>]
//
// 1. A read-only call's CPU in process, with no subscriber and with every
//    call and commit channel subscribed by handlers that do nothing (32
//    concurrent callers, user + system CPU of this process per call).
// 2. The shop's server (bench/shop/durable-server.js) with no subscriber,
//    every channel subscribed, and OpenTelemetry spans
//    (DW_SHOP_OBSERVE, bench/shop/observe.js), the three interleaved --runs
//    times: journeys per server CPU-second. Runs swing by a third on a
//    shared machine, so only interleaved runs are compared.
// 3. With --against <tree> (another checkout with its addon built, say a
//    worktree of the revision before a change): its read-only call's CPU, and
//    its shop server and this one's, unobserved, interleaved: the cost of the
//    change with no subscriber.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const dc = require('node:diagnostics_channel');
const { parseArgs } = require('node:util');
const { drive } = require('./shop');
const { renderTable, formatNumber, formatRatio } = require('./table');

const { values } = parseArgs({ options: { runs: { type: 'string', default: '4' }, seconds: { type: 'string', default: '4' }, against: { type: 'string' } } });
const RUNS = Number(values.runs);
const SECONDS = Number(values.seconds);
const HERE = path.join(__dirname, '..');

/**
 * A read-only call's CPU (µs, median of three) with the package at `root`:
 * with no subscriber, and with the call and commit channels subscribed.
 */
async function callCpu(root) {
  const { open, DurableWorker } = require(root);
  class Reader extends DurableWorker {
    async get() {
      return this.state.get('n') ?? 0;
    }
  }
  const host = await open({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-observe-')) });
  const perCall = async () => {
    const n = 3000;
    const t0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: 32 }, async (_, i) => {
        const s = host.get(Reader, `r${i}`);
        for (let j = 0; j < n; j++) await s.get();
      }),
    );
    const c = process.cpuUsage(t0);
    return (c.user + c.system) / (32 * n);
  };
  const nothing = () => {};
  const handlers = { start: nothing, end: nothing, asyncStart: nothing, asyncEnd: nothing, error: nothing };
  const channels = ['call', 'commit'].map((n) => dc.tracingChannel(`durable-workers:${n}`));
  const out = { none: [], subscribed: [] };
  await perCall(); // warm-up
  for (let r = 0; r < 3; r++) {
    out.none.push(await perCall());
    for (const ch of channels) ch.subscribe(handlers);
    out.subscribed.push(await perCall());
    for (const ch of channels) ch.unsubscribe(handlers);
  }
  await host.close();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return { none: median(out.none), subscribed: median(out.subscribed) };
}

/** Drives each [label, server script, environment] `RUNS` times, interleaved; journeys per server CPU-second. */
async function interleaved(variants) {
  const out = new Map(variants.map(([label]) => [label, []]));
  for (let r = 0; r < RUNS; r++) {
    for (const [label, script, env] of r % 2 ? [...variants].reverse() : variants) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-observe-'));
      try {
        const x = await drive(script, [dir], { customers: 32, seconds: SECONDS, env: { ...process.env, ...env } });
        out.get(label).push(x.journeysPerSec / x.serverCpu);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  return out;
}

function table(results, base) {
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const b = mean(results.get(base));
  return renderTable(
    ['server', 'runs (journeys per server CPU-s)', 'mean', `vs ${base}`],
    [...results].map(([label, xs]) => [label, xs.map(formatNumber).join(', '), formatNumber(mean(xs)), formatRatio(mean(xs) / b)]),
    ['left', 'left', 'right', 'right'],
  );
}

(async () => {
  const calls = await callCpu(HERE);
  console.log(`A read-only call, 32 concurrent callers: ${calls.none.toFixed(2)} µs of CPU with no subscriber, ${calls.subscribed.toFixed(2)} µs with the call and commit channels subscribed`);
  if (values.against !== undefined) {
    const before = await callCpu(path.resolve(values.against));
    console.log(`The same call with ${values.against}: ${before.none.toFixed(2)} µs`);
  }
  console.log('');
  const server = (tree) => path.join(tree, 'bench', 'shop', 'durable-server.js');
  const shop = await interleaved([
    ['no subscriber', server(HERE), { DW_SHOP_OBSERVE: '' }],
    ['every channel subscribed', server(HERE), { DW_SHOP_OBSERVE: 'channels' }],
    ['OpenTelemetry spans', server(HERE), { DW_SHOP_OBSERVE: 'otel' }],
  ]);
  console.log(`The shop, 32 customers, ${SECONDS} s a run, interleaved ${RUNS} times\n\n${table(shop, 'no subscriber')}\n`);
  if (values.against !== undefined) {
    const ab = await interleaved([
      [`before (${values.against})`, server(path.resolve(values.against)), {}],
      ['this tree, no subscriber', server(HERE), { DW_SHOP_OBSERVE: '' }],
    ]);
    console.log(`The shop against ${values.against}, no subscriber, interleaved ${RUNS} times\n\n${table(ab, `before (${values.against})`)}`);
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
