#!/usr/bin/env node
'use strict';
// Two versions of the package side by side: `node bench/compare.js <before> [<after>]`
// (git revisions; after defaults to the working tree). Each is checked out in
// a worktree of its own (the working tree for none), its addon built there,
// and `bench/run.js --core` (this file's copy, the same harness for both) run
// on each, alternating which goes first, `--runs` times (default 3). Prints the median of
// each scenario's durable-workers figure on both sides and their ratio, and
// exits 1 when one is worse than `--tolerance` (default 5%).
//
//   node bench/compare.js 7c5d966 --runs 3
//   node bench/compare.js 7c5d966 --runs 7 --only create   (one noisy scenario, more runs)

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { parseArgs } = require('node:util');

const ROOT = path.join(__dirname, '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string', default: '3' }, tolerance: { type: 'string', default: '0.05' }, quick: { type: 'boolean' }, only: { type: 'string' } },
});
if (positionals.length < 1 || positionals.length > 2) {
  console.error('usage: node bench/compare.js <before-rev> [<after-rev>] [--runs 3] [--tolerance 0.05] [--quick] [--only create,serial]');
  process.exit(2);
}
const RUNS = Number(values.runs);
const TOLERANCE = Number(values.tolerance);
/** Scenarios where lower is better (bytes per worker). */
const LOWER_IS_BETTER = new Set(['rssWrite', 'rssRead']);

const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...opts });

/** A tree holding `rev` with its addon built: a worktree, or the working tree itself. */
function prepare(rev) {
  if (rev === undefined) return { label: 'working tree', dir: ROOT, cleanup: () => {} };
  const sha = run('git', ['rev-parse', '--short', rev], { cwd: ROOT }).trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `dw-compare-${sha}-`));
  run('git', ['worktree', 'add', '--detach', dir, sha], { cwd: ROOT });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  // The same harness on both sides: this checkout's bench/ (its scenarios use only the public API).
  fs.rmSync(path.join(dir, 'bench'), { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, 'bench'), path.join(dir, 'bench'), { recursive: true, filter: (f) => !f.includes(`${path.sep}.build`) && !f.endsWith('results.json') });
  console.error(`building ${sha} in ${dir}`);
  run('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return {
    label: sha,
    dir,
    cleanup: () => {
      run('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
    },
  };
}

/** One `run.js --core` on `tree`: scenario → the durable-workers figure. */
function measure(tree) {
  const out = path.join(os.tmpdir(), `dw-compare-${process.pid}-${Date.now()}.json`);
  run(process.execPath, [path.join(tree.dir, 'bench', 'run.js'), '--core', '--json', '--out', out, ...(values.quick ? ['--quick'] : []), ...(values.only ? ['--only', values.only] : [])], {
    cwd: tree.dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const data = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.rmSync(out);
  const figures = {};
  for (const [key, row] of Object.entries(data.results)) figures[key] = { value: row.durable.value, unit: row.durable.unit };
  for (const [key, row] of Object.entries(data.slowDevice?.results ?? {})) figures[`slow ${key}`] = { value: row.durable.value, unit: row.durable.unit };
  return figures;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function main() {
  const sides = [prepare(positionals[0]), prepare(positionals[1])];
  const samples = sides.map(() => ({}));
  try {
    for (let i = 0; i < RUNS; i++) {
      // ABBA: which side goes first alternates, so what one run leaves the disk to do (writeback, a journal) falls on both.
      const order = i % 2 === 0 ? [0, 1] : [1, 0];
      for (const s of order) {
        const tree = sides[s];
        console.error(`run ${i + 1}/${RUNS}: ${tree.label}`);
        for (const [key, f] of Object.entries(measure(tree))) {
          samples[s][key] ??= { unit: f.unit, values: [] };
          samples[s][key].values.push(f.value);
        }
      }
    }
  } finally {
    for (const tree of sides) tree.cleanup();
  }
  let worse = 0;
  console.log(`durable-workers, median of ${RUNS} runs each (bench/run.js --core${values.quick ? ' --quick' : ''}); ${sides[0].label} → ${sides[1].label}`);
  for (const key of Object.keys(samples[0])) {
    const a = median(samples[0][key].values);
    const b = median(samples[1][key]?.values ?? [NaN]);
    const better = LOWER_IS_BETTER.has(key) ? a / b : b / a;
    const flag = better < 1 - TOLERANCE ? '  WORSE' : '';
    if (flag) worse++;
    console.log(`${key.padEnd(14)} ${fmt(a).padStart(12)} → ${fmt(b).padStart(12)} ${samples[0][key].unit.padEnd(10)} ${(better * 100).toFixed(1).padStart(6)}%${flag}`);
    console.log(`${''.padEnd(14)} runs: ${samples[0][key].values.map(fmt).join(', ')} | ${samples[1][key]?.values.map(fmt).join(', ')}`);
  }
  console.log(`(100% is even; above is better; WORSE past ${TOLERANCE * 100}%)`);
  process.exitCode = worse > 0 ? 1 : 0;
}

function fmt(v) {
  return Number.isFinite(v) ? (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1)) : String(v);
}

main();
