'use strict';
// Worker classes for files/powercut.test.js and its child program
// (powercut-child.js), shared so the parent reopening a directory after a
// power cut sees the class names the child wrote.
const { DurableWorker } = require('../..');

/** A counter: each inc() is one write, and its result says which. */
class Counter extends DurableWorker {
  async inc() {
    const n = (this.state.get('n') ?? 0) + 1;
    this.state.set('n', n);
    return n;
  }

  async value() {
    return this.state.get('n') ?? 0;
  }
}

/** A plain key/value worker, deleted whole by host.delete or wipe(). */
class Cell extends DurableWorker {
  async put(key, value) {
    this.state.set(key, value);
  }

  async read(key) {
    return this.state.get(key);
  }

  async keys() {
    return [...this.state.keys()];
  }

  async wipe() {
    await this.state.deleteAll();
  }
}

/** How many documents transaction `seq` puts (1 to 7: some span several pages). */
const docsOf = (seq) => (seq % 7) + 1;
/** Documents of about 1.5 KB, so a transaction spans pages a cut can tear. */
const PAD = 'x'.repeat(1500);

/** Documents and keys written together by one transaction. */
class Books extends DurableWorker {
  static collections = { entries: { seq: 'integer' } };

  /** Transaction `seq`: docsOf(seq) documents, `last` and `docs`, all or nothing. */
  async post(seq) {
    return this.state.transaction(async () => {
      const entries = this.state.collection('entries');
      const n = docsOf(seq);
      for (let k = 0; k < n; k++) entries.put(`s${seq}-${k}`, this.docOf(seq, k));
      this.state.set('last', seq);
      this.state.set('docs', (this.state.get('docs') ?? 0) + n);
      return seq;
    });
  }

  /** Document `k` of transaction `seq`. */
  docOf(seq, k) {
    return { seq, k, pad: PAD };
  }

  async last() {
    return this.state.get('last') ?? 0;
  }

  async read() {
    const entries = this.state.collection('entries');
    const docs = await entries.find();
    const seqs = new Map();
    for (const d of docs) seqs.set(d.seq, (seqs.get(d.seq) ?? 0) + 1);
    return {
      last: this.state.get('last') ?? 0,
      docs: this.state.get('docs') ?? 0,
      count: await entries.count(),
      seqs: [...seqs.entries()].sort((a, b) => a[0] - b[0]),
    };
  }
}

/** Named alarms, set far in the future (they never fire during a test). */
class Clock extends DurableWorker {
  async arm(name, at) {
    await this.state.setAlarm(at, { name });
  }

  async when(name) {
    return this.state.getAlarm(name);
  }

  async disarm(name) {
    await this.state.deleteAlarm(name);
  }

  async alarm() {}
}

/** Alarms due soon; each firing is recorded, with its time, in the worker's state. */
class Alarmed extends DurableWorker {
  async arm(name, at) {
    await this.state.setAlarm(at, { name });
  }

  /** For each name: [when it last fired (ms) or null, when it is set for or null]. */
  async seen(names) {
    return names.map((n) => [this.state.get(`f:${n}`) ?? null, this.state.getAlarm(n)]);
  }

  async alarm({ name }) {
    this.state.set(`f:${name}`, Date.now());
  }
}

/** Numbered fields every ledger document carries; a round declares one of them. */
const LEDGER_FIELDS = 4;
const ledgerField = (round) => `g${round % LEDGER_FIELDS}`;

/**
 * A Books-like worker whose collection declares `field` besides `seq`: a
 * declaration that changes from round to round, so each first wake backfills
 * (and the previous round's field is left inactive).
 */
function ledgerClass(field) {
  return class Ledger extends Books {
    static collections = { entries: { seq: 'integer', [field]: 'integer' } };

    docOf(seq, k) {
      const fields = Object.fromEntries(Array.from({ length: LEDGER_FIELDS }, (_, f) => [`g${f}`, seq * 10 + f]));
      return { ...super.docOf(seq, k), ...fields };
    }

    /** The stored documents, and how many the declared field's index finds. */
    async read() {
      const entries = this.state.collection('entries');
      return {
        last: this.state.get('last') ?? 0,
        docs: this.state.get('docs') ?? 0,
        count: await entries.count(),
        indexed: await entries.count({ [field]: { $gte: 0 } }),
      };
    }
  };
}

module.exports = { Counter, Cell, Books, Clock, Alarmed, ledgerClass, ledgerField, docsOf };
