'use strict';
// Kept logs on the Node adapter: every run's api.log records, numbered run by
// run, on disk in the adapter's directory (a PeekLog worker per Peek worker),
// bounded, and readable back through the adapter, the control socket of the
// process serving the directory, and `peek logs`.
const test = require('ava');
const path = require('node:path');
const { spawnSync, spawn } = require('node:child_process');
const { createWorkerHost, nodeAdapter } = require('durable-workers/peek');
const { connect } = require('../../js/control/client');
const { MAX_RECORDS } = require('../../js/peek/log-keeper');
const { worker, serve, runCli } = require('../helpers/peek');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
const LOGGER = `export default async (api, ctx) => {
  const { n = 1, fail = false, tag = '' } = ctx.trigger.params ?? {};
  for (let i = 0; i < n; i++) api.log(tag, i, { nested: [i] });
  api.log.warn('last of', tag);
  if (fail) throw new Error('failing on purpose');
  return n;
};`;

function open(t, dir) {
  const adapter = nodeAdapter({ dir, sandbox: 'off', log: () => {} });
  const host = createWorkerHost({ adapter });
  t.teardown(async () => {
    await host.close();
    await adapter.close();
  });
  return { adapter, host };
}

const go = (params) => ({ kind: 'command', name: 'logger', params });

test.serial('every run’s records are kept on disk, numbered, with where each run started and how it ended', async (t) => {
  const dir = tmpDir(t);
  const m = worker(dir, 'logger', LOGGER, { capabilities: { log: {} } });
  const state = path.join(dir, 'state');
  const first = open(t, state);
  const numbers = [];
  first.host.on('run', (e) => numbers.push(e.run));
  await first.host.run(m, go({ n: 2, tag: 'a' }));
  await first.host.run(m, go({ n: 1, tag: 'b', fail: true }));
  t.deepEqual(numbers, [1, 2]);
  await first.host.close();
  await first.adapter.close();

  // Another process's adapter over the same directory: the records survived.
  const again = open(t, state);
  const all = await again.adapter.readLogs('logger', {});
  t.is(all.runs, 2);
  t.deepEqual(
    all.records.map((r) => [r.seq, r.run, r.level, r.text.replace(/\d+ ms/, 'N ms')]),
    [
      [1, 1, 'run', 'run 1 started: command logger'],
      [2, 1, 'info', 'a 0 { nested: [ 0 ] }'],
      [3, 1, 'info', 'a 1 { nested: [ 1 ] }'],
      [4, 1, 'warn', 'last of a'],
      [5, 1, 'run', 'run ended: ok in N ms'],
      [6, 2, 'run', 'run 2 started: command logger'],
      [7, 2, 'info', 'b 0 { nested: [ 0 ] }'],
      [8, 2, 'warn', 'last of b'],
      [9, 2, 'run', 'run ended: failed in N ms: Error: failing on purpose'],
    ],
  );
  t.true(all.records.every((r) => typeof r.at === 'number' && r.at > 0));
  t.deepEqual(
    (await again.adapter.readLogs('logger', { run: 2 })).records.map((r) => r.seq),
    [6, 7, 8, 9],
  );
  t.deepEqual(
    (await again.adapter.readLogs('logger', { after: 7 })).records.map((r) => r.seq),
    [8, 9],
  );
  t.deepEqual(await again.adapter.readLogs('never-ran', {}), { runs: 0, records: [] });
});

