'use strict';
// The attack suite, transport part (issue 24, item 1): hostile worker
// modules run through the real CLI (`peek run`, `peek serve`) try to take the
// supervisor down through the channel between a run's process and the
// supervisor, and through its stdout/stderr. Each attack must end that run
// alone, with ERR_PEEK_PROTOCOL naming the worker and what was wrong, and
// leave the supervisor serving.
//
// The workers forge frames by writing to fd 3 themselves (node:fs is not
// refused, and the worker shares the process with the realm's own side). The
// frame is a 4-byte big-endian length and a node:v8 payload, which is also
// Node's 'advanced' IPC framing on the same fd: the same worker attacks the
// IPC channel the Node adapter used before, and every test here fails there.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { worker, serve, runCli, FORGE } = require('../helpers/peek');
const { sandboxStatus } = require('../../js/peek/node/sandbox');

/** PEEK_SOAK_SECONDS (.ci/run sets 600 under CI_FULL=1): how long the serve test below runs. */
const SOAK_SECONDS = Number(process.env.PEEK_SOAK_SECONDS ?? 0);
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');
// How long a worker that broke the protocol sleeps before it would answer: a
// run that ended at once ends long before (its start-up is seconds on a loaded
// machine, so the margin is wide).
const SURVIVOR_SLEEP_MS = 20_000;

/** Asserts the run ended with ERR_PEEK_PROTOCOL naming `name` and matching `why`, and the CLI lived to say so. */
function assertProtocol(t, r, name, why) {
  t.truthy(r.run, `a run line from the supervisor; exit ${r.code} ${r.signal}; stderr: ${r.stderr.slice(0, 2000)}`);
  t.is(r.signal, null, 'the supervisor was not killed');
  t.is(r.code, 1, 'peek run exits 1 for a failed run');
  t.false(r.run.ok);
  t.is(r.run.error.code, 'ERR_PEEK_PROTOCOL', r.run.error.message);
  t.true(r.run.error.message.includes(`worker ${name}`), r.run.error.message);
  t.regex(r.run.error.message, why);
  t.true(
    r.lines.some((l) => l.event === 'log' && l.level === 'error' && l.worker === name && /protocol/.test(l.args[0])),
    'the violation is logged',
  );
  t.notRegex(r.stderr, /TypeError|Uncaught|ERR_IPC|at .*host-side/, 'nothing escaped into the supervisor');
}

test('a run has no IPC channel: process.send and process.channel do not exist', async (t) => {
  const dir = tmpDir(t);
  const file = worker(dir, 'nosend', 'export default () => [typeof process.send, typeof process.channel, typeof process.disconnect];');
  const r = await runCli(file);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.run.value, ['undefined', 'undefined', 'undefined']);
});

test('the message from the issue (call with path: 7) ends the run, not the supervisor', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'path7',
    `${FORGE}
export default async () => {
  await forge({ t: 'call', id: 1, path: 7, args: [] });
  await sleep(${SURVIVOR_SLEEP_MS});
  return 'survived';
};`,
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'path7', /call\.path is not an array/);
  t.true(r.ms < SURVIVOR_SLEEP_MS / 2, `ended at once (${r.ms} ms), not after the worker's sleep`);
});

