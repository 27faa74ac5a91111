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
  /** Savepoints open (explicit transactions, nested). */
  depth = 0;

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

  /** Throws the error that broke the object, if one has. */
  check() {
    if (this.gate.broken !== null) throw this.gate.broken;
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
   * Ends the open transaction now: written here, synced on this thread when
   * it is a commit alone on an idle loop and on a commit thread otherwise
   * (runtime/commits.js), the gate locked until then.
   */
  commit() {
    const ending = this.#ending;
    this.#ending = null;
    const out = this.#native.commit();
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
}

module.exports = { OutputGate, Turns };
