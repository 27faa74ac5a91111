#!/usr/bin/env node
'use strict';
// Instructions per call, counted rather than timed: `node bench/instructions.js
// [read|docGet] [--root <tree>]`. A 2-core machine's timings move by a third
// between runs of the same code, which hides a change of a few percent;
// callgrind's count on `node --predictable` (V8 compiles on the main thread)
// repeats within 0.1%. The scenario runs `LOW` and `HIGH` steps of 64 calls
// after the same warm-up, each in its own process under valgrind; the
// difference divided by the extra calls is one call's cost. Needs valgrind.
//
//   node bench/instructions.js read                 this tree
//   node bench/instructions.js read --root /tmp/wt  another checkout, built
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');

const WIDTH = 64;
const WARM = 300;
const LOW = 100;
const HIGH = 1100;

/** The child: `steps` steps of the scenario after the warm-up, nothing printed. */
async function child(root, scenario, steps) {
  const { openDurable } = require(path.join(root, 'bench', 'durable.js'));
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'dw-instr-'));
  const sys = await openDurable({ dir });
  const w = sys.worker('c');
  await w.incr();
  if (scenario === 'docGet') await w.fillDocs(2000);
  const step = async (s) => {
    if (scenario === 'docGet') return w.getDocs((s * WIDTH) % 2000, WIDTH);
    const calls = new Array(WIDTH);
    for (let i = 0; i < WIDTH; i++) calls[i] = w.read();
    return Promise.all(calls);
  };
  for (let s = 0; s < WARM + steps; s++) await step(s);
  await sys.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Instructions valgrind counted for one child run of `steps` steps. */
function count(root, scenario, steps) {
  const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, '--predictable', __filename, '--child', scenario, String(steps), '--root', root], {
    encoding: 'utf8',
  });
  const m = /Collected : ([\d,]+)/.exec(r.stderr ?? '');
  if (r.status !== 0 || m === null) throw new Error(`valgrind failed (is it installed?): ${(r.stderr ?? r.error?.message ?? '').slice(-500)}`);
  return Number(m[1].replaceAll(',', ''));
}

async function main() {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { root: { type: 'string' }, child: { type: 'boolean' } } });
  const root = path.resolve(values.root ?? path.join(__dirname, '..'));
  const scenario = positionals[0] ?? 'read';
  if (!['read', 'docGet'].includes(scenario)) throw new Error(`scenario: read or docGet, not ${scenario}`);
  if (values.child) return child(root, scenario, Number(positionals[1]));
  const perCall = (count(root, scenario, HIGH) - count(root, scenario, LOW)) / ((HIGH - LOW) * WIDTH);
  console.log(`${scenario}: ${Math.round(perCall).toLocaleString('en-US')} instructions per call (${root}, Node ${process.versions.node})`);
}

main().catch((err) => {
  console.error(`bench/instructions.js: ${err.message}`);
  process.exit(1);
});
