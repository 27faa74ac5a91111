'use strict';
// New workers: a first write builds the worker's file and syncs it and its
// directory, two waits on the device. A burst of them runs on creation
// threads of their own (src/napi/host.rs), more at once than the commit
// threads, so the waits overlap; and a worker evicted after it holds no
// connection closes at once, without a turn through a thread.
const test = require('ava');
const path = require('node:path');
const { fork } = require('node:child_process');
const { once } = require('node:events');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');

test('64 new workers on a slow device (20 ms a sync) are created many at a time', async (t) => {
  t.timeout(60_000);
  const child = fork(path.join(__dirname, '..', 'fixtures', 'new-workers.js'), [tmpDir(t), '64'], {
    env: slowSyncEnv(20),
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [msg] = await once(child, 'message');
  const [code] = await once(child, 'exit');
  t.is(code, 0);
  t.true(msg.preloaded, 'the child runs under the slow-sync shim');
  t.is(msg.stats.created, 65);
  t.log(`64 new workers in ${Math.round(msg.ms)} ms`);
  // Each creation waits 40 ms on the device. Four at a time (the commit
  // threads) would take 16 × 40 = 640 ms; the 48 creation threads, 2 × 40
  // plus the catalog's commits (20 ms each, shared by the burst).
  t.true(msg.ms < 450, `64 new workers took ${Math.round(msg.ms)} ms`);
});