test('messages that do not fit the protocol end the run: wrong types, unknown types, a path too long, answers out of turn', async (t) => {
  const dir = tmpDir(t);
  const cases = [
    [{ t: 'call', id: 'x', path: ['log'], args: [] }, /call\.id is not a safe integer/],
    [{ t: 'call', id: 1, path: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'], args: [] }, /call\.path has 9 names/],
    [{ t: 'call', id: 1, path: ['log'], args: 'x' }, /call\.args is not an array/],
    [{ t: 'cast', path: [{}], args: [] }, /cast\.path\[0\]/],
    [{ t: 'job', shape: {} }, /unknown type "job"/],
    [{ t: 'NODE_HANDLE', cmd: 'NODE_HANDLE' }, /unknown type/],
    ['just a string', /not an object/],
    [{ t: 'result', ok: true, pending: -1 }, /result\.pending/],
    [{ t: 'settled', errors: [] }, /'settled' out of turn/],
    [{ t: 'loaded', ok: true, exports: [] }, /a second 'loaded'/],
    // A run's own fetch report exists only unsandboxed (sandboxed, the supervisor makes the fetch and the report).
    [{ t: 'net', method: 'GET', url: 5, allowed: true }, /net\.url is not a string/, 'off'],
    [{ t: 'net', method: 'GET', url: `https://x.example/${'a'.repeat(20_000)}`, allowed: true }, /net\.url is longer than 16384/, 'off'],
    [{ t: 'net', method: 'GET', url: 'https://x.example/', allowed: true }, /unknown type "net"/, 'required'],
    [{ t: 'fetch', id: 1, url: 5, method: 'GET', headers: [] }, /fetch\.url is not a string/, 'required'],
    [{ t: 'fetch', id: 1, url: 'https://x.example/', method: 'GET', headers: [['a']] }, /fetch\.headers\[0\] is not \[name, value\]/, 'required'],
    [{ t: 'fetch', id: 1, url: 'https://x.example/', method: 'GET', headers: [], body: 'text' }, /fetch\.body is not bytes/, 'required'],
    [{ t: 'fetch', id: 1, url: 'https://x.example/', method: 'GET', headers: [] }, /unknown type "fetch"/, 'off'],
  ].filter(([, , mode]) => mode !== 'required' || sandboxStatus().ok);
  const results = [];
  for (const [i, [message, , mode = 'auto']] of cases.entries()) {
    const file = worker(
      dir,
      `bad${i}`,
      `${FORGE}
export default async () => {
  await forge(${JSON.stringify(message)});
  await sleep(5000);
  return 'survived';
};`,
    );
    results.push(await runCli(file, ['--sandbox', mode]));
  }
  for (const [i, [, why]] of cases.entries()) assertProtocol(t, results[i], `bad${i}`, why);
});

test('a small message whose values expand as the host reads them (shared references, a sparse array) ends the run', async (t) => {
  const dir = tmpDir(t);
  // 100 KB referenced 20,000 times: a 100 KB frame, 2 GB as the log line's JSON.
  const shared = worker(
    dir,
    'shared',
    `export default async (api) => {
  const o = { s: 'x'.repeat(100_000) };
  api.log(new Array(20_000).fill(o));
  await new Promise((r) => setTimeout(r, 3000));
  return 'survived';
};`,
    { capabilities: { log: {} } },
  );
  const sparse = worker(dir, 'sparse', 'export default () => { const a = []; a.length = 2 ** 31; return a; };');
  const a = await runCli(shared);
  assertProtocol(t, a, 'shared', /cast\.args expands to more than/);
  const b = await runCli(sparse);
  assertProtocol(t, b, 'sparse', /result\.value expands to more than/);
});

test('a run that asks and does not read its answers ends before they pile up in the supervisor', async (t) => {
  const dir = tmpDir(t);
  const creds = path.join(dir, 'credentials.json');
  fs.writeFileSync(creds, JSON.stringify({ unread: 'token-for-the-unread-worker' }), { mode: 0o600 });
  const file = worker(
    dir,
    'unread',
    `${FORGE}
export default async (api) => {
  // ~840 KB of items, then 100 queries for all of them, their answers never read.
  for (let i = 0; i < 7; i++) {
    const r = await api.datastore.addItem('note', String(i).repeat(120_000), { tags: ['big'] });
    if (!r.success) return r;
  }
  for (const h of process._getActiveHandles()) if (h._handle?.fd === 3) h.pause();
  const calls = [];
  for (let i = 0; i < 100; i++) calls.push(frame(v8.serialize({ t: 'call', id: 1000 + i, path: ['datastore', 'queryItems'], args: [{ tag: 'big' }] })));
  await writeAll(Buffer.concat(calls));
  await sleep(5000);
  return 'survived';
};`,
    { capabilities: { datastore: { methods: ['addItem', 'queryItems'] } } },
  );
  const r = await runCli(file, ['--credentials', creds]);
  assertProtocol(t, r, 'unread', /bytes of answers unread/);
});

test('a frame of garbage bytes ends the run', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'garbage',
    `${FORGE}
export default async () => {
  await writeAll(frame(Buffer.from('ff0d1c2e3f40ff99887766554433221100deadbeef', 'hex')));
  await sleep(${SURVIVOR_SLEEP_MS});
  return 'survived';
};`,
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'garbage', /does not decode/);
  t.true(r.ms < SURVIVOR_SLEEP_MS / 2, `ended at once (${r.ms} ms), not after the worker's sleep`);
});

