'use strict';
// What the crash torture's child runs and its parent checks: one worker class,
// the names of the things it writes, and a seeded random number generator
// shared by both sides (the parent draws kill times and round settings, the
// child draws its workload).
//
// Every checked value lives in a *slot*: one state key, one document, or the
// transaction group (keys `t:a`, `t:b` and document `t`, always written
// together). A slot holds a step number or nothing. Steps only grow (round ×
// 1,000,000 + the round's op counter), so every write carries its own
// position in history, and one lane of the child owns each slot and writes
// it one call at a time: the parent knows the exact order of everything that
// may have reached the slot.
const { DurableWorker } = require('..');

/** Workers the child drives: w0 … w15. */
const WORKERS = 16;
/** Data lanes per worker, each owning KEYS keys and DOCS documents. */
const DATA_LANES = 2;
const KEYS = 3;
const DOCS = 2;
const STEP_BASE = 1_000_000;

const workerId = (i) => `w${i}`;
/**
 * One more worker, driven by a single lane that also calls deleteAll: every
 * write to it comes from that lane, so its whole state after a crash must be
 * the state after some prefix of the lane's calls (checked as one, not slot
 * by slot: a deleteAll or a transaction seen in part is a violation).
 */
const WIPER = 'wiper';
/** The wiper's keys and documents. */
const wipeName = (n) => `z${n}`;
const WIPE_NAMES = 3;
/** State key `n` of data lane `lane`. */
const dataKey = (lane, n) => `k${lane}-${n}`;
/** Document `n` of data lane `lane`. */
const docId = (lane, n) => `d${lane}-${n}`;
/** On the target of a relay: the key the caller `from` writes. */
const relayInKey = (from) => `x:${from}`;
/** On the caller of a relay: the key it writes once the target has answered. */
const relayOutKey = (to) => `r:${to}`;
/** What the alarm hook records. */
const firedKey = (name) => `fired:${name}`;
/** Written only by transactions that throw: must never be seen on disk. */
const POISON_KEY = 'p:';
const POISON_DOC = 'poison';

/** Slot names, as intents and the checker spell them. */
const slot = {
  key: (k) => `key:${k}`,
  doc: (d) => `doc:${d}`,
  txn: 'txn',
};

/**
 * sfc32 seeded from a string through a 32-bit FNV-1a hash per word: small,
 * fast, and the same sequence on every machine for the same seed.
 * @param {string} seed
 * @returns {{ next(): number, int(n: number): number, pick<T>(xs: T[]): T, chance(p: number): boolean }}
 */
