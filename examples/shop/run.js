#!/usr/bin/env node
'use strict';
// `npm run shop`: the shop under load, its figures, and a durability check.
//
// Starts the HTTP server on a fresh directory, has customers shop against it
// for a while, prints what it measured, then closes everything, opens the
// directory again from scratch and checks that every checkout the customers
// were told about is on disk.
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { open } = require('durable-workers');
const { Cart, Inventory } = require('./cart');
const { startServer } = require('./server');
const { runLoad, CALLS_PER_JOURNEY } = require('./load');

/** Relative to the current directory; emptied at the start of every run. */
const DATA_DIR = '.data/shop';

const USAGE = `Usage: node examples/shop/run.js [--customers N] [--seconds S] [--journeys J] [--shards K]

Runs the shop example: an HTTP server over durable workers (one Cart per
customer, one Inventory per product) with N customers shopping at once, each
journey being browse, add three items, check out, browse. The data goes
under ./.data/shop in the current directory, which is removed first.

  --customers N   customers shopping at once (default 32)
  --seconds S     how long to run (default 10)
  --journeys J    run exactly J journeys instead of for a time
  --shards K      run Cart and Inventory on K worker threads (default: none)
  -h, --help      this text`;

/**
 * Reads a flag as a positive number, or says which flag is wrong and why.
 * @param {string} name
 * @param {string} text
 * @param {{ integer: boolean }} kind
 */
