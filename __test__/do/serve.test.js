'use strict';
// `serve` (js/do/serve.js, http.js) and `durable-workers serve`
// (js/cli/serve.js): a Wrangler project (__test__/fixtures/do-app) answered
// over real HTTP, in this process and as a child process.
//
// The in-process tests are serial: `cloudflare:workers` exports one `env`
// per process, and two serves at once would share it.
const test = require('ava');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { tmpDir } = require('../helpers/tmp');
const { startServe, APP } = require('../helpers/serve-cli');
const { serve } = require('../../js/do/serve');
const { importEntry } = require('../../js/do/entry');
const { registerCloudflareModules } = require('../../js/do/register');
const { main } = require('../../js/cli');

const ENTRY = path.join(APP, 'src', 'index.mjs');

/** serve() on the fixture app, port 0, closed when the test ends. */
async function start(t, o = {}) {
  const logged = [];
  const s = await serve({ cwd: APP, dir: o.dir ?? path.join(tmpDir(t), 'data'), port: 0, log: (line) => logged.push(line), ...o });
  t.teardown(() => s.close());
  return { ...s, logged };
}

/** A project in a temporary directory: a wrangler.jsonc for the fixture's entry with `config` over the fixture's own. */
function project(t, config) {
  const dir = tmpDir(t);
  const base = {
    name: 'do-app',
    main: ENTRY,
    compatibility_date: '2026-11-01',
    durable_objects: { bindings: [{ name: 'LEDGER', class_name: 'Ledger' }] },
    migrations: [{ tag: 'v1', new_sqlite_classes: ['Ledger'] }],
  };
  fs.writeFileSync(path.join(dir, 'wrangler.jsonc'), JSON.stringify({ ...base, ...config }));
  return dir;
}

const post = (url, body, headers) => fetch(url, { method: 'POST', body, headers });

test.serial('port 0 reports the bound port; a write acknowledged over HTTP reads back, and is there after serve restarts on the directory', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const s = await start(t, { dir });
  t.not(s.port, 0);
  t.is(s.url, `http://127.0.0.1:${s.port}`);
  t.deepEqual(await (await post(`${s.url}/append/a`, 'first')).json(), { seq: 1 });
  t.deepEqual(await (await post(`${s.url}/append/a`, 'second')).json(), { seq: 2 });
  t.deepEqual(await (await post(`${s.url}/append/b`, 'other object')).json(), { seq: 1 });
  const rows = [
    { seq: 1, value: 'first' },
    { seq: 2, value: 'second' },
  ];
  t.deepEqual(await (await fetch(`${s.url}/entries/a`)).json(), { rows, last: 'second' });
  await s.close();
  const again = await start(t, { dir });
  t.deepEqual(await (await fetch(`${again.url}/entries/a`)).json(), { rows, last: 'second' });
});

test.serial('vars reach the handler env, the env of cloudflare:workers (the same namespaces) and the object', async (t) => {
  const s = await start(t);
  const res = await fetch(`${s.url}/vars/named`);
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { handler: 'hello', module: 'hello', sameNamespace: true, object: { greeting: 'hello', limits: { max: 3 }, name: 'named' } });
});

