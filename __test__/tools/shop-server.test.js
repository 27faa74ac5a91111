'use strict';
// The shop example's HTTP server (examples/shop/server.js) on what a client
// can send it: a good item, a body that is not JSON or not an object, and a
// body past MAX_BODY. Each is answered with its status and code, and the
// server goes on answering.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startServer } = require('../../examples/shop/server');
const { MAX_BODY } = require('../../examples/shop/http-errors');

/** One request; resolves with { status, body } (body parsed as JSON). */
async function request(url, method, body) {
  const res = await fetch(url, { method, body, headers: body === undefined ? {} : { 'content-type': 'application/json' } });
  return { status: res.status, body: await res.json() };
}

test('the shop server answers a bad or oversized body with its code and keeps serving', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-shop-http-'));
  const server = await startServer({ dir: path.join(dir, 'data') });
  t.teardown(async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const items = `${server.url}/cart/ada/items`;

  const added = await request(items, 'POST', JSON.stringify({ sku: 'tea', qty: 2, price: 350 }));
  t.is(added.status, 200);
  t.is(added.body.total, 700);

  const notJson = await request(items, 'POST', '{"sku": ');
  t.deepEqual([notJson.status, notJson.body.error.code], [400, 'BAD_JSON']);
  const notObject = await request(items, 'POST', '[1, 2]');
  t.deepEqual([notObject.status, notObject.body.error.code], [400, 'BAD_JSON']);

  // Past the limit in many chunks, as a client streaming a large body sends it.
  const big = JSON.stringify({ sku: 'x'.repeat(MAX_BODY), qty: 1, price: 1 });
  const tooLarge = await request(items, 'POST', big);
  t.deepEqual([tooLarge.status, tooLarge.body.error.code], [413, 'BODY_TOO_LARGE']);

  const cart = await request(`${server.url}/cart/ada`, 'GET');
  t.is(cart.status, 200);
  t.deepEqual(cart.body.items, [{ sku: 'tea', qty: 2, price: 350 }], 'no refused body changed the cart');
});
