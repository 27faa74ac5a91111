'use strict';
// What `top` draws, from made-up snapshots (js/cli/top-view.js is pure): the
// rates are differences of the counters over the time between samples; a
// frame fits the terminal it is given; a worker id cannot reach the terminal
// as an escape sequence.
const test = require('ava');
const { frame, record } = require('../../js/cli/top-view');

const stats = (calls, commits) => ({ live: 3, refused: 0, evicted: 0, alarmsFired: 0, alarmsFailed: 0, sockets: 0, calls, commits, syncs: commits });

function snapshot(at, calls, commits, workers, extra = {}) {
  return { at, pid: 42, dir: '/data', stats: stats(calls, commits), workers, open: workers.length, alarms: { count: 0, next: [] }, shards: null, latency: null, ...extra };
}

const worker = (id, mailbox, running = true) => ({ class: 'Cart', id, mailbox, running, closing: false });

test('rates are the counters’ differences per second; the first sample has none ("–" on screen, null in JSON)', (t) => {
  const a = snapshot(10_000, 100, 50, []);
  const b = snapshot(12_000, 900, 250, []);
  t.like(record(a, b), { callsPerSecond: 400, commitsPerSecond: 100, syncsPerSecond: 100, latency: null, live: 3 });
  t.like(record(null, b), { callsPerSecond: null, commitsPerSecond: null });
  const first = frame(null, b, { columns: 120, rows: 40, interval: 1000 });
  t.regex(first[1], /^calls\/s – {3}commits\/s – .*p50 – {3}p99 –$/);
  t.regex(frame(a, b, { columns: 120, rows: 40, interval: 1000 })[1], /^calls\/s 400 {3}commits\/s 100 /);
});

test('a frame fits its terminal: no line wider than the columns, no more lines than the rows leave; the workers that do not fit are counted', (t) => {
  const many = Array.from({ length: 50 }, (_, i) => worker(`customer-${i}-${'x'.repeat(100)}`, 50 - i));
  const s = snapshot(1000, 0, 0, many, {
    shards: [
      { index: 0, state: 'running', lost: 1, workers: 30, inFlight: 2, missedHeartbeats: 0 },
      { index: 1, state: 'stopped', lost: 0, workers: 0, inFlight: 0, missedHeartbeats: 0 },
    ],
  });
  for (const [columns, rows] of [
    [120, 40],
    [60, 20],
    [30, 12],
  ]) {
    const lines = frame(null, s, { columns, rows, interval: 500 });
    t.true(lines.length <= rows - 1, `${lines.length} lines for ${rows} rows`);
    t.true(
      lines.every((l) => l.length <= columns),
      `${columns} columns`,
    );
  }
  const lines = frame(null, s, { columns: 120, rows: 40, interval: 500 });
  t.regex(lines[5], /^ {2}Cart "customer-0-x+…\s+50 {2}running$/);
  t.true(lines.some((l) => /^ {2}… \d+ more open$/.test(l)));
  t.true(lines.includes('  shard 0  running   30 workers  2 in flight  0 missed heartbeats  lost 1×'));
});

test('a worker id holding escape sequences is shown escaped: nothing from it reaches the terminal as a control character', (t) => {
  const s = snapshot(1000, 0, 0, [worker('\x1b[2J\x1b]0;owned\x07\u009b31m\u202eevil', 1)]);
  const text = frame(null, s, { columns: 200, rows: 40, interval: 1000 }).join('\n');
  t.notRegex(text, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/); // eslint-disable-line no-control-regex
  t.true(text.includes('Cart "\\u001b[2J\\u001b]0;owned\\u0007\\u009b31m\\u202eevil"'));
});
