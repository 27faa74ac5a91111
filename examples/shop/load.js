'use strict';
// A load driver for the shop: customers shopping at once, over HTTP.
//
// Each customer runs journeys back to back, one call at a time, the way a
// person with a browser would: browse, add three products, check out, browse
// again. Six calls, four of them writes (three adds and the checkout, which
// also reserves stock with each product's Inventory). Customers run
// concurrently; that is where the load comes from.
const http = require('node:http');

/** The products on sale: sku → price in cents. */
const CATALOG = new Map([
  ['apple', 45],
  ['bread', 320],
  ['cheese', 675],
  ['coffee', 899],
  ['eggs', 289],
  ['honey', 540],
  ['lemon', 60],
  ['milk', 119],
  ['olives', 385],
  ['pasta', 149],
  ['rice', 210],
  ['tea', 455],
]);
const SKUS = [...CATALOG.keys()];

/** Calls per journey: browse, 3 × add, checkout, browse. */
const CALLS_PER_JOURNEY = 6;

/**
 * Drives the shop at `url` until `seconds` have passed or `journeys` are done
 * (whichever is given; journeys wins when both are).
 *
 * @param {object} options
 * @param {string} options.url the server's base URL
 * @param {{ stats(): { commits: number, syncs: number } }} options.host the durable host behind it, for its counters
 * @param {number} [options.customers=32] customers shopping at once
 * @param {number} [options.seconds=10] how long to run
 * @param {number} [options.journeys] run exactly this many journeys instead
 * @param {(progress: Progress) => void} [options.onProgress] told how far the run is, about
 *   four times a second and once at the end; drawing it is the caller's business
 * @returns {Promise<LoadResult>}
 */
async function runLoad({ url, host, customers = 32, seconds = 10, journeys, onProgress }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: customers });
  const client = new Client(url, agent);
  /** @type {number[]} journey times, ms */
  const latencies = [];
  /**
   * Acknowledged checkouts per customer, and the units they reserved: what verify() expects on disk.
   * @type {Map<string, number>}
   */
  const checkouts = new Map();
  let units = 0;

  const before = host.stats();
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let tickets = journeys ?? Infinity;
  const more = () => (journeys === undefined ? performance.now() < deadline : tickets-- > 0);
  /** @type {unknown} the first error, which stops every customer */
  let failure = null;

  /** @param {string} id */
  async function customer(id) {
    let done = 0;
    checkouts.set(id, done);
    while (failure === null && more()) {
      const t0 = performance.now();
      const order = await journey(client, id);
      latencies.push(performance.now() - t0);
      checkouts.set(id, ++done);
      for (const item of order.items) units += item.qty;
    }
  }

  const stopProgress = tick(onProgress, start, () => latencies.length);
  try {
    const runs = [];
    for (let i = 1; i <= customers; i++) {
      // One failure stops every customer after its current journey, so the
      // run ends with the first error rather than a screen of the same one.
      runs.push(customer(`customer-${i}`).catch((err) => (failure ??= err)));
    }
    await Promise.all(runs);
  } finally {
    stopProgress();
    agent.destroy();
  }
  if (failure !== null) throw failure;

  const elapsed = (performance.now() - start) / 1000;
  const after = host.stats();
  latencies.sort((a, b) => a - b);
  const done = latencies.length;
  return {
    journeys: done,
    seconds: elapsed,
    journeysPerSec: done / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    callsPerSec: (done * CALLS_PER_JOURNEY) / elapsed,
    commits: after.commits - before.commits,
    syncs: after.syncs - before.syncs,
    checkouts,
    units,
  };
}

/**
 * One customer's journey. Checks what the server says as it goes: a shop that
 * answered quickly and wrongly would make the figures meaningless.
 * @param {Client} client
 * @param {string} id the customer
 * @returns {Promise<{ items: { sku: string, qty: number, price: number }[], total: number }>} the order
 */
async function journey(client, id) {
  const path = `/cart/${encodeURIComponent(id)}`;
  await client.request('GET', path);

  let expected = 0;
  for (const sku of pickThree()) {
    const qty = 1 + Math.floor(Math.random() * 3);
    const price = /** @type {number} */ (CATALOG.get(sku));
    expected += qty * price;
    await client.request('POST', `${path}/items`, { sku, qty, price });
  }

  /** @type {{ items: { sku: string, qty: number, price: number }[], total: number }} */
  const order = await client.request('POST', `${path}/checkout`);
  if (order.total !== expected) {
    throw new Error(`${id}: checkout charged ${order.total} cents, the cart held ${expected}`);
  }
  const cart = await client.request('GET', path);
  if (cart.items.length !== 0) throw new Error(`${id}: the cart still holds ${cart.items.length} items after checkout`);
  return order;
}

/** A minimal JSON client over one keep-alive agent. */
class Client {
  /**
   * @param {string} base the server's base URL
   * @param {http.Agent} agent
   */
  constructor(base, agent) {
    this.base = new URL(base);
    this.agent = agent;
  }

  /**
   * Sends a request; resolves with the parsed body of a 2xx, rejects with the server's error otherwise.
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body] sent as JSON
   * @returns {Promise<any>} the parsed body, whatever shape the route answers with
   */
  request(method, path, body) {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.base.hostname,
          port: this.base.port,
          method,
          path,
          agent: this.agent,
          headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          /** @type {Buffer[]} */
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            let parsed;
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              return reject(new Error(`${method} ${path}: HTTP ${res.statusCode} with a body that is not JSON`));
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) return resolve(parsed);
            const { code, message } = parsed.error ?? {};
            reject(Object.assign(new Error(`${method} ${path}: HTTP ${res.statusCode} ${code}: ${message}`), { code, status: res.statusCode }));
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }
}

/** Three different products, at random. */
function pickThree() {
  const picked = new Set();
  while (picked.size < 3) picked.add(SKUS[Math.floor(Math.random() * SKUS.length)]);
  return picked;
}

/**
 * Nearest-rank percentile of sorted values.
 * @param {number[]} sorted
 * @param {number} p 0 … 1
 */
function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

/**
 * Calls `onProgress` every 250 ms while the run lasts, and once more when it
 * stops, so a bar ends at where the run ended.
 * @param {((progress: Progress) => void) | undefined} onProgress
 * @param {number} start `performance.now()` at the start
 * @param {() => number} done journeys completed so far
 * @returns {() => void} stops it
 */
function tick(onProgress, start, done) {
  if (onProgress === undefined) return () => {};
  const report = () => onProgress({ journeys: done(), seconds: (performance.now() - start) / 1000 });
  const timer = setInterval(report, 250);
  // The load's own sockets keep the process alive; the ticker must not.
  timer.unref();
  return () => {
    clearInterval(timer);
    report();
  };
}

/**
 * @typedef {object} Progress
 * @property {number} journeys journeys completed so far
 * @property {number} seconds since the load started
 */

/**
 * @typedef {object} LoadResult
 * @property {number} journeys journeys completed
 * @property {number} seconds wall time of the run
 * @property {number} journeysPerSec
 * @property {number} p50 median journey latency, ms
 * @property {number} p99 99th-percentile journey latency, ms
 * @property {number} callsPerSec HTTP calls per second (six per journey)
 * @property {number} commits worker commits during the run (`host.stats()`)
 * @property {number} syncs device syncs during the run (`host.stats()`)
 * @property {Map<string, number>} checkouts acknowledged checkouts per customer id
 * @property {number} units units reserved by those checkouts, all products together
 */

module.exports = { runLoad, CALLS_PER_JOURNEY };
