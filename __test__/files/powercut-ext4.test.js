'use strict';
// New workers under power loss on a real ext4. The power-cut FUSE mount
// (files/powercut.test.js) forgets what was not fsynced by its own simple
// model; ext4 orders its data, inodes and directory blocks its own way, with
// a journal or without. Here a real ext4 runs on a loop device whose image
// lives on the power-cut mount: ext4's device flushes become fsyncs of the
// image, so a cut keeps what ext4 made durable and forgets the rest. A child
// makes new workers in concurrent batches (each a file built aside, synced,
// renamed in, its directory synced) and logs each acknowledged one outside
// the mount; at a random moment it is killed and the power cut; the image is
// repaired by e2fsck (as a boot would) and mounted again; every acknowledged
// worker must be there with its value, every worker in flight at the cut
// whole or absent (docs/guarantees.md: never a half file), and every
// SQLite file must pass integrity_check. Rounds continue on the same image
// (helpers/powercut-rounds.js says how to soak: DW_POWERCUT_ROUNDS,
// DW_POWERCUT_SEED). DW_POWERCUT_EXT4_VERBOSE=1 logs fsck's output and every
// problem of every round.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { mount } = require('../helpers/powercut');
const { ROUNDS, BASE_SEED, prng, sleep, integrity, powerTestOf } = require('../helpers/powercut-rounds');
const { BATCH, WRITERS, valueOf, ext4Available, makeImage, attach, fsck, readAcks, startCreator, startWriter, checkWorkers } = require('../helpers/powercut-ext4');
const { tmpDir } = require('../helpers/tmp');

const powerTest = powerTestOf(test, ext4Available, 'an ext4 image on a loop device over the powercut mount');

/**
 * The cut comes this long after the child's first acknowledgement:
 * MIN_DELAY + [0, SPREAD) ms, so that a round has made a batch or more (each
 * takes tens of ms) and cuts fall anywhere in a batch.
 */
const MIN_DELAY = 60;
const SPREAD = 400;
const VERBOSE = Boolean(process.env.DW_POWERCUT_EXT4_VERBOSE);
/** Rounds per file system: 3, or DW_POWERCUT_ROUNDS for a soak (each round checks every worker made so far). */
const EXT4_ROUNDS = process.env.DW_POWERCUT_ROUNDS === undefined ? 3 : ROUNDS;
/** A round takes seconds and checks every worker made before it: its time grows with the rounds. */
const ROUNDS_MS = 60_000 + EXT4_ROUNDS * 15_000 + EXT4_ROUNDS ** 2 * 1_000;

/**
 * One round: attach the image, run the child on it, kill it and cut the
 * power at a random moment, detach what the cut left. Resolves with the
 * acknowledgements and the cut's report.
 */
async function cutRound(t, { m, image, mnt, dir, ackFile, round, delay, options, scenario }) {
  const a = attach(t, image, mnt, options);
  const run = scenario.start(t, dir, round, ackFile);
  m.register(run.child);
  await run.ready;
  await sleep(delay);
  if (run.child.exitCode !== null) t.fail(`the child exited by itself (code ${run.child.exitCode}):\n${run.stderr}`);
  const report = await m.cut([run.child]);
  const notes = a.detach();
  if (run.stderr.trim() !== '') t.log(`child stderr: ${run.stderr.trim()}`);
  return { acks: readAcks(ackFile), report, notes };
}

/**
 * What a boot after the power loss sees: the image (now on the fresh mount)
 * fsck'd and mounted, its SQLite files checked (`damage`), the acknowledged
 * workers so far (`made`) and those in flight at this cut read back by a
 * checker process. Leaves it unmounted and durable for the next round.
 * Resolves with the checker's answer ({ workers, missing, damaged } or
 * { error }), `damage` and fsck's { status, output }.
 */
async function afterCut(t, { m, image, mnt, dir, root, lines }) {
  const repaired = fsck(image);
  await m.sync();
  const a = attach(t, image, mnt);
  try {
    // A cut before the first synced creation leaves no directory at all.
    const damage = fs.existsSync(dir) ? integrity(dir) : [];
    const list = path.join(root, 'made');
    fs.writeFileSync(list, lines.map((l) => `${l}\n`).join(''));
    return { ...checkWorkers(dir, list), damage, fsck: repaired };
  } finally {
    a.detach();
    await m.sync();
  }
}

/**
 * The workers of the child's last batch it did not see acknowledged, as
 * [id, i]: in flight at the cut (its batches run one after the other).
 */