test.serial("a request's method, URL, headers and body reach the object's fetch through stub.fetch, and its Response comes back", async (t) => {
  const s = await start(t);
  const body = 'x'.repeat(200_000);
  const res = await post(`${s.url}/echo/e?q=1`, body, { 'x-test': 'yes' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { method: 'POST', url: `${s.url}/echo/e?q=1`, body, header: 'yes', name: 'e' });
});

test.serial('the status and each Set-Cookie header reach the client unjoined', async (t) => {
  const s = await start(t);
  const res = await fetch(`${s.url}/cookies/x`);
  t.is(res.status, 201);
  t.deepEqual(res.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
  t.is(await res.text(), 'two cookies');
});

test.serial('an error thrown by the app is a 500 with a short body; its message and stack go to the log, never to the client', async (t) => {
  const s = await start(t);
  const res = await fetch(`${s.url}/throw/x`);
  t.is(res.status, 500);
  const text = await res.text();
  t.is(text, 'Internal Server Error\n');
  t.is(s.logged.length, 1);
  t.regex(s.logged[0], /^GET \/throw\/x: Error: a secret detail that must not reach the client\n\s+at /);
});

/** A raw HTTP Upgrade request to `url`: the response, or the upgraded socket's 101 head. */
function upgradeRequest(url) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text, socket: res.socket }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode, headers: res.headers, text: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

test.serial("a WebSocket upgrade goes to the Worker's fetch: a 101 with webSocket completes the handshake; any other answer is written as HTTP", async (t) => {
  const s = await start(t);
  const up = await upgradeRequest(`${s.url}/room/r`);
  t.is(up.status, 101);
  t.is(up.headers.upgrade, 'websocket');
  // The fixture's handshake key gives RFC 6455's example accept value.
  t.is(up.headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  const refused = await upgradeRequest(`${s.url}/ws-refuse/x`);
  t.is(refused.status, 426);
  t.is(refused.headers['x-refused'], 'yes');
  t.is(refused.text, 'no sockets here');
  // The connection is closed after the answer.
  if (!refused.socket.destroyed) await new Promise((resolve) => refused.socket.once('close', resolve));
  t.true(refused.socket.destroyed);
});

test.serial('a response proxied from fetch() reaches the client decoded once: its encoding headers are dropped with the encoding', async (t) => {
  const zlib = require('node:zlib');
  const text = 'compressed '.repeat(200);
  const origin = http.createServer((req, res) => {
    res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' });
    res.end(zlib.gzipSync(text));
  });
  await new Promise((resolve) => origin.listen(0, '127.0.0.1', resolve));
  t.teardown(() => origin.close());
  const s = await start(t);
  const res = await fetch(`${s.url}/proxy?to=${encodeURIComponent(`http://127.0.0.1:${origin.address().port}/`)}`);
  t.is(res.headers.get('content-encoding'), null);
  t.is(await res.text(), text);
});

test.serial('a whole body goes out with its Content-Length; a body still producing goes out chunked, its head and first bytes at once', async (t) => {
  const s = await start(t);
  const whole = await fetch(`${s.url}/entries/len`);
  const text = await whole.text();
  t.is(whole.headers.get('content-length'), String(Buffer.byteLength(text)));
  t.is(whole.headers.get('transfer-encoding'), null);
  const started = Date.now();
  const res = await fetch(`${s.url}/stream/400`);
  t.true(Date.now() - started < 300, `the head came after ${Date.now() - started} ms`);
  t.is(res.headers.get('transfer-encoding'), 'chunked');
  t.is(res.headers.get('content-length'), null);
  const reader = res.body.getReader();
  t.is(new TextDecoder().decode((await reader.read()).value), 'head ');
  t.true(Date.now() - started < 350, 'the first chunk came before the stream ended');
  let rest = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
  t.is(rest, 'tail');
});

test.serial('close() lets a response in flight finish, stops listening, then releases the directory', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const s = await start(t, { dir });
  const res = await fetch(`${s.url}/stream/300`);
  t.is(res.status, 200); // the head is out: the request is in flight
  let closed = false;
  const closing = s.close().then(() => (closed = true));
  t.is(await res.text(), 'head tail');
  await closing;
  t.true(closed);
  await t.throwsAsync(fetch(`${s.url}/entries/a`)); // no longer listening
  const again = await start(t, { dir }); // the lock is released
  t.is((await fetch(`${again.url}/entries/a`)).status, 200);
});

test.serial('a bound class the entry does not export is refused with ERR_DURABLE_CONFIG naming the class and binding', async (t) => {
  const cwd = project(t, {
    durable_objects: { bindings: [{ name: 'GONE', class_name: 'Missing' }] },
    migrations: [{ tag: 'v1', new_sqlite_classes: ['Missing'] }],
  });
  const err = await t.throwsAsync(serve({ cwd, dir: path.join(cwd, 'data'), port: 0 }));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  t.regex(err.message, /does not export the class "Missing" that Durable Object binding "GONE"/);
  t.false(fs.existsSync(path.join(cwd, 'data')), 'nothing opened');
});

/**
 * A project whose entry is TypeScript: `src/index.ts` with `body` before its
 * Counter class, importing `src/step.ts` as `step` says (Wrangler projects
 * leave the extension out).
 */
function tsProject(t, body = [], step = './step') {
  const cwd = project(t, {
    main: 'src/index.ts',
    durable_objects: { bindings: [{ name: 'COUNTER', class_name: 'Counter' }] },
    migrations: [{ tag: 'v1', new_sqlite_classes: ['Counter'] }],
  });
  fs.mkdirSync(path.join(cwd, 'src'));
  fs.writeFileSync(path.join(cwd, 'src', 'step.ts'), 'export const step = (by: number): number => by * 1;\n');
  fs.writeFileSync(
    path.join(cwd, 'src', 'index.ts'),
    [
      "import { DurableObject } from 'cloudflare:workers';",
      `import { step } from '${step}';`,
      ...body,
      'interface Env { COUNTER: { getByName(name: string): { bump(by: number): Promise<number> } } }',
      'export class Counter extends DurableObject {',
      '  bump(by: number): number {',
      "    const n: number = ((this.ctx.storage.kv.get('n') as number | undefined) ?? 0) + step(by);",
      "    this.ctx.storage.kv.put('n', n);",
      '    return n;',
      '  }',
      '}',
      'export default {',
      '  async fetch(request: Request, env: Env): Promise<Response> {',
      "    return new Response(String(await env.COUNTER.getByName('a').bump(TWO)));",
      '  },',
      '};',
      '',
    ].join('\n'),
  );
  return cwd;
}

async function servesTwoThenFour(t, cwd) {
  const s = await serve({ cwd, dir: path.join(cwd, 'data'), port: 0 });
  t.teardown(() => s.close());
  t.is(await (await fetch(`${s.url}/`)).text(), '2');
  t.is(await (await fetch(`${s.url}/`)).text(), '4');
  t.deepEqual(fs.readdirSync(path.join(cwd, '.wrangler', 'tmp')), [], 'the compiled module is removed once imported');
}

test.serial(
  "a TypeScript entry runs as Wrangler builds it: compiled with esbuild, an import without its extension resolved, a package left an import resolved from the project's node_modules",
  async (t) => {
    const cwd = tsProject(t, ["import { two } from 'two-pkg';", 'const TWO: number = two;']);
    const pkg = path.join(cwd, 'node_modules', 'two-pkg');
    fs.mkdirSync(pkg, { recursive: true });
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'two-pkg', type: 'module', exports: './index.js' }));
    // Compiled in, it would be a copy: left an import, it is this file, once.
    fs.writeFileSync(path.join(pkg, 'index.js'), 'globalThis.twoPkgLoads = (globalThis.twoPkgLoads ?? 0) + 1;\nexport const two = 2;\n');
    await servesTwoThenFour(t, cwd);
    t.is(globalThis.twoPkgLoads, 1);
  },
);

