'use strict';
// Backups of Durable Object hosts (openObjects, serve): a snapshot taken
// while objects write holds every write acknowledged before it began and
// none begun after it ended; the continuous archive restores a SIGKILLed
// host to several moments; `durable-workers backup` reaches `serve` over the
// directory's control socket.
const test = require('ava');
const path = require('node:path');
const http = require('node:http');
const Database = require('better-sqlite3');
const { openObjects } = require('../../js/do/host');
const { restore } = require('../../js/tools/backup');
const { tmpDir } = require('../helpers/tmp');
const { cli } = require('../helpers/control');
const { loadThenKill, tally } = require('../helpers/archive-load');
const { startServe } = require('../helpers/serve-cli');
const { Ledger } = require('../fixtures/ledger-object');
const { main } = require('../../js/cli');
const { motoPath, startMoto, client } = require('../helpers/moto');

const LOAD = path.join(__dirname, '..', 'fixtures', 'archive-load-objects.js');
/** The lag the docs state for an archive to a directory. */
const LAG_MS = 1000;

async function openLedgers(t, dir, o = {}) {
  const h = await openObjects({ dir, bindings: { LEDGER: { class: Ledger } }, ...o });
  t.teardown(() => h.close());
  return h;
}

/** Every object's keys and row count in a restored directory. */
async function contents(t, dir, names) {
  const h = await openLedgers(t, dir);
  const out = new Map();
  for (const name of names) out.set(name, await h.env.LEDGER.getByName(name).dump());
  await h.close();
  return out;
}

test('a snapshot taken while objects write holds each write acknowledged before it began, none begun after it ended, every commit whole', async (t) => {
  const root = tmpDir(t);
  // Four files open at most: most objects are parked, copied from the disk.
  const h = await openLedgers(t, path.join(root, 'data'), { maxOpenFiles: 4 });
  const names = Array.from({ length: 12 }, (_, i) => `o${i}`);
  const ops = [];
  let stop = false;
  let seq = 0;
  const load = Promise.all(
    Array.from({ length: 16 }, async () => {
      while (!stop) {
        const n = seq++;
        const name = names[n % names.length];
        const begun = Date.now();
        await h.env.LEDGER.getByName(name).put(`k${n}`, n);
        ops.push([name, `k${n}`, begun, Date.now()]);
      }
    }),
  );
  // Until enough writes are acknowledged to check (300 ms on an idle machine; longer on a loaded one).
  const waitFrom = Date.now();
  while (ops.length < 150 && Date.now() - waitFrom < 20_000) await new Promise((r) => setTimeout(r, 20));
  const began = Date.now();
  const report = await h.backup(path.join(root, 'snap'));
  const ended = Date.now();
  await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await load;
  t.is(report.workers, names.length);

  const r = await restore(path.join(root, 'snap'), path.join(root, 'restored'));
  t.deepEqual(r.failed, []);
  t.is(r.workers.length, names.length);
  t.true(r.workers.every((w) => w.class === 'do.Ledger'));
  const got = await contents(t, path.join(root, 'restored'), names);
  let missing = 0;
  let late = 0;
  for (const [name, key, begun, acked] of ops) {
    const has = got.get(name).keys.includes(key);
    if (acked < began && !has) missing++;
    if (begun > ended && has) late++;
  }
  t.true(ops.filter((o) => o[3] < began).length > 100, 'writes were acknowledged before the snapshot');
  t.is(missing, 0, 'writes acknowledged before the snapshot began are in it');
  t.is(late, 0, 'writes begun after the snapshot ended are not in it');
  for (const [name, d] of got) t.is(d.rows, d.keys.length, `${name}: every key with its row (one commit each)`);
});

test('archived, SIGKILLed and restored to several moments: each object holds every write acknowledged by then and none begun after', async (t) => {
  const root = tmpDir(t);
  const to = path.join(root, 'archive');
  const { ops, started, killedAt } = await loadThenKill(t, [path.join(root, 'data'), to, '700ms'], 2500, LOAD);
  t.true(ops.length > 300, `${ops.length} writes acknowledged`);
  const names = Array.from({ length: 12 }, (_, i) => `w${i}`);
  const moments = [0.2, 0.5, 0.8].map((f) => Math.round(started + f * (killedAt - LAG_MS - started)));
  for (const [i, at] of [...moments, undefined].entries()) {
    const dir = path.join(root, `restored-${i}`);
    const r = await restore(to, dir, at === undefined ? {} : { at });
    t.deepEqual(r.failed, [], `restore ${i}`);
    const got = await contents(t, dir, names);
    const { checked, missing, early } = tally(ops, (name, key) => got.get(name).keys.includes(key), at, at ?? killedAt - LAG_MS);
    t.true(checked > 0);
    t.is(missing, 0, `restore ${i} (at ${at ?? 'latest'}): ${missing} of ${checked} writes acknowledged by then are missing`);
    t.is(early, 0, `restore ${i} (at ${at ?? 'latest'}): ${early} writes begun after it are there`);
    for (const [name, d] of got) t.is(d.rows, d.keys.length, `${name}: every key with its row`);
  }
});

