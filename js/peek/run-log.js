'use strict';
// One run's side of the kept logs (./log-keeper.js): its number, and its
// api.log records batched on their way to the keeper, so a chatty run costs
// a commit per batch, not per line. A keeper that fails or stalls never fails
// or holds the run: what cannot be kept is counted and dropped, and the run
// is reported after at most END_WAIT_MS of waiting for it.
const { inspect } = require('node:util');
const { MAX_TEXT } = require('./log-keeper');

/** A batch is sent at this size, or this long after its first record. */
const BATCH = 64;
const BATCH_MS = 100;
/** Records not yet kept (waiting, or sent and not acknowledged) at most; past it they are dropped. */
const MAX_UNKEPT = 1000;
/** How long the end of a run waits for its records to be kept. */
const END_WAIT_MS = 5000;

class RunLog {
  #keeper;
  #onError;
  #run = null;
  #waiting = [];
  #unkept = 0;
  #dropped = 0;
  #timer = null;
  #chain = Promise.resolve();
  #endWaitMs;

  /**
   * @param {{ begin: (what: string) => Promise<number>, append: (run: number, records: object[]) => Promise<void> }} keeper
   * @param {(err: Error) => void} onError
   * @param {{ endWaitMs?: number }} [options]
   */
  constructor(keeper, onError, { endWaitMs = END_WAIT_MS } = {}) {
    this.#keeper = keeper;
    this.#onError = onError;
    this.#endWaitMs = endWaitMs;
  }

  /** Numbers the run; `what` says what started it. */
  start(what) {
    this.#run = Promise.resolve()
      .then(() => this.#keeper.begin(what))
      .catch((err) => {
        this.#onError(err);
        return null;
      });
  }

  /** One api.log record, formatted here (in the host) as the CLI prints it, and cut as the keeper would. */
  add(level, args) {
    if (this.#unkept >= MAX_UNKEPT) {
      this.#dropped++;
      return;
    }
    let text = args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 4, breakLength: Infinity, maxStringLength: MAX_TEXT }))).join(' ');
    if (text.length > MAX_TEXT) text = `${text.slice(0, MAX_TEXT)}…`;
    this.#unkept++;
    this.#waiting.push({ level, at: Date.now(), text });
    if (this.#waiting.length >= BATCH) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), BATCH_MS);
  }

  /**
   * The run is over: its last records and how it ended are written, waiting
   * at most endWaitMs. Resolves to the run's number, or null.
   */
  async end(result) {
    const how = result.ok ? `ok in ${result.ms} ms` : `failed in ${result.ms} ms: ${result.error?.code ?? result.error?.name ?? 'Error'}: ${result.error?.message ?? result.error}`;
    if (this.#dropped > 0) this.#waiting.push({ level: 'warn', at: Date.now(), text: `${this.#dropped} records dropped: the run logged faster than they could be kept` });
    this.#waiting.push({ level: 'run', at: Date.now(), text: `run ended: ${how}` });
    this.#flush();
    let timer;
    const deadline = new Promise((resolve) => {
      timer = setTimeout(() => resolve('late'), this.#endWaitMs);
    });
    const kept = await Promise.race([this.#chain.then(() => 'kept'), deadline]);
    // A keeper that never numbered the run (stalled, or failed) leaves it unnumbered.
    const run = await Promise.race([this.#run ?? null, deadline.then(() => null)]);
    clearTimeout(timer);
    if (kept === 'late') this.#onError(new Error(`the run's records were not kept within ${this.#endWaitMs} ms (they may still be)`));
    return run;
  }

  #flush() {
    clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#waiting.splice(0);
    if (batch.length === 0) return;
    this.#chain = this.#chain.then(async () => {
      try {
        const run = await this.#run;
        if (run !== null) await this.#keeper.append(run, batch);
      } catch (err) {
        this.#onError(err);
      } finally {
        this.#unkept -= batch.length;
      }
    });
  }
}

module.exports = { RunLog, MAX_UNKEPT };
