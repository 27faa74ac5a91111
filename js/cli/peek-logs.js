'use strict';
// `durable-workers peek logs <worker>`: the kept api.log records of a Peek
// worker's runs (js/peek/log-keeper.js), from the process serving the state
// directory over its control socket, or from the directory itself when no
// process serves it. --follow keeps asking for what came after.
const path = require('node:path');
const { parse, UsageError } = require('./args');
const { printable } = require('./top-view');
const { notDurable } = require('./inspect');

const help = `usage: durable-workers peek logs <worker> [--state <dir>] [--run <n>] [--follow] [--json]

Prints the kept api.log records of a Peek worker's runs, oldest first: the
newest 2,000 records of each worker are kept, with a line where each run
started and ended. Asks the process serving the state directory (peek serve)
when one does, else reads the directory.

  --state <dir>   the adapter's directory (peek serve's --state; default .peek-state)
  --run <n>       only run <n> (peek run and peek serve print a run's number)
  --follow        keep printing records as peek serve keeps them, until
                  interrupted (with nothing serving the directory: print and stop)
  --json          one JSON object per record`;

const POLL_MS = 500;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads from the owner, or the directory when nobody serves it (`direct`
 * false: then null, so a follower never opens the directory under a starting owner).
 */
async function readFrom(dir, worker, query, { direct = true } = {}) {
  const { connect } = require('../control/client');
  let client = null;
  try {
    client = await connect(dir);
  } catch (err) {
    if (!['ENOENT', 'ECONNREFUSED', 'ENOTSOCK'].includes(err.cause?.code)) throw err;
    if (!direct) return null;
    // No process serves it: read the directory (open() refuses if one owns it without a control socket).
    const why = notDurable(dir);
    if (why !== null) throw new UsageError(`${why}: give peek serve's --state`);
    const { nodeAdapter } = require('../peek');
    const adapter = nodeAdapter({ dir, warm: false, sandbox: 'off' });
    try {
      return { ...(await adapter.readLogs(worker, query)), served: false };
    } finally {
      await adapter.close();
    }
  }
  try {
    return await client.request('peek.logs', { worker, ...query });
  } finally {
    client.close();
  }
}

/** A record as a line. What a worker logged is shown with its control characters escaped: it cannot move the cursor or hide a line. */
function format(r, json) {
  if (json) return JSON.stringify(r);
  return `${new Date(r.at).toISOString()}  run ${r.run}  ${r.level.padEnd(5)}  ${printable(r.text)}`;
}

async function logs(args, io) {
  const { values, positionals } = parse(args, {
    state: { type: 'string' },
    run: { type: 'string' },
    follow: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (positionals.length !== 1) throw new UsageError('peek logs takes one worker name');
  const [worker] = positionals;
  let run;
  if (values.run !== undefined) {
    run = Number(values.run);
    if (!Number.isSafeInteger(run) || run < 1) throw new UsageError(`--run must be a run number, 1 or more (got ${JSON.stringify(values.run)})`);
  }
  const dir = path.resolve(values.state ?? '.peek-state');
  let after = 0;
  let first = true;
  for (;;) {
    const got = await readFrom(dir, worker, { run, after }, { direct: first });
    if (got === null) {
      io.stderr.write(`nothing serves ${dir} any more: stopped following\n`);
      return 0;
    }
    if (first && got.runs === 0) io.stderr.write(`no runs of ${worker} are kept in ${dir}\n`);
    for (const r of got.records) {
      io.stdout.write(`${format(r, values.json)}\n`);
      after = r.seq;
    }
    // A full page: there may be more right away.
    if (got.records.length >= 1000) continue;
    if (!values.follow) return 0;
    if (first && got.served === false) {
      io.stderr.write(`nothing serves ${dir}: --follow follows a process serving it (peek serve); these are the kept records\n`);
      return 0;
    }
    first = false;
    await sleep(POLL_MS);
  }
}

module.exports = { logs, logsHelp: help };
