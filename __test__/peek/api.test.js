'use strict';
// The rest of `api` over the Node adapter, beyond what the conformance suite
// checks on every adapter (assertions 9 and 10): the manifest's settings and
// the operator's values, registrations refused out of place or beyond the
// grant, and a realm that calls the host's placeholders for realm-only functions.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { createWorkerHost, nodeAdapter, loadManifest, codes } = require('durable-workers/peek');
const { worker, command, FORGE } = require('../helpers/peek');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

function hostWith(t, settings) {
  const dir = tmpDir(t);
  const logs = [];
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), log: (r) => logs.push(r), sandbox: 'off' });
  const host = createWorkerHost({ adapter, settings });
  t.teardown(async () => {
    await host.close();
    await adapter.close();
  });
  return { dir, host, logs };
}

const readSettings = 'export default async (api) => ({ settings: api.settings, frozen: Object.isFrozen(api.settings) && Object.isFrozen(api.settings.nested) });';

test.serial('settings: the manifest’s defaults, replaced key by key by the operator’s file, read again at every run', async (t) => {
  const { dir, host } = hostWith(t, undefined);
  const file = path.join(dir, 'settings.json');
  const { host: withFile } = hostWith(t, file);
  const m = worker(dir, 'configured', readSettings, { settings: { greeting: 'hello', limit: 3, nested: { on: true } } });
  const defaults = await host.run(m, command());
  t.deepEqual(defaults.value, { settings: { greeting: 'hello', limit: 3, nested: { on: true } }, frozen: true });
  t.deepEqual((await withFile.run(m, command())).value.settings.greeting, 'hello', 'no file yet: the defaults');
  fs.writeFileSync(file, JSON.stringify({ configured: { greeting: 'hi', typo: 1 }, other: { x: 1 } }));
  t.deepEqual((await withFile.run(m, command())).value.settings, { greeting: 'hi', limit: 3, nested: { on: true } });
  fs.writeFileSync(file, JSON.stringify({ configured: { limit: 9 } }));
  t.deepEqual((await withFile.run(m, command())).value.settings, { greeting: 'hello', limit: 9, nested: { on: true } }, 'the next run sees the change');
  fs.writeFileSync(file, '{ not json');
  const bad = await withFile.run(m, command());
  t.false(bad.ok);
  t.is(bad.error.code, codes.SETTINGS);
  t.regex(bad.error.message, /settings\.json: not valid JSON/);
});

test.serial('settings: an undeclared key is logged and ignored; a function source; no settings declared → api.settings absent', async (t) => {
  const { dir, host, logs } = hostWith(t, (name) => (name === 'fn' ? { greeting: 'from fn', extra: 1 } : undefined));
  const m = worker(dir, 'fn', readSettings, { settings: { greeting: 'hello', nested: {} } });
  const r = await host.run(m, command());
  t.deepEqual(r.value.settings, { greeting: 'from fn', nested: {} });
  t.true(logs.some((l) => l.worker === 'fn' && /setting "extra" is not declared/.test(l.args.join(' '))));
  const none = worker(dir, 'plain', 'export default async (api) => typeof api.settings;');
  t.is((await host.run(none, command())).value, 'undefined');
  const { host: throwing } = hostWith(t, () => {
    throw new Error('vault down');
  });
  const failed = await throwing.run(m, command());
  t.is(failed.error.code, codes.SETTINGS);
  t.regex(failed.error.message, /worker fn: the settings function failed: vault down/);
});

test('the manifest: settings must be an object of named defaults, lifecycle takes no fields', (t) => {
  const dir = tmpDir(t);
  const bad = (manifest, pattern) => {
    const file = worker(dir, 'm', 'export default async () => 1;', manifest);
    const err = t.throws(() => loadManifest(file), { code: codes.MANIFEST });
    t.regex(err.message, pattern);
  };
  bad({ settings: [1] }, /settings must be an object/);
  bad({ settings: { 'no spaces': 1 } }, /settings\.no spaces is not a setting name/);
  bad({ settings: { big: 'x'.repeat(70_000) } }, /settings must be at most 65536 bytes/);
  bad({ capabilities: { lifecycle: { on: true } } }, /capabilities\.lifecycle\.on is not a field here/);
  const ok = loadManifest(worker(dir, 'm', 'export default async () => 1;', { settings: { a: 1 }, capabilities: { lifecycle: {} } }));
  t.deepEqual(ok.settings, { a: 1 });
  t.deepEqual(ok.capabilities.lifecycle, {});
  t.false(ok.commandsDeclared);
});