function inFlightOf(acks, round) {
  const started = acks.filter(([kind]) => kind === 'b').map(([, b]) => Number(b));
  if (started.length === 0) return [];
  const b = started.at(-1);
  const acked = new Set(acks.filter(([kind]) => kind === 'n').map(([, id]) => id));
  return Array.from({ length: BATCH }, (_, i) => [`r${round}-${b}-${i}`, i]).filter(([id]) => !acked.has(id));
}

/**
 * New workers in batches: every acknowledged one must be there with its
 * value, and those of the batch in flight whole or absent.
 */
function creating() {
  const made = new Map();
  return {
    made,
    start: startCreator,
    lines(acks, round) {
      for (const [kind, id, i] of acks) if (kind === 'n') made.set(id, Number(i));
      const inFlight = inFlightOf(acks, round);
      return { inFlight, lines: [...[...made].map(([id, i]) => `n ${id} ${i}`), ...inFlight.map(([id, i]) => `f ${id} ${i}`)] };
    },
    after() {},
  };
}

/**
 * WRITERS workers written again and again, and GROWERS writers moving to a
 * new worker every so often, so that some log is always growing: each worker
 * must hold its last acknowledged value or the one in flight after it. Logs
 * are rewritten in place once a checkpoint has started them over, once a
 * round has synced a log the cut left, or where zeros were written ahead of
 * a growing one: on ext4 without a journal, those syncs leave the inode out
 * (`stats().syncsInPlace`, the most any `s` line reported, is `inPlace`).
 */
function writing() {
  /** What each worker held at the last check: its value before the round's first acknowledgement. */
  let found = {};
  const out = { made: new Map(), inPlace: 0, start: startWriter };
  out.lines = (acks, round) => {
    const last = new Map();
    for (const [kind, id, v] of acks) {
      if (kind === 'w') last.set(id, Number(v));
      if (kind === 's') out.inPlace = Math.max(out.inPlace, Number(id));
    }
    for (const [id, v] of last) out.made.set(id, v);
    const lines = Array.from({ length: WRITERS }, (_, k) => {
      const id = `w${k}`;
      const ok = last.has(id) ? [last.get(id), last.get(id) + 1] : [found[id] ?? 'none', valueOf(round, 0)];
      return `w ${id} ${ok.join(' ')}`;
    });
    // The growers' workers, this round's and earlier ones': the last value
    // acknowledged, or the one in flight after it.
    for (const [id, v] of out.made) if (!id.startsWith('w')) lines.push(`w ${id} ${v} ${v + 1}`);
    return { inFlight: [], lines };
  };
  out.after = (r) => {
    found = r.values ?? found;
  };
  return out;
}

/**
 * Rounds of power cuts on one ext4 image (`journal`: made with one, or with
 * -O ^has_journal), the child's mount with `options` if given. Resolves with
 * { made, rounds: [{ where, missing, damaged, damage, error, inFlight }] }:
 * what each round's check found, for the tests to judge.
 */
async function ext4Cuts(t, { journal, seed, rounds, options, scenario = creating(), delay: span = { min: MIN_DELAY, spread: SPREAD } }) {
  const root = tmpDir(t);
  const m = await mount({ backing: path.join(root, 'backing'), mountpoint: path.join(root, 'mnt') });
  t.teardown(() => m.unmount());
  const mnt = path.join(root, 'ext4');
  const dir = path.join(mnt, 'data');
  await makeImage(m, path.join(m.mountpoint, 'ext4.img'), { journal });
  const rand = prng(seed);
  const { made } = scenario;
  const out = { made, scenario, rounds: [] };
  for (let round = 0; round < rounds; round++) {
    const image = path.join(m.mountpoint, 'ext4.img');
    const delay = span.min + Math.floor(rand() * span.spread);
    const ackFile = path.join(root, `acks-${round}`);
    const began = Date.now();
    const { acks, report, notes } = await cutRound(t, { m, image, mnt, dir, ackFile, round, delay, options, scenario });
    t.true(acks.length > 0, `round ${round}: the child acknowledged something before the cut`);
    const { inFlight, lines } = scenario.lines(acks, round);
    const cutAt = Date.now();
    const r = await afterCut(t, { m, image, mnt, dir, root, lines });
    scenario.after(r);
    const checked = Date.now();
    const where = `ext4 ${journal ? 'with' : 'without'} a journal${options ? ` -o ${options}` : ''}, seed ${seed}, round ${round} (cut ${delay} ms in, ${JSON.stringify(report)})`;
    t.log(where);
    for (const n of notes) t.log(`  after the cut: ${n}`);
    t.log(
      `  e2fsck -fy: ${r.fsck.status === 0 ? 'clean' : 'errors corrected'}; ${r.workers} acknowledged workers checked, ${r.missing?.length} missing; ` +
        `${inFlight.length} in flight, ${r.damaged?.length} of them damaged; ${r.damage.length} integrity problems ` +
        `(${cutAt - began} ms to the cut, ${checked - cutAt} ms to check)`,
    );
    if (VERBOSE) t.log(r.fsck.output, r);
    out.rounds.push({ where, inFlight, ...r });
  }
  return out;
}

