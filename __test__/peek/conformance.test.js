'use strict';
// The conformance suite against the Node adapter: every assertion and every
// declared field passes; a false declaration and a leaked credential are
// caught (the suite is not a rubber stamp); and the CLI's exit codes.
const test = require('ava');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { nodeAdapter, runConformance, credentialEnvName } = require('durable-workers/peek');
const { tmpDir } = require('../helpers/tmp');
const { assertConformant } = require('../helpers/peek');
const { sandboxStatus } = require('../../js/peek/node/sandbox');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
const cli = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000 });

/** Every leaf field of a declaration, dotted ('run.memoryMb'). */
function adapterFor(t, options = {}) {
  const adapter = nodeAdapter({ dir: path.join(tmpDir(t), 'state'), log: () => {}, ...options });
  t.teardown(() => adapter.close());
  return adapter;
}

const sandbox = sandboxStatus();
if (!sandbox.ok) console.log(`peek/conformance: the sandboxed run of the suite is skipped: ${sandbox.reason}`);

(sandbox.ok ? test.serial : test.serial.skip)('sandboxed, the Node adapter passes all 10 assertions and every declared field, network.enforcement egress-control verified', async (t) => {
  t.timeout(180_000);
  const adapter = adapterFor(t, { sandbox: 'required' });
  t.is(adapter.declares.network.enforcement, 'egress-control');
  const report = await runConformance({ adapter });
  assertConformant(t, report, adapter.declares);
  t.regex(report.declarations.find((d) => d.field === 'network.enforcement').observed, /server not reached/);
});

test.serial('without the sandbox, the Node adapter passes all 10 assertions and every declared field, network.enforcement guard-rail verified', async (t) => {
  t.timeout(180_000);
  const adapter = adapterFor(t, { sandbox: 'off' });
  t.is(adapter.declares.network.enforcement, 'guard-rail');
  const report = await runConformance({ adapter });
  assertConformant(t, report, adapter.declares);
});

test.serial('a false declaration fails its check, either way', async (t) => {
  for (const [mode, lie, observed] of [['off', 'egress-control', /server reached/], ...(sandbox.ok ? [['required', 'guard-rail', /server not reached/]] : [])]) {
    const adapter = adapterFor(t, { sandbox: mode });
    const lying = { ...adapter, declares: { ...adapter.declares, network: { enforcement: lie } } };
    const report = await runConformance({ adapter: lying, only: ['network.enforcement'] });
    t.false(report.ok, mode);
    t.is(report.declarations.length, 1);
    t.regex(report.declarations[0].observed, observed);
  }
});

test.serial('a credential that reaches the run process fails assertion 3', async (t) => {
  // No warm spare: a spare forked before the credential is minted would not have it.
  const adapter = adapterFor(t, { warm: false });
  // LANG is passed to run processes; a credential put there is in reach.
  const mintCredential = (name, value) => {
    const key = credentialEnvName(name);
    const before = [process.env[key], process.env.LANG];
    process.env[key] = value;
    process.env.LANG = value;
    return () => {
      delete process.env[key];
      if (before[1] === undefined) delete process.env.LANG;
      else process.env.LANG = before[1];
    };
  };
  const report = await runConformance({ adapter, only: ['assertion 3'], mintCredential });
  t.false(report.ok);
  t.regex(report.assertions[0].observed, /[1-9]\d* contain the credential/);
});

test('the CLI: conformance prints the table and exits 0; unknown commands exit 2 with help; a refused manifest exits 1 naming the field', (t) => {
  const ok = cli('conformance', '--only', 'assertion 2', '--only', 'assertion 5');
  t.is(ok.status, 0, ok.stderr);
  t.regex(ok.stdout, /pass\s+assertion 2/);
  t.regex(ok.stdout, /all 2 checks pass/);
  // A line per check as it finishes, before the table.
  t.regex(ok.stderr, /^pass {2}assertion 2 absent is absent.*\(\d+\.\d s\)$/m);
  t.regex(ok.stderr, /^pass {2}assertion 5 /m);

  const container = cli('conformance', '--adapter', 'container', '--only', 'assertion 9', '--json');
  t.is(container.status, 0, container.stderr);
  t.like(JSON.parse(container.stdout), { adapter: 'container', ok: true, assertions: [{ id: 9, ok: true }] });
  const wrong = cli('conformance', '--adapter', 'lambda');
  t.is(wrong.status, 2);
  t.regex(wrong.stderr, /--adapter must be one of node, workerd, container \(got lambda\)/);

  const unknown = cli('frobnicate');
  t.is(unknown.status, 2);
  t.regex(unknown.stderr, /unknown command "frobnicate"/);
  t.regex(unknown.stderr, /commands:/);

  const help = cli('peek', 'serve', '--help');
  t.is(help.status, 0);
  t.regex(help.stdout, /usage: durable-workers peek serve/);

  const bad = cli('peek', 'run', path.join(__dirname, '..', 'no-such-manifest.json'));
  t.is(bad.status, 1);
  t.regex(bad.stderr, /ERR_PEEK_MANIFEST/);

  const usage = cli('peek', 'run', 'm.json', '--trigger', 'nonsense');
  t.is(usage.status, 2);
  t.regex(usage.stderr, /--trigger nonsense/);
});
