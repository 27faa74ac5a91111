'use strict';
// The shop on workerd (examples/cloudflare/shop.js: cart.js unchanged behind a
// Worker's fetch handler) answers a journey exactly as the Node shop server
// does: the same statuses and the same JSON, errors included.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildWorkerd, startWorkerd, freePort } = require('durable-workers/cloudflare');
const { startServer } = require('../../examples/shop/server');

const JOURNEY = [
  ['GET', '/cart/ann'],
  ['POST', '/cart/ann/items', { sku: 'apple', qty: 2, price: 150 }],
  ['POST', '/cart/ann/items', { sku: 'apple', qty: 1, price: 150 }],
  ['POST', '/cart/ann/items', { sku: 'pear', qty: 1, price: 99 }],
  ['POST', '/cart/ann/items', { sku: 'plum', qty: 0, price: 1 }],
  ['POST', '/cart/ann/items', '[1]'],
  ['POST', '/cart/ann/items', 'not json'],
  ['DELETE', '/cart/ann/items/pear'],
  ['POST', '/cart/ann/checkout'],
  ['POST', '/cart/ann/checkout'],
  ['POST', '/cart/ann/items', { sku: 'fig', qty: 3, price: 10 }],
  ['POST', '/cart/ann/checkout'],
  ['GET', '/cart/ann/orders'],
  ['GET', '/cart/ann'],
  ['GET', '/nope'],
];

async function journey(url) {
  const out = [];
  for (const [method, p, body] of JOURNEY) {
    const res = await fetch(url + p, { method, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    // placedAt is the clock's; everything else must match.
    out.push([method, p, res.status, JSON.parse(await res.text(), (k, v) => (k === 'placedAt' ? typeof v : v))]);
  }
  return out;
}

test('the shop answers the same journey identically on workerd and on Node', async (t) => {
  t.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-shop-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const { config, classes } = await buildWorkerd({
    module: path.join(__dirname, '..', '..', 'examples', 'cloudflare', 'shop.js'),
    outDir: path.join(dir, 'build'),
    dataDir: path.join(dir, 'data'),
    port,
  });
  t.deepEqual(classes.map((c) => c.name).sort(), ['Cart', 'Inventory']);
  const workerd = await startWorkerd({ config, port });
  t.teardown(() => workerd.stop());
  const node = await startServer({ dir: path.join(dir, 'node') });
  t.teardown(() => node.close());
  const [onWorkerd, onNode] = [await journey(workerd.url), await journey(node.url)];
  t.deepEqual(onWorkerd, onNode);
  t.deepEqual(
    onNode.map((r) => r[2]),
    [200, 200, 200, 200, 400, 400, 400, 200, 201, 400, 200, 201, 200, 200, 404],
  );
});