/** Each mode's rounds run once, for both of its tests (and the first to need them). */
const runs = new Map();
function roundsOf(t, journal, seed) {
  if (!runs.has(journal)) runs.set(journal, ext4Cuts(t, { journal, seed, rounds: EXT4_ROUNDS }));
  return runs.get(journal);
}

for (const [j, journal] of [false, true].entries()) {
  const seed = BASE_SEED + 20_000 + 100 * j;
  const fsName = `ext4 ${journal ? 'with a journal' : 'without a journal'}`;

  powerTest(`power cut on ${fsName}: acknowledged new workers survive`, async (t) => {
    t.timeout(ROUNDS_MS);
    const { made, rounds } = await roundsOf(t, journal, seed);
    for (const r of rounds) {
      t.is(r.error, undefined, `${r.where}: open({ dir }) and reading after the cut`);
      t.deepEqual(r.missing.slice(0, 20), [], `${r.where}: ${r.missing.length} of ${r.workers} acknowledged new workers lost`);
    }
    t.log(`${made.size} workers acknowledged over ${rounds.length} rounds`);
  });

  powerTest(`power cut on ${fsName}: new workers in flight at the cut are whole or absent, never damaged, and every file passes integrity_check`, async (t) => {
    t.timeout(ROUNDS_MS);
    const { rounds } = await roundsOf(t, journal, seed);
    for (const r of rounds) {
      t.is(r.error, undefined, `${r.where}: open({ dir }) and reading after the cut`);
      t.deepEqual(r.damaged.slice(0, 10), [], `${r.where}: ${r.damaged.length} of ${r.inFlight.length} new workers in flight at the cut answer with an error`);
      t.deepEqual(r.damage.slice(0, 10), [], `${r.where}: PRAGMA integrity_check, and no worker file left empty`);
    }
  });
}

/** Writes run long enough that a round's logs go past a checkpoint, and cuts fall anywhere after. */
const WRITE_DELAY = { min: 800, spread: 800 };

for (const [j, journal] of [false, true].entries()) {
  const seed = BASE_SEED + 20_200 + 100 * j;
  const fsName = `ext4 ${journal ? 'with a journal' : 'without a journal'}`;
  powerTest(`power cut on ${fsName}: acknowledged writes to existing workers survive, their logs synced ${journal ? 'whole' : 'in place'}`, async (t) => {
    t.timeout(ROUNDS_MS);
    const { scenario, rounds } = await ext4Cuts(t, { journal, seed, rounds: EXT4_ROUNDS, scenario: writing(), delay: WRITE_DELAY });
    for (const r of rounds) {
      t.is(r.error, undefined, `${r.where}: open({ dir }) and reading after the cut`);
      t.deepEqual(r.missing.slice(0, 20), [], `${r.where}: workers holding neither their last acknowledged value nor the one in flight`);
      t.deepEqual(r.damage.slice(0, 10), [], `${r.where}: PRAGMA integrity_check`);
    }
    const rewritten = [...scenario.made].filter(([id]) => id.startsWith('w'));
    t.log(`last values: ${JSON.stringify(Object.fromEntries(rewritten))}; ${scenario.made.size - rewritten.length} growing workers; syncs in place: ${scenario.inPlace}`);
    // Without a journal the rewritten logs are synced in place (the path
    // under test); with one, fdatasync already leaves a clean inode out.
    if (journal) t.is(scenario.inPlace, 0, 'no sync in place where ext4 has a journal');
    else t.true(scenario.inPlace > 0, 'logs were synced in place');
  });
}

// The check itself must see a loss when there is one: mounted barrier=0,
// ext4 sends the loop device no flush, so fsync returns with nothing
// durable, the way a device that ignores flushes would. A cut then
// loses acknowledged workers; were this to pass unnoticed, the tests above
// could not fail either.
powerTest('power cut on ext4 mounted barrier=0 (fsync does not reach the device): the check finds acknowledged workers lost', async (t) => {
  t.timeout(60_000);
  const { made, rounds } = await ext4Cuts(t, { journal: false, seed: BASE_SEED + 20_500, rounds: 1, options: 'barrier=0' });
  const [r] = rounds;
  t.is(r.error, undefined, `${r.where}: open({ dir }) and reading after the cut`);
  t.true(made.size > 0, 'workers were acknowledged');
  t.true(r.missing.length > 0, `${r.missing.length} of ${made.size} acknowledged workers found missing`);
});
