#!/usr/bin/env node
'use strict';
// One Durable Object class (bench/fixtures/do-bench: a SQL counter per name)
// on local workerd and on this package's Node host (`durable-workers serve`),
// each in a process of its own behind a node:http front (serve's own; for
// workerd, bench/do/front.js, a proxy in a process of its own), both driven
// the same way from this process: HTTP with keep-alive to the Worker's
// fetch, which calls the object by RPC.
// Figures: serial writes to one object; 64 writers on 64 objects at once;
// reads, 64 at once on those hot objects; the serving process's RSS per
// object after 1,000 new objects get one write each; and a chat room's
// messages: 8 rooms (ChatRoom, the WebSocket hibernation API) of 8 `ws`
// clients each, every message stored then sent to the room's 7 others (see
// bench/do/chat.js for the load and the checks). Every figure is measured
// in this run, both servers up at once and every scenario's rounds
// alternating between them (the machine is shared: a burst of other work
// falls on both); a figure is the median of its rounds; ratio = Node host ÷ workerd.
//
//   node bench/do.js [--quick] [--seconds S] [--rounds R] [--runs N] [--objects N] [--node <path>] [--json FILE]
//
// Both hosts share the machine with this driver (2 CPUs in CI): the client's
// own CPU is part of every figure, the same for both.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { performance } = require('node:perf_hooks');
const { median } = require('./measure');
const { renderTable, formatNumber, formatRatio, formatMicros } = require('./table');
const { startNodeHost, startWorkerdHost } = require('./do/hosts');
const { client } = require('./do/client');
const { chatRooms } = require('./do/chat');
const { runFor, rssOf, cpuMsOf, machineCpuMs } = require('./do/load');

/** How many requests are in flight in the concurrent and read scenarios. */
const WIDTH = 64;
/**
 * The chat scenario's rooms and members per room: ROOMS × PER_ROOM = WIDTH
 * members, each with one message in flight (as many as the other scenarios'
 * requests); a room of 8 is a small group chat, each message 7 deliveries.
 */
const ROOMS = 8;
const PER_ROOM = 8;
/** Full: about 2 minutes here (3 runs × 2 hosts); quick: a smoke run. */
const PLANS = {
  // 4,000 objects: the Node host's RSS moves by ±10 MB between two readings
  // (the heap grows and gives back), ±10 KB an object over 1,000.
  full: { warmSeconds: 2, seconds: 3, rounds: 3, runs: 3, objects: 4000 },
  quick: { warmSeconds: 0.5, seconds: 0.6, rounds: 3, runs: 2, objects: 1000 },
};
/** The whole script stops here, whatever it is waiting for. */
const DEADLINE_MS = 600_000;

/**
 * The targets of the "Durable Objects on Node" issue, as ratios Node host ÷
 * workerd: `ok(ratio)` says whether a ratio meets it.
 */
const TARGETS = {
  serial: { text: '≥ 1.5×', ok: (x) => x >= 1.5 },
  concurrent: { text: '≥ 2×', ok: (x) => x >= 2 },
  read: { text: '≥ 2×', ok: (x) => x >= 2 },
  // A negative figure is the RSS's noise, not a measurement: never called met.
  memory: { text: '≤ 0.1× (a tenth)', ok: (x) => x >= 0 && x <= 0.1 },
  chat: { text: '≥ 2×', ok: (x) => x >= 2 },
};

/** The rows, in the order printed: key, label, unit. */
const ROWS = [
  { key: 'serial', label: 'serial writes, one object (/s)' },
  { key: 'concurrent', label: `${WIDTH} concurrent writes, ${WIDTH} objects (/s)` },
  { key: 'read', label: `reads, ${WIDTH} concurrent on ${WIDTH} hot objects (/s)` },
  { key: 'memory', label: 'RSS per object, {objects} new ones written once (KB; lower is better)' },
  { key: 'chat', label: `a chat room's messages, ${ROOMS} rooms of ${PER_ROOM} (/s)` },
];

/** The timed scenarios, in the order run. */
const TIMED = ['serial', 'concurrent', 'read', 'chat'];

/**
 * One host's server and the client state its scenarios check answers
 * against: `ops[key]` is { width, op(i) } for each timed scenario, with
 * prepare() before its warm-up, check() after each round (throws on a wrong
 * answer seen meanwhile) and finish() after its last round where it has them.
 * @param {{ url: string, pid: number }} host
 */
