'use strict';
// Snapshots (host.backup, `durable-workers backup`) and their restore
// (`durable-workers restore`): taken while calls go on, each worker as of one
// whole commit no older than what was acknowledged before the snapshot began,
// every file whole, alarms and documents kept, damage named and contained.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const Database = require('better-sqlite3');
const { open, DurableWorker } = require('durable-workers');
const { restore } = require('../../js/tools/backup');
const { tmpDir } = require('../helpers/tmp');
const { startOwner, cli } = require('../helpers/control');

/** Each bump is one commit: two keys and a document that always agree. */
class Tally extends DurableWorker {
  static collections = { marks: { n: 'integer' } };

  bump() {
    const n = (this.state.get('a') ?? 0) + 1;
    this.state.set('a', n);
    this.state.set('b', n);
    this.state.collection('marks').put('last', { n });
    return n;
  }

  async read() {
    const doc = await this.state.collection('marks').get('last');
    return { a: this.state.get('a') ?? 0, b: this.state.get('b') ?? 0, doc: doc?.n ?? 0 };
  }
}

class Sleeper extends DurableWorker {
  async sleepUntil(at) {
    await this.state.setAlarm(at);
  }

  alarm() {
    this.state.set('woke', true);
  }

  woke() {
    return this.state.get('woke') === true;
  }
}

/** Every file under `dir` that SQLite opens, with its integrity_check verdict. */
function integrity(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.db')) {
        const db = new Database(p);
        out.push([path.relative(dir, p), db.pragma('integrity_check', { simple: true })]);
        db.close();
      }
    }
  };
  walk(dir);
  return out;
}

test('a snapshot taken under load holds every worker as of one whole commit, none older than what was acknowledged before it began', async (t) => {
  const root = tmpDir(t);
  const dir = path.join(root, 'data');
  // Fewer live than there are workers: most are copied from the disk with
  // their path pinned while calls wake them, the others through their handle.
  const host = await open({ dir, maxLive: 16 });
  const N = 120;
  const acked = new Array(N).fill(0);
  for (let i = 0; i < N; i++) acked[i] = await host.get(Tally, `t${i}`).bump();
  let stop = false;
  const loops = Array.from({ length: 8 }, async (_, k) => {
    for (let j = k; !stop; j += 7) {
      const i = j % N;
      const n = await host.get(Tally, `t${i}`).bump();
      acked[i] = Math.max(acked[i], n);
    }
  });
  await new Promise((r) => setTimeout(r, 100));
  const before = acked.slice();
  const report = await host.backup(path.join(root, 'snap'));
  await new Promise((r) => setTimeout(r, 50));
  stop = true;
  await Promise.all(loops);
  await host.close();
  t.is(report.workers, N);
  t.true(report.bytes > 0);

  const restored = await restore(path.join(root, 'snap'), path.join(root, 'back'));
  t.deepEqual(restored.failed, []);
  t.is(restored.workers.length, N);
  t.deepEqual(new Set(restored.workers.map((w) => `${w.class}/${w.id}`)).size, N);
  const checks = integrity(path.join(root, 'back'));
  t.is(checks.length, N + 1, 'every worker file and the catalog');
  t.deepEqual(
    checks.filter(([, v]) => v !== 'ok'),
    [],
  );

  const again = await open({ dir: path.join(root, 'back') });
  t.teardown(() => again.close());
  const ids = [];
  for await (const id of again.ids(Tally)) ids.push(id);
  t.is(ids.length, N, 'the catalog was rebuilt from the restored files');
  for (let i = 0; i < N; i++) {
    const { a, b, doc } = await again.get(Tally, `t${i}`).read();
    t.true(a === b && b === doc, `t${i} holds one whole commit (a ${a}, b ${b}, doc ${doc})`);
    t.true(a >= before[i], `t${i}: ${a} in the snapshot, ${before[i]} acknowledged before it began`);
    t.true(a <= acked[i], `t${i}: ${a} in the snapshot, at most the ${acked[i]} ever acknowledged`);
  }
});

test('a restored directory keeps alarms: the catalog rebuilt from the files fires them', async (t) => {
  const root = tmpDir(t);
  const host = await open({ dir: path.join(root, 'data') });
  await host.get(Sleeper, 'soon').sleepUntil(Date.now() + 300);
  await host.get(Sleeper, 'later').sleepUntil(Date.now() + 3_600_000);
  await host.backup(path.join(root, 'snap'));
  await host.close();
  await restore(path.join(root, 'snap'), path.join(root, 'back'));
  const again = await open({ dir: path.join(root, 'back'), alarmPoll: 50 });
  t.teardown(() => again.close());
  await again.startAlarms({ classes: [Sleeper] });
  const deadline = Date.now() + 10_000;
  while (!(await again.get(Sleeper, 'soon').woke()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.true(await again.get(Sleeper, 'soon').woke());
  t.false(await again.get(Sleeper, 'later').woke());
});

test('a damaged file fails its worker by name and the others are restored; --only restores one worker', async (t) => {
  const root = tmpDir(t);
  const host = await open({ dir: path.join(root, 'data') });
  for (let i = 0; i < 5; i++) await host.get(Tally, `t${i}`).bump();
  await host.backup(path.join(root, 'snap'));
  await host.close();
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'snap', 'backup.json'), 'utf8'));
  const { workerFile } = require('../../js/native/load');
  const victim = workerFile('Tally', 't2');
  const file = path.join(root, 'snap', victim);
  const bytes = fs.readFileSync(file);
  bytes[bytes.length - 100] ^= 0xff;
  fs.writeFileSync(file, bytes);

  const r = await restore(path.join(root, 'snap'), path.join(root, 'back'));
  t.is(r.workers.length, 4);
  t.is(r.failed.length, 1);
  t.is(r.failed[0].file, victim);
  t.regex(r.failed[0].reason, /does not match the manifest's hash/);
  t.false(fs.existsSync(path.join(root, 'back', victim)), 'the damaged file is left out');
  t.is(manifest.files.length, 6);

  const one = await restore(path.join(root, 'snap'), path.join(root, 'one'), { only: ['Tally/t4'] });
  t.deepEqual(
    one.workers.map((w) => w.id),
    ['t4'],
  );
  const h = await open({ dir: path.join(root, 'one') });
  t.teardown(() => h.close());
  t.deepEqual(await h.get(Tally, 't4').read(), { a: 1, b: 1, doc: 1 });
  t.deepEqual(await h.get(Tally, 't3').read(), { a: 0, b: 0, doc: 0 }, 'only the one asked for');
});

