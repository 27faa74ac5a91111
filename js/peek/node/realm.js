'use strict';
// One run's process, seen from the supervisor: the realm protocol
// (../protocol/host-side.js, shared with the workerd adapter) in frames over
// the process's fd 3 pipe to child.js (./process.js, ../protocol/frames.js). The api calls the child sends are answered against the api object
// the host built, which stays in this process with the store and the
// credential it closes over. This file adds what is Node's own: the process,
// its stdout/stderr as log records (lines and bytes within the output
// budget: past it the run is ended, ERR_PEEK_PROTOCOL), the heap ceiling's
// crash report, and close() by SIGKILL.
const { RealmClient } = require('../protocol/host-side');
const { codes, peekError } = require('../errors');
const { now, killGroup } = require('./process');
const { lineReader } = require('../protocol/frames');
const { readBundle, WORKER_ROOT } = require('./bundle');
const { pathToFileURL } = require('node:url');

class NodeRealm extends RealmClient {
  #p;
  #log;
  #memoryMb;
  #stderrTail = [];
  #sawOom = false;
  #killedByUs = false;
  #output = { bytes: 0 };
  /** Sandboxed: the host directory the worker's files were shipped from. */
  #bundleRoot = null;
  /** Sandboxed: host paths never shipped (the state directory, the credentials file). */
  #exclude;

  /**
   * @param {ReturnType<import('./process').forkRunProcess>} p the process, from the spare pool
   * @param {import('../../../peek').Manifest} manifest
   * @param {{ signal: AbortSignal, log: (record: object) => void, memoryMb: number, exclude?: string[] }} options
   */
  constructor(p, manifest, { signal, log, memoryMb, exclude = [] }) {
    // A sandboxed process has no network: its fetches come here (../protocol/host-side.js).
    super(manifest, { log, relayFetch: p.sandboxed });
    this.#p = p;
    this.#log = log;
    this.#memoryMb = memoryMb;
    this.#exclude = exclude;
    this.timing.forkAt = p.forkAt;
    const { proc } = p;
    p.frames.attach({ onMessage: (m) => this._receive(m), onViolation: (reason) => this._violation(reason) });
    this.#pipe(proc.stdout, 'info');
    this.#pipe(proc.stderr, 'warn');
    p.exited.then((exit) => this.#onExit(exit));
    this._forwardAbort(signal);
  }

  /** Waits for the process to have booted. */
  async ready() {
    const r = await this.#p.ready;
    this.timing.childOrigin = r.origin;
    this.timing.readyAt = r.at;
  }

  /** The pid of the run's process. */
  get pid() {
    return this.#p.proc.pid;
  }

  _send(m) {
    this.#p.frames.send(m);
  }

  /** A violation: the process is SIGKILLed now, nothing more of it is read. */
  _terminate(reason) {
    this.#killedByUs = true;
    this.timing.killAt ??= now();
    this.#p.frames.violate(reason);
  }

  _job(manifest) {
    // A sandboxed process cannot open the worker's files: they travel with the job.
    if (!this.#p.sandboxed) return { href: manifest.worker.href };
    const bundle = readBundle(manifest.worker.path, manifest.name, { exclude: this.#exclude });
    this.#bundleRoot = bundle.root;
    return { bundle: { entry: bundle.entry, files: bundle.files } };
  }

  /**
   * Sandboxed, the worker ran from a copy under WORKER_ROOT: the errors it
   * reports name the files where they really are. On the checked copy only
   * (../protocol/frames.js bounds every string of it first).
   */
  _translate(m) {
    const root = this.#bundleRoot;
    if (root === null || m === null || typeof m !== 'object') return m;
    const fix = (e) => {
      if (e === null || typeof e !== 'object') return e;
      const out = { ...e };
      for (const key of ['message', 'stack']) {
        if (typeof out[key] === 'string') out[key] = out[key].replaceAll(`file://${WORKER_ROOT}/`, `${pathToFileURL(root).href}/`).replaceAll(`${WORKER_ROOT}/`, `${root}/`);
      }
      return out;
    };
    if (m.t === 'loaded' || m.t === 'result') return m.error === undefined ? m : { ...m, error: fix(m.error) };
    if (m.t === 'settled' && Array.isArray(m.errors)) return { ...m, errors: m.errors.map(fix) };
    return m;
  }

  /**
   * Ends the run's process: waits `graceMs` (so an aborted signal can reach
   * it), then SIGKILL to its process group, which also stops a synchronous
   * loop and what the run started. Resolves on exit (within
   * process.js's STDIO_GRACE_MS of it, whatever holds the pipes).
   */
  async close({ graceMs = 0 } = {}) {
    if (this.status === 'closed') return;
    const { proc } = this.#p;
    if (graceMs > 0) {
      // The worker may still act on the abort meanwhile (log, give up a fetch).
      await Promise.race([this.#p.exited, new Promise((r) => setTimeout(r, graceMs))]);
    }
    this._markDone();
    this.timing.killAt = now();
    this.#killedByUs = true;
    killGroup(proc); // and whatever it started, in its process group
    const exit = await this.#p.exited;
    this.timing.exitAt = exit.at;
    this._markClosed();
  }

  #pipe(stream, level) {
    if (!stream) return;
    const lines = lineReader({
      name: level === 'warn' ? 'stderr' : 'stdout',
      total: this.#output,
      onViolation: (reason) => this._violation(reason),
      onLine: (line) => {
        if (level === 'warn') {
          if (/Reached heap limit|JavaScript heap out of memory/.test(line)) this.#sawOom = true;
          this.#stderrTail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
          if (this.#stderrTail.length > 5) this.#stderrTail.shift();
        }
        this.#log({ level, worker: this.manifest.name, args: [line] });
      },
    });
    stream.on('data', (chunk) => lines.push(chunk));
    stream.on('end', () => lines.end());
    stream.on('error', () => {});
  }

  #onExit({ code, signal }) {
    this._ended(() => {
      const why = this.#killedByUs
        ? 'it was stopped'
        : this.#sawOom
          ? `it ran out of memory (the ceiling is ${this.#memoryMb} MB)`
          : `it exited (code ${code}, signal ${signal})${this.#stderrTail.length ? `: ${this.#stderrTail.join(' | ')}` : ''}`;
      return peekError(codes.CRASHED, `worker ${this.manifest.name}: the run's process ended before the run finished; ${why}`);
    });
  }
}

module.exports = { NodeRealm };
