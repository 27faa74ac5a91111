#!/usr/bin/env node
'use strict';
// What deadlines cost: the shop (examples/shop) with a deadline on every call
// (open({ callTimeout: 30_000 }), one that never fires) against the same
// server without, in interleaved runs so that drift between runs falls on
// both sides alike. Journeys/s and the server's CPU per journey.
//
//   node bench/deadlines.js [--seconds S] [--runs R] [--customers N] [--json FILE]

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { drive } = require('./shop');

async function main() {
  const { values } = parseArgs({
    options: { seconds: { type: 'string', default: '3' }, runs: { type: 'string', default: '3' }, customers: { type: 'string', default: '32' }, json: { type: 'string' } },
  });
  const seconds = Number(values.seconds);
  const customers = Number(values.customers);
  const server = path.join(__dirname, 'shop', 'durable-server.js');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-deadlines-'));
  const sides = { off: [], on: [] };
  try {
    for (let r = 0; r < Number(values.runs); r++) {
      for (const side of r % 2 === 0 ? ['off', 'on'] : ['on', 'off']) {
        const env = side === 'on' ? { ...process.env, DW_SHOP_TIMEOUT: '1' } : process.env;
        sides[side].push(await drive(server, [path.join(root, `${side}-${r}`)], { customers, seconds, env }));
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const jps = (side) => median(sides[side].map((x) => x.journeysPerSec));
  const cpu = (side) => median(sides[side].map((x) => (x.serverCpu === null ? NaN : (x.serverCpu * 1000) / x.journeysPerSec)));
  const ratios = sides.on.map((x, i) => x.journeysPerSec / sides.off[i].journeysPerSec);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ with: jps('on'), without: jps('off'), ratio: median(ratios) }));
  console.log(`deadlines: the shop, ${customers} customers, callTimeout on every call against none; median of ${values.runs} interleaved runs of ${seconds} s`);
  console.log(
    `deadlines: ${Math.round(jps('on')).toLocaleString('en-US')} journeys/s with, ${Math.round(jps('off')).toLocaleString('en-US')} without: ` +
      `${median(ratios).toFixed(3)}× (runs ${ratios.map((x) => x.toFixed(3)).join(', ')}); server CPU per journey ${cpu('on').toFixed(3)} ms with, ${cpu('off').toFixed(3)} ms without`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
