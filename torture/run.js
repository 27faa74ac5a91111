'use strict';
// npm run torture -- --rounds N [--seed S] [--seconds-per-round X] [--dir D] [--fresh] [--sync-ms M] [--quiet]
//                      (--quiet: only rounds with violations, and a line every 50 rounds)
//                      [--break ack-early]   (a check of the checker: must report violations)
//                      [--power-cut drop|chaos]   (power cuts instead of SIGKILL: see below)
//
// Crash torture. Each round forks torture/child.js under the slow-sync shim
// (every fsync takes M ms longer, so a result released before its commit
// would be caught by the kill), lets it run its mixed workload over 16
// workers, SIGKILLs it at a moment drawn from the seeded generator, then
// reopens the directory and checks:
//   * every acknowledged write is there: each slot (a key, a document, the
//     transaction group) holds a state it had after its last acknowledged
//     write or after a later call the child had started, nothing else;
//   * no transaction is visible in part, and nothing a throwing transaction
//     wrote (poison) is anywhere;
//   * every acknowledged alarm fires after the restart (at least once, never
//     lost), and nothing fires that was never set;
//   * every worker opens, every worker file is listed in the catalog and
//     holds its own id, and PRAGMA integrity_check is ok on every .db file.
// Prints one line per round, then rounds, acknowledged operations checked,
// violations and the seed; exits 1 on any violation, keeping the directory.
//
// The directory is carried across rounds: round r+1 continues on what round r
// left, so the files go through hundreds of crashes, recoveries, evictions
// and alarm-index repairs, as a long-lived deployment's would. --fresh starts
// each round on an empty directory instead.
//
// --power-cut runs the directory on the power-cut file system
// (__test__/powercut, root and /dev/fuse): each round ends in a power cut,
// the child SIGKILLed and everything it wrote but did not sync forgotten
// (`drop`), or a seeded random part of it kept, writes torn at sectors
// (`chaos`). After a SIGKILL the kernel still holds every write; after a cut
// only what fsync and directory fsyncs made durable is left. Every round is
// then `durability: 'full'`: 'relaxed' promises less on power loss, and the
// checks here are the full promise.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { parseArgs } = require('node:util');
const Database = require('better-sqlite3');
const { open } = require('..');
const { slowSyncEnv } = require('../__test__/helpers/slowsync');
const { catalogCheck } = require('../__test__/helpers/powercut-rounds');
const W = require('./workers');

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    seed: { type: 'string' },
    'seconds-per-round': { type: 'string', default: '2' },
    dir: { type: 'string' },
    fresh: { type: 'boolean', default: false },
    'sync-ms': { type: 'string', default: '5' },
    quiet: { type: 'boolean', default: false },
    break: { type: 'string' },
    'power-cut': { type: 'string' },
  },
});

const ROUNDS = positive('rounds', args.rounds);
const SECONDS = positive('seconds-per-round', args['seconds-per-round']);
const SYNC_MS = Number(args['sync-ms']);
const SEED = args.seed ?? Math.floor(Math.random() * 2 ** 32).toString(16);
/** Alarms are set to fire this far ahead: within the round, or soon after the kill. */
const ALARM_MIN_MS = 50;
const ALARM_MAX_MS = 1200;
/** After the restart, how long an acknowledged alarm has to fire past its time. */
const ALARM_GRACE_MS = 15_000;
const READY_TIMEOUT_MS = 30_000;
const POWER_CUT = args['power-cut'];
if (POWER_CUT !== undefined && POWER_CUT !== 'drop' && POWER_CUT !== 'chaos') {
  console.error(`--power-cut is drop or chaos, got ${JSON.stringify(POWER_CUT)}`);
  process.exit(2);
}
const ALL_WORKERS = [...Array.from({ length: W.WORKERS }, (_, i) => W.workerId(i)), W.WIPER];

