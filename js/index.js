'use strict';
// durable-workers: classes whose instances are addressed by id, each with its
// own SQLite file, resident state read synchronously, and an output gate.
const { Host } = require('./api/host');
const { DurableWorker } = require('./api/worker');
const { DurableError, codes } = require('./api/errors');
const { TestClock } = require('./alarms/clock');
const { validate } = require('./api/options');
const { Commits } = require('./runtime/commits');
// Loads the storage core only when called: a shard thread requires this
// package for DurableWorker and must never load it.
const { openNative } = require('./runtime/open-native');

/**
 * Opens (creating if needed) a durable directory and takes ownership of it.
 * A second owner, in this process or another, is refused with
 * ERR_DURABLE_LOCKED until the first closes or exits.
 * @param {import('../index').OpenOptions} options
 * @returns {Promise<import('../index').Host>}
 */
async function open(options) {
  const o = validate(options);
  const commits = new Commits();
  const { native, shipper, archiveStats } = await openNative(o.dir, { durability: o.durability, maxLive: o.maxLive, evictAfterMs: o.evictAfter }, o.archive, commits);
  // The control socket (inspect, top) starts once the lock is held and stops
  // first thing in close(), before the lock is released.
  let control = null;
  const host = new Host(native, commits, { ...o, onClose: () => control?.close(), afterClose: () => shipper?.close(), archiveStats });
  if (o.control) control = await require('./control/server').startControl(host, o.dir);
  return host;
}

/**
 * Restores a snapshot into a new or empty directory (js/tools/backup.js).
 * @type {typeof import('../index').restore}
 */
const restore = (from, to, options) => require('./tools/backup').restore(from, to, options);

module.exports = { open, restore, DurableWorker, DurableError, codes, TestClock };