test.serial(`bounded: a worker keeps its newest ${MAX_RECORDS} records or a batch more, oldest pruned`, async (t) => {
  const dir = tmpDir(t);
  const m = worker(dir, 'logger', LOGGER, { capabilities: { log: {} } });
  const { host, adapter } = open(t, path.join(dir, 'state'));
  for (const tag of ['r1', 'r2', 'r3']) {
    const r = await host.run(m, go({ n: 900, tag }));
    t.true(r.ok, r.error?.message);
  }
  const got = await adapter.readLogs('logger', { limit: 5000 });
  t.true(got.records.length <= MAX_RECORDS + 200, `${got.records.length} kept`);
  t.true(got.records.length >= MAX_RECORDS, `${got.records.length} kept`);
  t.is(got.records.at(-1).text.replace(/\d+ ms/, 'N ms'), 'run ended: ok in N ms');
  t.is(got.records.at(-1).run, 3);
  t.false(
    got.records.some((r) => r.run === 1 && r.level === 'run' && r.text.startsWith('run 1 started')),
    'the oldest records are gone',
  );
  const seqs = got.records.map((r) => r.seq);
  t.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
  );
  t.is(seqs.at(-1) - seqs[0] + 1, seqs.length, 'what is kept is the newest, without holes');
});

test.serial('the control socket of the process serving the directory answers peek.logs; bad params get ERR_DURABLE_CONTROL', async (t) => {
  const dir = tmpDir(t);
  const m = worker(dir, 'logger', LOGGER, { capabilities: { log: {} } });
  const state = path.join(dir, 'state');
  const { host, adapter } = open(t, state);
  await host.run(m, go({ n: 1, tag: 'sock' }));
  await adapter.schedules(); // opens the directory, which serves the socket
  const client = await connect(state);
  t.teardown(() => client.close());
  const got = await client.request('peek.logs', { worker: 'logger', run: 1 });
  t.is(got.runs, 1);
  t.deepEqual(
    got.records.map((r) => r.level),
    ['run', 'info', 'warn', 'run'],
  );
  await t.throwsAsync(client.request('peek.logs', {}), { code: 'ERR_DURABLE_CONTROL', message: /params\.worker must be a Peek worker’s name/ });
});

const cli = (...args) => spawnSync(process.execPath, [BIN, 'peek', ...args], { encoding: 'utf8', timeout: 60_000 });

test.serial('the CLI: peek run numbers its runs and takes --settings; peek logs reads the directory, one run with --run, escaping what a worker logged', async (t) => {
  const dir = tmpDir(t);
  const state = path.join(dir, 'state');
  const m = worker(
    dir,
    'logger',
    `export default async (api, ctx) => { api.log('greeting', api.settings.greeting, ctx.trigger.params?.tag ?? ''); api.log('\\u001b[2Jcleared?\\nsecond line'); return api.settings.greeting; };`,
    { settings: { greeting: 'hello' }, capabilities: { log: {} } },
  );
  const settings = path.join(dir, 'settings.json');
  require('node:fs').writeFileSync(settings, JSON.stringify({ logger: { greeting: 'from the operator' } }));
  const first = await runCli(m, ['--state', state, '--trigger', 'command:go', '--params', '{"tag":"one"}', '--settings', settings]);
  t.is(first.code, 0, first.stderr);
  t.like(first.run, { run: 1, ok: true, value: 'from the operator' });
  const second = await runCli(m, ['--state', state]);
  t.like(second.run, { run: 2, value: 'hello' });

  const all = cli('logs', 'logger', '--state', state);
  t.is(all.status, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  t.is(lines.length, 8);
  t.regex(lines[0], /^\d{4}-\d\d-\d\dT[\d:.]+Z {2}run 1 {2}run {4}run 1 started: command go$/);
  t.regex(lines[1], /run 1 {2}info {3}greeting from the operator one$/);
  t.true(lines[2].endsWith('info   \\u001b[2Jcleared?\\u000asecond line'), lines[2]);
  t.false(all.stdout.includes('\u001b'), 'no escape character reaches the terminal');
  t.regex(lines[7], /run 2 {2}run {4}run ended: ok in \d+ ms$/);

  const one = cli('logs', 'logger', '--state', state, '--run', '2', '--json');
  t.deepEqual(
    one.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).run),
    [2, 2, 2, 2],
  );
  // --follow follows a serving process; with none it prints what is kept and stops (it does not hold the directory).
  const once = cli('logs', 'logger', '--state', state, '--follow');
  t.is(once.status, 0, once.stderr);
  t.is(once.stdout.trim().split('\n').length, 8);
  t.regex(once.stderr, /nothing serves .*: --follow follows a process serving it/);
  const none = cli('logs', 'nobody', '--state', state);
  t.is(none.status, 0);
  t.regex(none.stderr, /no runs of nobody are kept in /);
  const bad = cli('logs', 'logger', '--state', path.join(dir, 'not-there'));
  t.is(bad.status, 2);
  t.regex(bad.stderr, /not-there does not exist: give peek serve's --state/);
  t.is(cli('logs', 'logger', '--run', 'zero').status, 2);
});

