'use strict';
// Explicit transactions: `transaction(async txn => …)` and
// `transactionSync(() => …)`, each a savepoint on the object's connection,
// nested as the calls nest. A throw rolls back to the savepoint and is
// rethrown; the object goes on. `transaction()` holds the input gate while
// it runs, and commits the turn's earlier writes first; its root commits
// when it ends, its writes with it.

// Required when called: ./storage requires this module.
const internals = (storage) => require('./storage').internals(storage);

/** Where a transaction stands ('open', 'rolledBack', 'done'): not a member an app sees. */
const kState = Symbol('state');

const OPEN = 0;
const RELEASE = 1;
const ROLLBACK = 2;

/** The `txn` a `transaction()` closure gets: the storage calls, until the closure ends or `rollback()`. */
class Transaction {
  #storage;
  #depth;
  [kState] = 'open';

  constructor(storage, depth) {
    this.#storage = storage;
    this.#depth = depth;
  }

  #use(op) {
    if (this[kState] === 'rolledBack') throw new Error(`Cannot ${op} on rolled back transaction`);
    if (this[kState] === 'done') {
      throw new Error(`Cannot call ${op} on transaction that has already committed: did you move \`txn\` outside of the closure?`);
    }
    return this.#storage;
  }

  get(keys) {
    return this.#use('get').get(keys);
  }
  put(k, v) {
    return this.#use('put').put(k, v);
  }
  delete(keys) {
    return this.#use('delete').delete(keys);
  }
  list(options) {
    return this.#use('list').list(options);
  }
  getAlarm() {
    return this.#use('getAlarm').getAlarm();
  }
  setAlarm(when) {
    return this.#use('setAlarm').setAlarm(when);
  }
  deleteAlarm() {
    return this.#use('deleteAlarm').deleteAlarm();
  }

  /** Drops the transaction's writes now; the closure's later calls on `txn` throw. */
  rollback() {
    this.#use('rollback');
    internals(this.#storage).store.native.savepoint(ROLLBACK, this.#depth);
    this[kState] = 'rolledBack';
  }
}

/**
 * @param {import('./storage').DurableObjectStorage} storage
 * @param {(txn: Transaction) => Promise<unknown>} closure
 */
function transaction(storage, closure) {
  const { store, blockConcurrencyWhile } = internals(storage);
  return blockConcurrencyWhile(async () => {
    const { turns, native } = store;
    turns.check();
    if (turns.depth === 0 && native.inTransaction()) turns.commit();
    const depth = ++turns.depth;
    const txn = new Transaction(storage, depth);
    try {
      turns.wrote(native.savepoint(OPEN, depth));
      const result = await closure(txn);
      turns.check();
      if (txn[kState] === 'open') native.savepoint(RELEASE, depth);
      return result;
    } catch (err) {
      // A broken object's transaction was rolled back whole when it broke.
      if (txn[kState] === 'open' && turns.gate.broken === null) native.savepoint(ROLLBACK, depth);
      throw err;
    } finally {
      if (txn[kState] === 'open') txn[kState] = 'done';
      turns.depth--;
      // A broken object's connection may be closed already: nothing to commit.
      if (turns.depth === 0 && turns.gate.broken === null && native.inTransaction()) turns.commit();
    }
  });
}

/**
 * @param {import('./storage').DurableObjectStorage} storage
 * @param {() => unknown} closure
 */
function transactionSync(storage, closure) {
  const { turns, native } = internals(storage).store;
  turns.check();
  const depth = ++turns.depth;
  try {
    turns.wrote(native.savepoint(OPEN, depth));
    let result;
    try {
      result = closure();
    } catch (err) {
      if (turns.gate.broken === null) native.savepoint(ROLLBACK, depth);
      throw err;
    }
    turns.check();
    native.savepoint(RELEASE, depth);
    return result;
  } finally {
    turns.depth--;
  }
}

module.exports = { transaction, transactionSync };
