'use strict';
// The defects the review of the Peek host found, each with the test that
// would have caught it: waitUntil answers lost to a race, a deadline during
// setup leaving a run unsupervised, redirects past the fetch guard, a
// credential reachable through /proc, a malformed credentials file quoting
// its secret, require() around the import refusal, wildcard wakes, a failed
// dispatch leaving its caller waiting, close() not stopping runs.
// Serial: forks compete for 2 cores.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { createWorkerHost, nodeAdapter, createSupervisor, codes } = require('durable-workers/peek');
const { RealmClient } = require('../../js/peek/protocol/host-side');
const { credentialReader } = require('../../js/peek/credentials');
const { tmpDir } = require('../helpers/tmp');
const { sandboxStatus } = require('../../js/peek/node/sandbox');
const { worker, setup, command, httpServer } = require('../helpers/peek');
const { NOBODY, cannotSwitchUser, readableInstall, superviseFrom } = require('../helpers/nobody');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test.serial('the realm protocol keeps an answer that comes before its waiter: result and settled in one tick', async (t) => {
  // A transport that answers invoke with result and settled back to back, synchronously.
  class Echo extends RealmClient {
    ready() {}
    _send(m) {
      if (m.t === 'job') queueMicrotask(() => this._receive({ t: 'loaded', ok: true, exports: [['default', 'function']] }));
      if (m.t === 'invoke') {
        process.nextTick(() => {
          this._receive({ t: 'result', ok: true, value: 7, pending: 1 });
          this._receive({ t: 'settled', errors: [] });
        });
      }
    }
  }
  const realm = new Echo({ name: 'echo' }, { log: () => {} });
  const api = {};
  realm.installGlobals({ app: api });
  const mod = await realm.loadWorkerModule({});
  const waits = [];
  const value = await mod.default(api, { trigger: {}, deadline: 0, waitUntil: (p) => waits.push(p) });
  t.is(value, 7);
  const settled = await Promise.race([Promise.all(waits).then(() => 'settled'), sleep(2000).then(() => 'hung')]);
  t.is(settled, 'settled');
});

test.serial('ctx.waitUntil(api.publish(...)) 50 times: every run ends promptly and ok', async (t) => {
  t.timeout(120_000);
  const { dir, host } = setup(t);
  const file = worker(dir, 'waiter', `export default async (api, ctx) => { ctx.waitUntil(api.publish('out', ctx.trigger.params.i)); return ctx.trigger.params.i; };`, {
    capabilities: { pubsub: {} },
    limits: { wallClockMs: 10_000 },
  });
  for (let i = 0; i < 50; i++) {
    const r = await host.run(file, command({ i }));
    t.true(r.ok, `run ${i}: ${r.error?.code} ${r.error?.message}`);
    if (!r.ok) return;
    t.is(r.value, i);
    t.true(r.ms < 9000, `run ${i} took ${r.ms} ms`);
  }
});

test.serial('a deadline during openStore stops the run there: no realm opens, no worker code runs, close() is prompt', async (t) => {
  let opened = 0;
  let releaseStore;
  const slow = new Promise((r) => {
    releaseStore = r;
  });
  const { dir, host, adapter } = setup(t, {}, (a) => ({
    ...a,
    async openStore(...args) {
      await slow;
      return a.openStore(...args);
    },
    async openRealm(...args) {
      opened++;
      return a.openRealm(...args);
    },
  }));
  process.env.PEEK_CREDENTIAL_SLOWSTORE = 'c';
  t.teardown(() => delete process.env.PEEK_CREDENTIAL_SLOWSTORE);
  const marker = path.join(dir, 'ran');
  const file = worker(dir, 'slowstore', `import { writeFileSync } from 'node:fs'; writeFileSync(${JSON.stringify(marker)}, 'x'); export default async () => 'ran';`, {
    capabilities: { datastore: {} },
    limits: { wallClockMs: 100 },
  });
  setTimeout(releaseStore, 400);
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, codes.DEADLINE);
  await sleep(1500);
  t.is(opened, 0, 'no realm was opened after the deadline');
  t.false(fs.existsSync(marker), 'the worker never ran');
  const t0 = Date.now();
  await host.close();
  await adapter.close();
  t.true(Date.now() - t0 < 5000);
});

test.serial('a deadline during readCredential: the same, the realm is never opened', async (t) => {
  let opened = 0;
  const { dir, host } = setup(t, {}, (a) => ({
    ...a,
    async readCredential() {
      await sleep(500);
      return 'c';
    },
    async openRealm(...args) {
      opened++;
      return a.openRealm(...args);
    },
  }));
  const file = worker(dir, 'slowcred', `export default async () => 'ran';`, { capabilities: { datastore: {} }, limits: { wallClockMs: 50 } });
  const r = await host.run(file, command());
  t.is(r.error?.code, codes.DEADLINE);
  await sleep(800);
  t.is(opened, 0);
});

