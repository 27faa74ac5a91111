'use strict';
// New workers: a first write builds the worker's file, and the file and its
// name must be on the device before the write is reported. A burst of them
// runs on creation threads of their own (src/napi/host.rs), more at once than
// the commit threads, so their waits overlap; on ext4 and xfs those made at
// once share one syncfs (src/group_sync.rs) instead of two syncs each; and a
// worker evicted after it holds no connection closes at once, without a turn
// through a thread.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, fork } = require('node:child_process');
const { once } = require('node:events');
const { tmpDir } = require('../helpers/tmp');
const { slowSyncEnv } = require('../helpers/slowsync');

/** Runs fixtures/new-workers.js on `dir` under the slow-sync shim: its { preloaded, ms, stats }. */
async function burst(dir, n, syncMs) {
  const child = fork(path.join(__dirname, '..', 'fixtures', 'new-workers.js'), [dir, String(n)], {
    env: slowSyncEnv(syncMs),
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [msg] = await once(child, 'message');
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`new-workers.js exited ${code}`);
  return msg;
}

/** ext4 or xfs: where new workers' files share a syncfs (statfs magic numbers). */
const SHARED_SYNC_FS = new Map([
  [0xef53, 'ext4'],
  [0x58465342, 'xfs'],
]);
const [major, minor] = os.release().split('.').map(Number);
const tmpFs = fs.statfsSync(os.tmpdir()).type;
const sharedSyncSkip =
  process.platform !== 'linux' || major < 5 || (major === 5 && minor < 8)
    ? `syncfs reports write-back errors on Linux 5.8 and later only, not ${process.platform} ${os.release()}`
    : SHARED_SYNC_FS.has(tmpFs)
      ? undefined
      : `${os.tmpdir()} is not ext4 or xfs (statfs type 0x${tmpFs.toString(16)}): each new file is synced on its own there`;

test('64 new workers on a slow device (20 ms a sync) are created many at a time', async (t) => {
  t.timeout(60_000);
  const msg = await burst(tmpDir(t), 64, 20);
  t.true(msg.preloaded, 'the child runs under the slow-sync shim');
  t.is(msg.stats.created, 65);
  t.log(`64 new workers in ${Math.round(msg.ms)} ms, ${msg.stats.creationSyncs} shared syncs`);
  // Synced one at a time, each creation waits 40 ms on the device (file, then
  // directory); with shared syncs, two steps of a syncfs and an fsync (80 ms
  // under the shim, which delays both). Four at a time (the commit threads)
  // would take 16 × 40 = 640 ms or more; the 48 creation threads wait
  // together, a few rounds of shared syncs after the catalog's commits (20 ms
  // each, shared by the burst).
  t.true(msg.ms < 560, `64 new workers took ${Math.round(msg.ms)} ms`);
});

(sharedSyncSkip === undefined ? test : test.skip)(`64 new workers at once share a few syncfs on ext4 and xfs${sharedSyncSkip === undefined ? '' : ` (skipped: ${sharedSyncSkip})`}`, async (t) => {
  t.timeout(60_000);
  // Whatever other processes left dirty would make the child's syncfs
  // slow, and two slow ones in a row send creations back to their own syncs.
  execFileSync('sync');
  const msg = await burst(tmpDir(t), 64, 20);
  const syncs = msg.stats.creationSyncs - msg.before.creationSyncs;
  t.log(`64 new workers, ${syncs} syncfs, ${Math.round(msg.ms)} ms on a 20 ms device`);
  t.true(syncs >= 1, 'the new files were made durable by syncfs');
  // The creation threads wait together: each syncfs after the first covers
  // every file made while the one before ran.
  t.true(syncs <= 16, `${syncs} syncfs for 64 new workers`);
});
