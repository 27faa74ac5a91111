'use strict';
// What the platform adapters (node/adapter.js, ../cloudflare/peek/adapter.js)
// share: the options every adapter takes, the scheduler part of their
// declarations, the shortest schedule they run, the check of openChannel's
// arguments, and the default log sink.
const { parseSchedule } = require('./schedule-spec');
const { codes, peekError } = require('./errors');

/** The shortest interval a schedule may have. */
const MIN_INTERVAL_MS = 1000;

/** The default sink: one line per record on stderr. */
function stderrLog({ level, worker, args }) {
  const text = args.map((a) => (typeof a === 'string' ? a : safeJson(a))).join(' ');
  process.stderr.write(`[${worker}] ${level}: ${text}\n`);
}

function safeJson(v) {
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/**
 * The options every adapter takes, checked; errors name `fn` (`nodeAdapter`).
 * Returns them with `positive`, the check the adapter's own integer options use.
 * @param {string} fn
 * @param {object} options
 */
function commonOptions(fn, options) {
  if (options === null || typeof options !== 'object') throw new TypeError(`${fn}(options): options must be an object`);
  const positive = (name, v, dflt) => {
    if (v === undefined) return dflt;
    // 2^31 - 1 ms (about 24.8 days) is the longest a timer can wait.
    if (!Number.isInteger(v) || v <= 0 || v > 2 ** 31 - 1) throw new RangeError(`${fn}({ ${name} }): must be a positive integer below 2^31, got ${v}`);
    return v;
  };
  const retries = options.retries ?? 3;
  if (!Number.isInteger(retries) || retries < 0 || retries > 20) throw new RangeError(`${fn}({ retries }): an integer from 0 to 20, got ${retries}`);
  if (options.log !== undefined && typeof options.log !== 'function') throw new TypeError(`${fn}({ log }): must be a function (record) => void`);
  const store = options.store ?? {};
  return {
    positive,
    maxWallClockMs: positive('maxWallClockMs', options.maxWallClockMs, 15 * 60_000),
    precisionMs: positive('precisionMs', options.precisionMs, 2000),
    retries,
    credentials: { envPrefix: options.credentials?.envPrefix ?? 'PEEK_CREDENTIAL_', file: options.credentials?.file },
    store: { user: store.user ?? 'local', profile: store.profile ?? 'default' },
    log: options.log ?? stderrLog,
  };
}

/** The `scheduler` part of an adapter's declaration: alarms, retries, one catch-up run. */
function schedulerDeclaration(o) {
  return {
    atLeastOnce: true,
    retriesOnFailure: o.retries === 0 ? 'none' : o.retries,
    catchesUpMissedRuns: true,
    minIntervalMs: MIN_INTERVAL_MS,
    precisionMs: o.precisionMs,
  };
}

/** A schedule spec's interval, refused when it is not one or is shorter than MIN_INTERVAL_MS. */
function scheduleInterval(manifest, spec) {
  const intervalMs = parseSchedule(spec, `ensureSchedule(${manifest.name})`);
  if (intervalMs < MIN_INTERVAL_MS) throw peekError(codes.SCHEDULE, `${manifest.name}: ${spec} is more often than this adapter's minimum interval (${MIN_INTERVAL_MS} ms)`);
  return intervalMs;
}

/** openChannel's arguments, checked; returns the topics. */
function channelTopics(subscription, onMessage) {
  const topics = subscription?.topics ?? [];
  if (!Array.isArray(topics) || topics.some((t) => typeof t !== 'string' || t.length === 0)) {
    throw new TypeError('openChannel({ topics }, onMessage): topics must be an array of non-empty strings');
  }
  if (typeof onMessage !== 'function') throw new TypeError('openChannel({ topics }, onMessage): onMessage must be a function');
  return topics;
}

module.exports = { MIN_INTERVAL_MS, stderrLog, commonOptions, schedulerDeclaration, scheduleInterval, channelTopics };
