'use strict';
// The continuous archive to S3-compatible storage: moto's server on loopback
// (.ci/run installs it; without it these tests skip, saying so). A process
// writing under load is SIGKILLed; restores from the bucket to several
// moments find every write acknowledged by then and none begun after, and
// the latest holds every write acknowledged more than the stated lag (2 s)
// before the kill.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { open, restore, DurableWorker } = require('durable-workers');
const { tmpDir } = require('../helpers/tmp');
const { motoPath, startMoto, client } = require('../helpers/moto');
const { loadThenKill, tally } = require('../helpers/archive-load');

/** The lag docs/backups.md states for S3: a spool shipped every 500 ms, a put, and a segment's 200 ms. */
const LAG_MS = 2000;
const run = motoPath() ? test : test.skip;
if (!motoPath()) test('S3: moto is not installed here (DW_MOTO_PYTHONPATH; .ci/run installs it)', (t) => t.pass());

class Ledger extends DurableWorker {
  static collections = { lines: { n: 'integer' } };

  keys() {
    return [...this.state.keys()];
  }
}

async function bucketOn(t) {
  const { endpoint } = await startMoto(t);
  const s3 = client(endpoint);
  const { CreateBucketCommand } = require('@aws-sdk/client-s3');
  await s3.send(new CreateBucketCommand({ Bucket: 'archive' }));
  return { endpoint, s3 };
}

run('S3: restored from the bucket to several moments after a SIGKILL, every worker holds each write acknowledged by then and none begun after', async (t) => {
  const root = tmpDir(t);
  const { endpoint, s3 } = await bucketOn(t);
  const { ops, started, killedAt } = await loadThenKill(t, [path.join(root, 'data'), path.join(root, 'spool'), '1500ms', endpoint, 'archive'], 4000);
  t.true(ops.length > 500, `${ops.length} writes acknowledged`);

  const moments = [0.2, 0.5, 0.8].map((f) => Math.round(started + f * (killedAt - LAG_MS - started)));
  for (const [i, at] of [...moments, undefined].entries()) {
    const dir = path.join(root, `restored-${i}`);
    const r = await restore({ s3: { client: s3, bucket: 'archive' } }, dir, at === undefined ? {} : { at });
    t.deepEqual(r.failed, [], `restore ${i}`);
    const host = await open({ dir, control: false });
    const got = new Map();
    for (let w = 0; w < 12; w++) got.set(`w${w}`, new Set(await host.get(Ledger, `w${w}`).keys()));
    await host.close();
    const { checked, missing, early } = tally(ops, (worker, key) => got.get(worker).has(key), at, at ?? killedAt - LAG_MS);
    t.true(checked > 0);
    t.is(missing, 0, `restore ${i} (at ${at ?? 'latest'}): ${missing} of ${checked} writes acknowledged by then are missing`);
    t.is(early, 0, `restore ${i} (at ${at ?? 'latest'}): ${early} writes begun after it are there`);
  }
  t.deepEqual(fs.readdirSync(root).includes('data.archive-spool'), false, 'the spool given was used');
});

run('S3: a host that closes ships everything, its next open numbers on from the bucket, and the spool empties', async (t) => {
  const root = tmpDir(t);
  const { endpoint, s3 } = await bucketOn(t);
  const spool = path.join(root, 'spool');
  const archive = { s3: { client: s3, bucket: 'archive', prefix: 'shop/' }, spool };
  for (let round = 0; round < 2; round++) {
    const host = await open({ dir: path.join(root, 'data'), archive });
    for (let i = 0; i < 20; i++) await host.get(Ledger, `w${i % 3}`).keys();
    class Note extends DurableWorker {
      write(n) {
        this.state.set(`n${n}`, n);
      }
    }
    for (let i = 0; i < 20; i++) await host.get(Note, `n${i % 3}`).write(round * 100 + i);
    await host.close();
    t.deepEqual(fs.readdirSync(path.join(spool, 'log')), [], `round ${round}: every segment shipped`);
  }
  const r = await restore({ s3: { client: s3, bucket: 'archive', prefix: 'shop/' } }, path.join(root, 'back'));
  t.deepEqual(r.failed, []);
  t.is(r.workers.length, 3);
  // The command line, from the bucket.
  const { cli } = require('../helpers/control');
  const env = { ...process.env, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  const c = await cli(['restore', 's3://archive/shop', path.join(root, 'cli'), '--endpoint', endpoint, '--only', 'Note/n1'], { env });
  t.is(c.status, 0, c.stderr);
  t.regex(c.stdout, /restored 1 worker\(s\)/);
  const host = await open({ dir: path.join(root, 'back'), control: false });
  t.teardown(() => host.close());
  class Note extends DurableWorker {
    all() {
      return [...this.state.keys()].length;
    }
  }
  t.is(await host.get(Note, 'n0').all(), 14, 'both processes’ writes, numbered on without a clash');
});
