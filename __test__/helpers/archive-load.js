'use strict';
// Runs fixtures/archive-load.js (writes under load with the continuous
// archive on), or another fixture that reports as it does, for a while,
// then SIGKILLs it.
const path = require('node:path');
const { fork } = require('node:child_process');

const LOAD = path.join(__dirname, '..', 'fixtures', 'archive-load.js');

/**
 * @param {string[]} args the fixture's arguments: dir, archive (or spool), baseEvery[, endpoint, bucket]
 * @param {number} ms how long the load runs before the kill
 * @param {string} [fixture] the load's module (default fixtures/archive-load.js)
 * @returns {Promise<{ ops: [string, string, number, number][], started: number, killedAt: number }>}
 *   each acknowledged write as [worker, key, begun, acknowledged] (epoch ms)
 */
async function loadThenKill(t, args, ms, fixture = LOAD) {
  const child = fork(fixture, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  t.teardown(() => child.kill('SIGKILL'));
  const ops = [];
  await new Promise((resolve, reject) => {
    child.on('message', (m) => {
      if (m.ready) resolve();
      if (m.ops) ops.push(...m.ops);
    });
    child.once('exit', (code) => reject(new Error(`the load exited (${code}) before it was ready`)));
  });
  const started = Date.now();
  await new Promise((r) => setTimeout(r, ms));
  const killedAt = Date.now();
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return { ops, started, killedAt };
}

/**
 * A restore checked against the load's writes.
 * @param {[string, string, number, number][]} ops [name, key, begun, acknowledged] of each write
 * @param {(name: string, key: string) => boolean} has whether the restore holds the write
 * @param {number | undefined} at the moment restored to, undefined for the latest
 * @param {number} due writes acknowledged by then must be there
 * @returns {{ checked: number, missing: number, early: number }} early: writes begun after `at` that are there
 */
function tally(ops, has, at, due) {
  const out = { checked: 0, missing: 0, early: 0 };
  for (const [name, key, begun, acked] of ops) {
    const there = has(name, key);
    if (acked <= due) {
      out.checked++;
      if (!there) out.missing++;
    }
    if (at !== undefined && begun > at && there) out.early++;
  }
  return out;
}

module.exports = { loadThenKill, tally };
