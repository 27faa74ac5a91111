'use strict';
// What a durable directory holds, for `durable-workers inspect`: classes and
// their workers from the catalog, bytes on disk, and the alarms the index says
// are pending. It takes the directory's lock like any owner, so it is refused
// with ERR_DURABLE_LOCKED while a process serves the directory (and never
// reads files mid-write); that process answers the same summary over its
// control socket (summarize(), run there by js/control/operations.js).
const fs = require('node:fs');
const path = require('node:path');
const { DurableError, codes, fromNative } = require('../api/errors');
const { Commits } = require('../runtime/commits');

/**
 * Bytes of every file under `dir` (sidecars included). Asynchronous: the
 * process serving a directory runs it too (the control socket's `summary`),
 * and must not stop its event loop for a directory of many files.
 */
async function bytesUnder(dir) {
  let total = 0;
  let files = 0;
  const walk = async (d) => {
    for (const e of await fs.promises.readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        // A file removed meanwhile (a worker deleted in a live directory) counts nothing.
        total += (await fs.promises.stat(p).catch(() => ({ size: 0 }))).size;
        if (e.name.endsWith('.db')) files++;
      }
    }
  };
  if (fs.existsSync(dir)) await walk(dir);
  return { bytes: total, files };
}

/**
 * What `inspect` shows of the durable directory `abs`: the catalog's
 * `summary` (the native host's, in this process or in the one serving the
 * directory) with the bytes on disk.
 * @param {(alarms: number) => Promise<import('../../native/native').Summary>} summary
 * @param {string} abs the directory, absolute
 * @param {number} alarms how many of the earliest pending alarms to list
 */
async function summarize(summary, abs, alarms) {
  const s = await summary(alarms);
  const classes = [];
  for (const [i, name] of s.classes.entries()) classes.push({ name, workers: s.workers[i], ...(await bytesUnder(path.join(abs, name))) });
  let registryBytes = 0;
  for (const f of await fs.promises.readdir(abs)) {
    if (f.startsWith('_registry.db')) registryBytes += (await fs.promises.stat(path.join(abs, f)).catch(() => ({ size: 0 }))).size;
  }
  return {
    dir: abs,
    classes,
    registryBytes,
    alarms: {
      count: s.alarmCount,
      next: s.alarms.classes.map((c, i) => ({ class: c, id: s.alarms.ids[i], at: s.alarms.ats[i] })),
    },
  };
}

/**
 * @param {string} dir a directory made by `open()`
 * @param {{ alarms?: number }} [options] how many of the earliest pending alarms to list
 * @returns {Promise<{ dir: string, classes: { name: string, workers: number, files: number, bytes: number }[],
 *   registryBytes: number, alarms: { count: number, next: { class: string, id: string, at: number }[] } }>}
 */
async function inspect(dir, { alarms = 20 } = {}) {
  const abs = path.resolve(dir);
  if (!fs.existsSync(path.join(abs, '_registry.db'))) {
    throw new DurableError(codes.CORRUPT, `${abs} is not a durable directory (it has no _registry.db)`);
  }
  const { NativeHost } = require('../native/load');
  const commits = new Commits();
  let native;
  try {
    native = NativeHost.open(abs, { durability: 'full', maxLive: 1, evictAfterMs: 0 }, commits.done);
  } catch (err) {
    commits.close();
    throw fromNative(err, `inspect(${JSON.stringify(abs)})`);
  }
  try {
    return await summarize((n) => native.summary(n), abs, alarms);
  } catch (err) {
    throw fromNative(err, `inspect(${JSON.stringify(abs)})`);
  } finally {
    await native.close();
    commits.close();
  }
}

module.exports = { inspect, summarize };
