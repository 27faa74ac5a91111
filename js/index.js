'use strict';
// durable-workers: classes whose instances are addressed by id, each with its
// own SQLite file, resident state read synchronously, and an output gate.
const { Host } = require('./api/host');
const { DurableWorker } = require('./api/worker');
const { DurableError, codes, fromNative } = require('./api/errors');
const { TestClock } = require('./alarms/clock');
const { validate } = require('./api/options');
const { Commits } = require('./runtime/commits');

/**
 * Opens (creating if needed) a durable directory and takes ownership of it.
 * A second owner, in this process or another, is refused with
 * ERR_DURABLE_LOCKED until the first closes or exits.
 * @param {import('../index').OpenOptions} options
 * @returns {Promise<import('../index').Host>}
 */
async function open(options) {
  const o = validate(options);
  // Loaded here, not at require: a shard thread requires this package for
  // DurableWorker and must never load the storage core.
  const { NativeHost } = require('./native/load');
  const commits = new Commits();
  // To a bucket: the core writes a local spool, shipped from here; its
  // numbering goes on from what the bucket holds.
  const s3 = o.archive?.s3 && require('./tools/s3-archive');
  const firstSeq = s3 ? await s3.nextSeq(o.archive.s3) : undefined;
  let native;
  try {
    native = NativeHost.open(
      o.dir,
      {
        durability: o.durability,
        maxLive: o.maxLive,
        evictAfterMs: o.evictAfter,
        archiveTo: o.archive?.to,
        archiveRetainMs: o.archive?.retainMs,
        archiveBaseEveryMs: o.archive?.baseEveryMs,
        archiveFirstSeq: firstSeq,
      },
      commits.done,
    );
  } catch (err) {
    commits.close();
    throw fromNative(err, `open(${JSON.stringify(o.dir)})`);
  }
  // The control socket (inspect, top) starts once the lock is held and stops
  // first thing in close(), before the lock is released.
  let control = null;
  const shipper = s3 ? new s3.S3Shipper(o.archive.s3, o.archive.to, o.archive.retainMs) : null;
  shipper?.start();
  const archiveStats = () => {
    const a = native.archiveStats();
    if (a == null) return null;
    return { records: a.records, segments: a.segments, bytes: a.bytes, bases: a.bases, failure: a.failure ?? shipper?.failure ?? null };
  };
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
