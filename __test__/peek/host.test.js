'use strict';
// The shared host over the Node adapter: every run is a real forked process.
// api is built from the grant (absent is undefined), the datastore answers in
// envelopes, fetch is guarded and logged, network modules are refused at
// load, a throw is fatal, the deadline stops a run that never resolves and a
// synchronous loop, the credential never reaches the run's process, and the
// remote store sends it as a bearer token to a real HTTP server.
// Serial: several tests wait on deadlines, and forks compete for 2 cores.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { codes } = require('durable-workers/peek');
const { worker, setup, command, httpServer } = require('../helpers/peek');

function credential(t, name, value) {
  const key = `PEEK_CREDENTIAL_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  process.env[key] = value;
  t.teardown(() => delete process.env[key]);
}

test.serial('a namespace exists exactly when the grant names it; datastore methods only as granted', async (t) => {
  const { dir, host } = setup(t);
  credential(t, 'shape', 'c');
  const file = worker(
    dir,
    'shape',
    `export default async (api) => ({
      keys: Object.keys(api).sort(),
      datastore: Object.keys(api.datastore).sort(),
      window: typeof api.window,
      appIsApi: globalThis.app === api && globalThis.window.app === api,
    });`,
    { capabilities: { datastore: { methods: ['describe', 'queryItems'] }, log: {} } },
  );
  const r = await host.run(file, command());
  t.true(r.ok, r.error?.message);
  t.deepEqual(r.value, { keys: ['datastore', 'log'], datastore: ['describe', 'queryItems'], window: 'undefined', appIsApi: true });
});

test.serial('the datastore answers { success, data } and turns a throw into { success: false, error }; items persist across runs', async (t) => {
  const { dir, host } = setup(t);
  credential(t, 'store', 'c');
  const file = worker(
    dir,
    'store',
    `export default async (api, ctx) => {
      if (ctx.trigger.params.step === 1) {
        const added = await api.datastore.addItem('note', 'hello', { tags: ['t1'], metadata: { n: 1 } });
        const missing = await api.datastore.updateItem('no-such-id', { content: 'x' });
        return { added, missing };
      }
      return { found: await api.datastore.queryItems({ tag: 't1' }), session: await api.datastore.describe() };
    };`,
    { capabilities: { datastore: { methods: ['describe', 'addItem', 'updateItem', 'queryItems'] } } },
  );
  const one = await host.run(file, command({ step: 1 }));
  t.true(one.ok, one.error?.message);
  t.true(one.value.added.success);
  t.is(one.value.added.data.content, 'hello');
  t.deepEqual(one.value.missing.success, false);
  t.regex(one.value.missing.error, /no item "no-such-id"/);
  const two = await host.run(file, command({ step: 2 }));
  t.true(two.ok, two.error?.message);
  t.is(two.value.found.data.length, 1);
  t.is(two.value.found.data[0].id, one.value.added.data.id);
  t.deepEqual(two.value.session.data, { user: 'local', profile: 'default', store: 'embedded', items: 1 });
});

test.serial('a worker granted the datastore without a credential fails, saying where to put one', async (t) => {
  const { dir, host } = setup(t);
  const file = worker(dir, 'nocred', 'export default async () => 1;', { capabilities: { datastore: {} } });
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, codes.CREDENTIAL);
  t.true(r.error.message.includes('PEEK_CREDENTIAL_NOCRED'), r.error.message);
});

test.serial('the credential is in neither the run process environment nor anything api reaches', async (t) => {
  const { dir, host } = setup(t);
  const secret = `secret-${Date.now()}-${Math.random()}`;
  credential(t, 'leak', secret);
  process.env.PEEK_TEST_UNRELATED = secret;
  t.teardown(() => delete process.env.PEEK_TEST_UNRELATED);
  const file = worker(
    dir,
    'leak',
    `export default async (api) => {
      await api.datastore.describe();
      const text = JSON.stringify(process.env) + process.argv.join(' ') + process.execArgv.join(' ') +
        Object.values(api.datastore).map((f) => f.toString()).join('');
      return { text, env: Object.keys(process.env) };
    };`,
    { capabilities: { datastore: {} } },
  );
  const r = await host.run(file, command());
  t.true(r.ok, r.error?.message);
  t.false(r.value.text.includes(secret));
  t.false(r.value.env.some((k) => k.startsWith('PEEK_')));
});

test.serial('fetch is allowed to granted hosts only, every request logged, and bare fetch is the same guard', async (t) => {
  const { dir, host, logs } = setup(t);
  let hits = 0;
  const url = await httpServer(t, (req, res) => {
    hits++;
    res.end('pong');
  });
  const file = worker(
    dir,
    'net',
    `export default async (api, ctx) => {
      const ok = await (await api.network.fetch(ctx.trigger.params.url)).text();
      let denied = null;
      try { await fetch('http://localhost.invalid/x'); } catch (err) { denied = err.code; }
      return { ok, denied, same: globalThis.fetch === api.network.fetch };
    };`,
    { capabilities: { network: { domains: ['127.0.0.1'] } } },
  );
  const r = await host.run(file, command({ url: `${url}/ping` }));
  t.true(r.ok, r.error?.message);
  t.deepEqual(r.value, { ok: 'pong', denied: codes.NETWORK_DENIED, same: true });
  t.is(hits, 1);
  const net = logs.filter((l) => l.worker === 'net' && l.args[0] === 'fetch');
  t.deepEqual(
    net.map((l) => [l.level, l.args[3]]),
    [
      ['info', 'allowed'],
      ['warn', 'denied'],
    ],
  );
});

test.serial('an import of node:http anywhere in the graph is refused at load, naming the import', async (t) => {
  const { dir, host } = setup(t);
  fs.writeFileSync(path.join(dir, 'dep.js'), "import 'node:net';\nexport const x = 1;\n");
  const file = worker(dir, 'imports', "import { x } from './dep.js';\nexport default async () => x;");
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, codes.IMPORT_REFUSED);
  t.true(r.error.message.includes('"node:net"'), r.error.message);
  t.true(r.error.message.includes('dep.js'), 'names the importing module');
});

test.serial('a throw is fatal: { ok: false } with the error, and a timer the run left never acts', async (t) => {
  const { dir, host, logs } = setup(t);
  const file = worker(
    dir,
    'thrower',
    `export default async (api) => {
      setTimeout(() => api.log('late'), 20);
      throw Object.assign(new Error('on purpose'), { code: 'E_PURPOSE' });
    };`,
    { capabilities: { log: {} } },
  );
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, 'E_PURPOSE');
  t.is(r.error.message, 'on purpose');
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.false(logs.some((l) => l.args.includes('late')));
});

test.serial('a worker that never resolves hits its deadline: the signal aborts, then the process is killed', async (t) => {
  const { dir, host, logs } = setup(t);
  const file = worker(
    dir,
    'forever',
    `export default async (api, ctx) => {
      ctx.signal.addEventListener('abort', () => api.log('aborted', ctx.signal.reason.code));
      return new Promise(() => {});
    };`,
    { limits: { wallClockMs: 800 }, capabilities: { log: {} } },
  );
  const t0 = Date.now();
  const r = await host.run(file, command());
  const took = Date.now() - t0;
  t.false(r.ok);
  t.is(r.error.code, codes.DEADLINE);
  t.true(took >= 800, `${took} ms`);
  t.true(took < 8000, `aborted within the deadline plus slack (${took} ms)`);
  t.true(logs.some((l) => l.args[0] === 'aborted' && l.args[1] === codes.DEADLINE));
});

test.serial('the deadline kills a synchronous busy loop', async (t) => {
  const { dir, host } = setup(t);
  const file = worker(dir, 'spin', 'export default async () => { for (;;) {} };', { limits: { wallClockMs: 700 } });
  const t0 = Date.now();
  const r = await host.run(file, command());
  t.is(r.error?.code, codes.DEADLINE);
  t.true(Date.now() - t0 < 8000);
});

test.serial('a run past the memory ceiling fails as a crash that says so', async (t) => {
  const { dir, host } = setup(t, { memoryMb: 64 });
  const file = worker(dir, 'hog', 'export default async () => { const a = []; for (;;) a.push(new Array(1e5).fill(0.5)); };');
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, codes.CRASHED);
  t.regex(r.error.message, /out of memory \(the ceiling is 64 MB\)/);
});

test.serial('waitUntil work finishes before the run does, and the trigger reaches the worker as given', async (t) => {
  const { dir, host, logs } = setup(t);
  const file = worker(
    dir,
    'later',
    `export default async (api, ctx) => {
      ctx.waitUntil(new Promise((r) => setTimeout(r, 150)).then(() => api.log('waited')));
      return ctx.trigger;
    };`,
    { capabilities: { log: {} } },
  );
  const trigger = { kind: 'schedule', scheduledFor: 1_700_000_000_000 };
  const r = await host.run(file, trigger);
  t.true(r.ok, r.error?.message);
  t.deepEqual(r.value, trigger);
  t.true(
    logs.some((l) => l.args[0] === 'waited'),
    'the waitUntil promise settled before run() resolved',
  );
});

test.serial('each run is a new process with a new module graph', async (t) => {
  const { dir, host } = setup(t);
  // A process of its own is told by a nonce on its globalThis: a sandboxed run's pid is 2 every time, in a PID namespace of its own.
  const file = worker(
    dir,
    'fresh',
    'let n = 0;\nconst seen = globalThis.window.app;\nglobalThis.nonce ??= crypto.randomUUID();\nexport default async (api) => ({ n: ++n, nonce: globalThis.nonce, seenIsApi: seen === api });',
  );
  const a = await host.run(file, command());
  const b = await host.run(file, command());
  t.deepEqual([a.value.n, b.value.n], [1, 1]);
  t.not(a.value.nonce, b.value.nonce);
  t.true(a.value.seenIsApi && b.value.seenIsApi);
});

test.serial('an entry named in the manifest runs; a module without it or a default fails with ERR_PEEK_ENTRY', async (t) => {
  const { dir, host } = setup(t);
  const named = worker(dir, 'named', 'export async function go() { return "went"; }', { worker: { url: 'named.js', entry: 'go' } });
  t.is((await host.run(named, command())).value, 'went');
  const none = worker(dir, 'none', 'export const x = 1;');
  const r = await host.run(none, command());
  t.is(r.error?.code, codes.ENTRY);
});

test.serial('a malformed trigger is refused before anything runs', async (t) => {
  const { dir, host } = setup(t);
  const file = worker(dir, 'any', 'export default async () => 1;');
  await t.throwsAsync(host.run(file, { kind: 'cron' }), { instanceOf: TypeError, message: /unknown kind "cron"/ });
  await t.throwsAsync(host.run(file, { kind: 'schedule' }), { instanceOf: TypeError, message: /scheduledFor/ });
});

test.serial('the remote store sends the credential as a bearer token and its answers come back in envelopes', async (t) => {
  const seen = [];
  const url = await httpServer(t, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
      res.setHeader('content-type', 'application/json');
      if (req.headers.authorization !== 'Bearer remote-secret') {
        res.statusCode = 401;
        res.end(JSON.stringify({ error: 'bad token' }));
      } else if (req.url === '/datastore/describe') res.end(JSON.stringify({ data: { user: 'u1', profile: 'p1', store: 'remote' } }));
      else {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: 'no such item' }));
      }
    });
  });
  const { dir, host } = setup(t, { store: { remoteUrl: url } });
  credential(t, 'remote', 'remote-secret');
  const file = worker(dir, 'remote', 'export default async (api) => ({ d: await api.datastore.describe(), g: await api.datastore.getItem("x") });', {
    capabilities: { datastore: { methods: ['describe', 'getItem'] } },
  });
  const r = await host.run(file, command());
  t.true(r.ok, r.error?.message);
  t.deepEqual(r.value.d, { success: true, data: { user: 'u1', profile: 'p1', store: 'remote' } });
  t.false(r.value.g.success);
  t.regex(r.value.g.error, /answered 404: no such item/);
  t.deepEqual(
    seen.map((s) => [s.url, s.auth, s.body]),
    [
      ['/datastore/describe', 'Bearer remote-secret', { args: [] }],
      ['/datastore/getItem', 'Bearer remote-secret', { args: ['x'] }],
    ],
  );
});