test.serial('registrations beyond the grant or out of place are refused with ERR_PEEK_LIFECYCLE, naming what the manifest grants', async (t) => {
  const { dir, host } = hostWith(t, undefined);
  const attempt = (code) => `
    let error = null;
    try { ${code} } catch (err) { error = { code: err.code, message: err.message }; }
    export default async () => error;`;
  const manifest = { commands: ['a'], capabilities: { lifecycle: {}, pubsub: { subscribe: ['news/*', 'exact'] } } };
  const cases = [
    ["app.subscribe('other', () => {})", /api\.subscribe\("other"\): not a topic the manifest grants \(capabilities\.pubsub\.subscribe: \["news\/\*","exact"\]\)/],
    ["app.subscribe('*', () => {})", /not a topic the manifest grants/],
    ["app.subscribe('exact*', () => {})", /not a topic the manifest grants/],
    ["app.commands.on('b', () => {})", /api\.commands\.on\("b"\): not a command the manifest lists \(commands: \["a"\]\)/],
    ["app.commands.on('a', () => {}); app.commands.on('a', () => {})", /a handler is already registered/],
    ["app.initialize('not a function')", /must be given a function/],
  ];
  for (const [i, [code, pattern]] of cases.entries()) {
    const r = await host.run(worker(dir, `w${i}`, attempt(code), manifest), command());
    t.true(r.ok, r.error?.message);
    t.truthy(r.value, code);
    t.regex(r.value.message, pattern, code);
  }
  // Allowed: a narrower prefix of a granted one, an exact topic under it.
  const fine = await host.run(worker(dir, 'fine', attempt("app.subscribe('news/sport/*', () => {}); app.subscribe('news/x', () => {}); app.subscribe('exact', () => {})"), manifest), command());
  t.is(fine.value, null);
  // During the run: initialize and commands.on are refused, onShutdown is not.
  const late = worker(
    dir,
    'late',
    `export default async (api) => {
      const out = [];
      for (const f of [() => api.initialize(() => {}), () => api.commands.on('a', () => {}), () => api.onShutdown(() => {})]) {
        try { f(); out.push('ok'); } catch (err) { out.push(err.code); }
      }
      return out;
    };`,
    manifest,
  );
  t.deepEqual((await host.run(late, command())).value, ['ERR_PEEK_LIFECYCLE', 'ERR_PEEK_LIFECYCLE', 'ok']);
  // Once the run is ending (no hooks, the entry returned; or inside a hook), no hook is added: it would never run.
  const ending = worker(
    dir,
    'ending',
    `export default async (api, ctx) => {
      const out = [];
      ctx.waitUntil(new Promise((r) => setTimeout(r, 10)).then(() => {
        try { api.onShutdown(() => {}); out.push('accepted'); } catch (err) { out.push(err.code); }
        api.log(out.join());
      }));
      return 'returned';
    };`,
    { capabilities: { lifecycle: {}, log: {} } },
  );
  const { host: logging, logs } = hostWith(t, undefined);
  t.is((await logging.run(ending, command())).value, 'returned');
  t.true(
    logs.some((l) => l.worker === 'ending' && l.args[0] === 'ERR_PEEK_LIFECYCLE'),
    JSON.stringify(logs),
  );
});

test.serial('a hostile realm that calls the host’s placeholders for realm-only functions gets error replies; the run and the host go on', async (t) => {
  const { dir, host, logs } = hostWith(t, undefined);
  const m = worker(
    dir,
    'hostile',
    `${FORGE}
    export default async (api) => {
      // What the realm's own api.subscribe never sends: a call to its path.
      let id = 1e6;
      for (const path of [['subscribe'], ['commands', 'on'], ['initialize'], ['onShutdown']]) await forge({ t: 'call', id: id++, path, args: ['t', null] });
      await sleep(200);
      return 'still running';
    };`,
    { commands: ['hostile'], capabilities: { log: {}, lifecycle: {}, pubsub: { subscribe: ['t'] } } },
  );
  const r = await host.run(m, command());
  t.true(r.ok, r.error?.message);
  t.is(r.value, 'still running');
  t.false(
    logs.some((l) => l.level === 'error'),
    JSON.stringify(logs),
  );
  t.true((await host.run(m, command())).ok, 'the host runs the worker again');
});

