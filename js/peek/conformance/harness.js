'use strict';
// What every check gets: the host over the adapter under test, the probes'
// manifests, a record of runs and api.log records, and a scratch directory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomBytes } = require('node:crypto');

const PROBES = path.join(__dirname, '..', 'probes');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

class Harness {
  /** @param {{ host: import('../../../peek').WorkerHost, adapter: import('../../../peek').PlatformAdapter }} parts */
  constructor({ host, adapter }) {
    this.host = host;
    this.adapter = adapter;
    this.declares = adapter.declares;
    /** @type {{ worker: string, trigger: object, result: object, at: number }[]} */
    this.runs = [];
    /** @type {{ level: string, worker: string, args: unknown[] }[]} */
    this.logs = [];
    this.nonce = randomBytes(6).toString('hex');
    this.scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-conformance-'));
    host.on('run', (e) => this.runs.push({ ...e, at: Date.now() }));
    host.on('log', (r) => this.logs.push(r));
  }

  /** The manifest path of a shipped probe. */
  probe(name) {
    return path.join(PROBES, `probe-${name}.json`);
  }

  /** Runs a probe directly through the host. */
  run(name, params = {}) {
    return this.host.run(this.probe(name), { kind: 'command', name: `probe-${name}`, params: { nonce: this.nonce, ...params } });
  }

  /** Waits until `pick()` returns something truthy, or `ms` passes (then returns the last value). */
  async until(pick, ms, every = 25) {
    const end = Date.now() + ms;
    for (;;) {
      const v = pick();
      if (v || Date.now() > end) return v;
      await sleep(every);
    }
  }

  /** Runs of probe `name` recorded since `since`. */
  runsOf(name, since = 0) {
    return this.runs.filter((r) => r.worker === `probe-${name}` && r.at >= since);
  }

  close() {
    fs.rmSync(this.scratch, { recursive: true, force: true });
  }
}

module.exports = { Harness, PROBES, sleep };