test.serial('host.close() stops a run in flight with ERR_PEEK_CLOSED and its process is gone', async (t) => {
  const { dir, host } = setup(t);
  const file = worker(dir, 'forever', `export default async () => { globalThis.process.send?.({ t: 'noise' }); return new Promise(() => {}); };`, { capabilities: { log: {} } });
  const running = host.run(file, command());
  await sleep(1500);
  const t0 = Date.now();
  await host.close();
  const r = await running;
  t.false(r.ok);
  t.is(r.error.code, codes.CLOSED);
  t.true(Date.now() - t0 < 5000);
});

test.serial('fetch follows redirects inside the guard: an allowed host redirecting to a denied one is denied, each hop logged', async (t) => {
  const hits = { denied: 0 };
  let allowedUrl;
  const deniedUrl = await httpServer(t, (req, res) => {
    hits.denied++;
    res.end('secret');
  });
  // The denied server is reached as "localhost"; the allowed one as 127.0.0.1.
  const deniedHost = deniedUrl.replace('127.0.0.1', 'localhost');
  allowedUrl = await httpServer(t, (req, res) => {
    if (req.url === '/away') res.writeHead(302, { location: `${deniedHost}/x` }).end();
    else if (req.url === '/here') res.writeHead(307, { location: '/final' }).end();
    else {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => res.end(`${req.method} ${req.url} ${body}`));
    }
  });
  const { dir, host, logs } = setup(t);
  const file = worker(
    dir,
    'redirect',
    `export default async (api, ctx) => {
      const out = {};
      try { await fetch(ctx.trigger.params.base + '/away'); out.away = 'reached'; } catch (err) { out.away = err.code; }
      out.here = await (await fetch(ctx.trigger.params.base + '/here', { method: 'POST', body: 'hi' })).text();
      const manual = await fetch(ctx.trigger.params.base + '/away', { redirect: 'manual' });
      out.manual = manual.status;
      return out;
    };`,
    { capabilities: { network: { domains: ['127.0.0.1'] } } },
  );
  const r = await host.run(file, command({ base: allowedUrl }));
  t.true(r.ok, r.error?.message);
  t.is(r.value.away, codes.NETWORK_DENIED);
  t.is(r.value.here, 'POST /final hi', 'a 307 on an allowed host keeps method and body');
  t.is(r.value.manual, 302);
  t.is(hits.denied, 0, 'the denied host was never reached');
  const fetches = logs.filter((l) => l.args[0] === 'fetch').map((l) => `${l.args[1]} ${new URL(l.args[2]).hostname}${new URL(l.args[2]).pathname} ${l.args[3]}`);
  t.true(fetches.includes('GET localhost/x denied'), fetches.join('\n'));
  t.true(fetches.includes('POST 127.0.0.1/final allowed'));
});

test.serial('require() of a network module is refused in a CommonJS worker, import in an ESM one, naming it', async (t) => {
  const { dir, host } = setup(t);
  const cjsDir = path.join(dir, 'cjs');
  fs.mkdirSync(cjsDir);
  const cjs = worker(cjsDir, 'cjsnet', `const http = require('node:http'); module.exports = async () => typeof http.get;`, {}, { type: 'commonjs' });
  const cjsLazy = worker(
    cjsDir,
    'cjslazy',
    `module.exports = async () => { try { require('net'); return 'loaded'; } catch (err) { return err.code + ' ' + err.message; } };`,
    {},
    { type: 'commonjs' },
  );
  const esmDir = path.join(dir, 'esm');
  fs.mkdirSync(esmDir);
  const esm = worker(esmDir, 'esmnet', `import http from 'node:http'; export default async () => typeof http.get;`);
  const a = await host.run(cjs, command());
  t.false(a.ok);
  t.is(a.error.code, codes.IMPORT_REFUSED);
  t.regex(a.error.message, /require of "node:http" refused \(required by file:.*cjsnet\.js\)/);
  const b = await host.run(cjsLazy, command());
  t.true(b.ok);
  t.regex(b.value, /^ERR_PEEK_IMPORT_REFUSED require of "net" refused/);
  const c = await host.run(esm, command());
  t.is(c.error?.code, codes.IMPORT_REFUSED);
  t.regex(c.error.message, /import of "node:http" refused/);
});

