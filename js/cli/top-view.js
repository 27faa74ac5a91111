'use strict';
// What `durable-workers top` shows, from two successive snapshots of the
// control socket's `top` operation (js/control/top-snapshot.js): a frame of
// text lines fitted to the terminal, or one JSON object for --json. Pure: no
// I/O, no clock, so tests can draw a frame from made-up snapshots.
//
// Worker ids are the user's data and may hold anything, escape sequences
// included: they are shown quoted, with every control character escaped, so
// an id can never move the cursor or recolour the terminal.

// Due times as inspect says them.
const { relative } = require('./inspect');

/** Per-second rates between two snapshots; null for the first. */
function rates(prev, cur) {
  if (prev === null || cur.at <= prev.at) return { calls: null, commits: null, syncs: null };
  const s = (cur.at - prev.at) / 1000;
  const per = (k) => Math.max(0, (cur.stats[k] - prev.stats[k]) / s);
  return { calls: per('calls'), commits: per('commits'), syncs: per('syncs') };
}

/**
 * The --json line for a sample: the snapshot with its rates.
 * @param {object | null} prev the snapshot before, if any
 * @param {object} cur
 */
function record(prev, cur) {
  const r = rates(prev, cur);
  return {
    at: cur.at,
    dir: cur.dir,
    pid: cur.pid,
    callsPerSecond: r.calls,
    commitsPerSecond: r.commits,
    syncsPerSecond: r.syncs,
    latency: cur.latency,
    live: cur.stats.live,
    workers: cur.workers,
    alarms: cur.alarms,
    shards: cur.shards,
    stats: cur.stats,
  };
}

/** Control characters, and the marks that reorder text, as \u escapes. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** A string as the view shows it: quoted, escaped, at most `max` characters. */
function quote(s, max = Infinity) {
  return clip(printable(JSON.stringify(s)), max);
}

/** `s` with its control and reordering characters as \u escapes (a directory's path may hold them too). */
function printable(s) {
  return s.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clip(s, max) {
  if (s.length <= max) return s;
  return max <= 1 ? s.slice(0, Math.max(0, max)) : `${s.slice(0, max - 1)}…`;
}

/** A rate: "–" before there is one, one decimal below 10, else whole and grouped. */
function rate(v) {
  if (v === null) return '–';
  return v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US');
}

/** Milliseconds, as latencies are read. */
function ms(v) {
  if (v === null || v === undefined) return '–';
  return v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v).toLocaleString('en-US')} ms`;
}

function n(v) {
  return v.toLocaleString('en-US');
}

/**
 * One frame: lines of at most `columns` characters, at most `rows` of them
 * (the busiest workers get the rows the rest leaves).
 * @param {object | null} prev
 * @param {object} cur
 * @param {{ columns: number, rows: number, interval: number }} size
 * @returns {string[]}
 */
function frame(prev, cur, { columns, rows, interval }) {
  const r = rates(prev, cur);
  const st = cur.stats;
  const time = new Date(cur.at).toISOString().slice(11, 19);
  const lat = cur.latency;
  const head = [
    `durable-workers top  ${printable(cur.dir)}  pid ${cur.pid}  every ${interval >= 1000 ? `${interval / 1000}s` : `${interval}ms`}  ${time}Z  (q quits)`,
    `calls/s ${rate(r.calls)}   commits/s ${rate(r.commits)}   syncs/s ${rate(r.syncs)}   p50 ${ms(lat?.p50)}   p99 ${ms(lat?.p99)}${lat ? ' (since open)' : ''}`,
    `live ${n(st.live)} workers   refused ${n(st.refused)}   evicted ${n(st.evicted)}   alarms fired ${n(st.alarmsFired)} (${n(st.alarmsFailed)} failed)   sockets ${n(st.sockets)}`,
  ];

  const alarms = [`next alarms  (${n(cur.alarms.count)} pending)`];
  for (const a of cur.alarms.next) alarms.push(`  ${relative(a.at - cur.at).padEnd(10)} ${new Date(a.at).toISOString()}  ${a.class} ${quote(a.id, columns)}`);
  if (cur.alarms.next.length === 0) alarms.push('  none');

  const shards = [];
  if (cur.shards === null) shards.push('shards  none (all workers run on the main thread)');
  else {
    shards.push(`shards  (${cur.shards.length})`);
    for (const s of cur.shards) {
      shards.push(`  shard ${s.index}  ${s.state.padEnd(8)}  ${n(s.workers)} workers  ${n(s.inFlight)} in flight  ${n(s.missedHeartbeats)} missed heartbeats  lost ${n(s.lost)}×`);
    }
  }

  // Rows: the header, a blank, the workers' heading, the workers, a blank,
  // the alarms, a blank, the shards; the last row is left for the cursor.
  const fixed = head.length + 1 + 1 + 1 + alarms.length + 1 + shards.length + 1;
  const room = Math.max(1, rows - fixed - 1); // and one for "… more open"
  const shown = cur.workers.slice(0, room);
  const numbers = 8;
  const nameWidth = Math.max(10, columns - 2 - numbers - 2 - 9);
  const workers = [`${'busiest workers'.padEnd(nameWidth + 2)}${'mailbox'.padStart(numbers)}  ${'state'}`];
  for (const w of shown) {
    const name = `${w.class} ${quote(w.id, nameWidth - w.class.length - 1)}`;
    const state = w.closing ? 'closing' : w.running ? 'running' : 'idle';
    workers.push(`  ${name.padEnd(nameWidth)}${n(w.mailbox).padStart(numbers)}  ${state}`);
  }
  if (shown.length === 0) workers.push('  none open');
  else if ((cur.open ?? shown.length) > shown.length) workers.push(`  … ${n((cur.open ?? shown.length) - shown.length)} more open`);

  const lines = [...head, '', ...workers, '', ...alarms, '', ...shards];
  return lines.slice(0, Math.max(1, rows - 1)).map((l) => clip(l, columns));
}

module.exports = { frame, record, rates, quote, printable };
