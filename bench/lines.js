#!/usr/bin/env node
'use strict';
// The same work on each Node line, side by side: the shop over node:http
// (durable-workers' server and the better-sqlite3 baseline server, each forked
// on the line's own node; the load driver stays on this one), then calls in
// process (serial and concurrent reads of one worker) and what
// AsyncLocalStorage costs an async call (bench/als.js): Node 24 keeps its
// stores in AsyncContextFrame, Node 20 in promise hooks.
//
//   node bench/lines.js [--lines 20,24] [--seconds S] [--runs N] [--customers N]
//
// The nodes are the pinned ones of scripts/node-lines.js. better-sqlite3 (the
// version package-lock.json pins) is compiled once per line and version into
// bench/.build/node-<line>/, from source against that line's headers
// (npm_config_nodedir, npm run on that line's node), so node_modules/ stays
// the machine's Node's. Every figure is taken `--runs` times (2 by default),
// the order of the lines reversed on every other run: this machine is shared
// and noisy, and a figure taken once, or always second, says little.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { nodeDir, nodePath, versionOf } = require('../scripts/node-lines');
const { drive } = require('./shop');
const { runInChild } = require('./child');
const { renderTable, formatNumber, formatRatio, formatMicros } = require('./table');

const ROOT = path.join(__dirname, '..');
const BUILD = path.join(__dirname, '.build');
/** Generous: about a minute on two busy cores. */
const BUILD_TIMEOUT_MS = 15 * 60_000;
const CHILD_SLACK_MS = 15_000;

function progress(message) {
  process.stderr.write(`… ${message}\n`);
}

/** The better-sqlite3 version package-lock.json pins (the one node_modules/ has). */
function lockedBetterSqlite3() {
  const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  const version = lock.packages?.['node_modules/better-sqlite3']?.version;
  if (!version) throw new Error('package-lock.json pins no better-sqlite3');
  return version;
}