function rng(seed) {
  const h = (salt) => {
    let x = 0x811c9dc5;
    for (const c of `${salt}:${seed}`) x = Math.imul(x ^ c.codePointAt(0), 0x01000193) >>> 0;
    return x;
  };
  let a = h('a');
  let b = h('b');
  let c = h('c');
  let d = h('d') | 1;
  const next = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

/** Thrown by a planned failure inside a transaction. */
class Planned extends Error {
  constructor(step) {
    super(`planned failure at step ${step}`);
    this.name = 'Planned';
    this.planned = true;
  }
}

class Tort extends DurableWorker {
  static workerName = 'Tort';
  static collections = { docs: { seq: 'integer', kind: 'text' } };

  // --- the workload's writes -----------------------------------------------

  async setKey(key, step) {
    this.state.set(key, step);
    return step;
  }

  async delKey(key) {
    return this.state.delete(key);
  }

  async getKey(key) {
    return this.state.get(key);
  }

  async putDoc(id, step) {
    this.state.collection('docs').put(id, { id, seq: step, kind: 'put' });
    return step;
  }

  async delDoc(id) {
    return this.state.collection('docs').delete(id);
  }

  /** Read, then write what depends on the read, with nothing of the worker in between. */
  async updateDoc(id, step) {
    const doc = await this.state.collection('docs').update(id, (old) => ({ id, seq: step, kind: 'update', prev: old?.seq ?? null }));
    return doc.seq;
  }

  /**
   * Keys `t:a`, `t:b` and document `t` in one transaction. With `syncMid`,
   * the body awaits a sync of the worker's other writes between them; with
   * `nested`, key `t:pre` is set first, outside the transaction, and an inner
   * transaction overwrites it and writes poison, syncs, and throws; the outer
   * one catches it and commits. `t:pre` must never hold the inner value (a
   * flush inside the inner transaction once wrote it to disk).
   */
  async txn(step, { syncMid = false, nested = false } = {}) {
    if (nested) this.state.set('t:pre', step);
    await this.state.transaction(async () => {
      this.state.set('t:a', step);
      if (syncMid) await this.state.sync();
      this.state.collection('docs').put('t', { id: 't', seq: step, kind: 'txn' });
      if (nested) {
        try {
          await this.state.transaction(async () => {
            this.#poison(step);
            this.state.set('t:pre', -step);
            await this.state.sync();
            throw new Planned(step);
          });
        } catch (err) {
          if (!err.planned) throw err;
        }
      }
      this.state.set('t:b', step);
    });
    return step;
  }

  /** A transaction that writes the group and poison, then throws: none of it may ever reach the disk. */
  async txnThrow(step, { syncMid = false } = {}) {
    await this.state.transaction(async () => {
      this.state.set('t:a', -step);
      this.#poison(step);
      if (syncMid) await this.state.sync();
      this.state.collection('docs').put('t', { id: 't', seq: -step, kind: 'poison' });
      this.state.set('t:b', -step);
      throw new Planned(step);
    });
  }

  #poison(step) {
    this.state.set(`${POISON_KEY}${step}`, step);
    this.state.collection('docs').put(`${POISON_DOC}-${step}`, { id: `${POISON_DOC}-${step}`, seq: -step, kind: 'poison' });
  }

  /** Writes into another worker (through this.ctx), then records here that it did. */
  async relay(toId, step) {
    await this.ctx.get(Tort, toId).setKey(relayInKey(this.id), step);
    this.state.set(relayOutKey(toId), step);
    return step;
  }

  /** The wiper's transaction: two keys and a document. */
  async zTxn(step) {
    await this.state.transaction(async () => {
      this.state.set(wipeName(0), step);
      this.state.collection('docs').put(wipeName(0), { id: wipeName(0), seq: step, kind: 'txn' });
      this.state.set(wipeName(1), step);
    });
    return step;
  }

  async wipe() {
    await this.state.deleteAll();
    return true;
  }

  async arm(name, at) {
    await this.state.setAlarm(at, { name });
    return at;
  }

  async alarm({ name, scheduledTime }) {
    this.state.set(firedKey(name), scheduledTime);
  }

  // --- what the checker reads ------------------------------------------------

  /** Every key and every document (this opens the worker's file). */
  async dump() {
    return { entries: this.state.entries(), docs: await this.state.collection('docs').find() };
  }

  /** Names of the alarms whose hook has recorded a run. */
  async fired() {
    return this.state
      .keys()
      .filter((k) => k.startsWith('fired:'))
      .map((k) => k.slice('fired:'.length));
  }

  /** [name, scheduledTime] of each alarm whose hook has recorded a run (the latest run of each name). */
  async firedAt() {
    return this.state
      .entries()
      .filter(([k]) => k.startsWith('fired:'))
      .map(([k, v]) => [k.slice('fired:'.length), v]);
  }

  /** Forgets the record of these runs, so a directory carried across rounds does not grow. */
  async forgetFired(names) {
    for (const n of names) this.state.delete(firedKey(n));
  }
}

module.exports = {
  Tort,
  WORKERS,
  DATA_LANES,
  KEYS,
  DOCS,
  STEP_BASE,
  POISON_KEY,
  POISON_DOC,
  workerId,
  WIPER,
  wipeName,
  WIPE_NAMES,
  dataKey,
  docId,
  relayInKey,
  relayOutKey,
  firedKey,
  slot,
  rng,
};
