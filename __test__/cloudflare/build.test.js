'use strict';
// The generated entry of buildWorkerd, run on a real workerd: a workerName
// with '-', a top-level `fetch` export as the handler, and a module Node cannot
// import (its classes are then read from the file, not every capitalised export).
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildWorkerd, startWorkerd, freePort } = require('../../js/cloudflare');

const MODULE = `
import { DurableWorker } from 'durable-workers';
import { hostOf, handleCall } from 'durable-workers/cloudflare';

export class ShopCart extends DurableWorker {
  static workerName = 'shop-cart';
  add(x) {
    const items = this.state.get('items') ?? [];
    items.push(x);
    this.state.set('items', items);
    return items.length;
  }
}

export const Settings = { currency: 'EUR' };

export async function fetch(request, env) {
  const url = new URL(request.url);
  if (url.pathname === '/call') return handleCall(request, env, [ShopCart]);
  if (url.pathname === '/add') return Response.json({ n: await hostOf(env).get(ShopCart, 'c1').add(Settings.currency) });
  return new Response('ok');
}
`;

/** Builds MODULE in a fresh directory (with `durable-workers` resolvable in Node, or not) and starts workerd on it. */
async function deploy(t, importable) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-build-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  if (importable) {
    fs.mkdirSync(path.join(dir, 'node_modules'));
    fs.symlinkSync(path.join(__dirname, '..', '..'), path.join(dir, 'node_modules', 'durable-workers'), 'dir');
  }
  const file = path.join(dir, 'shop.mjs');
  fs.writeFileSync(file, MODULE);
  const port = await freePort();
  const warnings = [];
  const warn = console.warn;
  console.warn = (...a) => warnings.push(a.join(' '));
  let built;
  try {
    built = await buildWorkerd({ module: file, outDir: path.join(dir, 'build'), dataDir: path.join(dir, 'data'), port });
  } finally {
    console.warn = warn;
  }
  const w = await startWorkerd({ config: built.config, port });
  t.teardown(() => w.stop());
  const add = async () => (await (await fetch(`${w.url}/add`)).json()).n;
  return { built, warnings, add };
}

test('a workerName with "-" is exported under that name, and a top-level fetch export handles HTTP', async (t) => {
  t.timeout(60_000);
  const { built, warnings, add } = await deploy(t, true);
  t.deepEqual(warnings, []);
  t.deepEqual(built.classes, [{ exportName: 'ShopCart', name: 'shop-cart' }]);
  t.true(fs.readFileSync(built.config, 'utf8').includes('className = "shop-cart"'));
  t.is(await add(), 1);
  t.is(await add(), 2);
});

test('a module Node cannot import: the error is logged, and only the classes it declares become namespaces (not a capitalised object)', async (t) => {
  t.timeout(60_000);
  const { built, warnings, add } = await deploy(t, false);
  t.true(
    warnings.some((w) => w.includes('could not be imported in Node')),
    warnings.join('\n'),
  );
  t.deepEqual(built.classes, [{ exportName: 'ShopCart', name: 'ShopCart' }]);
  t.is(await add(), 1);
  t.is(await add(), 2);
});

test('startWorkerd is not fooled by another server on its port: it waits for this deployment’s token, and reports the port taken', async (t) => {
  t.timeout(60_000);
  const http = require('node:http');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-build-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // Something else answers every path on the port, the ping included.
  const squatter = http.createServer((req, res) => res.end('hello from someone else'));
  await new Promise((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => squatter.close(resolve)));
  const { port } = squatter.address();
  const file = path.join(dir, 'shop.mjs');
  fs.writeFileSync(file, MODULE);
  const built = await buildWorkerd({ module: file, outDir: path.join(dir, 'build'), dataDir: path.join(dir, 'data'), port });
  const err = await t.throwsAsync(startWorkerd({ config: built.config, port, startTimeoutMs: 10_000 }));
  t.is(err.code, 'ERR_DURABLE_IO');
  t.regex(err.message, /something else answers on http:\/\/127\.0\.0\.1:\d+/);
});
