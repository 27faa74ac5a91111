'use strict';
// `durable-workers restore <snapshot> <newdir>`: a durable directory made
// again from a snapshot (js/tools/backup.js), all of it or chosen workers.
const { parse, withUsage, UsageError } = require('./args');

/** Exit codes of this command; 0, 1 and 2 mean what they mean for every command. */
const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2 });

const help = `usage: durable-workers restore <snapshot-or-archive> <newdir> [--only Class/id ...] [--at <time>] [--endpoint <url>] [--json]

Makes <newdir> (new or empty) a durable directory holding the workers of a
snapshot taken by \`durable-workers backup\`, or of a continuous archive
(open({ archive })) as it was at a moment, and builds its catalog (their
alarms included) from them. Every file is checked against its hash and with
SQLite's integrity_check; a worker that fails is left out and named, and the
others are restored.

  --only Class/id   restore only this worker (repeat for more)
  --at <time>       the moment wanted (ISO 8601 or epoch ms): any an archive
                    retains (its latest by default); a snapshot refuses one
                    before it finished
  --endpoint <url>  for an archive in a bucket (s3://bucket/prefix/): the
                    S3-compatible server, when it is not AWS; credentials and
                    region come from the AWS SDK's usual sources (AWS_* variables)
  --json            print the report as JSON

exit codes:
  0  every worker asked for was restored
  1  some were not (each is named), or the restore failed (ERR_DURABLE_BACKUP:
     <newdir> not empty, no manifest, a worker not in the snapshot, ...)
  2  usage error`;

/**
 * `restore <snapshot> <newdir> [--only Class/id ...] [--at time] [--json]`.
 * @param {string[]} args the arguments after `restore`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT)
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { json: { type: 'boolean' }, only: { type: 'string', multiple: true }, at: { type: 'string' }, endpoint: { type: 'string' } });
    if (positionals.length !== 2) throw new UsageError(`restore needs a snapshot and a new directory (got ${positionals.length} argument(s))`);
    for (const name of values.only ?? []) {
      if (!/^[^/]+\/.+$/.test(name)) throw new UsageError(`--only takes Class/id, got ${JSON.stringify(name)}`);
    }
    const at = values.at === undefined ? undefined : timeOption(values.at);
    const { restore } = require('../tools/backup');
    let report;
    try {
      report = await restore(source(positionals[0], values.endpoint), positionals[1], { only: values.only, at });
    } catch (err) {
      if (typeof err?.code !== 'string' || !err.code.startsWith('ERR_DURABLE_')) throw err;
      io.stderr.write(`durable-workers restore: ${err.code}: ${err.message}\n`);
      return EXIT.FAILED;
    }
    if (values.json) {
      io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else {
      const when = report.takenAt === null ? 'as of the latest the archive holds' : `as of ${new Date(report.takenAt).toISOString()}`;
      const lines = [`restored ${report.workers.length} worker(s) into ${report.dir}, ${when}`];
      if (report.failed.length > 0) {
        lines.push(`  ${report.failed.length} file(s) not restored:`);
        for (const f of report.failed) lines.push(`    ${f.file}: ${f.reason}`);
      }
      io.stdout.write(`${lines.join('\n')}\n`);
    }
    return report.failed.length === 0 ? EXIT.OK : EXIT.FAILED;
  });
}

/** A path, or `s3://bucket/prefix/` with an S3Client made from the SDK's usual settings. */
function source(text, endpoint) {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(text);
  if (m === null) {
    if (endpoint !== undefined) throw new UsageError('--endpoint is for an archive in a bucket (s3://bucket/prefix/)');
    return text;
  }
  const prefix = m[2] === '' || m[2].endsWith('/') ? m[2] : `${m[2]}/`;
  let S3Client;
  try {
    ({ S3Client } = require('@aws-sdk/client-s3'));
  } catch {
    throw new UsageError('an archive in a bucket needs the AWS SDK: npm install @aws-sdk/client-s3');
  }
  const client = new S3Client({ region: process.env.AWS_REGION ?? 'us-east-1', ...(endpoint ? { endpoint, forcePathStyle: true } : {}) });
  return { s3: { client, bucket: m[1], prefix } };
}

/** `--at`: epoch ms or an ISO 8601 time. */
function timeOption(text) {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(ms)) throw new UsageError(`--at must be a time (ISO 8601 or epoch ms), got ${JSON.stringify(text)}`);
  return ms;
}

module.exports = { name: 'restore', summary: 'make a durable directory again from a snapshot', help, run, EXIT };
