'use strict';
// `durable-workers repair <dir>`: rebuilds a durable directory's catalog from
// its worker files. Each worker file holds its own class, id and alarms, so
// the catalog (what exists, and when each worker's next alarm is due) can be
// recovered from them; a damaged catalog is moved aside, not deleted. A
// deleted catalog is rebuilt by `open()` itself; a damaged one needs this.
const fs = require('node:fs');
const path = require('node:path');
const { fromNative } = require('../api/errors');

/**
 * @param {string} dir
 * @param {{ durability?: 'full' | 'relaxed' }} [options]
 * @returns {Promise<{ dir: string, workers: number, alarms: number, skipped: { file: string, reason: string }[], movedAside: string | null }>}
 */
async function repair(dir, { durability = 'full' } = {}) {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs) || !fs.statSync(abs).isDirectory()) {
    throw new TypeError(`repair(): ${abs} is not a directory`);
  }
  const { repair: native } = require('../native/load');
  let r;
  try {
    r = await native(abs, durability);
  } catch (err) {
    throw fromNative(err, `repair(${JSON.stringify(abs)})`);
  }
  return {
    dir: abs,
    workers: r.workers,
    alarms: r.alarms,
    skipped: r.skippedFiles.map((file, i) => ({ file, reason: r.skippedReasons[i] })),
    movedAside: r.movedAside ?? null,
  };
}

module.exports = { repair };
