'use strict';
// The one error class this package throws, and the codes it carries.
// Tests and callers switch on `err.code`, never on `instanceof`: classes do not
// survive a trip across threads or processes, codes do.

/** Stable error codes. */
const codes = Object.freeze({
  LOCKED: 'ERR_DURABLE_LOCKED',
  BUSY: 'ERR_DURABLE_BUSY',
  CYCLE: 'ERR_DURABLE_CYCLE',
  STATE_TOO_LARGE: 'ERR_DURABLE_STATE_TOO_LARGE',
  STATE_FORMAT: 'ERR_DURABLE_STATE_FORMAT',
  UNCLONEABLE: 'ERR_DURABLE_UNCLONEABLE',
  SHARD_LOST: 'ERR_DURABLE_SHARD_LOST',
  CORRUPT: 'ERR_DURABLE_CORRUPT',
  ID: 'ERR_DURABLE_ID',
  NAME: 'ERR_DURABLE_NAME',
  METHOD: 'ERR_DURABLE_METHOD',
  NOT_INDEXED: 'ERR_DURABLE_NOT_INDEXED',
  TYPE: 'ERR_DURABLE_TYPE',
  CLOSED: 'ERR_DURABLE_CLOSED',
  IO: 'ERR_DURABLE_IO',
  NO_ADDON: 'ERR_DURABLE_NO_ADDON',
  /** The control socket: no process serves the directory, another user owns it, a malformed request, an unknown operation. */
  CONTROL: 'ERR_DURABLE_CONTROL',
  /** A Wrangler config the Durable Object host cannot run: a syntax error, an unsupported binding or migration, a class with no migration. */
  CONFIG: 'ERR_DURABLE_CONFIG',
  /** A snapshot or restore that cannot be made as asked: a target that is not empty, an incomplete or damaged snapshot, a worker it could not copy. */
  BACKUP: 'ERR_DURABLE_BACKUP',
  /** A call (or alarm, socket handler, start()) that ran past its timeout: the worker was reset. */
  TIMEOUT: 'ERR_DURABLE_TIMEOUT',
  /** A worker was reset (its call timed out, or it called ctx.abort()): what its abandoned instance tries next, and calls whose writes the reset dropped. */
  RESET: 'ERR_DURABLE_RESET',
  /** A failure inside the package itself (a broken contract between JS and the native core, a panic): a bug to report, never the disk. */
  INTERNAL: 'ERR_DURABLE_INTERNAL',
});

class DurableError extends Error {
  /**
   * @param {string} code one of `codes`
   * @param {string} message says what failed, naming the worker where there is one
   * @param {{ cause?: unknown }} [options]
   */
  constructor(code, message, options) {
    super(message, options && 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'DurableError';
    this.code = code;
  }
}

/** How a worker is named in messages: `Cart "customer-42"`, long ids shortened. */
function label(className, id) {
  const shown = id.length > 80 ? `${id.slice(0, 77)}…` : id;
  return `${className} ${JSON.stringify(shown)}`;
}

const KNOWN = new Set(Object.values(codes));

/**
 * Wraps an error from the native core, keeping its code, naming the worker.
 * A code the package does not define (napi's own for an argument it could
 * not convert, a panic's) is an internal failure: ERR_DURABLE_INTERNAL,
 * never dressed as the disk's.
 * @param {any} err
 * @param {string} who a `label()`
 */
function fromNative(err, who) {
  if (err instanceof DurableError) return err;
  const code = nativeCode(err);
  const what = code === codes.INTERNAL ? ` (an internal failure${typeof err?.code === 'string' ? `, native code ${err.code}` : ''}: please report it)` : '';
  return new DurableError(code, `${who}: ${err?.message ?? String(err)}${what}`, { cause: err });
}

/** The package's code for an error from the native core: its own when it is one of `codes`, else ERR_DURABLE_INTERNAL. */
function nativeCode(err) {
  return typeof err?.code === 'string' && KNOWN.has(err.code) ? err.code : codes.INTERNAL;
}

module.exports = { DurableError, codes, label, fromNative, nativeCode };
