'use strict';
// open() options, validated before anything reaches the native core, with
// messages that name the option and say what would be accepted.
const path = require('node:path');

const DEFAULTS = Object.freeze({
  maxLive: 128,
  evictAfter: 60_000,
  mailbox: 1024,
  alarmPoll: 60_000,
  durability: 'full',
});

function positiveInt(name, v, { min = 1 } = {}) {
  if (!Number.isInteger(v) || v < min) {
    throw new RangeError(`open(): ${name} must be an integer ≥ ${min}, got ${String(v)}`);
  }
  return v;
}

/**
 * @param {unknown} options
 * @returns {{ dir: string, maxLive: number, evictAfter: number, mailbox: number, alarmPoll: number, durability: 'full' | 'relaxed', shards?: object }}
 */
function validate(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('open(options): options must be an object with at least { dir }');
  }
  const o = { ...DEFAULTS, ...options };
  if (typeof o.dir !== 'string' || o.dir.length === 0) {
    throw new TypeError('open(): dir must be a non-empty string, the directory this process will own');
  }
  positiveInt('maxLive', o.maxLive);
  positiveInt('evictAfter', o.evictAfter, { min: 0 });
  positiveInt('mailbox', o.mailbox);
  positiveInt('alarmPoll', o.alarmPoll);
  if (o.durability !== 'full' && o.durability !== 'relaxed') {
    throw new RangeError(`open(): durability must be 'full' or 'relaxed', got ${JSON.stringify(o.durability)}`);
  }
  if (o.shards !== undefined) o.shards = shards(o.shards);
  return o;
}

const SHARD_DEFAULTS = Object.freeze({ heartbeatMs: 1000, missedHeartbeats: 3, startTimeoutMs: 30_000 });

/**
 * `shards: { count, module, memoryMb?, heartbeatMs?, missedHeartbeats?, startTimeoutMs? }`.
 * The module is resolved from the working directory (an absolute path is
 * safest) and loaded here too: the host must know which classes it exports.
 */
function shards(s) {
  if (s === null || typeof s !== 'object') {
    throw new TypeError('open(): shards must be an object { count, module } (the module exporting the worker classes to run on worker threads)');
  }
  const o = { ...SHARD_DEFAULTS, ...s };
  positiveInt('shards.count', o.count);
  if (typeof o.module !== 'string' || o.module.length === 0) {
    throw new TypeError('open(): shards.module must be the path of the module that exports the sharded worker classes');
  }
  if (o.memoryMb !== undefined) positiveInt('shards.memoryMb', o.memoryMb, { min: 16 });
  positiveInt('shards.heartbeatMs', o.heartbeatMs, { min: 10 });
  positiveInt('shards.missedHeartbeats', o.missedHeartbeats);
  positiveInt('shards.startTimeoutMs', o.startTimeoutMs);
  let resolved;
  try {
    resolved = require.resolve(path.resolve(o.module));
  } catch (err) {
    throw new TypeError(`open(): shards.module ${JSON.stringify(o.module)} cannot be found (${err.message})`, { cause: err });
  }
  return { ...o, module: resolved, exports: require(resolved) };
}

module.exports = { validate, DEFAULTS };
