'use strict';
// The output gate (state/gate.js) against an owner that records what it is
// asked: a commit that lands before the storage returns (a serial caller's,
// made and synced on the JS thread) leaves nothing to wait for, and one that
// does not is waited for, in the order commits started.
const test = require('ava');
const { OutputGate, OWNER } = require('../../js/state/gate');

/** An owner whose commits land at once (`now`) or when the test says. */
function owner() {
  const o = {
    dirty: 0,
    landed: [],
    pending: [],
    now: false,
    [OWNER.take]() {
      if (o.dirty === 0) return null;
      const batch = { writes: o.dirty };
      o.dirty = 0;
      return batch;
    },
    [OWNER.commit]() {
      if (o.now) return ['report'];
      return new Promise((resolve) => o.pending.push(resolve));
    },
    [OWNER.landed](batch) {
      o.landed.push(batch.writes);
    },
    [OWNER.dirty]() {
      return o.dirty > 0;
    },
  };
  return o;
}

test('a commit that landed before returning leaves nothing to wait for', (t) => {
  const o = owner();
  const gate = new OutputGate(o);
  o.now = true;
  o.dirty = 2;
  t.false(gate.hasFile);
  t.is(gate.flush(), null);
  t.deepEqual(o.landed, [2]);
  t.true(gate.hasFile);
  t.is(gate.flush(), null, 'nothing dirty, nothing in flight');
});

test('writes made while a commit is in flight wait for it, even when theirs then lands at once', async (t) => {
  const o = owner();
  const gate = new OutputGate(o);
  o.dirty = 1;
  const first = gate.flush();
  t.true(first instanceof Promise);
  o.dirty = 1;
  const second = gate.flush();
  t.not(second, first);
  const order = [];
  first.then(() => order.push('first'));
  second.then(() => order.push('second'));
  // The second batch will land at once, as soon as the first lets it start.
  o.now = true;
  await Promise.resolve();
  t.deepEqual(order, [], 'nothing settles before the first commit lands');
  o.pending[0]();
  await second;
  t.deepEqual(order, ['first', 'second']);
  t.deepEqual(o.landed, [1, 1]);
  t.is(gate.flush(), null);
});