test.serial('peek logs --follow, while peek serve owns the directory: asks it over the control socket and prints each run as it is kept', async (t) => {
  t.timeout(60_000);
  const dir = tmpDir(t);
  const workers = path.join(dir, 'workers');
  require('node:fs').mkdirSync(workers);
  worker(workers, 'ticker', `export default async (api, ctx) => { api.log('tick for', ctx.trigger.kind); };`, { schedule: 'every 1s', capabilities: { log: {} } });
  const state = path.join(dir, 'state');
  const server = serve(t, workers, ['--state', state]);
  await until(
    () => server.lines.some((l) => l.event === 'run'),
    20_000,
    () => `a run of peek serve; it said: ${server.stderr()}`,
  );
  const follow = spawn(process.execPath, [BIN, 'peek', 'logs', 'ticker', '--state', state, '--follow'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => follow.kill('SIGKILL'));
  let out = '';
  follow.stdout.on('data', (d) => (out += d));
  const runs = () => new Set([...out.matchAll(/run (\d+) {2}run {4}run ended/g)].map((m) => m[1]));
  await until(
    () => runs().size >= 3,
    20_000,
    () => `three runs followed; got: ${out}`,
  );
  t.true(runs().size >= 3, out);
  t.regex(out, /info {3}tick for schedule/);
  // It was the owner that answered: the directory is locked by peek serve.
  t.is(server.proc.exitCode, null);
});

test('a keeper that is slow or stalls: records past 1,000 unkept are dropped and counted, and the run is reported anyway', async (t) => {
  const { RunLog, MAX_UNKEPT } = require('../../js/peek/run-log');
  const kept = [];
  const errors = [];
  let release;
  const stalled = new Promise((resolve) => (release = resolve));
  const keeper = {
    begin: async () => 1,
    append: async (run, records) => {
      await stalled;
      kept.push(...records);
    },
  };
  const log = new RunLog(keeper, (err) => errors.push(err.message), { endWaitMs: 200 });
  log.start('command x');
  for (let i = 0; i < 5000; i++) log.add('info', [`line ${i}`, 'x'.repeat(10_000)]);
  const t0 = Date.now();
  t.is(await log.end({ ok: true, ms: 1 }), 1);
  t.true(Date.now() - t0 < 1000, 'end() waited at most endWaitMs');
  t.regex(errors.join('\n'), /the run's records were not kept within 200 ms/);
  release();
  await until(() => kept.some((r) => r.level === 'run'), 2000, 'the last batch');
  const lines = kept.filter((r) => r.level === 'info');
  t.is(lines.length, MAX_UNKEPT, 'what was waiting is kept; the rest dropped');
  t.true(
    lines.every((r) => r.text.length <= 2049),
    'each record cut in the host',
  );
  t.true(kept.some((r) => r.level === 'warn' && r.text === `${5000 - MAX_UNKEPT} records dropped: the run logged faster than they could be kept`));

  // A keeper that never numbers the run: the run is reported, unnumbered.
  const never = new RunLog({ begin: () => new Promise(() => {}), append: async () => {} }, () => {}, { endWaitMs: 100 });
  never.start('command y');
  never.add('info', ['x']);
  t.is(await never.end({ ok: false, ms: 1, error: new Error('e') }), null);
});
