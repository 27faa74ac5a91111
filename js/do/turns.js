'use strict';
// The implicit transaction of a turn, and the output gate it locks.
//
// Guarantee, as on Cloudflare: writes made with no I/O awaited between them
// (microtasks do not count) commit together or not at all; nothing the
// object sends out (a response, an RPC result, a socket message) leaves
// before the writes made before it are durable; a commit that fails breaks
// the object, and what waited on the gate is rejected, never released.
//
// How: the first write of a turn opens a transaction on the object's
// connection (the storage core, synchronously) and schedules its end for
// `setImmediate`, which runs after the current callback and its microtasks,
// before the next timer or I/O callback: workerd's `kj::yield()`. The end
// writes the commit to the log on the JS thread; its sync runs there too when
// it is alone on an idle loop, else on a commit thread (runtime/commits.js
// decides); the output gate holds every output until that sync reports.
// An explicit transaction (`transaction()`) holds the turn's end until its
// root savepoint is released.

/** Outputs wait here for the commits made before them. */
class OutputGate {
  #locks = new Set();
  #broken = null;
  #onBreak;

  /** @param {(err: Error) => void} onBreak called once, when the gate breaks */
  constructor(onBreak) {
    this.#onBreak = onBreak;
  }

  /** Whether an output waits for a lock (a commit not yet durable). */
  get busy() {
    return this.#locks.size > 0;
  }

  /**
   * Outputs made from now on wait for `p`; if it rejects, the gate breaks.
   * @param {Promise<unknown>} p
   */
  lockWhile(p) {
    const lock = p.then(
      () => {},
      (err) => this.break(err),
    );
    this.#locks.add(lock);
    lock.finally(() => this.#locks.delete(lock));
  }

  /** Resolves when every lock taken so far is released; rejects once the gate is broken. */
  async wait() {
    if (this.#broken === null && this.#locks.size > 0) await Promise.all([...this.#locks]);
    if (this.#broken !== null) throw this.#broken;
  }

  /**
   * Settles once every commit in flight has ended, durable or failed, even
   * on a broken gate: an object's file is closed only after its last sync
   * (a new instance's commits must not be archived, or copied, before an
   * older one's).
   */
  drained() {
    return Promise.all([...this.#locks]);
  }

  /** @param {unknown} err */
  break(err) {
    if (this.#broken !== null) return;
    this.#broken = err instanceof Error ? err : new Error(String(err));
    this.#onBreak(this.#broken);
  }

  get broken() {
    return this.#broken;
  }
}

/** One object's turns: when its implicit transaction ends, and its explicit depth. */
class Turns {
  #native;
  #commits;
  /** Resolves the lock the open turn holds on the gate, with its commit's promise. */
  #ending = null;
  /** Writes that must land before the next commit is written (see `commitAfter`). */
  #before = new Set();
  /** A commit put off until `#before` has settled. */
  #deferred = null;
  /** Savepoints open (explicit transactions, nested). */
  depth = 0;
  /** Why this instance may no longer use its storage (see `retire`), or null. */
  #retired = null;

  /**
   * @param {object} native the object's NativeObject
   * @param {import('../runtime/commits').Commits} commits
   * @param {OutputGate} gate
   */
  constructor(native, commits, gate) {
    this.#native = native;
    this.#commits = commits;
    this.gate = gate;
  }

  /** No turn waiting to commit (so nothing of it is open on the connection). */
  idle() {
    return this.#ending === null && this.#deferred === null && this.#before.size === 0;
  }

  /**
   * The object broke and its transaction was rolled back: the open turn
   * will never commit, so its lock on the gate is let go (an object closes
   * only once the gate has drained).
   */
  abandon() {
    this.#ending?.(null);
    this.#ending = null;
  }

  /**
   * The instance left memory: its storage is refused from now on (a timer it
   * left running, say), so nothing it writes lands after its file's close.
   * @param {Error} err
   */
  retire(err) {
    this.#retired = err;
  }

  /** Throws the error that broke the object, or retired this instance, if one has. */
  check() {
    if (this.gate.broken !== null) throw this.gate.broken;
    if (this.#retired !== null) throw this.#retired;
  }

  /**
   * After a storage call: `created` (the object's first write made its
   * file) registers the object; `began` (a transaction was opened) ends it
   * at the end of the turn.
   * @param {{ began?: boolean, created?: boolean }} out
   */
  wrote(out) {
    if (out.created) this.gate.lockWhile(this.#native.register());
    if (out.began && this.#ending === null) {
      this.gate.lockWhile(new Promise((resolve) => (this.#ending = resolve)));
      setImmediate(() => {
        if (this.depth === 0) this.commit();
      });
    }
  }

  /**
   * The next commit is not written before `p` settles: a commit that sets an
   * alarm is written only once the alarm index has been moved earlier
   * (./alarms.js). Written first, even a commit never synced would survive
   * the process (the log is in the page cache), and a crash in between would
   * leave an alarm that no index entry fires. Meanwhile the transaction
   * stays open: what the next turns write joins it, and their outputs wait
   * for it too. If `p` rejects, the gate breaks and nothing is committed.
   * @param {Promise<unknown>} p
   */
  commitAfter(p) {
    const settled = p.then(
      () => {},
      () => {},
    );
    this.#before.add(settled);
    settled.then(() => this.#before.delete(settled));
  }

  /**
   * Ends the open transaction now: written here, synced on this thread when
   * it is a commit alone on an idle loop and on a commit thread otherwise
   * (runtime/commits.js), the gate locked until then.
   */
  commit() {
    if (this.#before.size > 0) {
      this.#putOff();
      return;
    }
    const ending = this.#ending;
    this.#ending = null;
    let out;
    try {
      out = this.#native.commit();
    } catch (err) {
      // The storage core failed (a full disk, no descriptor left): the
      // object breaks, as for a failed sync; the process goes on.
      this.gate.break(err);
      ending?.(Promise.reject(err));
      return;
    }
    if (out.error != null) {
      const err = new Error(`Durable Object was reset and rolled back to its last known good state because the application left the database in a state where constraints were violated: ${out.error}`);
      this.gate.break(err);
      ending?.(Promise.reject(err));
      return;
    }
    if (!out.submitted) {
      ending?.(null);
      return;
    }
    const native = this.#native;
    const synced = this.#commits.write(
      (id, inline) => native.settle(id, inline),
      () => true,
    );
    if (ending !== null) ending(synced);
    else this.gate.lockWhile(synced);
  }

  /** `commit()` once what it waits for has settled; outputs wait meanwhile. */
  #putOff() {
    if (this.#deferred !== null) return;
    if (this.#ending === null) this.gate.lockWhile(new Promise((resolve) => (this.#ending = resolve)));
    this.#deferred = Promise.all([...this.#before]).then(() => {
      this.#deferred = null;
      if (this.gate.broken !== null) {
        this.#ending?.(null);
        this.#ending = null;
        return;
      }
      // An explicit transaction opened meanwhile commits when it ends.
      if (this.depth === 0) this.commit();
    });
  }
}

module.exports = { OutputGate, Turns };