test.serial('settings: a worker named like an Object.prototype property reads its own; an uncloneable value is ERR_PEEK_SETTINGS', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'settings.json');
  fs.writeFileSync(file, JSON.stringify({ other: { greeting: 'x' } }));
  const { host } = hostWith(t, file);
  const m = worker(dir, 'constructor', readSettings, { settings: { greeting: 'hello', nested: {} } });
  const r = await host.run(m, command());
  t.true(r.ok, r.error?.message);
  t.is(r.value.settings.greeting, 'hello');
  const { host: odd } = hostWith(t, () => ({ greeting: () => {} }));
  const bad = await odd.run(m, command());
  t.is(bad.error?.code, codes.SETTINGS);
  t.regex(bad.error.message, /worker constructor: its settings cannot be copied/);
});

const { sandboxStatus } = require('../../js/peek/node/sandbox');
const sandbox = sandboxStatus();
if (!sandbox.ok) console.log(`peek/api: the settings-file sandbox test is skipped: ${sandbox.reason}`);

(sandbox.ok ? test.serial : test.serial.skip)('a sandboxed run does not see the settings file, though it sits in the worker’s package, readable by all', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'settings.json');
  fs.writeFileSync(file, JSON.stringify({ peeker: { greeting: 'secret-ish' }, neighbour: { token: 'theirs' } }), { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), sandbox: 'required', log: () => {} });
  const host = createWorkerHost({ adapter, settings: file });
  t.teardown(async () => {
    await host.close();
    await adapter.close();
  });
  const m = worker(
    dir,
    'peeker',
    `import fs from 'node:fs';
    export default async (api) => {
      let read;
      try { read = fs.readFileSync(new URL('./settings.json', import.meta.url), 'utf8'); } catch (err) { read = err.code; }
      return { read, mine: api.settings.greeting, shipped: fs.existsSync(new URL('./peeker.js', import.meta.url)) };
    };`,
    { settings: { greeting: 'hello' } },
  );
  const r = await host.run(m, command());
  t.true(r.ok, r.error?.message);
  t.deepEqual(r.value, { read: 'ENOENT', mine: 'secret-ish', shipped: true });
});

test('the host answers a forged call to a realm-only function with an error reply naming it', async (t) => {
  const { RealmClient } = require('../../js/peek/protocol/host-side');
  const { buildApi } = require('../../js/peek/api');
  const sent = [];
  class Capture extends RealmClient {
    ready() {}
    _send(m) {
      sent.push(m);
      if (m.t === 'job') queueMicrotask(() => this._receive({ t: 'loaded', ok: true, exports: [['default', 'function']] }));
    }
  }
  const dir = tmpDir(t);
  const manifest = loadManifest(worker(dir, 'w', 'export default async () => 1;', { commands: ['w'], capabilities: { lifecycle: {}, log: {}, pubsub: { subscribe: ['t'] } } }));
  const realm = new Capture(manifest, { log: () => {} });
  const api = buildApi(manifest, { store: null, fetch: () => {}, publish: async () => {}, log: () => {} });
  realm.installGlobals({ app: api });
  await realm.loadWorkerModule(manifest);
  const job = sent.find((m) => m.t === 'job');
  t.deepEqual(job.grants, { topics: ['t'], commands: ['w'] });
  const paths = [['subscribe'], ['commands', 'on'], ['initialize'], ['onShutdown']];
  paths.forEach((path, i) => realm._receive({ t: 'call', id: 100 + i, path, args: ['t', null] }));
  await until(() => sent.filter((m) => m.t === 'reply').length === paths.length, 2000, 'the replies');
  const replies = sent.filter((m) => m.t === 'reply').sort((a, b) => a.id - b.id);
  t.deepEqual(
    replies.map((r) => [r.id, r.ok, r.error.message]),
    paths.map((p, i) => [100 + i, false, `api.${p.join('.')} runs in the worker's realm`]),
  );
  t.is(realm.violation, null, 'a call the api has is no protocol violation');
});
