'use strict';
// Peek's error codes. Every error the host or an adapter raises is a
// DurableError (one class for the whole package) carrying one of these codes,
// or a durable-workers code where one fits (a locked directory stays
// ERR_DURABLE_LOCKED). Callers switch on `err.code`: errors cross process
// boundaries here, and classes do not survive that, codes do.
const { DurableError } = require('../api/errors');

const codes = Object.freeze({
  /** A manifest field is missing or wrong; the message names the field. */
  MANIFEST: 'ERR_PEEK_MANIFEST',
  /** A schedule spec is not `every <n>s|m|h|d`, or is below the adapter's minimum. */
  SCHEDULE: 'ERR_PEEK_SCHEDULE',
  /** No credential for a worker granted the datastore, or an unsafe credentials file. */
  CREDENTIAL: 'ERR_PEEK_CREDENTIAL',
  /** The run passed its deadline and was stopped. */
  DEADLINE: 'ERR_PEEK_DEADLINE',
  /** A fetch to a host outside capabilities.network.domains. */
  NETWORK_DENIED: 'ERR_PEEK_NETWORK_DENIED',
  /** An import of a network module (node:http, node:net, …) refused at load. */
  IMPORT_REFUSED: 'ERR_PEEK_IMPORT_REFUSED',
  /** The module has no function under manifest.worker.entry nor a default export. */
  ENTRY: 'ERR_PEEK_ENTRY',
  /** The run's process ended without finishing the run (out of memory, exit). */
  CRASHED: 'ERR_PEEK_CRASHED',
  /**
   * A run broke the realm protocol or its budgets (a malformed or oversized
   * frame, a message that does not fit the protocol, a flood of frames or
   * output): that run's process was killed; the message names the worker
   * and what was wrong.
   */
  PROTOCOL: 'ERR_PEEK_PROTOCOL',
  /** The datastore refused a call (remote status, unknown item). */
  STORE: 'ERR_PEEK_STORE',
  /** The channel is closed, or the hub could not be reached. */
  CHANNEL: 'ERR_PEEK_CHANNEL',
  /** The adapter or host was used after close(). */
  CLOSED: 'ERR_PEEK_CLOSED',
  /** A publish the grant does not allow: a cmd: topic without capabilities.pubsub.commands, or another command's reply topic. */
  PUBSUB_DENIED: 'ERR_PEEK_PUBSUB_DENIED',
  /**
   * The sandbox was required (nodeAdapter({ sandbox: 'required' })) and is
   * not available here, or a run could not be given one (its worker's
   * files too large to ship in, no free uid); the message says which.
   */
  SANDBOX: 'ERR_PEEK_SANDBOX',
  /** A sandboxed run's fetch went past the relay's limits (body size, requests waiting). */
  FETCH_LIMIT: 'ERR_PEEK_FETCH_LIMIT',
  /**
   * A lifecycle or handler registration out of its place: api.initialize,
   * api.subscribe or api.commands.on after the module has loaded, a topic or
   * command the manifest does not grant, a command registered twice.
   */
  LIFECYCLE: 'ERR_PEEK_LIFECYCLE',
  /** The operator's settings could not be read (a malformed file, a source that threw); the run does not start. */
  SETTINGS: 'ERR_PEEK_SETTINGS',
});

/**
 * A DurableError with a Peek code.
 * @param {string} code one of `codes`
 * @param {string} message says what failed and, where there is one, the fix
 * @param {{ cause?: unknown }} [options]
 */
function peekError(code, message, options) {
  return new DurableError(code, message, options);
}

/** An error as plain data, to cross IPC or a durable call without losing its code. */
function toPlainError(err) {
  if (err && typeof err === 'object') {
    return { name: String(err.name ?? 'Error'), message: String(err.message ?? err), code: err.code, stack: err.stack };
  }
  return { name: 'Error', message: String(err), code: undefined, stack: undefined };
}

/** The reverse of toPlainError: an Error with the same name, message, code and stack. */
function fromPlainError(plain) {
  const err = plain.code ? new DurableError(plain.code, plain.message) : new Error(plain.message);
  if (!plain.code) err.name = plain.name;
  if (plain.stack) err.stack = plain.stack;
  return err;
}

module.exports = { codes, peekError, toPlainError, fromPlainError };