function positive(name, text, { integer }) {
  const n = Number(text);
  if (text === undefined || text.trim() === '' || !(n > 0) || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} must be a ${integer ? 'whole ' : ''}number above 0, got ${JSON.stringify(text)}`);
  }
  return n;
}

class UsageError extends Error {}
class VerificationError extends Error {}

/** @param {string[]} argv */
function parse(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        customers: { type: 'string' },
        seconds: { type: 'string' },
        journeys: { type: 'string' },
        shards: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(/** @type {Error} */ (err).message);
  }
  return {
    help: values.help ?? false,
    customers: values.customers === undefined ? 32 : positive('customers', values.customers, { integer: true }),
    seconds: values.seconds === undefined ? 10 : positive('seconds', values.seconds, { integer: false }),
    journeys: values.journeys === undefined ? undefined : positive('journeys', values.journeys, { integer: true }),
    shards: values.shards === undefined ? undefined : positive('shards', values.shards, { integer: true }),
  };
}

/**
 * Runs the shop once: serves it over HTTP on `dir`, has `customers` shop for
 * `seconds` (or `journeys`), closes it, then opens `dir` again from scratch and
 * checks that every acknowledged checkout is on disk. `npm run shop` and
 * `durable-workers shop` are both this function with a different printer.
 *
 * @param {object} options
 * @param {string} options.dir an empty or absent directory: the check counts every order in it
 * @param {number} [options.customers=32] customers shopping at once
 * @param {number} [options.seconds=10] how long to run
 * @param {number} [options.journeys] run exactly this many journeys instead
 * @param {number} [options.shards] run Cart and Inventory on this many worker threads
 * @param {(url: string) => void} [options.onListening] the server is up, the load about to start
 * @param {(progress: import('./load').Progress) => void} [options.onProgress] about four times a second
 * @param {(load: import('./load').LoadResult) => void} [options.onMeasured] the load is over, the check about to start
 * @returns {Promise<ShopResult>}
 */
async function runShop({ dir, customers = 32, seconds = 10, journeys, shards, onListening, onProgress, onMeasured }) {
  // Orders from an earlier run would fail the check below for reasons that
  // have nothing to do with this one.
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new Error(`runShop: ${dir} is not empty; the shop needs a fresh directory`);
  // With shards the classes of cart.js run on worker threads; storage stays here.
  const server = await startServer({ dir, shards: shards === undefined ? undefined : { count: shards, module: require.resolve('./cart') } });
  /** @type {import('./load').LoadResult} */
  let load;
  try {
    onListening?.(server.url);
    load = await runLoad({ url: server.url, host: server.host, customers, seconds, journeys, onProgress });
  } finally {
    await server.close();
  }
  onMeasured?.(load);
  return { load, verified: await verify(dir, load) };
}

/**
 * @typedef {object} ShopResult
 * @property {import('./load').LoadResult} load what the load measured
 * @property {{ orders: number, units: number }} verified what the check found on disk
 */

async function main() {
  const opts = parse(process.argv.slice(2));
  if (opts.help) return console.log(USAGE);

  // Every run starts from nothing, so the figures and the check below are
  // about this run alone. (The directory is fixed, not a flag: a mistyped
  // flag should never be able to empty some other directory.)
  const dir = path.resolve(DATA_DIR);
  const shown = `./${DATA_DIR}`;
  const existed = fs.existsSync(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`${existed ? 'Removed' : 'Using'} ${shown} so this run starts fresh (one SQLite file per worker, every commit synced).`);

  const line = statusLine(process.stderr);
  const { load, verified } = await runShop({
    dir,
    customers: opts.customers,
    seconds: opts.seconds,
    journeys: opts.journeys,
    shards: opts.shards,
    onListening: (url) => console.log(listening(url, opts)),
    onProgress: line.draw,
    onMeasured: (r) => {
      line.clear();
      console.log(`\n${formatFigures(r)}\n`);
    },
  });
  console.log(verifiedLine(verified, load));
}

/**
 * "Shop listening on …; 32 customers shopping for 10 s..."
 * @param {string} url
 * @param {{ customers: number, seconds: number, journeys?: number }} run
 */
function listening(url, { customers, seconds, journeys }) {
  const what = journeys === undefined ? `for ${seconds} s` : `for ${journeys} journeys`;
  return `Shop listening on ${url}; ${plural(customers, 'customer')} shopping ${what}...`;
}

/**
 * The figures as label/value pairs, in the order they are printed.
 * @param {import('./load').LoadResult} r
 * @returns {[string, string][]}
 */
function figureRows(r) {
  return [
    ['journeys', `${fmt(r.journeys)} in ${r.seconds.toFixed(1)} s`],
    ['journeys/s', fmt(r.journeysPerSec)],
    ['latency p50 / p99', `${r.p50.toFixed(1)} ms / ${r.p99.toFixed(1)} ms per journey`],
    ['calls/s', `${fmt(r.callsPerSec)} (${CALLS_PER_JOURNEY} per journey, 4 of them writes)`],
    ['commits', fmt(r.commits)],
    ['syncs', fmt(r.syncs)],
    ['commits per journey', r.journeys ? (r.commits / r.journeys).toFixed(1) : '-'],
  ];
}

/**
 * The figures as an indented two-column block, no blank lines around it.
 * @param {import('./load').LoadResult} r
 */
function formatFigures(r) {
  const rows = figureRows(r);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n');
}

/**
 * @param {{ orders: number, units: number }} verified
 * @param {import('./load').LoadResult} load
 */
function verifiedLine(verified, load) {
  return `verified: ${fmt(verified.orders)} orders on disk, one for every acknowledged checkout of ${plural(load.checkouts.size, 'customer')}; ${fmt(verified.units)} units reserved, as ordered`;
}

/**
 * One status line rewritten in place on a terminal. When the output is piped
 * or logged there is no line to rewrite, and a line per tick would be noise,
 * so it shows nothing.
 * @param {NodeJS.WriteStream} stream
 */
function statusLine(stream) {
  if (!stream.isTTY) return { draw: () => {}, clear: () => {} };
  return {
    /** @param {import('./load').Progress} p */
    draw: (p) => stream.write(`\r\x1b[K  ${p.seconds.toFixed(1)} s  ${fmt(p.journeys)} journeys  ${fmt(p.journeys / p.seconds)} journeys/s`),
    clear: () => stream.write('\r\x1b[K'),
  };
}

/**
 * Opens the directory again, as a restarted server would, and compares what is
 * on disk with what the customers were told: each customer's orders must be
 * exactly its acknowledged checkouts, and the Inventories must hold exactly the
 * units those orders reserved.
 * @param {string} dir
 * @param {{ checkouts: Map<string, number>, units: number }} expected from the load
 * @returns {Promise<{ orders: number, units: number }>} what was found
 */
async function verify(dir, { checkouts, units }) {
  const host = await open({ dir });
  try {
    let total = 0;
    const wrong = [];
    for (const [id, expected] of checkouts) {
      const found = (await host.get(Cart, id).orders()).length;
      total += found;
      if (found !== expected) wrong.push(`${id}: ${found} orders on disk, ${expected} checkouts acknowledged`);
    }
    if (wrong.length > 0) throw new VerificationError(`verification failed:\n  ${wrong.join('\n  ')}`);

    let reserved = 0;
    for await (const sku of host.ids(Inventory)) reserved += (await host.get(Inventory, sku).status()).reserved;
    if (reserved !== units) throw new VerificationError(`verification failed: ${reserved} units reserved on disk, checkouts reserved ${units}`);
    return { orders: total, units: reserved };
  } finally {
    await host.close();
  }
}

/**
 * @param {number} n
 * @param {string} noun
 */
function plural(n, noun) {
  return `${fmt(n)} ${noun}${n === 1 ? '' : 's'}`;
}

/** @param {number} n */
function fmt(n) {
  return Math.round(n).toLocaleString('en-US');
}

if (require.main === module) {
  main().catch(fail);
}

/**
 * How `npm run shop` ends on an error: exit 2 for usage, 1 for anything else.
 * @param {any} err
 */
function fail(err) {
  if (err instanceof UsageError) {
    console.error(`${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  // An answer from the server or a failed check explains itself; anything
  // else is a bug, and its stack says where.
  const expected = err?.status !== undefined || err instanceof VerificationError;
  console.error(`shop failed: ${expected ? err.message : (err?.stack ?? err)}`);
  // Something may still hold the event loop (a socket, the host); the failure
  // has been reported, so do not wait for it.
  process.exit(1);
}

module.exports = { runShop, figureRows, formatFigures, verifiedLine, listening, VerificationError, CALLS_PER_JOURNEY };