test("the archive needs durability 'full' on a Durable Object host too", async (t) => {
  const root = tmpDir(t);
  await t.throwsAsync(openObjects({ dir: path.join(root, 'data'), bindings: { LEDGER: { class: Ledger } }, durability: 'relaxed', archive: { to: path.join(root, 'a') } }), {
    instanceOf: RangeError,
    message: /archive needs durability 'full'/,
  });
});

test('serve --archive: a directory inside --dir, a retain that is no duration, and a retain without --archive are usage errors', async (t) => {
  const cwd = tmpDir(t);
  for (const [args, message] of [
    [['--dir', path.join(cwd, 'data'), '--archive', path.join(cwd, 'data', 'a')], /^--archive: the archive's directory .* must be outside --dir/],
    [['--archive', path.join(cwd, 'a'), '--archive-retain', '7x'], /^--archive-retain must be a duration/],
    [['--archive-retain', '7d'], /^--archive-retain needs --archive <dir>/],
  ]) {
    let err = '';
    const code = await main(['serve', ...args], { stdout: { write: () => {} }, stderr: { write: (s) => (err += s) } });
    t.is(code, 2, err);
    t.regex(err.replace(/^durable-workers serve: /, ''), message);
  }
});

/** POSTs `body` to `url`; its status. */
function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Rows of `entries` in each restored Ledger file. */
function entryCounts(dir, report) {
  return report.workers.map((w) => {
    const db = new Database(path.join(dir, w.file), { readonly: true });
    try {
      return db.prepare('SELECT count(*) AS c FROM entries').get().c;
    } finally {
      db.close();
    }
  });
}

test('durable-workers backup takes a snapshot through the control socket of serve, which also archives with --archive', async (t) => {
  const root = tmpDir(t);
  const dir = path.join(root, 'data');
  const s = await startServe(['--dir', dir, '--port', '0', '--archive', path.join(root, 'archive')], { t });
  t.truthy(s.url, s.stderr());
  for (let i = 0; i < 6; i++) t.is(await post(`${s.url}/append/n${i % 3}`, `v${i}`), 200);

  const live = await cli(['backup', dir, path.join(root, 'snap')]);
  t.is(live.status, 0, live.stderr);
  t.regex(live.stdout, new RegExp(`taken by the process serving it, pid ${s.child.pid}`));
  const inspect = await cli(['inspect', dir, '--json']);
  t.is(inspect.status, 0, inspect.stderr);
  t.like(JSON.parse(inspect.stdout).classes[0], { name: 'do.Ledger', workers: 3 });
  const top = await cli(['top', dir, '--json', '--once']);
  t.not(top.status, 0);
  t.regex(top.stderr, /served by a Durable Object host .*answers backup and summary \(inspect\) only/);

  s.child.kill('SIGTERM');
  t.deepEqual(await s.exited, { code: 0, signal: null });
  for (const from of ['snap', 'archive']) {
    const to = path.join(root, `restored-${from}`);
    const r = await restore(path.join(root, from), to);
    t.deepEqual(r.failed, [], from);
    t.deepEqual(
      entryCounts(to, r).sort((a, b) => a - b),
      [2, 2, 2],
      `${from}: three ledgers of two entries each`,
    );
  }
});

(motoPath() ? test : test.skip)('S3: a Durable Object host archives to a bucket, and a restore from it holds every acknowledged write', async (t) => {
  const root = tmpDir(t);
  const { endpoint } = await startMoto(t);
  const s3 = client(endpoint);
  const { CreateBucketCommand } = require('@aws-sdk/client-s3');
  await s3.send(new CreateBucketCommand({ Bucket: 'objects' }));
  const h = await openLedgers(t, path.join(root, 'data'), { archive: { s3: { client: s3, bucket: 'objects' }, spool: path.join(root, 'spool') } });
  const names = ['a', 'b', 'c'];
  await Promise.all(Array.from({ length: 30 }, (_, n) => h.env.LEDGER.getByName(names[n % 3]).put(`k${n}`, n)));
  // Closing ships what the spool holds.
  await h.close();
  const r = await restore({ s3: { client: s3, bucket: 'objects' } }, path.join(root, 'restored'));
  t.deepEqual(r.failed, []);
  const got = await contents(t, path.join(root, 'restored'), names);
  t.deepEqual(
    names.map((name) => got.get(name).keys.length),
    [10, 10, 10],
  );
});