function session(host) {
  const c = client(host.url, WIDTH);
  const chat = chatRooms(host.url, { rooms: ROOMS, perRoom: PER_ROOM, prefix: 'room' });
  let serialCount = 0;
  const counts = new Array(WIDTH).fill(0);
  const latencies = [];
  const ops = {
    // One object, one request at a time; each answer must be the count before it plus one.
    serial: {
      width: 1,
      op: async () => {
        const t0 = process.hrtime.bigint();
        await expectCount(c.incr('serial'), ++serialCount, 'serial');
        latencies.push(Number(process.hrtime.bigint() - t0) / 1000);
      },
    },
    // 64 writers, each on its own object, each waiting for its answer before its next.
    concurrent: { width: WIDTH, op: (i) => expectCount(c.incr(`w${i}`), ++counts[i], `w${i}`) },
    // Reads of those 64 objects, 64 at once: each must read what its writer left.
    read: { width: WIDTH, op: (i) => expectCount(c.read(`w${i}`), counts[i], `w${i}`) },
    // 64 chat members in 8 rooms, each sending its next message once its last reached all the others of its room.
    chat: { width: chat.width, op: (i) => chat.op(i), prepare: () => chat.connect(), check: () => chat.check(), finish: () => chat.close() },
  };
  const per = (f) => Object.fromEntries(TIMED.map((k) => [k, f()]));
  return { host, c, chat, ops, latencies, rates: per(() => []), cpu: per(() => [0, 0]), driverCpu: per(() => [0, 0]), failed: {}, error: null };
}

/** The CPU a host's processes (workerd and its front) have used, in ms. */
function serverCpuMs(host) {
  return host.pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
}

/** One timed round of scenario `key` on a session; its rate, and the server's CPU for it. */
async function round(s, key, ms) {
  const [cpu0, driver0] = [serverCpuMs(s.host), process.cpuUsage()];
  const r = await runFor(ms, s.ops[key].width, s.ops[key].op);
  const driver = process.cpuUsage(driver0);
  s.cpu[key][0] += serverCpuMs(s.host) - cpu0;
  s.cpu[key][1] += r.ops;
  s.driverCpu[key][0] += (driver.user + driver.system) / 1000;
  s.driverCpu[key][1] += r.ops;
  s.ops[key].check?.();
  return r.ops / (r.ms / 1000);
}

/**
 * RSS per object: `objects` objects not seen before, one write each, 64 at
 * a time, against the serving process's RSS before (in KB per object).
 */
async function memory(s, objects) {
  await settle();
  const before = rssOf(s.host.pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: WIDTH }, async () => {
      while (next < objects) await expectCount(s.c.incr(`m${next++}`), 1, 'a new object');
    }),
  );
  await settle();
  const after = rssOf(s.host.pid);
  return { rate: (after - before) / 1024 / objects, rssMb: after / 2 ** 20 };
}

/** Lets the server finish what the last answers left (timers, frees) before RSS is read. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

/** Rejects unless the answer is `expected`: nothing lost, nothing run twice, nothing stale. */
async function expectCount(answer, expected, what) {
  const n = await answer;
  if (n !== expected) throw new Error(`${what}: expected ${expected}, the host answered ${n}`);
}

/**
 * Runs `fn` on a session unless it has failed; a failure is the session's
 * error (with the host's last output), and its later steps are skipped.
 */
async function guarded(s, fn) {
  if (s.error !== null) return;
  try {
    await fn();
  } catch (err) {
    const output = s.host.output().slice(-5).join(' | ');
    s.error = `${err.message}${output ? ` (host output: ${output})` : ''}`;
  }
}

/**
 * Runs a scenario's step on a session unless the session or the scenario has
 * failed. The chat scenario's failure is its own (the host's other figures
 * stand): its rounds of that run are dropped and the error reported.
 */
async function scenarioStep(s, key, fn) {
  if (key !== 'chat') return guarded(s, fn);
  if (s.error !== null || s.failed[key]) return;
  try {
    await fn();
  } catch (err) {
    const output = safely(() => s.host.output().slice(-5).join(' | '));
    s.failed[key] = `${err.message}${output ? ` (host output: ${output})` : ''}`;
    s.rates[key] = [];
  }
}

