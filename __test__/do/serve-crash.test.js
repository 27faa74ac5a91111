'use strict';
// SIGKILL durability of `durable-workers serve`: a write whose HTTP response
// reached the client is on disk after the server is killed at once. The
// server is the CLI in a child process on the emulated slow device (every
// fsync 5 ms longer, ../helpers/slowsync.js), so a response released before
// its commit landed would be caught. Each round: several objects, each
// written by a loop of sequential requests (one INSERT and one KV put per
// request, in one turn); the moment the K-th response arrives (K differs per
// round, the other writers' requests still in flight) the server is
// SIGKILLed from inside the callback that received it, then restarted on the
// same directory. The HTTP twin of __test__/cloudflare/gate.test.js.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { tmpDir } = require('../helpers/tmp');
const { startServe } = require('../helpers/serve-cli');
const { slowSyncEnv } = require('../helpers/slowsync');

const OBJECTS = 4;
const ROUNDS = 3;
const SYNC_MS = 5;

/** The environment of the server: the slow device if the shim builds here, else the real disk (said in the log). */
function serverEnv(t) {
  try {
    return slowSyncEnv(SYNC_MS);
  } catch (err) {
    t.log(`no slow device (${err.message}); the real disk it is`);
    return process.env;
  }
}

async function startServer(t, dir, env) {
  const s = await startServe(['--dir', dir, '--port', '0'], { env, t });
  if (s.url === null) throw new Error(`serve did not start: ${s.stderr()}`);
  return s;
}

test('every write acknowledged before a SIGKILL of serve is there after the restart, with its KV put, and no later write without its predecessors', async (t) => {
  t.timeout(120_000);
  const dir = path.join(tmpDir(t), 'data');
  const env = serverEnv(t);
  let s = await startServer(t, dir, env);
  if (env !== process.env) t.true(fs.readFileSync(`/proc/${s.child.pid}/maps`, 'utf8').includes('slowsync'), 'the server runs on the slow device');
  let total = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const killAt = 15 + round * 23;
    const acked = []; // [object, value, seq]
    let killed = false;
    const writer = async (b) => {
      for (let i = 0; !killed; i++) {
        const value = `${round}:${b}:${i}`;
        let seq;
        try {
          const res = await fetch(`${s.url}/append/w${b}`, { method: 'POST', body: value });
          if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
          ({ seq } = await res.json());
        } catch (err) {
          if (killed) return; // the crash cut this request off: its write may or may not be there
          throw err;
        }
        acked.push([b, value, seq]);
        if (acked.length === killAt && !killed) {
          killed = true;
          s.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: OBJECTS }, (_, b) => writer(b)));
    t.deepEqual(await s.exited, { code: null, signal: 'SIGKILL' }, `round ${round}: killed`);
    t.true(acked.length >= killAt, `round ${round}: ${acked.length} writes acknowledged`);

    s = await startServer(t, dir, env);
    const stored = await Promise.all(Array.from({ length: OBJECTS }, async (_, b) => (await fetch(`${s.url}/entries/w${b}`)).json()));
    for (const [b, value, seq] of acked) {
      t.is(stored[b].rows.find((r) => r.seq === seq)?.value, value, `round ${round}: ${value} at seq ${seq} of w${b}`);
    }
    for (let b = 0; b < OBJECTS; b++) {
      const { rows, last } = stored[b];
      // A turn's INSERT and KV put commit together: the KV holds the last row's value.
      t.is(last, rows.at(-1)?.value ?? null, `round ${round}: w${b}'s KV put and INSERT are in the same commit`);
      // Sequential writes: this round's values are 0..m-1 with no gap, in order.
      const mine = rows.map((r) => r.value).filter((v) => v.startsWith(`${round}:${b}:`));
      t.deepEqual(
        mine,
        mine.map((_, i) => `${round}:${b}:${i}`),
        `round ${round}: w${b} in order, no gap`,
      );
    }
    total += acked.length;
  }
  s.child.kill('SIGTERM');
  t.deepEqual(await s.exited, { code: 0, signal: null });
  t.log(`${total} writes acknowledged before ${ROUNDS} SIGKILLs, every one of them on disk after`);
});
