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

module.exports = { loadThenKill };