test('a frame bigger than the cap ends the run as soon as its length is read', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'huge',
    `${FORGE}
export default async () => {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(0xfffffff0);
  await writeAll(h);
  // and then bytes that never make up the frame
  for (let i = 0; i < 200; i++) { await writeAll(Buffer.alloc(64 * 1024)); await sleep(20); }
  return 'survived';
};`,
    { limits: { wallClockMs: 20_000 } },
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'huge', /frame of 4294967280 bytes, over the cap/);
  t.true(r.ms < 10_000, `ended before its deadline (${r.ms} ms)`);
});

test('a flood of frames ends the run', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'flood',
    `${FORGE}
export default async () => {
  const one = frame(v8.serialize({ t: 'cast', path: ['flood'], args: [] }));
  const many = Buffer.concat(new Array(300_000).fill(one));
  await writeAll(many);
  await sleep(5000);
  return 'survived';
};`,
    { limits: { wallClockMs: 30_000 } },
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'flood', /frames faster than/);
  t.true(r.lines.filter((l) => l.event === 'log' && l.worker === 'flood').length < 100_000, 'the flood was cut short');
});

test('a run that breaks the protocol from its waitUntil work, after its result, fails with ERR_PEEK_PROTOCOL', async (t) => {
  const dir = tmpDir(t);
  const after = (attack) => `${FORGE}
export default async (api, ctx) => {
  ctx.waitUntil((async () => {
    await sleep(200); // the result is in: the run is settling
    ${attack}
    await sleep(12_000);
  })());
  return 'returned';
};`;
  const malformed = worker(dir, 'latebad', after(`await forge({ t: 'call', id: 1, path: 7, args: [] });`), { limits: { wallClockMs: 20_000 } });
  const flood = worker(
    dir,
    'lateflood',
    after(`const one = frame(v8.serialize({ t: 'cast', path: ['flood'], args: [] }));
    await writeAll(Buffer.concat(new Array(300_000).fill(one)));`),
    { limits: { wallClockMs: 30_000 } },
  );
  const a = await runCli(malformed);
  assertProtocol(t, a, 'latebad', /call\.path is not an array/);
  t.true(a.ms < 9000, `ended at once (${a.ms} ms), not after the waitUntil's sleep`);
  const b = await runCli(flood);
  assertProtocol(t, b, 'lateflood', /frames faster than/);
  for (const r of [a, b])
    t.false(
      r.lines.some((l) => l.event === 'log' && /waitUntil rejected/.test(String(l.args?.[0]))),
      'not logged as a waitUntil of the worker rejecting',
    );
});

test('a settled message whose errors expand as the host reads them (5,000 references to one 1 MB message) ends the run', async (t) => {
  const dir = tmpDir(t);
  // A 1 MB frame, 5 GB once each error is copied and logged.
  const file = worker(
    dir,
    'settledbig',
    `${FORGE}
export default async (api, ctx) => {
  ctx.waitUntil((async () => {
    await sleep(200);
    const e = { name: 'Error', message: 'x'.repeat(1_000_000) };
    await forge({ t: 'settled', errors: new Array(5_000).fill(e) });
    await sleep(12_000);
  })());
  return 'returned';
};`,
    { limits: { wallClockMs: 20_000 } },
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'settledbig', /settled\.errors expands to more than/);
  t.true(r.ms < 9000, `ended at once (${r.ms} ms), not after the waitUntil's sleep`);
});

test('stdout without a newline that never ends ends the run at the line cap', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'noeol',
    `export default async () => {
  const chunk = 'x'.repeat(64 * 1024);
  setInterval(() => process.stdout.write(chunk), 1);
  await new Promise(() => {});
};`,
    { limits: { wallClockMs: 20_000 } },
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'noeol', /stdout line longer than/);
  t.true(r.ms < 10_000, `ended before its deadline (${r.ms} ms)`);
});

