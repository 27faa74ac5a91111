'use strict';
// The output gate: the package's central promise.
//
// What an observer sees: nothing a worker did reaches anyone before the
// writes it made up to then are on disk. A call's result, a call the worker
// makes to another worker, a message it sends on a socket, and `sync()` each
// wait for `flush()`, whose promise settles only when the commit carrying every
// write made before it has landed (and been synced, under full durability). If
// that commit fails, the promise rejects, and so does every later one: the
// worker is failed and nothing it wrote after is ever acknowledged.
//
// Who waits here: runtime/live.js (results, and a worker's writes made outside
// any call), api/host.js and shards/context.js (outgoing calls),
// sockets/websockets.js and shards/context.js (sends), state/resident-state.js
// (sync, transactions, alarms).
//
// Mechanism: at most one commit is in flight per worker. Writes made while it
// is in flight wait for the next one, which starts when it lands, so a burst
// of calls shares its commits; promises settle in the order their commits
// started, so results leave in commit order. A commit made and synced on the
// JS thread before the storage returns (a serial caller's, see
// runtime/commits.js) has landed by then: there is nothing to wait for.

/** A promise with its settle functions; rejections are handled by whoever awaits it. */
function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** What a gate asks of its owner (the state), by these symbols: one owner reference per gate, no closures. */
const OWNER = Object.freeze({
  /** `() => object | null`: the writes made so far, as one batch (null: none left to write). */
  take: Symbol('gate.take'),
  /**
   * `(batch, hasFile) => Promise<unknown> | unknown`: writes a batch (creating the file when there is
   * none); anything but a promise means it has landed already (written and synced before returning).
   */
  commit: Symbol('gate.commit'),
  /** `(batch) => void`: a batch is on disk. */
  landed: Symbol('gate.landed'),
  /** `() => boolean`: whether anything is waiting to be taken. */
  dirty: Symbol('gate.dirty'),
});

class OutputGate {
  #owner;
  #inflight = null;
  #next = null;
  #tail = null;
  #failed = null;
  /** The reset that abandoned this gate's instance (see abandon()), or null. */
  #abandoned = null;
  /** False until the worker's first commit creates its file. */
  #hasFile = false;

  /** @param {object} owner implements the OWNER symbols */
  constructor(owner) {
    this.#owner = owner;
  }

  /** Whether the worker's file exists (its first commit has landed, or it was loaded). */
  get hasFile() {
    return this.#hasFile;
  }

  /** The worker's file was found when it was loaded. */
  loaded(exists) {
    this.#hasFile = exists;
  }

  /**
   * Starts (or joins) the commit that carries every write so far and returns
   * its promise; null when there is nothing to wait for: nothing dirty or in
   * flight, or the commit landed before returning (a serial caller's, made
   * on this thread). Promises resolve in the order their commits were started.
   * @returns {Promise<void> | null}
   */
  flush() {
    if (this.#failed) return Promise.reject(this.#failed);
    if (this.#abandoned) return Promise.reject(this.#abandoned);
    if (!this.#owner[OWNER.dirty]()) return this.#tail;
    if (this.#inflight === null) return this.#start(null) ?? this.#tail;
    if (this.#next === null) {
      this.#next = deferred();
      this.#tail = this.#next.promise;
    }
    return this.#next.promise;
  }

  /**
   * The worker is being reset: nothing more is taken from its state. A commit
   * in flight completes (returned, null if none); the commit a finished call
   * was waiting for has not started, so it never will, and that call's
   * result is refused with `err` rather than released without its writes.
   * @param {Error} err
   * @returns {Promise<void> | null}
   */
  abandon(err) {
    this.#abandoned = err;
    if (this.#next !== null) this.#next.reject(err);
    this.#next = null;
    this.#tail = this.#inflight?.promise ?? null;
    return this.#tail;
  }

  /** The reset that abandoned this gate, or null. */
  get abandoned() {
    return this.#abandoned;
  }

  /** `d`'s waiters (if any) have nothing left to wait for; null, as #start answers then. */
  #settled(d) {
    if (d !== null) {
      if (this.#tail === d.promise) this.#tail = null;
      d.resolve();
    }
    return null;
  }

  /**
   * Hands what is dirty to a commit settled through `d` (made here if null).
   * Returns its promise, or null when there was nothing left to write.
   */
  #start(d) {
    const batch = this.#owner[OWNER.take]();
    if (batch === null) return this.#settled(d);
    const commit = this.#owner[OWNER.commit](batch, this.#hasFile);
    if (!(commit instanceof Promise)) {
      // Landed before returning: nothing to wait for, and no commit in flight.
      this.#hasFile = true;
      this.#owner[OWNER.landed](batch);
      return this.#settled(d);
    }
    d ??= deferred();
    this.#inflight = d;
    this.#tail = d.promise;
    commit.then(
      () => {
        this.#hasFile = true;
        this.#inflight = null;
        this.#owner[OWNER.landed](batch);
        const next = this.#abandoned === null ? this.#next : null;
        this.#next = null;
        if (next === null && this.#tail === d.promise) this.#tail = null;
        // This commit's waiters are answered before the next commit starts,
        // so results leave in commit order even when the next batch turns out
        // to be empty and resolves at once.
        d.resolve();
        if (next !== null) this.#start(next);
      },
      (err) => {
        this.#inflight = null;
        this.#failed = err;
        d.reject(err);
        if (this.#next !== null) this.#next.reject(err);
        this.#next = null;
      },
    );
    return d.promise;
  }
}

module.exports = { OutputGate, OWNER };
