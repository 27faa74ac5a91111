#!/usr/bin/env node
'use strict';
// Instructions per call, counted rather than timed: `node bench/instructions.js
// [read|docGet|docFind|serial] [--root <tree>]`. A 2-core machine's timings move by a third
// between runs of the same code, which hides a change of a few percent;
// callgrind's count on `node --predictable` (V8 compiles on the main thread)
// repeats within 0.1%. The scenario runs `LOW` and `HIGH` steps of 64 calls
// after the same warm-up, each in its own process under valgrind; the
// difference divided by the extra calls is one call's cost. Needs valgrind.
// `docGet` and `docFind` are one call a step, of 64 gets by id or 64 finds
// of 10, counted per read. `serial` is one worker's write calls one after
// another, each waiting for its sync (the serial row of bench/run.js): 8 to
// a step, and only the user space's instructions count (the sync's time in
// the kernel does not).
//
//   node bench/instructions.js read                 this tree
//   node bench/instructions.js read --root /tmp/wt  another checkout, built
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');

const WIDTH = 64;
/** Calls in a step of the serial scenario: a write each, one after another. */
const SERIAL_WIDTH = 8;
const SCENARIOS = ['read', 'docGet', 'docFind', 'serial'];
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
  if (scenario === 'docGet' || scenario === 'docFind') await w.fillDocs(2000);
  const step = async (s) => {
    if (scenario === 'docGet') return w.getDocs((s * WIDTH) % 2000, WIDTH);
    if (scenario === 'docFind') return w.findDocs(s * WIDTH, WIDTH);
    if (scenario === 'serial') {
      for (let i = 0; i < SERIAL_WIDTH; i++) await w.incr();
      return;
    }
    const calls = new Array(WIDTH);
    for (let i = 0; i < WIDTH; i++) calls[i] = w.read();
    return Promise.all(calls);
  };
  // Serial steps are 8 calls, not 64: more of them before the count, so
  // that V8 has optimised what it will before LOW (its compiles count).
  const warm = scenario === 'serial' ? WARM * 4 : WARM;
  for (let s = 0; s < warm + steps; s++) await step(s);
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
  if (!SCENARIOS.includes(scenario)) throw new Error(`scenario: ${SCENARIOS.join(', ')}; not ${scenario}`);
  if (values.child) return child(root, scenario, Number(positionals[1]));
  const width = scenario === 'serial' ? SERIAL_WIDTH : WIDTH;
  const perCall = (count(root, scenario, HIGH) - count(root, scenario, LOW)) / ((HIGH - LOW) * width);
  console.log(`${scenario}: ${Math.round(perCall).toLocaleString('en-US')} instructions per call (${root}, Node ${process.versions.node})`);
}

main().catch((err) => {
  console.error(`bench/instructions.js: ${err.message}`);
  process.exit(1);
});