function positive(name, v) {
  const x = Number(v);
  if (!(x > 0)) {
    console.error(`--${name} must be a positive number, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return x;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- one round's child ----------------------------------------------------------

/**
 * Forks the child and kills it `killAfterMs` after it is ready. Resolves once
 * it has exited and its channel has closed, so every acknowledgement it sent
 * has arrived.
 */
async function runChild(spec, killAfterMs, early, power) {
  const child = fork(path.join(__dirname, 'child.js'), [JSON.stringify(spec)], {
    env: slowSyncEnv(SYNC_MS),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const got = { acked: new Map(), refused: 0, violations: [], preloaded: null, readyAt: 0, killedAt: 0 };
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s));
  // With a power-cut mount, the kill is a cut: the child dies first, then
  // the file system forgets, then it is mounted again (awaited below).
  let cut = null;
  const kill = () => {
    if (got.killedAt === 0) got.killedAt = Date.now();
    if (power === null) child.kill('SIGKILL');
    else cut ??= power.cut([child]);
  };
  // An early kill lands anywhere from the fork on: while the host opens,
  // recovers the files the last kill left, reconciles the alarm index.
  if (early) setTimeout(kill, killAfterMs);
  const notReady = setTimeout(() => {
    got.violations.push(`the child was not ready after ${READY_TIMEOUT_MS} ms`);
    kill();
  }, READY_TIMEOUT_MS);
  child.on('message', (msg) => {
    if (msg.ready) {
      clearTimeout(notReady);
      got.readyAt = Date.now();
      got.preloaded = msg.preloaded;
      if (!early) setTimeout(kill, killAfterMs);
    } else if (msg.ack !== undefined) got.acked.set(msg.ack, msg.v);
    else if (msg.refused !== undefined) got.refused++;
    else if (msg.violation !== undefined) got.violations.push(`child: ${msg.violation}`);
  });
  const [[code, signal]] = await Promise.all([once(child, 'exit'), once(child, 'disconnect'), once(child.stderr, 'end')]);
  clearTimeout(notReady);
  if (cut !== null) got.cut = await cut;
  if (signal !== 'SIGKILL') got.violations.push(`the child ended by itself (code ${code}, signal ${signal}): ${stderr.trim()}`);
  if (got.preloaded === false) got.violations.push('the child did not run under the slow-sync shim');
  return got;
}

/** The intents the child wrote, in order. A line cut short by the kill was never acted on. */
function readIntents(file) {
  const out = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // Only the last line can be cut; its call never started.
    }
  }
  return out;
}

// --- what the disk holds ---------------------------------------------------------

/**
 * Reads every worker and sorts what it holds into slots.
 * @returns {Promise<{ slots: Map<string, Map<string, number | null>>, fired: Map<string, string[]>, ids: string[] }>}
 */
async function readAll(host, violations) {
  const slots = new Map();
  const fired = new Map();
  for (const wid of ALL_WORKERS) {
    const s = new Map();
    slots.set(wid, s);
    let dump;
    try {
      dump = await host.get(W.Tort, wid).dump();
    } catch (err) {
      violations.push(`${wid} does not open: ${err?.code ?? ''} ${err?.message ?? err}`);
      fired.set(wid, []);
      continue;
    }
    const names = [];
    let txn = { a: undefined, b: undefined, doc: undefined };
    for (const [k, v] of dump.entries) {
      if (k.startsWith('fired:')) names.push(k.slice('fired:'.length));
      else if (k === 't:a') txn.a = v;
      else if (k === 't:b') txn.b = v;
      else if (k.startsWith(W.POISON_KEY)) violations.push(`${wid}: poison key ${k} (written only by a transaction that threw)`);
      else if (/^(k\d+-\d+|x:w\d+|r:w\d+|z\d+|t:pre)$/.test(k)) {
        if (typeof v !== 'number') violations.push(`${wid} ${k}: holds ${JSON.stringify(v)}, never written`);
        s.set(W.slot.key(k), v);
      } else violations.push(`${wid}: unexpected key ${JSON.stringify(k)}`);
    }
    for (const d of dump.docs) {
      if (d.id === 't') txn.doc = d.seq;
      else if (d.id.startsWith(W.POISON_DOC)) violations.push(`${wid}: poison document ${d.id} (written only by a transaction that threw)`);
      else if (/^(d\d+-\d+|z\d+)$/.test(d.id)) s.set(W.slot.doc(d.id), d.seq);
      else violations.push(`${wid}: unexpected document ${JSON.stringify(d.id)}`);
    }
    if (wid === W.WIPER) {
      fired.set(wid, names);
      continue;
    }
    const parts = [txn.a, txn.b, txn.doc];
    if (parts.every((p) => p === undefined)) s.set(W.slot.txn, null);
    else if (parts.every((p) => p === txn.a)) s.set(W.slot.txn, txn.a);
    else violations.push(`${wid}: half a transaction: t:a=${txn.a} t:b=${txn.b} document t=${txn.doc}`);
    if (typeof txn.a === 'number' && txn.a < 0) violations.push(`${wid}: the transaction group holds poison (${txn.a})`);
    fired.set(wid, names);
  }
  const ids = [];
  for await (const id of host.ids(W.Tort)) ids.push(id);
  return { slots, fired, ids };
}

/** integrity_check on every .db file; each worker file must hold a listed id. */
function checkFiles(dir, ids, violations) {
  const listed = new Set(ids);
  let files = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.db')) {
        files++;
        checkFile(p, p.endsWith('_registry.db') ? null : listed, violations);
      }
    }
  };
  walk(dir);
  return files;
}

function checkFile(file, listed, violations) {
  // A read-only connection in WAL mode makes a -shm file; the host never has
  // one (its WAL index is in memory), so remove what the check made.
  const shm = `${file}-shm`;
  const hadShm = fs.existsSync(shm);
  let db;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const result = db.pragma('integrity_check', { simple: true });
    if (result !== 'ok') violations.push(`${file}: integrity_check says ${result}`);
    if (listed !== null) {
      const row = db.prepare(`SELECT v FROM meta WHERE k = 'id'`).get();
      if (row === undefined) violations.push(`${file}: no id in its meta table`);
      else if (!listed.has(row.v)) violations.push(`${file}: holds id ${JSON.stringify(row.v)}, which the catalog does not list`);
    }
  } catch (err) {
    violations.push(`${file}: does not open as SQLite: ${err.message}`);
  } finally {
    db?.close();
    if (!hadShm) fs.rmSync(shm, { force: true });
  }
}

// --- the checks ----------------------------------------------------------------

/**
 * Every slot's state must be one it had after its last acknowledged write or
 * after a later intent.
 */
function checkSlots(intents, acked, baseline, disk, violations) {
  /** "w\u0000slot" → the ops on that slot, in order */
  const ops = new Map();
  checkJoint(
    intents.filter((it) => it.joint),
    acked,
    baseline.get(W.WIPER) ?? new Map(),
    disk.get(W.WIPER) ?? new Map(),
    violations,
  );
  for (const it of intents) {
    if (it.joint) continue;
    for (const [w, s, kind] of it.slots) {
      const k = `${w}\u0000${s}`;
      if (!ops.has(k)) ops.set(k, []);
      ops.get(k).push({ n: it.n, s: it.s, kind, op: it.op });
    }
  }
  const seen = new Set();
  for (const [k, list] of ops) {
    seen.add(k);
    const [w, s] = k.split('\u0000');
    const before = baseline.get(w)?.get(s) ?? null;
    // states[j]: the slot after the first j ops.
    const states = [before];
    for (const o of list) states.push(o.kind === 'set' ? o.s : o.kind === 'del' ? null : states[states.length - 1]);
    let last = -1;
    list.forEach((o, j) => {
      if (acked.has(o.n)) last = j;
    });
    const valid = states.slice(last + 1);
    const actual = disk.get(w)?.has(s) ? disk.get(w).get(s) : null;
    if (!valid.includes(actual)) {
      const ackOp = last >= 0 ? list[last] : null;
      violations.push(
        `${w} ${s}: holds ${actual}; ` + (ackOp ? `op ${ackOp.n} (${ackOp.op} ${ackOp.kind} ${ackOp.s}) was acknowledged` : 'nothing was acknowledged') + `, allowed: ${valid.map(String).join(', ')}`,
      );
    }
  }
  // A slot nobody touched this round keeps what it had.
  for (const [w, m] of baseline) {
    if (w === W.WIPER) continue;
    for (const [s, v] of m) {
      if (seen.has(`${w}\u0000${s}`)) continue;
      const actual = disk.get(w)?.has(s) ? disk.get(w).get(s) : null;
      if (actual !== v) violations.push(`${w} ${s}: held ${v} before the round and nothing wrote it, now ${actual}`);
    }
  }
  for (const [w, m] of disk) {
    if (w === W.WIPER) continue;
    for (const [s, v] of m) {
      if (v !== null && !seen.has(`${w}\u0000${s}`) && !baseline.get(w)?.has(s)) violations.push(`${w} ${s}: holds ${v}, never written`);
    }
  }
}

/**
 * The wiper: one lane wrote all of it, one call at a time, and a worker's
 * commits land in order, so its whole state must be what the lane's calls
 * had made of it after some prefix of them that includes every acknowledged
 * one: a deleteAll or a transaction in part matches no prefix.
 */
function checkJoint(ops, acked, before, actual, violations) {
  const show = (m) => JSON.stringify([...m].filter(([, v]) => v !== null).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const states = [show(before)];
  let cur = new Map(before);
  let last = -1;
  ops.forEach((o, j) => {
    if (o.wipe) cur = new Map();
    else for (const [, s, kind] of o.slots) cur.set(s, kind === 'set' ? o.s : null);
    states.push(show(cur));
    if (acked.has(o.n)) last = j;
  });
  const got = show(actual);
  if (!states.slice(last + 1).includes(got)) {
    violations.push(
      `${W.WIPER}: holds ${got}, the state after no prefix of its calls from the last acknowledged one (${last >= 0 ? `op ${ops[last].n}, ${ops[last].op}` : 'none'}); ` +
        `allowed: ${states
          .slice(last + 1)
          .slice(0, 4)
          .join(' | ')}${states.length - last - 1 > 4 ? ' | …' : ''}`,
    );
  }
}

/**
 * Starts the alarms and waits until every acknowledged one has fired, at the
 * latest ALARM_GRACE_MS past its time. An alarm may be set again under its
 * name (a rearm): the hook records the scheduledTime of its latest run, which
 * must come to be the time of the last acknowledged setting of that name or of
 * a later one. Returns how many names were checked.
 */
async function checkAlarms(host, intents, acked, issued, violations) {
  /** name → { w, ats: times set, in order; last: index of the last acknowledged } */
  const byName = new Map();
  for (const it of intents) {
    if (it.op !== 'alarm') continue;
    if (!byName.has(it.name)) byName.set(it.name, { w: it.w, ats: [], last: -1 });
    const a = byName.get(it.name);
    a.ats.push(it.at);
    if (acked.has(it.n)) a.last = a.ats.length - 1;
  }
  const want = new Map([...byName].filter(([, a]) => a.last >= 0).map(([name, a]) => [name, { w: a.w, allowed: a.ats.slice(a.last) }]));
  const sched = await host.startAlarms({ classes: [W.Tort] });
  try {
    const deadline = Math.max(Date.now(), ...[...want.values()].flatMap((a) => a.allowed)) + ALARM_GRACE_MS;
    const missing = new Set(want.keys());
    while (missing.size > 0 && Date.now() < deadline) {
      const byWorker = new Set([...missing].map((n) => want.get(n).w));
      for (const w of byWorker) {
        for (const [name, at] of await host.get(W.Tort, w).firedAt()) if (want.get(name)?.allowed.includes(at)) missing.delete(name);
      }
      if (missing.size > 0) await sleep(50);
    }
    for (const name of missing) {
      const { w, allowed } = want.get(name);
      violations.push(`${w}: alarm ${name}, acknowledged for ${new Date(allowed[0]).toISOString()}, had not run for that time (or a later setting) ${ALARM_GRACE_MS} ms past it`);
    }
  } finally {
    await sched.stop();
  }
  // Nothing fires that was never set, or on another worker; then forget the runs.
  for (const w of ALL_WORKERS) {
    const runs = await host.get(W.Tort, w).firedAt();
    for (const [name, at] of runs) {
      const set = issued.get(name);
      if (set === undefined) {
        if (issued.has(`round:${name.match(/^a(\d+)-/)?.[1]}`)) violations.push(`${w}: alarm ${name} fired, never set`);
      } else if (set.w !== w) violations.push(`${w}: alarm ${name} fired here, set on ${set.w}`);
      else if (!set.ats.has(at)) violations.push(`${w}: alarm ${name} ran for ${at}, a time it was never set to`);
    }
    if (runs.length > 0) await host.get(W.Tort, w).forgetFired(runs.map(([name]) => name));
  }
  return want.size;
}

// --- the rounds ------------------------------------------------------------------

async function main() {
  const base = args.dir ? path.resolve(args.dir) : fs.mkdtempSync(path.join(os.tmpdir(), 'dw-torture-'));
  fs.mkdirSync(base, { recursive: true });
  // The data lives on the power-cut mount; the intents stay outside it (the
  // child logs each call before making it, and that log must outlive a cut).
  let power = null;
  if (POWER_CUT !== undefined) {
    const powercut = require('../__test__/helpers/powercut');
    const can = powercut.available();
    if (!can.ok) throw new Error(`--power-cut needs the power-cut file system: ${can.reason}`);
    power = await powercut.mount({ backing: path.join(base, 'backing'), mountpoint: path.join(base, 'mnt'), mode: POWER_CUT, seed: W.rng(`${SEED}/power-cut`).int(2 ** 31) });
  }
  const dir = path.join(power === null ? base : power.mountpoint, 'data');
  const rand = W.rng(`${SEED}/parent`);
  const started = Date.now();
  const totals = { ops: 0, alarms: 0, indexed: 0, intents: 0, refused: 0, violations: 0 };
  /** alarm name → { w: the worker that set it, ats: the times it was set to }; `round:<r>` marks rounds this run issued. */
  const issued = new Map();

  // What the directory holds before round 1 (empty, unless --dir names a kept one).
  let baseline;
  let firstRound = 1;
  {
    const host = await open({ dir });
    const v = [];
    const r = await readAll(host, v);
    await host.close();
    if (v.length > 0) throw new Error(`the directory does not hold a torture run's data:\n  ${v.join('\n  ')}`);
    baseline = r.slots;
    for (const m of baseline.values()) for (const x of m.values()) if (x !== null) firstRound = Math.max(firstRound, Math.floor(Math.abs(x) / W.STEP_BASE) + 1);
  }

  console.log(
    `torture: ${ROUNDS} rounds, seed ${SEED}, up to ${SECONDS} s a round, fsync +${SYNC_MS} ms, ${args.fresh ? 'a fresh directory each round' : `directory carried across rounds`} (${dir})` +
      (power === null ? '' : `; each round ends in a power cut (${POWER_CUT})`),
  );
  for (let r = 0; r < ROUNDS; r++) {
    const round = firstRound + r;
    const t0 = Date.now();
    if (args.fresh && r > 0) {
      fs.rmSync(dir, { recursive: true, force: true });
      baseline = new Map();
    }
    const maxLive = rand.chance(0.5) ? 6 : 128;
    const relaxed = rand.chance(0.25); // drawn either way: a seed picks the same rounds with or without --power-cut
    const durability = relaxed && power === null ? 'relaxed' : 'full';
    const shards = rand.chance(0.25);
    const early = rand.chance(0.1);
    const killAfterMs = early ? rand.int(300) : Math.round((0.1 + 0.9 * rand.next()) * SECONDS * 1000);
    const intentsFile = path.join(base, `intents-${round}.log`);
    fs.writeFileSync(intentsFile, '');
    issued.set(`round:${round}`, true);
    const spec = { dir, intents: intentsFile, round, seed: SEED, maxLive, durability, shards, alarmMinMs: ALARM_MIN_MS, alarmMaxMs: ALARM_MAX_MS, break: args.break };
    const got = await runChild(spec, killAfterMs, early, power);
    const violations = [...got.violations];
    const intents = readIntents(intentsFile);
    for (const it of intents) {
      if (it.op !== 'alarm') continue;
      if (!issued.has(it.name)) issued.set(it.name, { w: it.w, ats: new Set() });
      issued.get(it.name).ats.add(it.at);
    }

    // The catalog as the cut left it, before an open reconciles anything:
    // every worker file listed, every alarm indexed early or on time.
    let catalog = null;
    if (power !== null) {
      catalog = catalogCheck(dir);
      violations.push(...catalog.problems);
      totals.indexed += catalog.alarms;
    }
    const host = await open({ dir });
    let ops = 0;
    let alarms = 0;
    let files = 0;
    try {
      const disk = await readAll(host, violations);
      checkSlots(intents, got.acked, baseline, disk.slots, violations);
      ops = intents.filter((it) => it.op !== 'alarm' && got.acked.has(it.n)).length;
      alarms = await checkAlarms(host, intents, got.acked, issued, violations);
      baseline = disk.slots;
      await host.close();
      files = checkFiles(dir, disk.ids, violations);
    } finally {
      await host.close();
    }
    fs.rmSync(intentsFile);
    totals.ops += ops;
    totals.alarms += alarms;
    totals.intents += intents.length;
    totals.refused += got.refused;
    totals.violations += violations.length;
    if (!args.quiet || violations.length > 0) {
      console.log(
        `round ${String(r + 1).padStart(String(ROUNDS).length)}/${ROUNDS}: ${power === null ? 'killed' : 'power cut'} ${early ? `${killAfterMs} ms after the fork${got.readyAt ? '' : ', before ready'}` : `after ${got.killedAt - got.readyAt} ms`} (maxLive ${maxLive}, ${durability}${shards ? ', 2 shards' : ''}` +
          `${got.cut ? `; ${got.cut.droppedWrites} unsynced writes forgotten, ${got.cut.appliedWrites} kept, ${got.cut.tornWrites} torn, ${got.cut.droppedDirOps} directory changes forgotten` : ''}); ` +
          `${intents.length} calls, ${got.acked.size} acknowledged, ${got.refused} refused as planned; checked ${ops} writes, ${alarms} alarms, ${files} files${catalog === null ? '' : `, ${catalog.alarms} alarm index entries before the open`}; ` +
          `${violations.length} violations; ${Date.now() - t0} ms`,
      );
    }
    for (const v of violations) console.log(`  VIOLATION ${v}`);
    if (args.quiet && (r + 1) % 50 === 0) {
      console.log(`${r + 1}/${ROUNDS} rounds, ${totals.ops + totals.alarms} acknowledged operations checked, ${totals.violations} violations, ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `\n${ROUNDS} rounds in ${secs} s; acknowledged operations checked: ${totals.ops + totals.alarms} ` +
      `(${totals.ops} writes, ${totals.alarms} alarms; ${totals.intents} calls made)${power === null ? '' : `; alarm index entries checked against their files before each open: ${totals.indexed}`}; violations: ${totals.violations}`,
  );
  console.log(`seed ${SEED}: npm run torture -- --rounds ${ROUNDS} --seed ${SEED}${args.fresh ? ' --fresh' : ''}${power === null ? '' : ` --power-cut ${POWER_CUT}`}`);
  if (power !== null) await power.unmount();
  if (totals.violations > 0) {
    console.log(`the directory is kept: ${power === null ? base : path.join(base, 'backing')}`);
    process.exitCode = 1;
  } else if (!args.dir) fs.rmSync(base, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 2;
});
