'use strict';
// The shop on Cloudflare Durable Objects (and a local workerd): the classes of
// examples/shop/cart.js, unchanged, behind a Worker's fetch handler with the
// routes and JSON answers of examples/shop/server.js:
//
//   GET    /cart/:id               the cart
//   POST   /cart/:id/items         add { sku, qty, price }   (price in cents)
//   DELETE /cart/:id/items/:sku    remove a product
//   POST   /cart/:id/checkout      place the order
//   GET    /cart/:id/orders        past orders, newest first
//
//   npx durable-workers workerd examples/cloudflare/shop.js --port 8787 --dir .data/shop
//
// Each Cart and each Inventory is a Durable Object (durable-workers workerd
// makes one namespace per exported class). As on Node, a 2xx answer means the
// change is stored: workerd's output gate holds the response until the
// object's writes are confirmed.
const { hostOf } = require('durable-workers/cloudflare');
const { Cart, Inventory } = require('../shop/cart');
// The same answers to errors and bodies as the Node server.
const { MAX_BODY, answerFor, bodyTooLarge, parseBody, errorBody: error } = require('../shop/http-errors');

async function fetch(request, env) {
  try {
    return await handle(request, env);
  } catch (err) {
    return fail(err);
  }
}

async function handle(request, env) {
  const { pathname } = new URL(request.url);
  // Split before decoding, so an id may hold an encoded '/'.
  const parts = pathname.split('/').slice(1).map(decodeURIComponent);
  if (parts[0] !== 'cart' || parts.length < 2) return send(404, error('NOT_FOUND', `no route for ${pathname}`));
  const cart = hostOf(env).get(Cart, parts[1]);
  const route = `${request.method} ${parts
    .slice(2)
    .join('/')
    .replace(/^items\/.*/, 'items/:sku')}`;
  switch (route) {
    case 'GET ':
      return send(200, await cart.browse());
    case 'POST items':
      return send(200, await cart.add(await readJson(request)));
    case 'DELETE items/:sku':
      return send(200, await cart.remove(parts.slice(3).join('/')));
    case 'POST checkout':
      return send(201, await cart.checkout());
    case 'GET orders':
      return send(200, await cart.orders());
    default:
      return send(404, error('NOT_FOUND', `no route for ${request.method} ${pathname}`));
  }
}

async function readJson(request) {
  const text = await request.text();
  if (new TextEncoder().encode(text).length > MAX_BODY) throw bodyTooLarge();
  return parseBody(text);
}

function fail(err) {
  const { status, code } = answerFor(err);
  if (status === 500) console.error(err);
  const res = send(status, error(code, err?.message ?? String(err)));
  if (status === 503) res.headers.set('retry-after', '1');
  return res;
}

function send(status, body) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

module.exports = { Cart, Inventory, fetch };