test.serial('a malformed credentials file names the place of the mistake, never the text: no secret in message, cause or result', async (t) => {
  const dir = tmpDir(t);
  const secret = 'sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0';
  const file = path.join(dir, 'creds.json');
  for (const text of [`{"bad": "${secret}`, `{"bad": ${secret}}`, `{\n  "ok": "x",\n  "bad": "${secret}",,\n}`]) {
    fs.writeFileSync(file, text, { mode: 0o600 });
    const err = t.throws(() => credentialReader({ file, envPrefix: false })('bad'));
    t.is(err.code, codes.CREDENTIAL);
    t.regex(err.message, /not valid JSON/);
    t.is(err.cause, undefined);
    t.false(JSON.stringify({ m: err.message, s: err.stack, c: String(err.cause) }).includes(secret.slice(0, 12)), err.message);
  }
  // Through a run: the RunResult says the same, and carries no part of it.
  const { dir: wdir, host } = setup(t, { credentials: { file, envPrefix: false } });
  const m = worker(wdir, 'bad', 'export default async () => 1;', { capabilities: { datastore: {} } });
  const r = await host.run(m, command());
  t.is(r.error?.code, codes.CREDENTIAL);
  t.false(JSON.stringify({ m: r.error.message, s: r.error.stack, c: String(r.error.cause) }).includes(secret.slice(0, 12)));
});

test.serial('a wildcard wake subscription runs the worker; a failed dispatch still answers resultTopic', async (t) => {
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  fs.mkdirSync(path.join(workers, 'waker'), { recursive: true });
  fs.writeFileSync(path.join(workers, 'waker', 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(workers, 'waker', 'worker.js'), `export default async (api, ctx) => { await api.publish('woke', ctx.trigger.topic); };`);
  fs.writeFileSync(path.join(workers, 'waker', 'manifest.json'), JSON.stringify({ name: 'waker', worker: { url: 'worker.js' }, capabilities: { pubsub: { subscribe: ['news:*'] } } }));
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), log: () => {} });
  const failing = { ...adapter, dispatch: async () => Promise.reject(Object.assign(new Error('the mailbox is gone'), { code: 'ERR_DURABLE_CLOSED' })) };
  const host = createWorkerHost({ adapter });
  const supervisor = createSupervisor({ dir: workers, adapter, host });
  await supervisor.start();
  t.teardown(() => supervisor.close());
  const heard = [];
  const client = await adapter.openChannel({ topics: ['woke', 'answer'] }, (m) => heard.push(m));
  t.teardown(() => client.close());
  await client.publish('news:today', { x: 1 });
  for (let i = 0; i < 200 && !heard.some((m) => m.topic === 'woke'); i++) await sleep(50);
  t.deepEqual(heard.find((m) => m.topic === 'woke')?.message, 'news:today');

  // A supervisor whose dispatch fails: the caller on resultTopic hears { ok: false }.
  const dir2 = tmpDir(t);
  const adapter2 = nodeAdapter({ dir: path.join(dir2, 'state'), log: () => {} });
  const host2 = createWorkerHost({ adapter: adapter2 });
  const sup2 = createSupervisor({ dir: workers, adapter: { ...adapter2, dispatch: failing.dispatch, start: () => adapter2.start(), openChannel: (...a) => adapter2.openChannel(...a) }, host: host2 });
  await sup2.start();
  t.teardown(() => sup2.close().then(() => adapter2.close()));
  const heard2 = [];
  const c2 = await adapter2.openChannel({ topics: ['answer'] }, (m) => heard2.push(m));
  t.teardown(() => c2.close());
  await c2.publish('cmd:execute:waker', { resultTopic: 'answer' });
  for (let i = 0; i < 200 && heard2.length === 0; i++) await sleep(50);
  t.is(heard2[0]?.message.ok, false);
  t.is(heard2[0]?.message.error.code, 'ERR_DURABLE_CLOSED');
});

// Reading the supervisor through /proc needs a /proc; running as another
// user needs root. Where either is missing, the tests that need it are
// skipped, and say why when the file loads.
const noProc = fs.existsSync('/proc/self/cmdline') ? null : 'no /proc here: nothing to read the supervisor through';
const noOtherUser = noProc ?? cannotSwitchUser();
if (noProc) console.log(`peek/review: skipped, ${noProc}`);
if (noOtherUser) console.log(`peek/review: the runs as uid ${NOBODY} are skipped: ${noOtherUser}`);

/**
 * Runs conformance assertion 3 in a fresh supervisor process that has its
 * credentials file on its command line (as `peek serve --credentials <file>`
 * does): the credential the check mints is written to that file. `install`:
 * where the supervisor runs from (this checkout, or a copy another user can
 * read).
 */
