'use strict';
// The continuous archive (open({ archive })): a process writing under load
// is SIGKILLed, and restores to several moments find, in every worker, each
// write acknowledged by then and none begun after; the latest restore holds
// every write acknowledged more than a second before the kill. Damage to a
// segment fails only the worker whose record it hits; retain prunes.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { open, restore, DurableWorker } = require('durable-workers');
const { tmpDir } = require('../helpers/tmp');
const { loadThenKill, tally } = require('../helpers/archive-load');

/** The lag the docs state for a directory: a write acknowledged this long before a kill is archived. */
const LAG_MS = 1000;

class Ledger extends DurableWorker {
  static collections = { lines: { n: 'integer' } };

  async dump() {
    const keys = new Set(this.state.keys());
    const docs = await this.state.collection('lines').find({ scan: true });
    return { keys: [...keys], docs: docs.length };
  }
}

/** Every worker's keys in a restored directory. */
async function contents(dir) {
  const host = await open({ dir, control: false });
  try {
    const out = new Map();
    for (let w = 0; w < 12; w++) {
      const d = await host.get(Ledger, `w${w}`).dump();
      out.set(`w${w}`, d);
    }
    return out;
  } finally {
    await host.close();
  }
}

test('restored to several moments after a SIGKILL, every worker holds each write acknowledged by then and none begun after', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  const { ops, started, killedAt } = await loadThenKill(t, [path.join(root, 'data'), to, '700ms'], 2500);
  t.true(ops.length > 500, `${ops.length} writes acknowledged`);
  const moments = [0.15, 0.35, 0.55, 0.75].map((f) => Math.round(started + f * (killedAt - LAG_MS - started)));
  for (const [i, at] of [...moments, undefined].entries()) {
    const dir = path.join(root, `restored-${i}`);
    const r = await restore(to, dir, at === undefined ? {} : { at });
    t.deepEqual(r.failed, [], `restore ${i}`);
    const got = await contents(dir);
    const { checked, missing, early } = tally(ops, (worker, key) => got.get(worker).keys.includes(key), at, at ?? killedAt - LAG_MS);
    t.is(missing, 0, `restore ${i} (at ${at ?? 'latest'}): ${missing} of ${checked} writes acknowledged by then are missing`);
    t.is(early, 0, `restore ${i} (at ${at ?? 'latest'}): ${early} writes begun after it are there`);
    for (const [worker, d] of got) t.is(d.docs, d.keys.length, `${worker}: every key's document, and no other (one commit each)`);
    t.true(checked > 0);
  }
});

test('a damaged segment fails the worker whose record it hits, by name, and the others are restored', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  await loadThenKill(t, [path.join(root, 'data'), to, '1d'], 800);
  const segments = fs.readdirSync(path.join(to, 'log')).filter((f) => f.endsWith('.seg'));
  const largest = segments.map((f) => path.join(to, 'log', f)).sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];
  const bytes = fs.readFileSync(largest);
  bytes[bytes.length - 10] ^= 0xff; // in the last record's payload
  fs.writeFileSync(largest, bytes);
  const r = await restore(to, path.join(root, 'restored'));
  t.is(r.failed.length, 1, JSON.stringify(r.failed));
  t.regex(r.failed[0].reason, /does not match its hash: the segment is damaged/);
  t.is(r.workers.length, 11);
  t.false(r.workers.some((w) => w.file === r.failed[0].file));
});

