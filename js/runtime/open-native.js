'use strict';
// The storage core opened for a host, with its continuous archive: the
// NativeHost, the shipper that sends the archive's local spool to a bucket,
// and the archive's counters. Worker hosts (open) and Durable Object hosts
// (openObjects) both open it here.
const { DurableError, codes, fromNative } = require('../api/errors');

/**
 * @typedef {{ to: string, s3?: import('../tools/s3-archive').S3Target, retainMs: number, baseEveryMs: number }} ArchiveOptions
 *   as api/options.js validated them
 */

/**
 * Opens `dir` (taking ownership of it) and starts its archive, if any.
 * @param {string} dir
 * @param {object} hostOptions NativeHost.open's options, the archive's aside
 * @param {ArchiveOptions | undefined} archive
 * @param {import('./commits').Commits} commits closed here if the open fails
 * @returns {Promise<{ native: object, shipper: { close(): Promise<void>, failure: string | null } | null, archiveStats: () => object | null }>}
 */
async function openNative(dir, hostOptions, archive, commits) {
  const { NativeHost } = require('../native/load');
  // To a bucket: the core writes a local spool, shipped from here; its
  // numbering goes on from what the bucket holds.
  const s3 = archive?.s3 && require('../tools/s3-archive');
  let firstSeq;
  try {
    firstSeq = s3 ? await s3.nextSeq(archive.s3) : undefined;
  } catch (err) {
    commits.close();
    throw new DurableError(codes.BACKUP, `archive.s3: cannot list s3://${archive.s3.bucket}/${archive.s3.prefix}: ${err?.message ?? err}`, { cause: err });
  }
  let native;
  try {
    native = NativeHost.open(
      dir,
      {
        ...hostOptions,
        archiveTo: archive?.to,
        archiveRetainMs: archive?.retainMs,
        archiveBaseEveryMs: archive?.baseEveryMs,
        archiveFirstSeq: firstSeq,
      },
      commits.done,
    );
  } catch (err) {
    commits.close();
    throw fromNative(err, `open(${JSON.stringify(dir)})`);
  }
  const shipper = s3 ? new s3.S3Shipper(archive.s3, archive.to, archive.retainMs) : null;
  shipper?.start();
  const archiveStats = () => {
    const a = native.archiveStats();
    if (a == null) return null;
    return { records: a.records, segments: a.segments, bytes: a.bytes, bases: a.bases, failure: a.failure ?? shipper?.failure ?? null };
  };
  return { native, shipper, archiveStats };
}

module.exports = { openNative };
