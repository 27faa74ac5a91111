'use strict';
// `durable-workers repair <dir>`: rebuilds a durable directory's catalog from
// its worker files (js/tools/repair.js). `open()` rebuilds a deleted catalog by
// itself; a damaged one stops `open()` with ERR_DURABLE_CORRUPT naming this
// command, because moving a file aside is a person's decision. Like any
// owner it takes the directory's lock, so a served directory is refused.
const fs = require('node:fs');
const path = require('node:path');
const { parse, withUsage, UsageError } = require('./args');

/** Exit codes of this command; 0, 1 and 2 mean what they mean for every command. */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, OWNED: 3, NOT_DIRECTORY: 4 });

const help = `usage: durable-workers repair <dir> [--json]

Rebuilds the catalog of a durable directory (_registry.db: which workers
exist, and when each one's next alarm is due) from the worker files, each of
which holds its own class, id and alarms. A damaged catalog is moved aside
(_registry.db.damaged-<ms>), never deleted. A worker file that cannot be read,
or that holds a worker whose file lives elsewhere, is listed and left alone.

  --json   print the report as JSON

exit codes:
  0  repaired (skipped files, if any, are listed)
  1  the repair failed (ERR_DURABLE_IO, ...)
  2  usage error
  3  a process owns the directory (ERR_DURABLE_LOCKED); nothing was changed
  4  <dir> is not a directory`;

/**
 * `repair <dir> [--json]`.
 * @param {string[]} args the arguments after `repair`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT)
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { json: { type: 'boolean' } });
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'repair needs a directory' : `repair takes one directory (got ${positionals.join(' ')})`);
    const dir = path.resolve(positionals[0]);
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
      io.stderr.write(`durable-workers repair: ${dir} is not a directory\n`);
      return EXIT.NOT_DIRECTORY;
    }
    const { repair } = require('../tools/repair');
    let report;
    try {
      report = await repair(dir);
    } catch (err) {
      if (err?.code === 'ERR_DURABLE_LOCKED') {
        io.stderr.write(`durable-workers repair: a process owns ${dir} (ERR_DURABLE_LOCKED); stop it first. Nothing was changed.\n`);
        return EXIT.OWNED;
      }
      if (typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_')) {
        io.stderr.write(`durable-workers repair: ${err.code}: ${err.message}\n`);
        return EXIT.FAILED;
      }
      throw err;
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return EXIT.OK;
    }
    const lines = [`repaired ${dir}`, `  ${report.workers} worker file(s) recorded in the catalog, ${report.alarms} with a pending alarm`];
    if (report.movedAside !== null) lines.push(`  the damaged catalog was moved to ${report.movedAside}`);
    if (report.skipped.length > 0) {
      lines.push(`  ${report.skipped.length} file(s) left alone:`);
      for (const s of report.skipped) lines.push(`    ${s.file}: ${s.reason}`);
    }
    io.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.OK;
  });
}

module.exports = { name: 'repair', summary: "rebuild a directory's catalog from its worker files", help, run, EXIT };