/**
 * Both hosts `runs` times, each run on fresh servers and directories. Within
 * a run both servers are up and each scenario's rounds alternate between
 * them (the first host alternating too), so whatever else the machine runs
 * (it is shared) falls on both alike; a figure is the median of all its
 * rounds. Memory is measured on each host in turn, after the rounds.
 * @param {{ warmSeconds: number, seconds: number, rounds: number, runs: number, objects: number, node?: string }} plan
 */
async function measure(plan) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-do-'));
  const started = Date.now();
  const starts = { node: (dir) => startNodeHost(dir, plan.node), workerd: (dir) => startWorkerdHost(dir) };
  const runs = { node: [], workerd: [] };
  const others = [];
  try {
    for (let run = 0; run < plan.runs; run++) {
      process.stderr.write(`… do: run ${run + 1} of ${plan.runs}\n`);
      const out = await measureRun(run, plan, root, starts);
      for (const key of ['node', 'workerd']) runs[key].push(out[key]);
      if (Number.isFinite(out.otherCpu)) others.push(out.otherCpu);
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  const otherCpu = others.length ? median(others) : NaN;
  return { plan: { ...plan, width: WIDTH }, runs, otherCpu, elapsedSeconds: (Date.now() - started) / 1000, workerd: require('../js/cloudflare/build').WORKERD_VERSION };
}

/** One run: both servers started, warmed, measured round by round, stopped; per host its figures or its error. */
async function measureRun(run, plan, root, starts) {
  const keys = run % 2 === 0 ? ['node', 'workerd'] : ['workerd', 'node'];
  const sessions = {};
  try {
    for (const key of keys) {
      try {
        sessions[key] = session(await starts[key](path.join(root, `${key}-${run}`)));
      } catch (err) {
        sessions[key] = { error: err.message, host: null };
      }
    }
    const live = () => keys.map((k) => sessions[k]).filter((s) => s.error === null);
    const [machine0, driver0, t0] = [machineCpuMs(), process.cpuUsage(), performance.now()];
    // A server that dies midway has no /proc entry left: its CPU then counts as the others'.
    const serverCpu = () => live().reduce((sum, s) => sum + (safely(() => serverCpuMs(s.host)) ?? 0), 0);
    const server0 = serverCpu();
    // A warm-up of both kinds of call, 64 at a time, not counted: the JITs
    // settle (the Node host's HTTP front is JavaScript; a few hundred serial
    // requests do not get it optimised) before the first figure.
    for (const s of live()) await guarded(s, () => runFor(plan.warmSeconds * 1000, WIDTH, (i) => s.c.incr(`warm${i}`).then(() => s.c.read(`warm${i}`))));
    const roundMs = (plan.seconds * 1000) / plan.rounds;
    for (const key of TIMED) {
      // Each scenario's own short warm-up on both, then its rounds, alternating hosts.
      for (const s of live()) await scenarioStep(s, key, () => s.ops[key].prepare?.());
      for (const s of live()) await scenarioStep(s, key, () => runFor(Math.min(500, roundMs / 2), s.ops[key].width, s.ops[key].op).then(() => s.ops[key].check?.()));
      for (let r = 0; r < plan.rounds; r++) {
        const order = r % 2 === 0 ? live() : live().reverse();
        for (const s of order) await scenarioStep(s, key, async () => s.rates[key].push(await round(s, key, roundMs)));
      }
      // Sockets closed before memory is measured (on a failed scenario too).
      for (const s of live()) await safelyAsync(() => s.ops[key].finish?.());
    }
    const driver = process.cpuUsage(driver0);
    const servers = serverCpu() - server0;
    // What else the machine ran meanwhile: its busy time less the servers' and this driver's, as a share of one core.
    const otherCpu = Math.max(0, machineCpuMs() - machine0 - servers - (driver.user + driver.system) / 1000) / (performance.now() - t0);
    const mem = {};
    for (const s of live()) await guarded(s, async () => (mem[s === sessions.node ? 'node' : 'workerd'] = await memory(s, plan.objects)));
    const out = { otherCpu };
    for (const key of keys) out[key] = resultOf(sessions[key], mem[key]);
    return out;
  } finally {
    for (const s of Object.values(sessions)) {
      s.c?.close();
      await s.chat?.close();
      await s.host?.stop();
    }
  }
}

/** `await fn()`, or undefined if it rejects. */
async function safelyAsync(fn) {
  try {
    return await fn();
  } catch {
    return undefined;
  }
}

/** `fn()`, or undefined if it throws. */
function safely(fn) {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/** A session's figures for the report: per timed scenario its rounds' rates and the server's CPU per request. */
function resultOf(s, mem) {
  if (s.error !== null) return { error: s.error };
  const out = { serialP50us: median(s.latencies), memory: mem };
  for (const key of TIMED) {
    out[key] = { rates: s.rates[key], cpuUsPerOp: (s.cpu[key][0] * 1000) / s.cpu[key][1], driverCpuUsPerOp: (s.driverCpu[key][0] * 1000) / s.driverCpu[key][1] };
    if (s.failed[key]) out[key].error = s.failed[key];
  }
  return out;
}

/** The median figure of a host over all its rounds (memory: its runs), and their spread; null when none has it. */
function figure(runs, key) {
  const values = runs.filter((r) => !r.error).flatMap((r) => r[key].rates ?? [r[key].rate]);
  if (values.length === 0) return null;
  return { value: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/**
 * The figures the summary needs: per row, each host's median and the ratio.
 * @returns {{ key: string, label: string, node: number|null, workerd: number|null, ratio: number, target: string, met: boolean|null, notes: string }[]}
 */
function rowsOf(r) {
  return ROWS.map(({ key, label: text }) => {
    const label = text.replace('{objects}', formatNumber(r.plan.objects));
    const a = figure(r.runs.node, key);
    const b = figure(r.runs.workerd, key);
    const ratio = a && b ? a.value / b.value : NaN;
    return {
      key,
      label,
      node: a?.value ?? null,
      workerd: b?.value ?? null,
      ratio,
      target: TARGETS[key].text,
      met: Number.isFinite(ratio) ? TARGETS[key].ok(ratio) : null,
      notes: notesOf(r, key, a, b),
    };
  });
}

function notesOf(r, key, a, b) {
  const spread = (f) => (f ? `${formatNumber(f.min)}–${formatNumber(f.max)}` : '?');
  const parts = [`${key === 'memory' ? 'runs' : 'rounds'} ${spread(a)} vs ${spread(b)}`];
  const ok = (runs) => runs.filter((x) => !x.error);
  if (key === 'serial') {
    const p50 = (runs) => (ok(runs).length ? formatMicros(median(ok(runs).map((x) => x.serialP50us))) : '?');
    parts.unshift(`p50 ${p50(r.runs.node)} vs ${p50(r.runs.workerd)}`);
  }
  if (key === 'chat') {
    const fanOut = PER_ROOM - 1;
    const deliveries = (f) => (f ? formatNumber(f.value * fanOut) : '?');
    parts.unshift(`${deliveries(a)} vs ${deliveries(b)} deliveries/s (${fanOut} a message)`);
  }
  if (key !== 'memory') {
    // Runs whose scenario failed have no figure of theirs; their CPU would be of a part of the rounds.
    const good = (runs) => ok(runs).filter((x) => x[key] && !x[key].error && x[key].rates.length > 0);
    const cpu = (runs, field) => (good(runs).length ? formatMicros(median(good(runs).map((x) => x[key][field]))) : '?');
    const per = key === 'chat' ? 'message' : 'request';
    parts.push(`server CPU/${per} ${cpu(r.runs.node, 'cpuUsPerOp')} vs ${cpu(r.runs.workerd, 'cpuUsPerOp')}`);
    if (key === 'chat') parts.push(`driver CPU/message ${cpu(r.runs.node, 'driverCpuUsPerOp')} vs ${cpu(r.runs.workerd, 'driverCpuUsPerOp')}`);
  }
  if (key === 'memory') {
    const rss = (runs) => (ok(runs).length ? `${formatNumber(median(ok(runs).map((x) => x.memory.rssMb)))} MB` : '?');
    parts.push(`server RSS at the end ${rss(r.runs.node)} vs ${rss(r.runs.workerd)}`);
  }
  return parts.join('; ');
}

/** The verdict text of a row: the target and whether it is met. */
function verdict(row) {
  if (row.met === null) return row.target;
  return `${row.target}: ${row.met ? 'met' : 'NOT met'}`;
}

function report(r) {
  const cell = (v) => (v === null ? '–' : formatNumber(v));
  const rows = rowsOf(r).map((row) => [row.label, cell(row.node), cell(row.workerd), formatRatio(row.ratio), verdict(row), row.notes]);
  const errors = ['node', 'workerd'].flatMap((k) =>
    r.runs[k].flatMap((x, i) => [x.error ? `${k}, run ${i + 1}: ${x.error}` : null, ...TIMED.map((key) => (x[key]?.error ? `${k}, run ${i + 1}, ${key}: ${x[key].error}` : null))]).filter(Boolean),
  );
  return [
    `Durable Objects: the same class (bench/fixtures/do-bench) on the Node host (durable-workers serve) and local workerd ${r.workerd}, ` +
      `each in its own process behind its own HTTP front, driven with keep-alive (the chat: ${ROOMS * PER_ROOM} WebSocket clients, one message in flight each) from one client process; ` +
      `${r.plan.runs} runs on fresh servers, both up at once, each scenario's ${r.plan.rounds} rounds of ${formatNumber(r.plan.seconds / r.plan.rounds)} s alternating between them (the first host alternating too), after a ${r.plan.warmSeconds} s warm-up; ` +
      `each figure the median of its ${r.plan.runs * r.plan.rounds} rounds (memory: of the runs); ` +
      `${formatNumber(r.elapsedSeconds)} s in all; ratio = Node ÷ workerd; notes give the Node host's figures "vs" workerd's`,
    '',
    renderTable(['scenario', 'Node host', 'local workerd', 'ratio', 'target', 'notes'], rows, ['left', 'right', 'right', 'right', 'left', 'left']),
    `Other processes on the machine (${os.cpus().length} CPUs) used ${Number.isFinite(r.otherCpu) ? `${Math.round(r.otherCpu * 100)}%` : '?'} of a core while the rounds ran (median over the runs).`,
    ...errors.map((e) => `error: ${e}`),
  ].join('\n');
}

/**
 * Rows for bench/run.js's summary table (its columns: summary, durable-workers,
 * baseline, baseline is, ratio, target).
 */
function summaryRows(r) {
  const cell = (v) => (v === null ? '–' : formatNumber(v));
  return rowsOf(r).map((row) => [`Durable Objects: ${row.label}`, cell(row.node), cell(row.workerd), 'local workerd, same class, behind a node:http front', formatRatio(row.ratio), verdict(row)]);
}

/**
 * Runs this script in a child process (as bench/run.js runs the others) and
 * returns its printed table and its figures; `result` is null when it failed.
 * @param {{ quick?: boolean, node?: string }} [o] node: the node binary the Node host runs on
 * @returns {{ text: string, result: object | null }}
 */
function runScript({ quick = false, node } = {}) {
  const json = path.join(os.tmpdir(), `dw-bench-do-${process.pid}.json`);
  const args = [__filename, '--json', json, ...(quick ? ['--quick'] : []), ...(node ? ['--node', node] : [])];
  try {
    const text = execFileSync(process.execPath, args, { encoding: 'utf8', timeout: DEADLINE_MS + 30_000, stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    const result = JSON.parse(fs.readFileSync(json, 'utf8'));
    return { text, result };
  } catch (err) {
    return { text: `do.js failed: ${String(err.stdout || err.message).trim()}`, result: null };
  } finally {
    fs.rmSync(json, { force: true });
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean' },
      seconds: { type: 'string' },
      rounds: { type: 'string' },
      runs: { type: 'string' },
      objects: { type: 'string' },
      node: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const base = values.quick ? PLANS.quick : PLANS.full;
  const num = (text, fallback) => (text === undefined ? fallback : Number(text));
  const plan = {
    warmSeconds: base.warmSeconds,
    seconds: num(values.seconds, base.seconds),
    rounds: num(values.rounds, base.rounds),
    runs: num(values.runs, base.runs),
    objects: num(values.objects, base.objects),
    node: values.node === undefined ? undefined : path.resolve(values.node),
  };
  const deadline = setTimeout(() => {
    console.error(`bench/do.js: not done within ${DEADLINE_MS / 1000} s`);
    process.exit(1);
  }, DEADLINE_MS);
  const r = await measure(plan);
  clearTimeout(deadline);
  console.log(report(r));
  if (values.json) fs.writeFileSync(values.json, `${JSON.stringify(r, null, 2)}\n`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

module.exports = { measure, report, rowsOf, summaryRows, runScript, TARGETS };
