'use strict';
// The baseline: what a Node developer writes without durable-workers.
// One better-sqlite3 database file per customer (worker), WAL journal,
// synchronous=FULL so a commit is on the device before the call returns, and
// one transaction per call. Calls are async functions only so that callers
// use the same shape as for durable-workers; the work inside is synchronous,
// so concurrent calls simply run one after another.

const fs = require('node:fs');
const path = require('node:path');
const Database = require('better-sqlite3');
const { defineScenarios } = require('./scenarios');

/**
 * Opens the hand-rolled store.
 * @param {import('./scenarios').OpenOptions} opts `maxLive` defaults to 128,
 *   the same bound durable-workers applies by default
 * @returns {Promise<import('./scenarios').System>}
 */
async function openBaseline({ dir, maxLive = 128 }) {
  fs.mkdirSync(dir, { recursive: true });
  /** id → open database; Map order doubles as least-recently-used order. */
  const open = new Map();
  let commits = 0;

  function openDb(id) {
    const db = new Database(path.join(dir, `${encodeURIComponent(id)}.db`));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID');
    const get = db.prepare('SELECT v FROM kv WHERE k = ?').pluck();
    const put = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v');
    const incr = db.transaction((key) => {
      const n = (get.get(key) ?? 0) + 1;
      put.run(key, n);
      return n;
    });
    return { db, get, incr };
  }

  function use(id) {
    let entry = open.get(id);
    if (entry) {
      open.delete(id); // re-insert below: most recently used goes last
    } else {
      entry = openDb(id);
      if (open.size >= maxLive) {
        const [oldest, victim] = open.entries().next().value;
        open.delete(oldest);
        victim.db.close();
      }
    }
    open.set(id, entry);
    return entry;
  }

  return {
    worker: (id) => ({
      incr: async () => {
        const n = use(id).incr('n');
        commits++;
        return n;
      },
      read: async () => use(id).get.get('n') ?? 0,
    }),
    counters: () => ({ commits, live: open.size }),
    close: async () => {
      for (const { db } of open.values()) db.close();
      open.clear();
    },
  };
}

/** Scenarios for the child runner (bench/child.js). */
const scenarios = defineScenarios(openBaseline);

module.exports = { openBaseline, scenarios };
