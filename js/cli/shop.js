'use strict';
// `durable-workers shop`: the shop example under load (examples/shop), the
// same run and the same figures as `npm run shop`, with a progress bar on a
// terminal. The run itself is examples/shop/run.js's runShop(); this file only
// chooses the directory and draws.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parse, withUsage, intOption, UsageError } = require('./args');

const help = `usage: durable-workers shop [--customers <n>] [--seconds <s>] [--journeys <j>] [--shards <k>] [--dir <dir>] [--json]

Runs the shop example: an HTTP server over durable workers (a Cart per
customer, an Inventory per product) and <n> customers shopping at once, each
journey six calls (browse, add three items, check out, browse), four of them
writes. Prints journeys/s, latency, calls/s and commits, then opens the
directory again and checks every acknowledged order is on disk.

A progress bar is drawn on stderr when stdout and stderr are terminals;
piped or in CI there is none, and no escape codes.

  --customers <n>   customers shopping at once (default 32)
  --seconds <s>     how long to run (default 10)
  --journeys <j>    run exactly <j> journeys instead of for a time
  --shards <k>      run Cart and Inventory on <k> worker threads (default: none)
  --dir <dir>       keep the data in <dir> (absent or empty) for \`durable-workers
                    inspect\`; default: a temporary directory, removed afterwards
  --json            print the figures as one JSON object

exit codes:
  0  the run finished and every acknowledged order was found on disk
  1  the run failed (an error answer) or the check found a difference
  2  usage error`;

/**
 * `shop [--customers N] [--seconds S] [--journeys J] [--shards K] [--dir D] [--json]`.
 * @param {string[]} args the arguments after `shop`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, {
      customers: { type: 'string' },
      seconds: { type: 'string' },
      journeys: { type: 'string' },
      shards: { type: 'string' },
      dir: { type: 'string' },
      json: { type: 'boolean' },
    });
    if (positionals.length > 0) throw new UsageError(`shop takes no arguments (got ${positionals.join(' ')})`);
    const options = {
      customers: intOption(values, 'customers') ?? 32,
      seconds: secondsOption(values.seconds),
      journeys: intOption(values, 'journeys'),
      shards: intOption(values, 'shards'),
    };
    const shop = loadShop();
    if (shop === null) {
      io.stderr.write('durable-workers shop: the shop example (examples/shop) is not installed with this copy of durable-workers\n');
      return 1;
    }

    // A directory we made is ours to remove; one the user named is kept, and
    // must not hold anything yet (the check counts every order in it).
    let dir;
    let temporary = false;
    if (values.dir !== undefined) {
      dir = path.resolve(values.dir);
      if (fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0)) {
        throw new UsageError(`--dir ${values.dir}: not an empty directory; the shop needs a fresh one`);
      }
    } else {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-workers-shop-'));
      temporary = true;
    }

    const say = values.json ? () => {} : (/** @type {string} */ text) => io.stdout.write(`${text}\n`);
    const bar = values.json ? null : progressBar(io, options);
    try {
      say(`Shop on ${temporary ? 'a temporary directory' : dir} (one SQLite file per worker, every commit synced).`);
      const { load, verified } = await shop.runShop({
        dir,
        ...options,
        onListening: (url) => {
          say(shop.listening(url, options));
          bar?.start();
        },
        onProgress: (p) => bar?.update(p),
        onMeasured: (r) => {
          bar?.stop();
          say(`\n${shop.formatFigures(r)}\n`);
        },
      });
      if (values.json) io.stdout.write(`${JSON.stringify(toJson(shop, options, load, verified), null, 2)}\n`);
      else say(shop.verifiedLine(verified, load));
      return 0;
    } catch (err) {
      bar?.stop();
      // An answer from the server or a failed check explains itself; anything
      // else is a bug, and its stack says where.
      const expected = err?.status !== undefined || err instanceof shop.VerificationError || typeof err?.code === 'string';
      io.stderr.write(`durable-workers shop: ${expected ? err.message : (err?.stack ?? err)}\n`);
      return 1;
    } finally {
      if (temporary) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

/** `--seconds`: any number above 0 (a fraction is fine for a quick look). */
function secondsOption(text) {
  if (text === undefined) return 10;
  const n = Number(text);
  if (text.trim() === '' || !(n > 0) || !Number.isFinite(n)) throw new UsageError(`--seconds must be a number above 0 (got ${JSON.stringify(text)})`);
  return n;
}

/**
 * The shop's runner, or null when this copy of the package was installed
 * without its examples.
 * @returns {typeof import('../../examples/shop/run') | null}
 */
function loadShop() {
  const file = path.join(__dirname, '..', '..', 'examples', 'shop', 'run.js');
  if (!fs.existsSync(file)) return null;
  return require(file);
}

/**
 * A cli-progress bar on stderr, or null when it would not be seen: stdout or
 * stderr is not a terminal (piped, redirected, CI), or TERM is dumb. Filled by
 * time for a timed run and by journeys for `--journeys`.
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @param {{ seconds: number, journeys?: number }} options
 */
function progressBar(io, { seconds, journeys }) {
  const tty = (/** @type {any} */ s) => s.isTTY === true;
  if (!tty(io.stdout) || !tty(io.stderr) || process.env.TERM === 'dumb') return null;
  const cliProgress = require('cli-progress');
  const byTime = journeys === undefined;
  // Tenths of a second, so a 2 s run still moves the bar smoothly.
  const total = byTime ? Math.round(seconds * 10) : journeys;
  const bar = new cliProgress.SingleBar(
    {
      stream: io.stderr,
      format: '  {bar} {percentage}% | {elapsed} s | {done} journeys | {rate} journeys/s',
      clearOnComplete: true,
      hideCursor: false,
      fps: 8,
    },
    cliProgress.Presets.shades_classic,
  );
  let running = false;
  return {
    start() {
      bar.start(total, 0, { elapsed: '0.0', done: 0, rate: 0 });
      running = true;
    },
    /** @param {{ journeys: number, seconds: number }} p */
    update(p) {
      if (!running) return;
      const value = byTime ? Math.min(total, Math.round(p.seconds * 10)) : Math.min(total, p.journeys);
      bar.update(value, { elapsed: p.seconds.toFixed(1), done: p.journeys.toLocaleString('en-US'), rate: Math.round(p.journeys / p.seconds).toLocaleString('en-US') });
    },
    stop() {
      if (!running) return;
      running = false;
      bar.stop();
    },
  };
}

/** The figures for scripts: numbers, not formatted text; `shards: 0` is in process. */
function toJson(shop, options, load, verified) {
  return {
    customers: options.customers,
    shards: options.shards ?? 0,
    journeys: load.journeys,
    seconds: load.seconds,
    journeysPerSec: load.journeysPerSec,
    latencyMs: { p50: load.p50, p99: load.p99 },
    callsPerJourney: shop.CALLS_PER_JOURNEY,
    callsPerSec: load.callsPerSec,
    commits: load.commits,
    syncs: load.syncs,
    commitsPerJourney: load.journeys ? load.commits / load.journeys : null,
    verified: { customers: load.checkouts.size, orders: verified.orders, units: verified.units },
  };
}

module.exports = { name: 'shop', summary: 'the shop example under load: journeys/s, latency, commits, checked on disk', help, run };
