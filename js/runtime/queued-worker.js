'use strict';
// The entries a worker's mailbox takes, queued the same way whether the
// worker runs on this thread (LiveWorker) or on a shard (RemoteWorker): the
// host calls these, each subclass runs the entries its own way.

class QueuedWorker {
  /** Resolves when the worker has closed (set when closing starts). */
  closed = null;

  /** Queues a call; false when the mailbox is full. */
  call(method, args, frame, resolve, reject) {
    return this.mailbox.push({ kind: 'call', method, args, frame, resolve, reject });
  }

  /**
   * Queues a firing of whatever alarms are due. Its handlers start only once
   * `after` has resolved (the previous worker's firing has started), or
   * ORDER_WAIT_MS have passed: alarms due together start in time order.
   * @param {Promise<void>} after
   * @returns {{ started: Promise<void>, done: Promise<void> }}
   */
  fireAlarms(after) {
    let started;
    const startedP = new Promise((r) => (started = r));
    const done = new Promise((resolve) => this.mailbox.push({ kind: 'alarm', after, started, resolve }, true));
    return { started: startedP, done };
  }

  /**
   * Queues a socket event (message, close, error): `run(instance)` for a
   * worker here, `desc` for one on a shard.
   */
  socketEvent(run, desc) {
    this.mailbox.push({ kind: 'event', run, desc }, true);
  }

  /**
   * Closes the worker behind whatever is queued: runs stop(reason) (unless
   * reason is null), commits, then closes or destroys the file.
   * @returns {Promise<boolean>} for destroy: whether the worker existed
   */
  close(reason, { destroy = false } = {}) {
    if (this.closed !== null) return this.closed;
    let resolve;
    // Set before the push: the push wakes the mailbox, and the host must
    // already see this worker as closing (or it would count it live again).
    this.closed = new Promise((r) => (resolve = r));
    this.mailbox.push({ kind: 'close', reason, destroy, resolve }, true);
    return this.closed;
  }
}

module.exports = { QueuedWorker };