/** Throws unless better-sqlite3 in `dir` loads on `node` and runs a query. */
function checkLoads(node, dir) {
  const probe = `const D = require(${JSON.stringify(dir)}); const db = new D(':memory:'); db.prepare('select 1').get(); db.close();`;
  execFileSync(node, ['-e', probe], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
}

/**
 * better-sqlite3 built for one Node line: bench/.build/node-<line>/, compiled
 * the first time (and again when the pinned Node or better-sqlite3 version
 * changes, which built.json records). The build runs npm on the line's own
 * node with its headers as nodedir, and from source: prebuild-install would
 * otherwise try a download (GitHub is unreachable here, and a prebuild is not
 * what "built against the line's headers" means).
 * @param {string} line
 * @returns {{ dir: string, built: boolean, seconds?: number }} dir: the package directory to require
 */
function betterSqlite3For(line) {
  const stamp = { node: versionOf(line), betterSqlite3: lockedBetterSqlite3() };
  const home = path.join(BUILD, `node-${line}`);
  const dir = path.join(home, 'node_modules', 'better-sqlite3');
  const stampFile = path.join(home, 'built.json');
  try {
    const same = JSON.stringify(JSON.parse(fs.readFileSync(stampFile, 'utf8'))) === JSON.stringify(stamp);
    if (same && fs.existsSync(path.join(dir, 'build', 'Release', 'better_sqlite3.node'))) return { dir, built: false };
  } catch {
    // Not built yet, or built for other versions.
  }
  const node = nodePath(line);
  const headers = nodeDir(line);
  progress(`building better-sqlite3 ${stamp.betterSqlite3} for Node ${stamp.node} from source (once; about a minute)`);
  fs.mkdirSync(BUILD, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(BUILD, `.node-${line}-`));
  const log = path.join(BUILD, `node-${line}.log`);
  const out = fs.openSync(log, 'w');
  const started = Date.now();
  // npm run's own settings for this package must not steer the install.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_(package|lifecycle)_|^npm_config_(local_)?prefix$/i.test(k)));
  try {
    execFileSync('npm', ['install', `better-sqlite3@${stamp.betterSqlite3}`, '--prefix', tmp, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--foreground-scripts'], {
      cwd: tmp,
      stdio: ['ignore', out, out],
      timeout: BUILD_TIMEOUT_MS,
      env: {
        ...env,
        // `node` is the line's: npm itself, node-gyp and the install script run on it.
        PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}`,
        npm_config_nodedir: headers,
        npm_config_build_from_source: 'true',
        JOBS: String(os.cpus().length),
      },
    });
    const built = path.join(tmp, 'node_modules', 'better-sqlite3');
    if (!fs.existsSync(path.join(built, 'build', 'Release', 'better_sqlite3.node'))) throw new Error('no build/Release/better_sqlite3.node after the install');
    fs.writeFileSync(path.join(tmp, 'built.json'), `${JSON.stringify(stamp)}\n`);
    fs.rmSync(home, { recursive: true, force: true });
    fs.renameSync(tmp, home);
    checkLoads(node, dir);
  } catch (err) {
    fs.rmSync(stampFile, { force: true });
    const why = String(err.stderr || err.message)
      .trim()
      .split('\n')[0];
    throw new Error(`better-sqlite3 ${stamp.betterSqlite3} for Node ${stamp.node}: ${why} (log: ${path.relative(ROOT, log)})`);
  } finally {
    fs.closeSync(out);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const seconds = (Date.now() - started) / 1000;
  progress(`built in ${seconds.toFixed(0)} s`);
  return { dir, built: true, seconds };
}

const SHOP = [
  { key: 'baseline', label: 'better-sqlite3 baseline', script: path.join(__dirname, 'shop', 'baseline-server.js') },
  { key: 'durable', label: 'durable-workers', script: path.join(__dirname, 'shop', 'durable-server.js') },
];

/** In-process figures, each in a fresh process on each line. */
const CALLS = [
  { key: 'serialRead', label: 'durable-workers: serial read calls, one worker (calls/s)', module: 'durable.js', scenario: 'serialRead' },
  { key: 'read', label: 'durable-workers: read calls, 64 concurrent (calls/s)', module: 'durable.js', scenario: 'read' },
  { key: 'als1', label: 'async call, 1 await, inside AsyncLocalStorage.run (ns/call)', module: 'als.js', scenario: 'calls', opts: { als: true, awaits: 1 }, ns: true },
  { key: 'plain1', label: 'the same call, no AsyncLocalStorage (ns/call)', module: 'als.js', scenario: 'calls', opts: { als: false, awaits: 1 }, ns: true },
  { key: 'als10', label: 'async call, 10 awaits, inside AsyncLocalStorage.run (ns/call)', module: 'als.js', scenario: 'calls', opts: { als: true, awaits: 10 }, ns: true },
  { key: 'plain10', label: 'the same call, no AsyncLocalStorage (ns/call)', module: 'als.js', scenario: 'calls', opts: { als: false, awaits: 10 }, ns: true },
];
/** Rows of what AsyncLocalStorage adds: [with, without, label]. */
const ADDED = [
  ['als1', 'plain1', 'what AsyncLocalStorage adds to a call with 1 await (ns)'],
  ['als10', 'plain10', 'what AsyncLocalStorage adds to a call with 10 awaits (ns)'],
];

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const good = (rs) => rs.length > 0 && rs.every((r) => r && !r.error && Number.isFinite(r.value));

/** Every figure on every line, `runs` times, the lines' order reversed on odd runs. */
async function measure({ lines, seconds, runs, customers }) {
  const nodes = lines.map((line) => ({ line, version: versionOf(line), execPath: nodePath(line) }));
  const builds = {};
  for (const { line } of nodes) {
    try {
      builds[line] = betterSqlite3For(line);
    } catch (err) {
      builds[line] = { error: err.message };
    }
  }
  const shop = Object.fromEntries(SHOP.map((s) => [s.key, Object.fromEntries(lines.map((l) => [l, []]))]));
  const calls = Object.fromEntries(CALLS.map((c) => [c.key, Object.fromEntries(lines.map((l) => [l, []]))]));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-lines-'));
  try {
    for (let run = 0; run < runs; run++) {
      const order = run % 2 === 0 ? nodes : [...nodes].reverse();
      for (const system of SHOP) {
        for (const { line, version, execPath } of order) {
          progress(`run ${run + 1}/${runs}: shop, ${system.label} on Node ${version}`);
          let r;
          if (system.key === 'baseline' && builds[line].error) r = { error: builds[line].error };
          else {
            const env = system.key === 'baseline' ? { ...process.env, DW_BENCH_BETTER_SQLITE3: builds[line].dir } : process.env;
            try {
              r = await drive(system.script, [path.join(root, `${system.key}-${line}-${run}`)], { customers, seconds, env, execPath });
              r.value = r.journeysPerSec;
            } catch (err) {
              r = { error: err.message };
            }
          }
          shop[system.key][line].push(r);
        }
      }
      for (const c of CALLS) {
        for (const { line, version, execPath } of order) {
          progress(`run ${run + 1}/${runs}: ${c.label.replace(/ \(.*\)$/, '')} on Node ${version}`);
          const r = await runInChild({
            module: c.module,
            scenario: c.scenario,
            opts: { dir: path.join(root, `${c.key}-${line}-${run}`), seconds, rounds: 3, ...c.opts },
            execPath,
            timeoutMs: seconds * 1000 + CHILD_SLACK_MS,
          });
          calls[c.key][line].push(r);
        }
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  return { nodes, builds, shop, calls, seconds, runs, customers };
}

/** "a / b" of each run's figure, or the first error. */
function runsCell(rs, fmt = formatNumber) {
  const bad = rs.find((r) => !r || r.error);
  if (bad) return `error: ${(bad?.error ?? 'not run').toString().split('\n')[0]}`;
  return rs.map((r) => fmt(r.value)).join(' / ');
}

function report({ nodes, builds, shop, calls, seconds, runs, customers }) {
  const first = nodes[0];
  const versions = nodes.map((n) => n.version);
  const shopRows = [];
  for (const system of SHOP) {
    for (const { line, version } of nodes) {
      const rs = shop[system.key][line];
      const base = shop[system.key][first.line];
      const ok = good(rs);
      const cpu = ok && rs.every((r) => r.serverCpu != null) ? mean(rs.map((r) => r.serverCpu)) : null;
      const perJourney = cpu === null ? null : mean(rs.map((r) => (r.serverCpu * 1000) / r.journeysPerSec));
      shopRows.push([
        system.label,
        version,
        runsCell(rs),
        ok ? formatNumber(mean(rs.map((r) => r.value))) : '–',
        ok && good(base) && line !== first.line ? formatRatio(mean(rs.map((r) => r.value)) / mean(base.map((r) => r.value))) : '',
        ok ? `${formatNumber(mean(rs.map((r) => r.p50)))} ms` : '–',
        ok ? formatNumber(mean(rs.map((r) => r.warmupJourneysPerSec))) : '–',
        cpu === null ? '–' : `${Math.round(cpu * 100)}%`,
        perJourney === null ? '–' : `${formatNumber(perJourney)} ms`,
      ]);
    }
  }
  const ratioHead = `÷ ${first.line}`;
  const perLine = (c) => nodes.map(({ line }) => runsCell(calls[c.key][line], c.ns ? (v) => formatNumber(1e9 / v) : formatNumber));
  const meanOf = (key, line, ns) => (good(calls[key][line]) ? mean(calls[key][line].map((r) => (ns ? 1e9 / r.value : r.value))) : NaN);
  const callRows = CALLS.map((c) => [
    c.label,
    ...perLine(c),
    ...nodes.slice(1).map(({ line }) => {
      const ratio = meanOf(c.key, line, c.ns) / meanOf(c.key, first.line, c.ns);
      return Number.isFinite(ratio) ? formatRatio(ratio) : '–';
    }),
  ]);
  for (const [withAls, without, label] of ADDED) {
    const added = nodes.map(({ line }) => meanOf(withAls, line, true) - meanOf(without, line, true));
    callRows.push([
      label,
      ...added.map((v) => (Number.isFinite(v) ? formatNumber(v) : '–')),
      ...added.slice(1).map((v) => (Number.isFinite(v) && Number.isFinite(added[0]) && added[0] !== 0 ? formatRatio(v / added[0]) : '–')),
    ]);
  }
  const p50s = nodes.map(({ line }) => (good(calls.serialRead[line]) ? formatMicros(mean(calls.serialRead[line].map((r) => r.notes.p50us))) : '–'));
  const built = nodes
    .map(({ line, version }) => `${version}: ${builds[line].error ? `failed (${builds[line].error})` : builds[line].built ? `built now, ${builds[line].seconds.toFixed(0)} s` : 'cached'}`)
    .join('; ');
  return [
    `Node lines: the same work on Node ${versions.join(' and ')} (scripts/node-lines.js), every server and scenario process on its line's node, ` +
      `the load driver on this one (${process.version}); ` +
      (runs === 1 ? '1 run' : `${runs} runs, the lines' order reversed on every other run; figures are "run 1 / run 2 …" and their mean`),
    `better-sqlite3 ${lockedBetterSqlite3()} from source against each line's headers, bench/.build/node-<line>/ (${built})`,
    '',
    `The shop over node:http, ${customers} customers, ${seconds} s per figure after a warm-up`,
    '',
    renderTable(['system', 'Node', 'journeys/s, run by run', 'mean', ratioHead, 'p50', 'warm-up', 'server CPU', 'server CPU per journey'], shopRows, [
      'left',
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
    ]),
    `warm-up: journeys/s over the ${formatNumber(Math.min(2, seconds))} s before the measured window, from a cold server (mean of the runs). ` +
      'server CPU: of one core over the measured window; per journey: CPU ms the server spent on each (6 calls, 4 of them writes).',
    '',
    `In process, ${seconds} s per figure (median of 3 rounds), a fresh process each; AsyncLocalStorage: 1,000 calls of an async function a step; the added rows are means of the runs`,
    '',
    renderTable(['figure', ...nodes.map((n) => `Node ${n.version}`), ...nodes.slice(1).map((n) => `${n.line} ÷ ${first.line}`)], callRows, [
      'left',
      ...nodes.map(() => 'right'),
      ...nodes.slice(1).map(() => 'right'),
    ]),
    `serial read p50: ${nodes.map((n, i) => `${n.version} ${p50s[i]}`).join(', ')}`,
  ].join('\n');
}

async function main() {
  const { values } = parseArgs({
    options: {
      lines: { type: 'string', default: '20,24' },
      seconds: { type: 'string', default: '3' },
      runs: { type: 'string', default: '2' },
      customers: { type: 'string', default: '32' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log('usage: node bench/lines.js [--lines 20,24] [--seconds S] [--runs N] [--customers N]');
    return;
  }
  const lines = values.lines.split(',').map((l) => l.trim());
  lines.forEach(versionOf);
  const r = await measure({ lines, seconds: Number(values.seconds), runs: Number(values.runs), customers: Number(values.customers) });
  console.log(report(r));
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { betterSqlite3For, measure, report };
