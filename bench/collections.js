#!/usr/bin/env node
'use strict';
// Collections: indexed documents in one worker. Fills one worker with N
// documents (a few declared fields plus an undeclared payload), then measures
//
//   - find with an indexed where + orderBy + limit 50 against the same query
//     with scan: true (target: indexed ≥ 100× the scan at 100,000 documents);
//   - count(where) on an indexed field;
//   - bulk put of B documents in one transaction against one call per document
//     (in turn, and 64 calls at a time, whose commits the host batches);
//   - the first wake after a field is newly declared (the backfill of N
//     documents), against a first wake with nothing to backfill.
//
//   node bench/collections.js [--docs N] [--bulk B] [--seconds S]
//
// Prints a table; every figure and ratio comes from this one run. RSS is
// sampled after a GC when run with --expose-gc (bench/run.js adds it).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { parseArgs } = require('node:util');
const { open, DurableWorker } = require('..');
const { timed, settledRss, inBatches, median } = require('./measure');
const { renderTable, formatNumber, formatRatio, formatMicros } = require('./table');

/** Distinct kinds, equally common: `where: { kind }` selects 1% of the documents. */
const KINDS = 100;
const LIMIT = 50;
/** Puts per transaction while filling. */
const FILL_BATCH = 10_000;
const WIDTH = 64;
/** Puts made one call each, in turn, stop after this long (each is a commit and a sync). */
const SERIAL_MAX_SECONDS = 2.5;
const TARGET = 100;
const T0 = Date.UTC(2026, 0, 1);
const BODY = 'The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. ';

/** Document i: declared kind, at, n; undeclared user (declared later, for the backfill) and a ~100-byte body. */
function doc(i) {
  const tag = i.toString(36);
  return {
    kind: `k${i % KINDS}`,
    at: new Date(T0 + i * 1000),
    n: i,
    user: `u${i % 997}`,
    body: `${tag} ${BODY}`.slice(0, 100),
  };
}
const docId = (i) => `e${String(i).padStart(7, '0')}`;

const FIELDS = { kind: 'text', at: 'date', n: 'integer' };

class Events extends DurableWorker {
  static workerName = 'Events';
  static collections = { events: FIELDS };

  /** Puts documents [from, from + count) in one transaction (one commit). */
  async fill(from, count) {
    const c = this.state.collection('events');
    await this.state.transaction(() => {
      for (let i = from; i < from + count; i++) c.put(docId(i), doc(i));
    });
    return count;
  }

  /** One document; commits with the call's flush. */
  putOne(i) {
    this.state.collection('events').put(docId(i), doc(i));
  }

  /** Runs the same find `reps` times in this one call; returns the documents found in all. */
  async find(options, reps) {
    const c = this.state.collection('events');
    let found = 0;
    for (let r = 0; r < reps; r++) found += (await c.find(options)).length;
    return found;
  }

  /** The `n` of each document found: to check both paths agree. */
  async findNs(options) {
    return (await this.state.collection('events').find(options)).map((d) => d.n);
  }

  async count(where, reps = 1) {
    const c = this.state.collection('events');
    let last = 0;
    for (let r = 0; r < reps; r++) last = await c.count(where);
    return last;
  }
}

/** The same worker on disk, with `user` declared too: its first wake backfills the column. */
class EventsWithUser extends Events {
  // Own property: a subclass does not inherit the name on disk (host.js reads it with Object.hasOwn).
  static workerName = 'Events';
  static collections = { events: { ...FIELDS, user: 'text' } };
}

function dirBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(p);
    else if (entry.isFile()) total += fs.statSync(p).size;
  }
  return total;
}

/** Counters that changed while `fn` ran. */
async function counting(host, fn) {
  const before = host.stats();
  const start = performance.now();
  const result = await fn();
  const ms = performance.now() - start;
  const after = host.stats();
  const delta = {};
  for (const k of ['commits', 'syncs', 'queries', 'docsRead', 'calls']) delta[k] = (after[k] ?? 0) - (before[k] ?? 0);
  return { result, ms, delta };
}

/**
 * Runs every scenario and returns its figures.
 * @param {{ docs?: number, bulk?: number, seconds?: number }} [options]
 *   docs in the queried worker, documents per bulk-put scenario, measured seconds per find scenario
 */