test('refusals: a target that is not empty, a snapshot inside its directory, no manifest, an unknown worker, a manifest pointing outside', async (t) => {
  const root = tmpDir(t);
  const dir = path.join(root, 'data');
  const host = await open({ dir });
  await host.get(Tally, 'x').bump();
  fs.mkdirSync(path.join(root, 'full'));
  fs.writeFileSync(path.join(root, 'full', 'keep'), 'mine');
  await t.throwsAsync(host.backup(path.join(root, 'full')), { code: 'ERR_DURABLE_BACKUP', message: /not empty/ });
  t.is(fs.readFileSync(path.join(root, 'full', 'keep'), 'utf8'), 'mine');
  await t.throwsAsync(host.backup(path.join(dir, 'inner')), { code: 'ERR_DURABLE_BACKUP', message: /cannot go inside it/ });
  await host.backup(path.join(root, 'snap'));
  await host.close();

  await t.throwsAsync(restore(path.join(root, 'snap'), path.join(root, 'full')), { code: 'ERR_DURABLE_BACKUP', message: /not empty/ });
  await t.throwsAsync(restore(path.join(root, 'snap'), path.join(root, 'b1'), { only: ['Tally/nobody'] }), { code: 'ERR_DURABLE_BACKUP', message: /holds no worker Tally\/nobody/ });
  await t.throwsAsync(restore(path.join(root, 'snap'), path.join(root, 'b2'), { at: Date.now() - 3_600_000 }), { code: 'ERR_DURABLE_BACKUP', message: /only the moment it was taken/ });

  fs.mkdirSync(path.join(root, 'half'));
  await t.throwsAsync(restore(path.join(root, 'half'), path.join(root, 'b3')), { code: 'ERR_DURABLE_BACKUP', message: /no backup.json/ });

  // A hostile manifest: a path that leaves the target is refused by name.
  const m = JSON.parse(fs.readFileSync(path.join(root, 'snap', 'backup.json'), 'utf8'));
  m.files.push({ file: '../escape/00/' + '0'.repeat(64) + '.db', size: 1, hash: m.files[0].hash });
  fs.writeFileSync(path.join(root, 'snap', 'backup.json'), JSON.stringify(m));
  const r = await restore(path.join(root, 'snap'), path.join(root, 'b4'));
  t.is(r.workers.length, 1);
  t.is(r.failed.length, 1);
  t.regex(r.failed[0].reason, /is not a worker file's path/);
  t.false(fs.existsSync(path.join(root, 'escape')));
});

test('the command line: backup asks the process serving the directory, and works on one nobody serves; restore names what it left out', async (t) => {
  const root = tmpDir(t);
  const dir = path.join(root, 'data');
  const host = await open({ dir });
  for (let i = 0; i < 3; i++) await host.get(Tally, `t${i}`).bump();
  await host.close();

  const offline = await cli(['backup', dir, path.join(root, 's1'), '--json']);
  t.is(offline.status, 0, offline.stderr);
  t.is(JSON.parse(offline.stdout).workers, 3);
  t.is(JSON.parse(offline.stdout).owner, null);

  const owner = await startOwner(t, dir);
  const live = await cli(['backup', dir, path.join(root, 's2')]);
  t.is(live.status, 0, live.stderr);
  t.regex(live.stdout, new RegExp(`taken by the process serving it, pid ${owner.pid}`));
  // The owner's own workers too (fixtures/control-owner.js).
  t.regex(live.stdout, /\d+ worker file\(s\)/);

  const again = await cli(['backup', dir, path.join(root, 's2')]);
  t.is(again.status, 1);
  t.regex(again.stderr, /ERR_DURABLE_BACKUP: .*not empty/);

  const back = await cli(['restore', path.join(root, 's2'), path.join(root, 'r'), '--only', 'Tally/t1']);
  t.is(back.status, 0, back.stderr);
  t.regex(back.stdout, /restored 1 worker\(s\)/);
  const usage = await cli(['restore', path.join(root, 's2'), path.join(root, 'r2'), '--only', 'nodash']);
  t.is(usage.status, 2);
});
