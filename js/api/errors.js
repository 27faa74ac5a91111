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

/**
 * Wraps an error from the native core, keeping its code, naming the worker.
 * @param {any} err
 * @param {string} who a `label()`
 */
function fromNative(err, who) {
  if (err instanceof DurableError) return err;
  const code = typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_') ? err.code : codes.IO;
  return new DurableError(code, `${who}: ${err?.message ?? String(err)}`, { cause: err });
}

module.exports = { DurableError, codes, label, fromNative };
