'use strict';
// open() options, validated before anything reaches the native core, with
// messages that name the option and say what would be accepted.

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
  return o;
}

module.exports = { validate, DEFAULTS };