test('retain prunes old bases and segments, and a moment before the archive begins is refused', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  const before = Date.now() - 60_000;
  const host = await open({ dir: path.join(root, 'data'), archive: { to, retain: '300ms', baseEvery: '200ms' } });
  class Note extends DurableWorker {
    write(n) {
      this.state.set('n', n);
    }
  }
  for (let i = 0; i < 40; i++) {
    await host.get(Note, `n${i % 4}`).write(i);
    await new Promise((r) => setTimeout(r, 25));
  }
  const stats = host.stats().archive;
  await host.close();
  t.true(stats.bases >= 3, `${stats.bases} bases taken`);
  t.true(fs.readdirSync(path.join(to, 'base')).length < stats.bases, 'older bases were deleted');
  await t.throwsAsync(restore(to, path.join(root, 'r0'), { at: before }), { code: 'ERR_DURABLE_BACKUP', message: /begins at/ });
  const unknown = await restore(to, path.join(root, 'r2'), { only: ['Note/nobody'] });
  t.deepEqual(unknown.workers, []);
  t.regex(unknown.failed[0]?.reason ?? '', /holds no such worker/, 'a worker asked for and not there is named');
  await t.throwsAsync(open({ dir: path.join(root, 'relaxed'), durability: 'relaxed', archive: { to: path.join(root, 'a2') } }), {
    instanceOf: RangeError,
    message: /archive needs durability 'full'/,
  });
  const r = await restore(to, path.join(root, 'r1'));
  t.deepEqual(r.failed, []);
  t.is(r.workers.length, 4);
});

test('a destination that cannot be written is reported, its records kept and written once it can, and nothing is lost', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  const host = await open({ dir: path.join(root, 'data'), archive: { to }, control: false });
  class Tally extends DurableWorker {
    add(n) {
      this.state.set(`k${n}`, n);
    }

    count() {
      return [...this.state.keys()].length;
    }
  }
  await host.get(Tally, 'a').add(0);
  await new Promise((r) => setTimeout(r, 300));
  // The segments' directory becomes a file: every write there fails.
  fs.renameSync(path.join(to, 'log'), path.join(to, 'log-aside'));
  fs.writeFileSync(path.join(to, 'log'), 'in the way');
  for (let i = 1; i <= 20; i++) await host.get(Tally, 'a').add(i);
  await new Promise((r) => setTimeout(r, 500));
  t.regex(host.stats().archive.failure ?? '', /log/, 'the failure is reported');
  fs.rmSync(path.join(to, 'log'));
  fs.renameSync(path.join(to, 'log-aside'), path.join(to, 'log'));
  await new Promise((r) => setTimeout(r, 500));
  t.is(host.stats().archive.failure, null, 'cleared once a segment is written');
  await host.close();
  const r = await restore(to, path.join(root, 'back'));
  t.deepEqual(r.failed, []);
  const again = await open({ dir: path.join(root, 'back'), control: false });
  t.teardown(() => again.close());
  t.is(await again.get(Tally, 'a').count(), 21, 'every write, those made while the destination failed too');
});

test('a host closed as soon as it has written leaves an archive that restores; a log without a base is named as such', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  class Note extends DurableWorker {
    write(n) {
      this.state.set('n', n);
    }
    read() {
      return this.state.get('n');
    }
  }
  // Enough workers that a base takes longer than the hosts after the first
  // live: each closes while its first base is underway, and must leave one.
  const first = await open({ dir: path.join(root, 'data'), control: false });
  await Promise.all(Array.from({ length: 300 }, (_, i) => first.get(Note, `n${i}`).write(i)));
  await first.close();
  for (let round = 1; round <= 3; round++) {
    const host = await open({ dir: path.join(root, 'data'), archive: { to }, control: false });
    await host.get(Note, 'a').write(round);
    await host.close();
    const r = await restore(to, path.join(root, `r${round}`));
    t.deepEqual(r.failed, [], `round ${round}`);
    const back = await open({ dir: path.join(root, `r${round}`), control: false });
    t.is(await back.get(Note, 'a').read(), round);
    await back.close();
  }
  const logOnly = path.join(root, 'log-only');
  fs.cpSync(path.join(to, 'log'), path.join(logOnly, 'log'), { recursive: true });
  await t.throwsAsync(restore(logOnly, path.join(root, 'r-none')), { code: 'ERR_DURABLE_BACKUP', message: /holds no finished base/ });
});
