'use strict';
// One run's side of the kept logs (./log-keeper.js): its number, and its
// api.log records batched on their way to the keeper, so a chatty run costs
// a commit per batch, not per line. A keeper that fails never fails the run:
// the records are lost and the failure is logged.
const { inspect } = require('node:util');

/** A batch is sent at this size, or this long after its first record. */
const BATCH = 64;
const BATCH_MS = 100;
/** Records waiting at most; past it they are counted and dropped. */
const MAX_WAITING = 1000;

class RunLog {
  #keeper;
  #onError;
  #run = null;
  #waiting = [];
  #dropped = 0;
  #timer = null;
  #chain = Promise.resolve();

  /**
   * @param {{ begin: (what: string) => Promise<number>, append: (run: number, records: object[]) => Promise<void> }} keeper
   * @param {(err: Error) => void} onError
   */
  constructor(keeper, onError) {
    this.#keeper = keeper;
    this.#onError = onError;
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

  /** One api.log record, formatted here (in the host) as the CLI prints it. */
  add(level, args) {
    if (this.#waiting.length >= MAX_WAITING) {
      this.#dropped++;
      return;
    }
    const text = args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 4, breakLength: Infinity }))).join(' ');
    this.#waiting.push({ level, at: Date.now(), text });
    if (this.#waiting.length >= BATCH) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), BATCH_MS);
  }

  /** The run is over: its last records and how it ended are written. Resolves to the run's number, or null. */
  async end(result) {
    const how = result.ok ? `ok in ${result.ms} ms` : `failed in ${result.ms} ms: ${result.error?.code ?? result.error?.name ?? 'Error'}: ${result.error?.message ?? result.error}`;
    if (this.#dropped > 0) this.#waiting.push({ level: 'warn', at: Date.now(), text: `${this.#dropped} records dropped: the run logged faster than they could be kept` });
    this.#waiting.push({ level: 'run', at: Date.now(), text: `run ended: ${how}` });
    this.#flush();
    await this.#chain;
    return this.#run === null ? null : this.#run;
  }

  #flush() {
    clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#waiting.splice(0);
    if (batch.length === 0) return;
    this.#chain = this.#chain.then(async () => {
      const run = await this.#run;
      if (run === null) return;
      try {
        await this.#keeper.append(run, batch);
      } catch (err) {
        this.#onError(err);
      }
    });
  }
}

module.exports = { RunLog };
