'use strict';
// The gate's ordering, with the storage's commits held and released by hand:
// a deterministic check of what state/gate and files/crash exercise for real.
// (The storage here is a stand-in only because the test must decide when each
// commit lands; every other test uses the real one.)
const test = require('ava');
const { DurableState } = require('../../js/state/resident-state');

/** Storage whose commits complete when the test says so, in any order it likes. */
function heldStorage() {
  const commits = [];
  const commit = ({ keys, deletes }) => new Promise((resolve, reject) => commits.push({ keys, deletes, resolve, reject }));
  return { commits, native: { write: commit, create: commit } };
}

const settle = () => new Promise((r) => setImmediate(r));

function stateWith(native) {
  const s = new DurableState(
    () => 'Test "t"',
    native,
    () => {},
  );
  DurableState.runtimeOf(s).load({ exists: true, keys: [], tags: [], values: [] });
  return s;
}

test("waiters are released in the order of the commits they wait for, even when a later write rides an earlier waiter's commit", async (t) => {
  const { commits, native } = heldStorage();
  const s = stateWith(native);
  const order = [];
  s.set('k', 1);
  s.flush().then(() => order.push('first'));
  s.set('k', 2);
  s.flush().then(() => order.push('second')); // waits: one commit in flight
  s.set('k', 3); // joins the second's batch before it starts
  t.is(commits.length, 1);
  commits[0].resolve();
  await settle();
  t.is(commits.length, 2, 'the second commit started when the first landed');
  t.deepEqual(commits[1].keys, ['k']);
  s.flush().then(() => order.push('third')); // its write is in the second commit
  commits[1].resolve();
  await settle();
  t.deepEqual(order, ['first', 'second', 'third']);
});

test('at most one commit is in flight, and writes made meanwhile share the next', async (t) => {
  const { commits, native } = heldStorage();
  const s = stateWith(native);
  s.set('a', 1);
  const p1 = s.flush();
  for (let i = 0; i < 50; i++) s.set(`b${i}`, i);
  const p2 = s.flush();
  const p3 = s.flush();
  t.is(p2, p3);
  t.is(commits.length, 1);
  commits[0].resolve();
  await p1;
  await settle();
  t.is(commits.length, 2);
  t.is(commits[1].keys.length, 50);
  commits[1].resolve();
  await p2;
  t.is(s.flush(), null, 'nothing dirty, nothing in flight');
});

test('a failed commit rejects its waiters and every later flush', async (t) => {
  const { commits, native } = heldStorage();
  const s = stateWith(native);
  s.set('a', 1);
  const p1 = s.flush();
  s.set('b', 2);
  const p2 = s.flush();
  const boom = Object.assign(new Error('disk full'), { code: 'ERR_DURABLE_IO' });
  commits[0].reject(boom);
  t.is(await t.throwsAsync(p1), boom);
  t.is(await t.throwsAsync(p2), boom);
  t.is(await t.throwsAsync(s.flush()), boom);
  t.is(commits.length, 1, 'nothing more was sent to the disk');
});

test('a key set and set back before its commit starts is not written', async (t) => {
  const { commits, native } = heldStorage();
  const s = stateWith(native);
  s.set('k', 'v1');
  s.flush();
  commits[0].resolve();
  await settle();
  s.set('k', 'v2');
  s.set('k', 'v1');
  t.is(s.flush(), null);
  t.is(commits.length, 1);
});
