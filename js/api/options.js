'use strict';
// open() options, validated before anything reaches the native core, with
// messages that name the option and say what would be accepted.
const path = require('node:path');
const { checkClock, SYSTEM } = require('../alarms/clock');

const DEFAULTS = Object.freeze({
  maxLive: 128,
  evictAfter: 60_000,
  mailbox: 1024,
  alarmPoll: 60_000,
  durability: 'full',
  control: true,
});

const OPTIONS = Object.freeze(['dir', ...Object.keys(DEFAULTS), 'callTimeout', 'clock', 'shards', 'archive']);
const ARCHIVE_OPTIONS = Object.freeze(['to', 's3', 'spool', 'retain', 'baseEvery']);
const ARCHIVE_DEFAULTS = Object.freeze({ retain: '7d', baseEvery: '1d' });
const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const SHARD_OPTIONS = Object.freeze(['count', 'module', 'memoryMb', 'heartbeatMs', 'missedHeartbeats', 'startTimeoutMs']);

/** Edit distance, case-insensitive: `maxlive` is one step from nothing, `evictAfterMs` two from `evictAfter`. */
function distance(a, b) {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length];
}

/**
 * Refuses an option open() does not know (a misspelt option silently
 * ignored would leave its default in force), naming the nearest one.
 */
function refuseUnknown(given, known, where) {
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue;
    const near = known.map((k) => [k, distance(key, k)]).sort((x, y) => x[1] - y[1])[0];
    const hint =
      near[1] <= Math.max(2, Math.floor(near[0].length / 3)) || near[0].toLowerCase().startsWith(key.toLowerCase()) || key.toLowerCase().startsWith(near[0].toLowerCase())
        ? `: did you mean ${where}${near[0]}?`
        : '';
    throw new TypeError(`open(): unknown option ${where}${key}${hint} (the options are ${known.join(', ')})`);
  }
}

function positiveInt(name, v, { min = 1 } = {}) {
  if (!Number.isInteger(v) || v < min) {
    throw new RangeError(`open(): ${name} must be an integer ≥ ${min}, got ${String(v)}`);
  }
  return v;
}

/**
 * @param {unknown} options
 * @returns {{ dir: string, callTimeout?: number, maxLive: number, evictAfter: number, mailbox: number, alarmPoll: number, durability: 'full' | 'relaxed', control: boolean, shards?: object, archive?: { to: string, s3?: object, retainMs: number, baseEveryMs: number } }}
 */
function validate(options) {
  if (options === null || typeof options !== 'object') {
    throw new TypeError('open(options): options must be an object with at least { dir }');
  }
  refuseUnknown(options, OPTIONS, '');
  const o = { ...DEFAULTS, ...options };
  if (typeof o.dir !== 'string' || o.dir.length === 0) {
    throw new TypeError('open(): dir must be a non-empty string, the directory this process will own');
  }
  positiveInt('maxLive', o.maxLive);
  positiveInt('evictAfter', o.evictAfter, { min: 0 });
  positiveInt('mailbox', o.mailbox);
  positiveInt('alarmPoll', o.alarmPoll);
  if (o.callTimeout !== undefined) positiveInt('callTimeout', o.callTimeout);
  if (o.durability !== 'full' && o.durability !== 'relaxed') {
    throw new RangeError(`open(): durability must be 'full' or 'relaxed', got ${JSON.stringify(o.durability)}`);
  }
  if (typeof o.control !== 'boolean') {
    throw new TypeError(`open(): control must be true (serve inspect and top on a control socket) or false, got ${JSON.stringify(o.control) ?? String(o.control)}`);
  }
  o.clock = checkClock(o.clock);
  if (o.shards !== undefined) {
    if (o.clock !== SYSTEM) throw new TypeError('open(): clock and shards cannot be combined: a shard thread cannot read a TestClock (test sharded classes in process)');
    o.shards = shards(o.shards);
  }
  if (o.archive !== undefined) o.archive = archive(o.archive, o.dir, o.durability);
  return o;
}

/**
 * `archive: { to | s3: { client, bucket, prefix? }, spool?, retain = '7d', baseEvery = '1d' }`:
 * a directory outside `dir`, or a bucket (shipped from a local spool,
 * `<dir>.archive-spool` unless given); durations as ms or a number with a
 * unit (ms, s, m, h, d). Refused with durability 'relaxed'. Durable Object
 * hosts (do/host.js) take the same option.
 */
function archive(a, dir, durability, who = 'open()') {
  try {
    return checkArchive(a, dir, durability);
  } catch (err) {
    // The checks word their errors as open()'s; another caller is named instead.
    if (who !== 'open()') err.message = err.message.replace(/^open\(\)/, who);
    throw err;
  }
}

function checkArchive(a, dir, durability) {
  // Relaxed commits reach the disk at checkpoints: an archive synced every
  // 200 ms could hold writes a power cut took from the worker.
  if (durability === 'relaxed') throw new RangeError("open(): archive needs durability 'full': with 'relaxed', the archive could hold writes a power loss takes from the worker");
  if (a === null || typeof a !== 'object') throw new TypeError('open(): archive must be an object { to } or { s3: { client, bucket, prefix? } }');
  refuseUnknown(a, ARCHIVE_OPTIONS, 'archive.');
  const o = { ...ARCHIVE_DEFAULTS, ...a };
  if ((o.to === undefined) === (o.s3 === undefined)) throw new TypeError('open(): archive needs exactly one of to (a directory) and s3 ({ client, bucket, prefix? })');
  let s3;
  if (o.s3 !== undefined) {
    const { client, bucket, prefix = '' } = o.s3 ?? {};
    if (typeof client?.send !== 'function') throw new TypeError('open(): archive.s3.client must be an S3Client (@aws-sdk/client-s3)');
    if (typeof bucket !== 'string' || bucket === '') throw new TypeError('open(): archive.s3.bucket must be a bucket name');
    if (typeof prefix !== 'string' || (prefix !== '' && !prefix.endsWith('/'))) throw new TypeError(`open(): archive.s3.prefix must be '' or end with '/', got ${JSON.stringify(prefix)}`);
    s3 = { client, bucket, prefix };
  } else if (typeof o.to !== 'string' || o.to.length === 0) {
    throw new TypeError('open(): archive.to must be the directory the archive is written to');
  }
  const to = path.resolve(s3 ? (o.spool ?? `${path.resolve(dir)}.archive-spool`) : o.to);
  const rel = path.relative(path.resolve(dir), to);
  if (rel === '' || (rel.split(path.sep)[0] !== '..' && !path.isAbsolute(rel))) throw new RangeError(`open(): the archive's directory (${to}) must be outside dir`);
  return { to, s3, retainMs: duration('archive.retain', o.retain), baseEveryMs: duration('archive.baseEvery', o.baseEvery) };
}

/** A duration in ms: a positive number, or a string such as '30d', '12h', '90s'. */
function duration(name, v) {
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(v) : null;
  const ms = typeof v === 'number' ? v : m ? Number(m[1]) * UNITS[m[2]] : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`open(): ${name} must be a duration (ms, or a string such as '7d', '12h', '30m'), got ${JSON.stringify(v)}`);
  return ms;
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
  refuseUnknown(s, SHARD_OPTIONS, 'shards.');
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

module.exports = { validate, archive, DEFAULTS };
