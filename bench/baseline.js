'use strict';
// The baseline: what a Node developer writes without durable-workers.
// One better-sqlite3 database file per customer (worker), WAL journal,
// synchronous=FULL so a commit is on the device before the call returns, and
// one transaction per call. Writes are async functions only so that callers
// use the same shape as for durable-workers; the work inside is synchronous,
// so concurrent calls simply run one after another. Reads are what a user
// writes for a hot object: a prepared statement, called synchronously.

const fs = require('node:fs');
const path = require('node:path');
// DW_BENCH_BETTER_SQLITE3 names another better-sqlite3 directory to load: a
// build for the Node line the scenario runs on (run.js --node).
const Database = require(process.env.DW_BENCH_BETTER_SQLITE3 || 'better-sqlite3');
const { defineScenarios, DOCS, docOf, docId } = require('./scenarios');

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
    return { db, get, incr, docs: null };
  }

  /** The documents table, with an index on kind, as a user would declare it. */
  function docsOf(entry) {
    if (entry.docs !== null) return entry.docs;
    const { db } = entry;
    db.exec('CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, doc TEXT NOT NULL) WITHOUT ROWID; CREATE INDEX IF NOT EXISTS docs_kind ON docs (kind, id)');
    const put = db.prepare('INSERT OR REPLACE INTO docs (id, kind, doc) VALUES (?, ?, ?)');
    entry.docs = {
      fill: db.transaction((count) => {
        for (let i = 0; i < count; i++) {
          const d = docOf(i);
          put.run(docId(i), d.kind, JSON.stringify(d));
        }
      }),
      get: db.prepare('SELECT doc FROM docs WHERE id = ?').pluck(),
      find: db.prepare(`SELECT doc FROM docs WHERE kind = ? ORDER BY id LIMIT ${DOCS.findLimit}`).pluck(),
    };
    return entry.docs;
  }

  /** A handle's entry, kept while it stays open: a hot object's reads skip the LRU. */
  function hot(id) {
    let entry = null;
    return () => {
      if (entry === null || !entry.db.open) entry = use(id);
      return entry;
    };
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
    sync: true,
    worker: (id) => {
      const entry = hot(id);
      return {
        incr: async () => {
          const n = use(id).incr('n');
          commits++;
          return n;
        },
        read: () => entry().get.get('n') ?? 0,
        fillDocs: async (count) => {
          docsOf(entry()).fill(count);
          commits++;
          return count;
        },
        getDocs: (from, count) => {
          const { get } = docsOf(entry());
          let found = 0;
          for (let i = from; i < from + count; i++) {
            const doc = get.get(docId(i));
            if (doc !== undefined && JSON.parse(doc).n >= 0) found++;
          }
          return found;
        },
        findDocs: (from, count) => {
          const { find } = docsOf(entry());
          let found = 0;
          for (let i = from; i < from + count; i++) found += find.all(`k${i % DOCS.kinds}`).map((doc) => JSON.parse(doc)).length;
          return found;
        },
      };
    },
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
