'use strict';
// One snapshot of a live host for `durable-workers top`, taken in the process
// serving the directory (the control socket's `top` operation). Rates are not
// here: the viewer takes the difference of two snapshots' counters, so a
// snapshot costs the same whoever asks and however often.
//
// Cost: a pass over the open workers (at most maxLive, plus those closing)
// and one catalog read for the alarms, through the catalog's queue like any
// other; nothing is written.
const path = require('node:path');
const { CONTROL_VIEW } = require('../api/host');

/**
 * @typedef {{ class: string, id: string, mailbox: number, running: boolean, closing: boolean }} WorkerRow
 * @typedef {{ at: number, pid: number, dir: string, stats: ReturnType<import('../api/host').Host['stats']>,
 *   workers: WorkerRow[], open: number, alarms: { count: number, next: { class: string, id: string, at: number }[] },
 *   shards: object[] | null, latency: { p50: number, p99: number, count: number } | null }} TopSnapshot
 */

/**
 * @param {import('../api/host').Host} host
 * @param {{ workers: number, alarms: number }} limits the busiest `workers` by mailbox depth; the earliest `alarms`
 * @returns {Promise<TopSnapshot>}
 */
async function topSnapshot(host, { workers, alarms }) {
  const view = host[CONTROL_VIEW]();
  const rows = view.workers().map((w) => ({ class: w.binding.name, id: w.id, mailbox: w.mailbox.waiting, running: w.mailbox.running, closing: w.closed !== null }));
  rows.sort(busiestFirst);
  const s = await view.summary(alarms);
  return {
    at: Date.now(),
    pid: process.pid,
    dir: path.resolve(host.dir),
    stats: host.stats(),
    workers: rows.slice(0, workers),
    open: rows.length,
    alarms: { count: s.alarmCount, next: s.alarms.classes.map((c, i) => ({ class: c, id: s.alarms.ids[i], at: s.alarms.ats[i] })) },
    shards: view.shards(),
    latency: view.latency(),
  };
}

/** Deepest mailbox first; then running before idle; then by class and id, so the order holds still between frames. */
function busiestFirst(a, b) {
  return b.mailbox - a.mailbox || Number(b.running) - Number(a.running) || (a.class < b.class ? -1 : a.class > b.class ? 1 : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

module.exports = { topSnapshot };
