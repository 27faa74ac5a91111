'use strict';
// `durable-workers top <dir>`: a live view of a directory another process is
// serving, sampled over that process's control socket (js/control/) every
// --interval: rates from successive counters, the busiest workers, the next
// alarms, the shards. Drawn in place on a terminal (js/cli/screen.js),
// printed frame after frame when piped, one JSON line a sample with --json.
// It only reads: the serving process never waits on it.
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');
const { frame, record } = require('./top-view');

const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, NOT_DURABLE: 4 });
const DEFAULT_INTERVAL = 1000;
const MIN_INTERVAL = 100;

const help = `usage: durable-workers top <dir> [--interval <ms>] [--workers <n>] [--json] [--once]

A live view of a durable directory a process is serving, asked of that
process over its control socket every <ms>: calls/s, commits/s and syncs/s,
call latency (p50 and p99 of every call since it opened the directory), live
workers, the busiest workers and their mailbox depths, the next alarms, and
the health of its shards. q or Ctrl-C quits.

  --interval <ms>   time between samples (default ${DEFAULT_INTERVAL}, at least ${MIN_INTERVAL})
  --workers <n>     the busiest workers to list (default: as many as the
                    terminal has rows for; 10 with --json or piped)
  --json            print one JSON object a line, a sample each, instead of drawing
  --once            take two samples <ms> apart, print one frame (or line), exit

On a terminal the view is drawn in place (the alternate screen, as top(1)
does) and the terminal is restored on exit; piped, each frame is printed in
turn, without escape codes.

exit codes:
  0  quit (q, Ctrl-C), or --once printed its sample
  1  no process serves <dir>, it could not be reached (another user's; opened
     with { control: false }), or it went away while watched
  2  usage error
  4  <dir> is not a durable directory`;

/**
 * `top <dir> [--interval MS] [--workers N] [--json] [--once]`.
 * @param {string[]} args the arguments after `top`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream, stdin?: NodeJS.ReadableStream }} io
 * @returns {Promise<number>} the exit code (see EXIT)
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { interval: { type: 'string' }, workers: { type: 'string' }, json: { type: 'boolean' }, once: { type: 'boolean' } });
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'top needs a directory' : `top takes one directory (got ${positionals.join(' ')})`);
    const interval = intOption(values, 'interval') ?? DEFAULT_INTERVAL;
    if (interval < MIN_INTERVAL) throw new UsageError(`--interval must be at least ${MIN_INTERVAL} ms`);
    const workersWanted = intOption(values, 'workers');
    const dir = path.resolve(positionals[0]);

    const { notDurable } = require('./inspect');
    const why = notDurable(dir);
    if (why !== null) {
      io.stderr.write(`durable-workers top: ${why}\n`);
      return EXIT.NOT_DURABLE;
    }

    const { connect } = require('../control/client');
    let client;
    try {
      client = await connect(dir);
    } catch (err) {
      io.stderr.write(`durable-workers top: ${err.message}\n`);
      return EXIT.FAILED;
    }
    try {
      return await watch(client, io, { interval, workersWanted, json: values.json === true, once: values.once === true });
    } finally {
      client.close();
    }
  });
}

/** The sampling loop; resolves with the exit code. */
async function watch(client, io, { interval, workersWanted, json, once }) {
  const { Screen } = require('./screen');
  let quit = false;
  let wake = () => {};
  const stop = () => {
    quit = true;
    wake();
  };
  const tty = !json && !once && io.stdout.isTTY === true;
  let last = null;
  const screen = tty ? new Screen(io.stdout, io.stdin ?? process.stdin, { onQuit: stop, onResize: () => last && screen.draw(last()) }) : null;
  const size = () => (screen ? screen.size : { columns: io.stdout.columns || 100, rows: Infinity });
  const wanted = () => workersWanted ?? (screen ? Math.min(500, screen.size.rows) : 10);
  const sample = () => client.request('top', { workers: wanted(), alarms: 5 });
  const sleep = (ms) =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });

  screen?.enter();
  try {
    let prev = await sample();
    if (screen) {
      const first = prev;
      last = () => frame(null, first, { ...size(), interval });
      screen.draw(last());
    }
    while (!quit) {
      await sleep(interval);
      if (quit) break;
      const cur = await sample();
      const before = prev;
      if (json) io.stdout.write(`${JSON.stringify(record(before, cur))}\n`);
      else if (screen) {
        last = () => frame(before, cur, { ...size(), interval });
        screen.draw(last());
      } else io.stdout.write(`${frame(before, cur, { ...size(), interval }).join('\n')}\n\n`);
      prev = cur;
      if (once) break;
    }
    return EXIT.OK;
  } catch (err) {
    screen?.leave();
    io.stderr.write(`durable-workers top: ${err.message}\n`);
    return EXIT.FAILED;
  } finally {
    screen?.leave();
  }
}

module.exports = { name: 'top', summary: 'a live view of a served directory: calls/s, latency, busiest workers, alarms, shards', help, run, EXIT };
