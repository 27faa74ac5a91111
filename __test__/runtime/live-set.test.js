'use strict';
// The JS half of the live set (runtime/live-set.js) against a native side
// that records what it is told: a worker gone idle is reported when the
// loop's turn ends or another worker gets work, so a serial caller's worker
// costs no round trip through the addon per call, and eviction still sees
// every idle worker before it must name one.
const test = require('ava');
const { LiveSet } = require('../../js/runtime/live-set');

function liveSet() {
  const told = [];
  const native = {
    begin: (slot) => (told.push(`begin ${slot}`), null),
    end: (slot) => told.push(`end ${slot}`),
    forget: (slot) => told.push(`forget ${slot}`),
  };
  const set = new LiveSet({ native, onIdle: () => {}, onEvicted: () => {}, hostClosed: () => false });
  const worker = (key) => set.materialize(key, (slot) => ({ key, slot, closed: null }));
  return { set, told, worker };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('a worker busy and idle again and again in one turn is told begin once, and end when the turn ends', async (t) => {
  const { set, told, worker } = liveSet();
  const w = worker('a');
  for (let i = 0; i < 100; i++) {
    set.busy(w);
    set.idle(w);
  }
  t.deepEqual(told, [`begin ${w.slot}`]);
  await turn();
  t.deepEqual(told, [`begin ${w.slot}`, `end ${w.slot}`]);
  // The next turn starts afresh.
  set.busy(w);
  set.idle(w);
  await turn();
  t.deepEqual(told.slice(2), [`begin ${w.slot}`, `end ${w.slot}`]);
});

test('another worker getting work first hears of every worker gone idle, so it can name them to make room', (t) => {
  const { set, told, worker } = liveSet();
  const a = worker('a');
  const b = worker('b');
  const c = worker('c');
  set.busy(a);
  set.idle(a);
  set.busy(b);
  set.idle(b);
  set.busy(c);
  t.deepEqual(told, [`begin ${a.slot}`, `end ${a.slot}`, `begin ${b.slot}`, `end ${b.slot}`, `begin ${c.slot}`]);
});

test('a worker closing while its end waits is not told end, only forgotten', async (t) => {
  const { set, told, worker } = liveSet();
  const w = worker('a');
  set.busy(w);
  set.idle(w);
  w.closed = Promise.resolve();
  set.drop(w);
  await turn();
  t.deepEqual(told, [`begin ${w.slot}`, `forget ${w.slot}`]);
});
