'use strict';
// What a durable directory holds, for `durable-workers inspect`: classes and
// their workers from the catalog, bytes on disk, and the alarms the index says
// are pending. It takes the directory's lock like any owner, so it is refused
// with ERR_DURABLE_LOCKED while a process serves the directory (and never
// reads files mid-write).
const fs = require('node:fs');
const path = require('node:path');
const { DurableError, codes, fromNative } = require('../api/errors');
const { Commits } = require('../runtime/commits');

/** Bytes of every file under `dir` (sidecars included). */
function bytesUnder(dir) {
  let total = 0;
  let files = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        total += fs.statSync(p).size;
        if (e.name.endsWith('.db')) files++;
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return { bytes: total, files };
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
    const s = await native.summary(alarms);
    return {
      dir: abs,
      classes: s.classes.map((name, i) => ({ name, workers: s.workers[i], ...bytesUnder(path.join(abs, name)) })),
      registryBytes: fs
        .readdirSync(abs)
        .filter((f) => f.startsWith('_registry.db'))
        .reduce((n, f) => n + fs.statSync(path.join(abs, f)).size, 0),
      alarms: {
        count: s.alarmCount,
        next: s.alarms.classes.map((c, i) => ({ class: c, id: s.alarms.ids[i], at: s.alarms.ats[i] })),
      },
    };
  } catch (err) {
    throw fromNative(err, `inspect(${JSON.stringify(abs)})`);
  } finally {
    await native.close();
    commits.close();
  }
}

module.exports = { inspect };
