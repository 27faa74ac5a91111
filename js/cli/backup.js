'use strict';
// `durable-workers backup <dir> <dest>`: a snapshot of a durable directory
// (js/tools/backup.js). When a process serves the directory it is asked to
// take it, over its control socket, and its calls go on meanwhile; otherwise
// this command opens the directory itself for the length of the copy.
const fs = require('node:fs');
const path = require('node:path');
const { parse, withUsage, UsageError } = require('./args');

/** Exit codes of this command; 0, 1 and 2 mean what they mean for every command. */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, OWNED: 3, NOT_DURABLE: 4 });

const help = `usage: durable-workers backup <dir> <dest> [--json]

Copies every worker file of a durable directory, and its catalog, into <dest>
(a new or empty directory), each file as of one of its commits, and writes
<dest>/backup.json last: the list of files with their sizes and hashes, whose
presence says the snapshot is whole. When a process serves <dir>, it is asked
over its control socket to take the snapshot while its calls go on.

  --json   print the report as JSON

exit codes:
  0  the snapshot is whole
  1  it failed (ERR_DURABLE_BACKUP: <dest> not empty, a file that could not be copied, ...)
  2  usage error
  3  a process owns <dir> and could not be asked (another user's, no control socket)
  4  <dir> is not a durable directory

Restore it with \`durable-workers restore <dest> <newdir>\`.`;

/**
 * `backup <dir> <dest> [--json]`.
 * @param {string[]} args the arguments after `backup`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT)
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { json: { type: 'boolean' } });
    if (positionals.length !== 2) throw new UsageError(`backup needs a directory and a destination (got ${positionals.length} argument(s))`);
    const dir = path.resolve(positionals[0]);
    const dest = path.resolve(positionals[1]);
    if (!fs.existsSync(path.join(dir, '_registry.db'))) {
      io.stderr.write(`durable-workers backup: ${dir} is not a durable directory (it has no _registry.db)\n`);
      return EXIT.NOT_DURABLE;
    }
    let report;
    let owner = null;
    try {
      report = await ourselves(dir, dest);
    } catch (err) {
      if (err?.code !== 'ERR_DURABLE_LOCKED') return failed(err, io);
      const { connect } = require('../control/client');
      let client;
      try {
        client = await connect(dir);
        owner = (await client.request('summary', { alarms: 0 })).owner;
        report = await client.request('backup', { dest }, { timeout: 0 });
      } catch (err2) {
        if (err2?.code === 'ERR_DURABLE_CONTROL' && owner === null) {
          io.stderr.write(`durable-workers backup: a process owns ${dir} (ERR_DURABLE_LOCKED), and it could not be asked:\n  ${err2.message}\n`);
          return EXIT.OWNED;
        }
        return failed(err2, io);
      } finally {
        client?.close();
      }
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ ...report, owner }, null, 2)}\n`);
      return EXIT.OK;
    }
    const via = owner === null ? '' : ` (taken by the process serving it, pid ${owner.pid})`;
    io.stdout.write(`snapshot of ${dir} in ${report.dest}${via}\n  ${report.workers} worker file(s), ${(report.bytes / 1e6).toFixed(1)} MB, in ${report.ms} ms\n`);
    return EXIT.OK;
  });
}

/** The snapshot with the directory opened here; ERR_DURABLE_LOCKED when a process serves it. */
async function ourselves(dir, dest) {
  const { open } = require('../index');
  const host = await open({ dir, control: false });
  try {
    return await host.backup(dest);
  } finally {
    await host.close();
  }
}

function failed(err, io) {
  if (typeof err?.code !== 'string' || !err.code.startsWith('ERR_DURABLE_')) throw err;
  io.stderr.write(`durable-workers backup: ${err.code}: ${err.message}\n`);
  return EXIT.FAILED;
}

module.exports = { name: 'backup', summary: 'copy a durable directory, even while it is served', help, run, EXIT };