function assertion3InProcess(t, install, options) {
  const dir = tmpDir(t);
  fs.chmodSync(dir, 0o755);
  const creds = path.join(dir, 'credentials.json');
  return superviseFrom(
    install,
    `const { nodeAdapter, runConformance } = require(root + '/js/peek');
    const fs = require('node:fs'), os = require('node:os'), path = require('node:path');
    const file = args[0];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-a3-'));
    const adapter = nodeAdapter({ dir, log: () => {}, warm: false, credentials: { file, envPrefix: false }, ...${JSON.stringify(options)} });
    const all = {};
    const mintCredential = (name, value) => { all[name] = value; fs.writeFileSync(file, JSON.stringify(all), { mode: 0o600 }); };
    const report = await runConformance({ adapter, only: ['assertion 3'], mintCredential });
    await adapter.close();
    fs.rmSync(dir, { recursive: true, force: true });
    return report.assertions[0];`,
    [creds],
  );
}

const CHECKOUT = { root: path.join(__dirname, '..', '..'), node: process.execPath };

(noProc ? test.skip : test.serial)('assertion 3 reads the supervisor through /proc: a credentials file named on its command line is found by a run of the same user', async (t) => {
  t.timeout(60_000);
  const same = await assertion3InProcess(t, CHECKOUT, { sandbox: 'off' });
  t.false(same.ok, 'same user, no sandbox: /proc/<ppid>/cmdline names the file and the run can read it; the suite says so');
  t.regex(same.observed, /[1-9]\d* contain the credential/);
});

(noProc || !sandboxStatus().ok ? test.skip : test.serial)('assertion 3 passes for a sandboxed run: neither the supervisor in /proc nor its credentials file is there to read', async (t) => {
  t.timeout(60_000);
  const boxed = await assertion3InProcess(t, CHECKOUT, { sandbox: 'required' });
  t.true(boxed.ok, boxed.observed);
});

(noOtherUser ? test.skip : test.serial)('assertion 3 passes when the run is another user (no sandbox): it cannot read the supervisor through /proc', async (t) => {
  t.timeout(60_000);
  const other = await assertion3InProcess(t, readableInstall(), { uid: NOBODY, gid: NOBODY, sandbox: 'off' });
  t.true(other.ok, other.observed);
});

(noOtherUser ? test.skip : test.serial)('uid/gid: a run process runs as the user given and cannot read the supervisor’s environment', async (t) => {
  t.timeout(60_000);
  const install = readableInstall();
  if (install.nodeCopied) t.log(`uid ${NOBODY} cannot execute ${process.execPath}: the supervisor runs a copy`);
  const dir = tmpDir(t);
  fs.chmodSync(dir, 0o755);
  const file = worker(
    dir,
    'whoami',
    `export default async () => {
      const fs = process.getBuiltinModule('node:fs');
      let environ;
      try { fs.readFileSync('/proc/' + process.ppid + '/environ'); environ = 'read'; } catch (err) { environ = err.code; }
      return { uid: process.getuid(), gid: process.getgid(), environ };
    };`,
  );
  for (const f of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, f), 0o644);
  const r = await superviseFrom(
    install,
    `const { createWorkerHost, nodeAdapter } = require(root + '/js/peek');
    const adapter = nodeAdapter({ dir: args[1], log: () => {}, uid: ${NOBODY}, gid: ${NOBODY}, sandbox: 'off' });
    const host = createWorkerHost({ adapter });
    try {
      const r = await host.run(args[0], { kind: 'command', name: 'test', params: {} });
      return { ok: r.ok, value: r.value, error: r.error?.message };
    } finally {
      await host.close();
      await adapter.close();
    }`,
    [file, path.join(tmpDir(t), 'state')],
  );
  t.true(r.ok, r.error);
  t.deepEqual(r.value, { uid: NOBODY, gid: NOBODY, environ: 'EACCES' });
});

test.serial('examples/peek/second/run.cjs finishes: two scheduled runs, a denied fetch, one command answered, and it exits', async (t) => {
  t.timeout(60_000);
  const script = path.join(__dirname, '..', '..', 'examples', 'peek', 'second', 'run.cjs');
  const p = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (out += d));
  const code = await Promise.race([new Promise((r) => p.on('close', r)), sleep(45_000).then(() => 'timeout')]);
  if (code === 'timeout') p.kill('SIGKILL');
  t.is(code, 0, out);
  t.regex(out, /two scheduled runs, due 2000 ms apart/);
  t.regex(out, /ERR_PEEK_NETWORK_DENIED/);
  t.regex(out, /command answered: \{"echo":\{"hello":"channel"\}/);
  t.regex(out, /run: command ok/);
});
