'use strict';
// The input gate (js/do/input-gate.js) as Actor.event uses it: events start
// in the order they arrived, even one that arrives while an earlier one is
// being let through.
const test = require('ava');
const { InputGate } = require('../../js/do/input-gate');

/** Actor.event's way in: wait only when the gate says so, and say when through. */
async function event(gate, order, name) {
  const wait = gate.enter();
  if (wait !== null) {
    try {
      await wait;
    } finally {
      gate.entered();
    }
  }
  order.push(name);
}

test('an event that arrives while a waiting one is being let through starts after it, at every microtask', async (t) => {
  for (let delay = 0; delay < 6; delay++) {
    const gate = new InputGate();
    const order = [];
    let end;
    const section = gate.blockConcurrencyWhile(() => new Promise((resolve) => (end = resolve)));
    await Promise.resolve();
    const first = event(gate, order, 'first');
    end();
    for (let i = 0; i < delay; i++) await Promise.resolve();
    const later = event(gate, order, 'later');
    await Promise.all([first, later, section]);
    t.deepEqual(order, ['first', 'later'], `the later one ${delay} microtasks after the section ended`);
  }
});

test('a free gate lets an event start at once; release() lets every waiting one go', async (t) => {
  const gate = new InputGate();
  t.is(gate.enter(), null);
  const order = [];
  void gate.blockConcurrencyWhile(() => new Promise(() => {}));
  await Promise.resolve();
  const waiting = [event(gate, order, 'a'), event(gate, order, 'b')];
  await Promise.resolve();
  t.deepEqual(order, []);
  gate.release();
  await Promise.all(waiting);
  t.deepEqual(order, ['a', 'b']);
  t.is(gate.enter(), null, 'released: nothing waits any more');
});