test('a huge stderr line ends the run', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'bigerr',
    `export default async () => {
  process.stderr.write('y'.repeat(8 * 1024 * 1024) + '\\n');
  // (a pipe write may be queued: the run goes on while it drains)
  await new Promise((r) => setTimeout(r, 3000));
  return 'survived';
};`,
  );
  const r = await runCli(file);
  assertProtocol(t, r, 'bigerr', /stderr line longer than/);
  t.false(
    r.lines.some((l) => l.event === 'log' && String(l.args?.[0]).length > 300_000),
    'no line over the cap reached the log',
  );
});

test('output within the budget is all logged: many lines, and lines cut across writes', async (t) => {
  const dir = tmpDir(t);
  const file = worker(
    dir,
    'chatty',
    `export default async () => {
  for (let i = 0; i < 2000; i++) console.log('line', i);
  process.stdout.write('half a ');
  await new Promise((r) => setTimeout(r, 50));
  process.stdout.write('line\\n');
  return 'ok';
};`,
  );
  const r = await runCli(file);
  t.is(r.code, 0, r.stderr);
  const logged = r.lines.filter((l) => l.event === 'log' && l.worker === 'chatty').map((l) => l.args[0]);
  t.is(logged.length, 2001);
  t.is(logged[1999], 'line 1999');
  t.is(logged[2000], 'half a line');
});

test.serial('peek serve: a worker that breaks the protocol on every run backs off, and a healthy one keeps its schedule beside it', async (t) => {
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  for (const [name, source] of [
    ['crasher', `${FORGE}\nexport default async () => { await forge({ t: 'call', id: 1, path: 7, args: [] }); await sleep(5000); };`],
    ['healthy', `export default async (api, ctx) => ctx.trigger.scheduledFor;`],
  ]) {
    const wdir = path.join(workers, name);
    fs.mkdirSync(wdir, { recursive: true });
    fs.writeFileSync(path.join(wdir, 'package.json'), '{ "type": "module" }');
    fs.writeFileSync(path.join(wdir, 'worker.js'), source);
    fs.writeFileSync(path.join(wdir, 'manifest.json'), JSON.stringify({ name, worker: { url: 'worker.js' }, schedule: 'every 1s' }));
  }
  const s = serve(t, workers, ['--state', path.join(dir, 'state')]);
  const runs = (name) => s.lines.filter((l) => l.event === 'run' && l.worker === name);
  if (SOAK_SECONDS > 0) {
    // The soak (CI_FULL=1: ten minutes): every slot of the healthy worker is served, none late by more than a few seconds.
    t.timeout(SOAK_SECONDS * 1000 + 60_000);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, SOAK_SECONDS * 1000));
    const at = runs('healthy').map((r) => r.at);
    const gaps = at.slice(1).map((x, i) => x - at[i]);
    t.log(`soak: ${SOAK_SECONDS} s, ${at.length} healthy runs, longest gap ${Math.max(...gaps)} ms, ${runs('crasher').length} crasher runs`);
    t.true(at.length >= (SOAK_SECONDS - 5) * 0.95, `${at.length} healthy runs in ${Math.round((Date.now() - started) / 1000)} s of every 1s`);
    t.true(Math.max(...gaps) < 4000, `the longest gap between healthy runs was ${Math.max(...gaps)} ms`);
  } else {
    await until(
      () => runs('healthy').length >= 8,
      30_000,
      () => `8 healthy runs; stderr: ${s.stderr()}`,
    );
  }
  t.is(s.proc.exitCode, null, 'the supervisor is still serving');
  t.true(runs('healthy').every((r) => r.ok));
  const crashes = runs('crasher');
  t.true(crashes.length >= 2, `the crasher ran (${crashes.length})`);
  t.true(
    crashes.every((r) => !r.ok && r.error.code === 'ERR_PEEK_PROTOCOL'),
    JSON.stringify(crashes.map((r) => r.error)),
  );
  t.true(crashes.length < runs('healthy').length - 2, `the crasher backs off: ${crashes.length} runs against ${runs('healthy').length}`);
  t.true(s.lines.some((l) => l.event === 'log' && l.worker === 'crasher' && /backing off/.test(l.args[0])));
  s.proc.kill('SIGTERM');
  t.deepEqual(await s.exited, { code: 0, signal: null }, 'SIGTERM still stops it cleanly');
});