test.serial("TypeScript that Node's type stripping refuses (an enum, a parameter property) is compiled too", async (t) => {
  const cwd = tsProject(t, ['enum Steps { One = 1, Two = 2 }', 'class Holder { constructor(readonly value: number) {} }', 'const TWO = new Holder(Steps.Two).value;']);
  await servesTwoThenFour(t, cwd);
});

test.serial('without esbuild a TypeScript entry is imported as it is where Node strips types, and refused naming both ways out where it cannot', async (t) => {
  const cwd = tsProject(t, ['const TWO: number = 2;'], './step.ts');
  const entry = path.join(cwd, 'src', 'index.ts');
  registerCloudflareModules();
  if (process.features.typescript) {
    t.is(typeof (await importEntry(entry, cwd, { esbuild: () => null })).Counter, 'function');
    return;
  }
  const err = await t.throwsAsync(importEntry(entry, cwd, { esbuild: () => null }));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  t.regex(err.message, /index\.ts is TypeScript, and Node v[\d.]+ cannot strip types: install esbuild \(npm install --save-dev esbuild\) to compile it, or use Node 22\.18 or later/);
});

test.serial('a TypeScript entry esbuild cannot compile is refused with its place', async (t) => {
  const cwd = tsProject(t, ['const TWO: number = ;']);
  const err = await t.throwsAsync(importEntry(path.join(cwd, 'src', 'index.ts'), cwd));
  t.is(err.code, 'ERR_DURABLE_CONFIG');
  t.regex(err.message, /^esbuild could not compile .*index\.ts: .*index\.ts:\d+:\d+: /);
  t.deepEqual(fs.readdirSync(path.join(cwd, '.wrangler', 'tmp')), [], 'nothing left behind');
});

