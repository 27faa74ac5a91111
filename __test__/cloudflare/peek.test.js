'use strict';
// The Peek conformance suite against the workerd adapter, on a real local
// workerd started here: every assertion passes and every declared field is
// checked and true; a false declaration fails its check; the channel is the
// hub's hibernating WebSockets. One deployment (the probes) for the file.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { runConformance, createWorkerHost } = require('durable-workers/peek');
const { cloudflareAdapter } = require('durable-workers/cloudflare');
const { assertConformant } = require('../helpers/peek');

const PROBES = path.join(__dirname, '..', '..', 'js', 'peek', 'probes');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-95-peek-'));
const logs = [];
const adapter = cloudflareAdapter({ dir, workers: PROBES, allowLocalNetwork: true, log: (r) => logs.push(r) });
// A credential is a binding of the deployment: minting one is a redeploy.
const mintCredential = (name, value) => adapter.putSecret(name, value);

test.after.always(async () => {
  await adapter.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test.serial('the workerd adapter passes all 10 assertions and every declared field is checked and true', async (t) => {
  t.timeout(120_000);
  const report = await runConformance({ adapter, mintCredential });
  assertConformant(
    t,
    report,
    adapter.declares,
    logs
      .filter((l) => l.worker === 'workerd')
      .map((l) => l.args.join(' '))
      .join('\n'),
  );
  t.like(adapter.declares, { isolation: 'isolate-per-worker', install: { codeLoad: 'deploy' }, network: { enforcement: 'guard-rail' }, run: { clockAdvancesWithoutIo: true } });
  const row = (f) => report.declarations.find((d) => d.field === f).observed;
  t.regex(row('network.enforcement'), /server reached/);
  t.regex(row('install.codeLoad'), /ERR_PEEK_MANIFEST.*ERR_PEEK_MANIFEST/);
});

test.serial('false declarations fail their checks', async (t) => {
  t.timeout(60_000);
  const d = adapter.declares;
  const lying = {
    ...adapter,
    declares: { ...d, network: { enforcement: 'egress-control' }, install: { codeLoad: 'runtime' }, isolation: 'shared-process' },
  };
  const report = await runConformance({ adapter: lying, only: ['network.enforcement', 'install.codeLoad', 'isolation'], mintCredential });
  t.false(report.ok);
  t.deepEqual(
    report.declarations.map((r) => [r.field, r.ok]),
    [
      ['isolation', false],
      ['network.enforcement', false],
      ['install.codeLoad', false],
    ],
  );
});

test.serial('channels: a publish reaches every subscribed channel through the hub; a command’s result is published to its resultTopic', async (t) => {
  t.timeout(30_000);
  const got = [];
  const listener = await adapter.openChannel({ topics: ['news:*'] }, (m) => got.push(m));
  const other = await adapter.openChannel({ topics: [] }, () => {});
  await new Promise((r) => setTimeout(r, 200));
  await other.publish('news:a', { n: 1 });
  await other.publish('sport', { n: 2 });
  for (let i = 0; i < 100 && got.length < 1; i++) await new Promise((r) => setTimeout(r, 20));
  t.deepEqual(got, [{ topic: 'news:a', message: { n: 1 } }]);

  const host = createWorkerHost({ adapter });
  t.teardown(() => host.close());
  const r = await host.run(path.join(PROBES, 'probe-absent.json'), { kind: 'command', name: 'probe-absent', params: {}, resultTopic: 'news:result' });
  t.true(r.ok);
  for (let i = 0; i < 100 && got.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(got[1]?.topic, 'news:result');
  t.true(got[1]?.message.ok);
  await listener.close();
  await other.close();
});

test.serial('the admin token is taken from the authorization header only, never from the URL (which ends up in access logs)', async (t) => {
  t.timeout(60_000);
  await adapter.deploy();
  const token = fs.readFileSync(path.join(dir, 'admin-token'), 'utf8').trim();
  const inQuery = await fetch(`${adapter.url}/peek/credential/probe-hello?token=${token}`);
  t.is(inQuery.status, 401);
  const inHeader = await fetch(`${adapter.url}/peek/credential/probe-hello`, { headers: { authorization: `Bearer ${token}` } });
  t.not(inHeader.status, 401);
});

test.serial('the CLI runs the suite against workerd too: conformance --adapter workerd', async (t) => {
  const { spawn } = require('node:child_process');
  const bin = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
  const proc = spawn(process.execPath, [bin, 'conformance', '--adapter', 'workerd', '--only', 'assertion 2', '--only', 'assertion 10', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  const [code] = await require('node:events').once(proc, 'close');
  t.is(code, 0, stderr);
  t.like(JSON.parse(stdout), { adapter: 'cloudflare-workerd', ok: true });
  t.regex(stderr, /^pass {2}assertion 10 the lifecycle/m);
});

test.serial('kept logs on workerd: every run’s api.log records, numbered, readable by run', async (t) => {
  const host = createWorkerHost({ adapter });
  const runs = [];
  host.on('run', (e) => runs.push(e.run));
  const probe = path.join(PROBES, 'probe-api.json');
  const tag = `kept-${Date.now()}`;
  await host.run(probe, { kind: 'command', name: 'probe-api', params: { tag } });
  await host.run(probe, { kind: 'command', name: 'probe-api', params: { tag, throwIn: 'entry' } });
  await host.close();
  t.is(runs.length, 2);
  t.is(runs[1], runs[0] + 1);
  const all = await adapter.readLogs('probe-api', {});
  t.is(all.runs, runs[1]);
  const second = await adapter.readLogs('probe-api', { run: runs[1] });
  t.deepEqual(
    second.records.map((r) => [r.level, r.text.replace(/\d+ ms/, 'N ms')]),
    [
      ['run', `run ${runs[1]} started: command probe-api`],
      ['info', `probe-api ${tag} initialize:command`],
      ['info', `probe-api ${tag} entry`],
      ['info', `probe-api ${tag} shutdown`],
      ['info', `probe-api ${tag} shutdown-wait`],
      ['run', 'run ended: failed in N ms: Error: entry failed'],
    ],
  );
  t.deepEqual(await adapter.readLogs('nobody-ran-this', {}), { runs: 0, records: [] });
});
