'use strict';
// Peek's kept logs: one durable worker per Peek worker (class PeekLog, id =
// the worker's name) holding the api.log records of its runs, numbered run by
// run, as a collection indexed by sequence and run. It is not the schedule's
// PeekWorker: that one's mailbox is held for the whole of a run, and a run's
// records are written while it runs. The same class serves both adapters
// (on workerd, as a Durable Object of the gateway).
//
// Bounded: the newest MAX_RECORDS records of a worker are kept, older ones
// pruned in batches; each record's text is cut at MAX_TEXT characters.
const { DurableWorker } = require('../index');

const MAX_RECORDS = 2000;
/** Pruned at once when the bound is passed: a batch, so not every append deletes. */
const PRUNE_BATCH = 200;
const MAX_TEXT = 2048;
/** Records one read returns at most. */
const MAX_READ = 5000;
const LEVELS = new Set(['info', 'warn', 'error', 'run']);

const key = (seq) => String(seq).padStart(15, '0');

class PeekLog extends DurableWorker {
  static workerName = 'peek-log';
  static collections = { records: { seq: 'integer', run: 'integer' } };

  /** A new run: its number, and a first record saying what started it. */
  begin(what) {
    const run = (this.state.get('runs') ?? 0) + 1;
    this.state.set('runs', run);
    this.#add(run, [{ level: 'run', at: Date.now(), text: `run ${run} started: ${String(what).slice(0, 200)}` }]);
    return run;
  }

  /** Records of run `run`: `{ level, at, text }` each. */
  async append(run, records) {
    if (!Number.isSafeInteger(run) || run < 1 || !Array.isArray(records)) throw new TypeError('append(run, records): a run number and an array of records');
    this.#add(run, records);
    await this.#prune();
  }

  /** Reads records after sequence `after` (0: from the oldest kept), of one run if `run` is given, oldest first. */
  async read({ run, after = 0, limit = 1000 } = {}) {
    const where = { seq: { $gt: Number(after) || 0 } };
    if (run !== undefined) where.run = Number(run);
    const records = await this.state.collection('records').find({ where, orderBy: 'seq', limit: Math.min(Math.max(1, Number(limit) || 1), MAX_READ) });
    return { runs: this.state.get('runs') ?? 0, records };
  }

  #add(run, records) {
    const c = this.state.collection('records');
    let seq = this.state.get('seq') ?? 0;
    for (const r of records) {
      seq++;
      const level = LEVELS.has(r?.level) ? r.level : 'info';
      const text = String(r?.text ?? '');
      c.put(key(seq), { seq, run, at: Number(r?.at) || Date.now(), level, text: text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text });
    }
    this.state.set('seq', seq);
    this.state.set('kept', (this.state.get('kept') ?? 0) + records.length);
  }

  async #prune() {
    const kept = this.state.get('kept') ?? 0;
    if (kept <= MAX_RECORDS + PRUNE_BATCH) return;
    const c = this.state.collection('records');
    const old = await c.find({ orderBy: 'seq', limit: kept - MAX_RECORDS });
    for (const r of old) c.delete(key(r.seq));
    this.state.set('kept', kept - old.length);
  }
}

/**
 * Reads a worker's kept logs from a durable host (Node) without creating a
 * file for a worker that never ran: { runs: 0, records: [] } then.
 * @param {import('../api/host').Host} host
 */
async function readKept(host, name, query) {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('readLogs(name): the Peek worker’s name');
  for await (const id of host.ids(PeekLog, { prefix: name })) {
    if (id === name) return host.get(PeekLog, name).read(query);
  }
  return { runs: 0, records: [] };
}

module.exports = { PeekLog, readKept, MAX_RECORDS, MAX_TEXT };