test.serial('a second serve on a directory being served exits 3 (ERR_DURABLE_LOCKED)', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  await start(t, { dir });
  const second = await startServe(['--dir', dir, '--port', '0'], { t });
  t.is(second.url, null);
  t.deepEqual(await second.exited, { code: 3, signal: null });
  t.regex(second.stderr(), /ERR_DURABLE_LOCKED/);
});

test('the CLI prints "ready on <url>", answers, and exits 0 on SIGTERM', async (t) => {
  const dir = path.join(tmpDir(t), 'data');
  const s = await startServe(['--dir', dir, '--port', '0'], { t });
  t.regex(s.url ?? s.stderr(), /^http:\/\/127\.0\.0\.1:\d+$/);
  t.deepEqual(await (await post(`${s.url}/append/cli`, 'v')).json(), { seq: 1 });
  t.deepEqual(await (await fetch(`${s.url}/entries/cli`)).json(), { rows: [{ seq: 1, value: 'v' }], last: 'v' });
  s.child.kill('SIGTERM');
  t.deepEqual(await s.exited, { code: 0, signal: null });
  t.is(s.stdout(), `ready on ${s.url}\n`);
  t.is(s.stderr(), '');
});

test('the CLI logs a rejection nobody handles and goes on serving', async (t) => {
  const s = await startServe(['--dir', path.join(tmpDir(t), 'data'), '--port', '0'], { t });
  t.is(await (await fetch(`${s.url}/reject/x`)).text(), 'rejected');
  t.deepEqual(await (await post(`${s.url}/append/after`, 'v')).json(), { seq: 1 });
  s.child.kill('SIGTERM');
  t.deepEqual(await s.exited, { code: 0, signal: null });
  t.regex(s.stderr(), /Uncaught \(in promise\) Error: a rejection nobody handles/);
});

test('the CLI exits 1 naming the key and binding when the config binds kv_namespaces', async (t) => {
  const cwd = project(t, { kv_namespaces: [{ binding: 'CACHE', id: 'abc' }] });
  const s = await startServe(['--port', '0'], { cwd, t });
  t.is(s.url, null);
  t.deepEqual(await s.exited, { code: 1, signal: null });
  t.regex(s.stderr(), /ERR_DURABLE_CONFIG: .*wrangler\.jsonc cannot be served[\s\S]*"kv_namespaces" \("CACHE"\) is not supported/);
  t.false(fs.existsSync(path.join(cwd, '.data')), 'no directory was made');
});

test('usage errors exit 2 with the message and the help', async (t) => {
  for (const args of [['--port', '70000'], ['--port', 'x'], ['a.mjs', 'b.mjs'], ['--nope'], ['--max-open-files', '0'], ['--max-open-files', '1.5'], ['--max-open-files', '']]) {
    let err = '';
    const code = await main(['serve', ...args], { stdout: { write: () => {} }, stderr: { write: (s) => (err += s) } });
    t.is(code, 2, args.join(' '));
    t.regex(err, /usage: durable-workers serve/);
  }
});
