'use strict';
// The shop over HTTP: a plain node:http server in front of the durable host.
//
//   GET    /cart/:id               the cart
//   POST   /cart/:id/items         add { sku, qty, price }   (price in cents)
//   DELETE /cart/:id/items/:sku    remove a product
//   POST   /cart/:id/checkout      place the order
//   GET    /cart/:id/orders        past orders, newest first
//
// The server holds no state of its own and takes no locks: each request is one
// call on the customer's Cart, and the worker's mailbox puts concurrent calls
// for one customer in order. A 2xx response means the change is on disk.
const http = require('node:http');
const { open } = require('durable-workers');
const { Cart } = require('./cart');
const { MAX_BODY, answerFor, bodyTooLarge, parseBody, errorBody: error } = require('./http-errors');

/**
 * Opens the durable host in `dir` and serves the shop on 127.0.0.1.
 * @param {{ port?: number } & import('durable-workers').OpenOptions} options
 *   `port` 0 (the default) takes a free one; anything else is passed to `open()`
 *   (`durability`, `maxLive`, ...).
 * @returns {Promise<{ url: string, host: import('durable-workers').Host, close(): Promise<void> }>}
 */
async function startServer({ dir, port = 0, ...openOptions }) {
  const host = await open({ dir, ...openOptions });
  const server = http.createServer((req, res) => {
    handle(host, req, res).catch((err) => fail(res, err));
  });
  // The load driver keeps its connections open between journeys; the default
  // 5 s would have it reconnecting mid-run for no reason.
  server.keepAliveTimeout = 30_000;

  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(undefined));
    });
  } catch (err) {
    await host.close();
    throw err;
  }
  // Listening on a TCP port, so the address is an AddressInfo, not a pipe's name.
  const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;

  let closing = null;
  /** Stops taking requests, lets those in flight finish, then closes the host. */
  function close() {
    closing ??= (async () => {
      await new Promise((resolve) => {
        server.close(resolve);
        server.closeIdleConnections();
      });
      await host.close();
    })();
    return closing;
  }
  return { url, host, close };
}

/**
 * One request: one call on the customer's Cart.
 * @param {import('durable-workers').Host} host
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse} res
 */
async function handle(host, req, res) {
  const { pathname } = new URL(req.url ?? '/', 'http://shop');
  // Split before decoding, so an id may hold an encoded '/'.
  const parts = pathname.split('/').slice(1).map(decodeURIComponent);
  if (parts[0] !== 'cart' || parts.length < 2) return send(res, 404, error('NOT_FOUND', `no route for ${pathname}`));
  const cart = host.get(Cart, parts[1]);
  const route = `${req.method} ${parts
    .slice(2)
    .join('/')
    .replace(/^items\/.*/, 'items/:sku')}`;

  switch (route) {
    case 'GET ':
      return send(res, 200, await cart.browse());
    case 'POST items':
      return send(res, 200, await cart.add(await readJson(req)));
    case 'DELETE items/:sku':
      return send(res, 200, await cart.remove(parts.slice(3).join('/')));
    case 'POST checkout':
      return send(res, 201, await cart.checkout());
    case 'GET orders':
      return send(res, 200, await cart.orders());
    default:
      return send(res, 404, error('NOT_FOUND', `no route for ${req.method} ${pathname}`));
  }
}

/**
 * Reads a JSON body, refusing anything that is not a small JSON object.
 * @param {http.IncomingMessage} req
 * @returns {Promise<Record<string, any>>}
 */
function readJson(req) {
  // Events rather than `for await`: an async iterator makes a few promises
  // and listeners a request, for a body that fits one chunk.
  return new Promise((resolve, reject) => {
    let size = 0;
    /** @type {Buffer[]} */
    const chunks = [];
    /** @param {Buffer} chunk */
    const onData = (chunk) => {
      size += chunk.length;
      if (size <= MAX_BODY) return void chunks.push(chunk);
      req.off('data', onData);
      req.resume();
      reject(bodyTooLarge());
    };
    req.on('data', onData);
    req.once('error', reject);
    req.once('end', () => {
      if (size > MAX_BODY) return;
      try {
        resolve(parseBody(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/**
 * Answers with the error's status and code.
 * @param {http.ServerResponse} res
 * @param {any} err whatever was thrown
 */
function fail(res, err) {
  const { status, code } = answerFor(err);
  if (status === 500) console.error(err);
  if (res.headersSent) return res.destroy();
  if (status === 503) res.setHeader('retry-after', '1');
  send(res, status, error(code, err?.message ?? String(err)));
}

/**
 * @param {http.ServerResponse} res
 * @param {number} status
 * @param {unknown} body sent as JSON
 */
function send(res, status, body) {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

module.exports = { startServer };