async function measure({ docs = 100_000, bulk = 10_000, seconds = 1.5 } = {}) {
  if (!(Number.isInteger(docs) && docs >= KINDS)) throw new RangeError(`--docs must be an integer ≥ ${KINDS}, got ${docs}`);
  if (!(Number.isInteger(bulk) && bulk >= 1)) throw new RangeError(`--bulk must be an integer ≥ 1, got ${bulk}`);
  if (!(seconds > 0)) throw new RangeError(`--seconds must be a number > 0, got ${seconds}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-bench-collections-'));
  const out = { docs, bulk, seconds, kinds: KINDS, limit: LIMIT, gc: typeof globalThis.gc === 'function' };
  try {
    let host = await open({ dir });

    // ----- fill -----
    const events = host.get(Events, 'big');
    await events.count(); // open the worker before the RSS sample
    out.rssBefore = await settledRss();
    out.heapBefore = process.memoryUsage().heapUsed;
    const fill = await counting(host, async () => {
      for (let i = 0; i < docs; i += FILL_BATCH) await events.fill(i, Math.min(FILL_BATCH, docs - i));
    });
    out.fill = { ms: fill.ms, perSec: (docs / fill.ms) * 1000, commits: fill.delta.commits, batch: FILL_BATCH };
    out.rssAfter = await settledRss();
    out.heapAfter = process.memoryUsage().heapUsed;
    /** The process's RSS high-water mark after each phase (what a container limit would see). */
    const peak = () => process.resourceUsage().maxRSS * 1024;
    out.peak = { fill: peak() };
    out.fileBytes = dirBytes(dir);

    // ----- find: indexed against scan -----
    const kind = `k${KINDS >> 1 /* any one */}`;
    const query = { where: { kind }, orderBy: ['at', 'desc'], limit: LIMIT };
    const scanQuery = { ...query, scan: true };
    const a = await events.findNs(query);
    const b = await events.findNs(scanQuery);
    const matching = await events.count({ kind });
    if (a.length !== Math.min(LIMIT, matching) || a.join() !== b.join()) {
      throw new Error(`indexed and scan finds disagree: ${a.length} vs ${b.length} documents`);
    }
    out.matching = matching;

    // Indexed: many queries per call, so the call's own cost is spread thin.
    const reps = 20;
    const indexed = await counting(host, () => timed({ seconds, step: async () => (await events.find(query, reps)) / Math.min(LIMIT, matching) }));
    // Scan: one query per call; the scan reads every document, so rounds are few.
    const scan = await counting(host, () => timed({ seconds: seconds * 2, step: async () => (await events.find(scanQuery, 1)) / Math.min(LIMIT, matching) }));
    const perQuery = (c) => ({
      queries: c.result.ops,
      perSec: c.result.rate,
      min: c.result.min,
      max: c.result.max,
      usPerQuery: 1e6 / c.result.rate,
      // Over the warm-up too: what the core read per query.
      docsReadPerQuery: c.delta.docsRead / Math.max(1, c.delta.queries),
    });
    out.indexed = perQuery(indexed);
    out.scan = perQuery(scan);
    out.findRatio = out.indexed.perSec / out.scan.perSec;
    out.peak.scan = peak();

    // The same where without orderBy: id order is the kind index's own order,
    // so the read stops after 50 rows instead of sorting every match.
    const idQuery = { where: { kind }, limit: LIMIT };
    out.indexedById = perQuery(await counting(host, () => timed({ seconds: seconds / 3, step: async () => (await events.find(idQuery, reps)) / Math.min(LIMIT, matching) })));

    // count(where) on the same indexed field.
    const countReps = 20;
    const count = await timed({ seconds: seconds / 3, step: async () => (await events.count({ kind }, countReps), countReps) });
    out.count = { queries: count.ops, perSec: count.rate, min: count.min, max: count.max };

    // ----- bulk put: one transaction against one call each -----
    const txnRuns = [];
    let txnCommits = 0;
    for (let r = 0; r < 3; r++) {
      const w = host.get(Events, `bulk-txn-${r}`);
      await w.count(); // opened before the clock starts, like the others
      const c = await counting(host, () => w.fill(0, bulk));
      txnRuns.push(c.ms);
      txnCommits += c.delta.commits;
    }
    const txnMs = median(txnRuns);
    out.bulkTxn = { runs: txnRuns.length, ms: txnMs, perSec: (bulk / txnMs) * 1000, commitsPerRun: txnCommits / txnRuns.length };

    const serialW = host.get(Events, 'bulk-each');
    await serialW.count();
    const serial = await counting(host, async () => {
      const deadline = performance.now() + SERIAL_MAX_SECONDS * 1000;
      let i = 0;
      while (i < bulk && (i % 64 !== 0 || performance.now() < deadline)) await serialW.putOne(i++);
      return i;
    });
    const done = serial.result;
    out.bulkSerial = {
      docs: done,
      capped: done < bulk,
      ms: serial.ms,
      perSec: (done / serial.ms) * 1000,
      commitsPerDoc: serial.delta.commits / done,
      syncsPerDoc: serial.delta.syncs / done,
    };

    const burstW = host.get(Events, 'bulk-burst');
    await burstW.count();
    const burst = await counting(host, () => inBatches(bulk, WIDTH, (i) => burstW.putOne(i)));
    out.bulkBurst = { ms: burst.ms, perSec: (bulk / burst.ms) * 1000, commitsPerDoc: burst.delta.commits / bulk, syncsPerDoc: burst.delta.syncs / bulk };
    out.bulkRatio = out.bulkTxn.perSec / out.bulkSerial.perSec;
    out.bulkBurstRatio = out.bulkTxn.perSec / out.bulkBurst.perSec;
    await host.close();

    // ----- first wake: nothing to backfill, then a newly declared field -----
    host = await open({ dir });
    const plain = await counting(host, () => host.get(Events, 'big').count({ kind }));
    await host.close();
    host = await open({ dir });
    const wake = await counting(host, () => host.get(EventsWithUser, 'big').count({ user: 'u1' }));
    const users = wake.result;
    const expectUsers = Math.floor((docs - 1 - 1) / 997) + 1;
    if (users !== expectUsers) throw new Error(`after the backfill count({ user: 'u1' }) is ${users}, expected ${expectUsers}`);
    out.peak.backfill = peak();
    out.wake = { plainMs: plain.ms, backfillMs: wake.ms, perSec: (docs / wake.ms) * 1000 };
    await host.close();
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (b) => `${(b / 2 ** 20).toFixed(1)} MB`;
const ms = (x) => formatMicros(x * 1000);
const k = (n) => (n >= 1000 ? `${formatNumber(n / 1000)}k` : formatNumber(n));

/** The figures as the text printed (and pasted into docs/bench.md). */
function report(r) {
  const n = formatNumber(r.docs);
  const B = formatNumber(r.bulk);
  const got = Math.min(r.limit, r.matching);
  const verdict =
    r.findRatio >= TARGET
      ? `target ≥ ${TARGET}× at 100,000 documents: met${r.docs === 100_000 ? '' : ` (measured at ${n})`}`
      : `target ≥ ${TARGET}× at 100,000 documents: NOT met${r.docs === 100_000 ? '' : ` (measured at ${n})`}`;
  const where = `where kind (${formatNumber(r.matching)} of ${n} match), orderBy at desc, limit ${r.limit}`;
  const rows = [
    [`fill: ${n} puts, transactions of ${formatNumber(r.fill.batch)}`, `${n} docs`, ms(r.fill.ms), `${formatNumber(r.fill.perSec)} docs/s`, `${r.fill.commits} commits`],
    [
      `find, indexed: ${where}`,
      `${formatNumber(r.indexed.queries)} queries`,
      formatMicros(r.indexed.usPerQuery),
      `${formatNumber(r.indexed.perSec)} queries/s`,
      `${formatNumber(r.indexed.perSec * got)} docs returned/s; stats.docsRead ${formatNumber(r.indexed.docsReadPerQuery)}/query; rounds ${k(r.indexed.min)}–${k(r.indexed.max)}`,
    ],
    [
      `find, scan: true, same query`,
      `${formatNumber(r.scan.queries)} queries`,
      formatMicros(r.scan.usPerQuery),
      `${formatNumber(r.scan.perSec)} queries/s`,
      `${formatNumber(r.scan.perSec * got)} docs returned/s; ${formatNumber(r.scan.perSec * r.docs)} docs scanned/s; stats.docsRead ${formatNumber(r.scan.docsReadPerQuery)}/query; rounds ${formatNumber(r.scan.min)}–${formatNumber(r.scan.max)}`,
    ],
    ['find, indexed ÷ scan', '', '', formatRatio(r.findRatio), verdict],
    [
      `find, indexed: where kind, limit ${r.limit}, no orderBy (id order)`,
      `${formatNumber(r.indexedById.queries)} queries`,
      formatMicros(r.indexedById.usPerQuery),
      `${formatNumber(r.indexedById.perSec)} queries/s`,
      `${formatNumber(r.indexedById.perSec * got)} docs returned/s; ${formatRatio(r.indexedById.perSec / r.scan.perSec)} the scan; rounds ${k(r.indexedById.min)}–${k(r.indexedById.max)}`,
    ],
    [
      `count({ kind }), indexed`,
      `${formatNumber(r.count.queries)} queries`,
      formatMicros(1e6 / r.count.perSec),
      `${formatNumber(r.count.perSec)} queries/s`,
      `rounds ${k(r.count.min)}–${k(r.count.max)}`,
    ],
    [
      `bulk put: ${B} in one transaction (one call)`,
      `${r.bulkTxn.runs} × ${B} docs`,
      ms(r.bulkTxn.ms),
      `${formatNumber(r.bulkTxn.perSec)} docs/s`,
      `median of ${r.bulkTxn.runs} fresh workers; ${formatNumber(r.bulkTxn.commitsPerRun)} commits each`,
    ],
    [
      `bulk put: ${B} calls of one put, in turn`,
      `${formatNumber(r.bulkSerial.docs)} docs`,
      ms(r.bulkSerial.ms),
      `${formatNumber(r.bulkSerial.perSec)} docs/s`,
      `${r.bulkSerial.capped ? `stopped at ${SERIAL_MAX_SECONDS} s; ` : ''}commits/doc ${formatNumber(r.bulkSerial.commitsPerDoc)}; syncs/doc ${formatNumber(r.bulkSerial.syncsPerDoc)}`,
    ],
    [
      `bulk put: ${B} calls of one put, ${WIDTH} at a time`,
      `${B} docs`,
      ms(r.bulkBurst.ms),
      `${formatNumber(r.bulkBurst.perSec)} docs/s`,
      `commits/doc ${formatNumber(r.bulkBurst.commitsPerDoc)}; syncs/doc ${formatNumber(r.bulkBurst.syncsPerDoc)}`,
    ],
    ['bulk put, one transaction ÷ calls in turn', '', '', formatRatio(r.bulkRatio), `÷ ${WIDTH} at a time: ${formatRatio(r.bulkBurstRatio)}`],
    [`first wake, one field newly declared (backfill)`, `${n} docs`, ms(r.wake.backfillMs), `${formatNumber(r.wake.perSec)} docs/s`, `first wake with nothing to backfill: ${ms(r.wake.plainMs)}`],
  ];
  const rss = r.gc ? 'after GC' : 'no --expose-gc, so garbage included';
  return [
    `collections: one worker, ${n} documents (kind text, at date, n integer declared; user and a 100-byte body not), durability full`,
    renderTable(['scenario', 'count', 'time (per query)', 'rate', 'notes'], rows, ['left', 'right', 'right', 'right', 'left']),
    `collections: RSS ${mb(r.rssBefore)} before the fill → ${mb(r.rssAfter)} after (${rss}; ` +
      `${formatNumber((r.rssAfter - r.rssBefore) / r.docs)} B/doc; JS heap in use ${mb(r.heapBefore)} → ${mb(r.heapAfter)}); files ${mb(r.fileBytes)} (${formatNumber(r.fileBytes / r.docs)} B/doc)`,
    `collections: peak RSS ${mb(r.peak.fill)} after the fill, ${mb(r.peak.scan)} after the finds, ${mb(r.peak.backfill)} after the backfill`,
  ].join('\n');
}

module.exports = { measure, report };

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      docs: { type: 'string', default: '100000' },
      bulk: { type: 'string', default: '10000' },
      seconds: { type: 'string', default: '1.5' },
    },
  });
  (async () => {
    const r = await measure({ docs: Number(values.docs), bulk: Number(values.bulk), seconds: Number(values.seconds) });
    console.log(report(r));
  })().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
