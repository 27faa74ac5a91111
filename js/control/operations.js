'use strict';
// The operations the control socket answers: one registry, which later
// features extend with `register` (a backup operation will). Each is
// `(host, params) => result`, its result sent as JSON.
//
// Nothing a client sends can change the directory, a worker or the host:
// every operation here reads, and the one that writes (`backup`) writes only
// into a new or empty directory outside the served one, which it names. The
// socket's only access check is the file modes that make it this user's
// (socket-path.js), so it can write nowhere that user could not.
const path = require('node:path');
const { DurableError, codes } = require('../api/errors');
const { CONTROL_VIEW } = require('../api/host');
const { summarize } = require('../tools/inspect');
const { topSnapshot } = require('./top-snapshot');

/** @type {Map<string, (host: import('../api/host').Host, params: object) => unknown>} */
const registry = new Map();

const NAME = /^[a-z][A-Za-z0-9.-]{0,63}$/;

/**
 * Adds an operation to the control socket of every host in this process.
 * @param {string} name `[a-z][A-Za-z0-9.-]*`, at most 64 characters; not already registered
 * @param {(host: import('../api/host').Host, params: Record<string, unknown>) => unknown} handler
 *   its result (or what its promise resolves to) must survive JSON.stringify; a
 *   DurableError it throws reaches the client with its code and message
 */
function register(name, handler) {
  if (typeof name !== 'string' || !NAME.test(name)) throw new TypeError(`register(name): name must match ${NAME}, got ${JSON.stringify(name)}`);
  if (typeof handler !== 'function') throw new TypeError(`register(${JSON.stringify(name)}, handler): handler must be a function (host, params) => result`);
  if (registry.has(name)) throw new TypeError(`register(${JSON.stringify(name)}): an operation of that name is already registered`);
  registry.set(name, handler);
}

/** The registered operations' names, sorted. */
function names() {
  return [...registry.keys()].sort();
}

/**
 * Runs operation `op` on `host`.
 * @returns {Promise<unknown>} its result; rejects with ERR_DURABLE_CONTROL for an unknown op
 */
async function dispatch(host, op, params) {
  const handler = registry.get(op);
  if (handler === undefined) {
    throw new DurableError(codes.CONTROL, `unknown operation ${JSON.stringify(op)}; the operations are: ${names().join(', ')}`);
  }
  return handler(host, params);
}

/** A whole-number parameter in [0, max], or its default. */
function count(params, name, fallback, max) {
  const v = params[name];
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || v < 0 || v > max) throw new DurableError(codes.CONTROL, `params.${name} must be a whole number from 0 to ${max}, got ${JSON.stringify(v)}`);
  return v;
}

// --- the read-only operations ------------------------------------------------

/** `stats`: host.stats(). */
register('stats', (host) => host.stats());

/**
 * `summary { alarms = 10 }`: what `durable-workers inspect` prints: classes,
 * workers per class, bytes on disk, the registry's size, the pending alarm
 * count and the earliest `alarms` of them; and this process's pid.
 */
register('summary', async (host, params) => {
  const alarms = count(params, 'alarms', 10, 10_000);
  const s = await summarize(host[CONTROL_VIEW]().summary, path.resolve(host.dir), alarms);
  return { ...s, owner: { pid: process.pid } };
});

/** `metrics`: host.metrics(), the Prometheus text. */
register('metrics', (host) => host.metrics());

/**
 * `top { workers = 10, alarms = 5 }`: one snapshot for `durable-workers top`
 * (see top-snapshot.js).
 */
register('top', (host, params) => topSnapshot(host, { workers: count(params, 'workers', 10, 1000), alarms: count(params, 'alarms', 5, 1000) }));

// --- the operation that writes elsewhere -------------------------------------

/**
 * `backup { dest }`: host.backup(dest), a snapshot into `dest`, an absolute
 * path to a new or empty directory outside the served one.
 */
register('backup', (host, params) => {
  const dest = params.dest;
  if (typeof dest !== 'string' || !path.isAbsolute(dest)) throw new DurableError(codes.CONTROL, `params.dest must be an absolute path, got ${JSON.stringify(dest)}`);
  return host.backup(dest);
});

module.exports = { register, names, dispatch };
