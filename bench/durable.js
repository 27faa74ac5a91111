'use strict';
// durable-workers through its public API only (API.md §1): the package root,
// `open`, `DurableWorker`, `host.get`, `host.stats`, `host.close`.

const { defineScenarios, DOCS, docOf, docId } = require('./scenarios');

/**
 * Loads the package and defines the benchmark's worker class. Deferred until
 * a scenario runs so that a package that fails to load is reported as that
 * scenario's error instead of crashing the harness.
 * @returns {{ open: Function, Counter: Function }}
 */
function load() {
  const { open, DurableWorker } = require('..');
  if (typeof open !== 'function' || typeof DurableWorker !== 'function') {
    throw new TypeError(`require('durable-workers') exports open: ${typeof open}, DurableWorker: ${typeof DurableWorker}`);
  }
  class Counter extends DurableWorker {
    async incr() {
      const n = (this.state.get('n') ?? 0) + 1;
      this.state.set('n', n);
      return n;
    }

    async read() {
      return this.state.get('n') ?? 0;
    }
  }
  class Docs extends DurableWorker {
    static collections = { docs: { kind: 'text' } };

    async fillDocs(count) {
      const docs = this.state.collection('docs');
      await this.state.transaction(() => {
        for (let i = 0; i < count; i++) docs.put(docId(i), docOf(i));
      });
      return count;
    }

    async getDocs(from, count) {
      const docs = this.state.collection('docs');
      let found = 0;
      for (let i = from; i < from + count; i++) if ((await docs.get(docId(i)))?.n >= 0) found++;
      return found;
    }

    async findDocs(from, count) {
      const docs = this.state.collection('docs');
      let found = 0;
      for (let i = from; i < from + count; i++) found += (await docs.find({ where: { kind: `k${i % DOCS.kinds}` }, limit: DOCS.findLimit })).length;
      return found;
    }
  }
  return { open, Counter, Docs };
}

/**
 * Opens a durable-workers host as a benchmark system.
 * @param {import('./scenarios').OpenOptions} opts `maxLive` left unset keeps the package default
 * @returns {Promise<import('./scenarios').System>}
 */
async function openDurable({ dir, maxLive }) {
  const { open, Counter, Docs } = load();
  const host = await open(maxLive === undefined ? { dir } : { dir, maxLive });
  return {
    worker: (id) => {
      const stub = host.get(Counter, id);
      const docs = host.get(Docs, id);
      return {
        incr: () => stub.incr(),
        read: () => stub.read(),
        fillDocs: (count) => docs.fillDocs(count),
        getDocs: (from, count) => docs.getDocs(from, count),
        findDocs: (from, count) => docs.findDocs(from, count),
      };
    },
    counters: () => numericFields(host.stats()),
    close: () => host.close(),
  };
}

/** The numeric counters of a stats object (others are ignored). */
function numericFields(stats) {
  const out = {};
  for (const [key, value] of Object.entries(stats ?? {})) if (typeof value === 'number') out[key] = value;
  return out;
}

/** Scenarios for the child runner (bench/child.js). */
const scenarios = defineScenarios(openDurable);

module.exports = { openDurable, scenarios };
