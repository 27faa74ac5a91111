'use strict';
// Peek manifests, schedule specs, network domains and credentials: refused at
// load with the field named, so a mistake is found before anything runs.
// Pure functions over real files; no process is forked here.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { loadManifest, parseSchedule, credentialEnvName, codes } = require('durable-workers/peek');
const { hostAllowed } = require('../../js/peek/domains');
const { credentialReader } = require('../../js/peek/credentials');
const { tmpDir } = require('../helpers/tmp');

/** Writes worker.js and manifest.json (the given object) into a fresh directory; returns the manifest path. */
function manifestFile(t, manifest, { worker = true } = {}) {
  const dir = tmpDir(t);
  if (worker) fs.writeFileSync(path.join(dir, 'worker.js'), 'export default async () => 1;\n');
  const file = path.join(dir, 'manifest.json');
  fs.writeFileSync(file, typeof manifest === 'string' ? manifest : JSON.stringify(manifest));
  return file;
}

const base = { name: 'w', worker: { url: 'worker.js' } };

test('a valid manifest loads with its defaults filled in and its module resolved', (t) => {
  const file = manifestFile(t, { ...base, schedule: 'every 15m', capabilities: { datastore: {}, network: { domains: ['api.example.com'] }, log: {} } });
  const m = loadManifest(file);
  t.is(m.name, 'w');
  t.is(m.intervalMs, 15 * 60_000);
  t.deepEqual(m.capabilities.datastore.methods, ['describe']);
  t.deepEqual(m.commands, ['w']);
  t.is(m.worker.path, path.join(path.dirname(file), 'worker.js'));
  t.true(m.worker.href.startsWith('file://'));
  t.true(Object.isFrozen(m.capabilities));
});

const refusals = [
  ['a missing worker.url', { name: 'w', worker: {} }, 'worker.url'],
  ['a worker.url naming no file', { name: 'w', worker: { url: 'gone.js' } }, 'worker.url'],
  ['a worker.url leaving the directory', { name: 'w', worker: { url: '../worker.js' } }, 'worker.url'],
  ['a missing worker', { name: 'w' }, 'worker'],
  ['a bad name', { ...base, name: 'two words' }, 'name'],
  ['an unknown capability', { ...base, capabilities: { filesystem: {} } }, 'capabilities.filesystem'],
  ['an unknown datastore method', { ...base, capabilities: { datastore: { methods: ['describe', 'dropAll'] } } }, 'capabilities.datastore.methods[1]'],
  ['a domain with a scheme', { ...base, capabilities: { network: { domains: ['https://x.com'] } } }, 'capabilities.network.domains[0]'],
  ['a bad schedule', { ...base, schedule: 'every 15 minutes' }, 'schedule'],
  ['a cron schedule', { ...base, schedule: '*/15 * * * *' }, 'schedule'],
  ['an unknown top-level field', { ...base, scheduel: 'every 1m' }, 'scheduel'],
  ['a bad wall-clock limit', { ...base, limits: { wallClockMs: -1 } }, 'limits.wallClockMs'],
  ['a subscription to a command topic', { ...base, capabilities: { pubsub: { subscribe: ['cmd:execute:x'] } } }, 'capabilities.pubsub.subscribe[0]'],
];

for (const [what, manifest, field] of refusals) {
  test(`${what} is refused at load, naming ${field}`, (t) => {
    const file = manifestFile(t, manifest);
    const err = t.throws(() => loadManifest(file));
    t.is(err.code, codes.MANIFEST);
    t.true(err.message.includes(`${field} `), err.message);
    t.true(err.message.includes(file), 'the message names the file');
  });
}

test('a manifest that is not JSON is refused with the parse error', (t) => {
  const err = t.throws(() => loadManifest(manifestFile(t, '{ "name": ')));
  t.is(err.code, codes.MANIFEST);
  t.regex(err.message, /not valid JSON/);
});

test('schedule specs: every N s|m|h|d, anything else refused with the grammar in the message', (t) => {
  t.is(parseSchedule('every 30s'), 30_000);
  t.is(parseSchedule('every 15m'), 900_000);
  t.is(parseSchedule('every 2h'), 7_200_000);
  t.is(parseSchedule('every 1d'), 86_400_000);
  for (const bad of ['every 0s', 'every 1.5m', 'every m', 'each 5m', 'every 5 m', 'every 5w', '', null, 5]) {
    const err = t.throws(() => parseSchedule(bad), undefined, String(bad));
    t.is(err.code, codes.SCHEDULE);
    t.regex(err.message, /every <n><unit>/);
  }
});

test('domains: exact hosts, *. wildcards for subdomains only, and * for any', (t) => {
  t.true(hostAllowed(['api.example.com'], 'api.example.com'));
  t.true(hostAllowed(['api.example.com'], 'API.Example.com'));
  t.false(hostAllowed(['api.example.com'], 'example.com'));
  t.false(hostAllowed(['api.example.com'], 'api.example.com.evil.net'));
  t.true(hostAllowed(['*.example.com'], 'a.b.example.com'));
  t.false(hostAllowed(['*.example.com'], 'example.com'));
  t.false(hostAllowed(['*.example.com'], 'badexample.com'));
  t.true(hostAllowed(['*'], 'anything.net'));
  t.false(hostAllowed([], 'example.com'));
});

test('credentials come from the environment, keyed by worker name', (t) => {
  const read = credentialReader({ envPrefix: 'PEEK_TEST_CRED_' });
  const key = credentialEnvName('my-worker', 'PEEK_TEST_CRED_');
  t.is(key, 'PEEK_TEST_CRED_MY_WORKER');
  process.env[key] = 'from-env';
  t.teardown(() => delete process.env[key]);
  t.is(read('my-worker'), 'from-env');
  t.is(read('other-worker'), undefined);
});

test('a credentials file is read by worker name when it is private, and refused when group or others can read it', (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'credentials.json');
  fs.writeFileSync(file, JSON.stringify({ alpha: 'secret-a' }), { mode: 0o600 });
  const read = credentialReader({ file, envPrefix: false });
  t.is(read('alpha'), 'secret-a');
  t.is(read('beta'), undefined);
  fs.chmodSync(file, 0o644);
  const err = t.throws(() => read('alpha'));
  t.is(err.code, codes.CREDENTIAL);
  t.true(err.message.includes('chmod 600'), err.message);
  t.true(err.message.includes('644'), err.message);
  fs.chmodSync(file, 0o640);
  t.is(t.throws(() => read('alpha')).code, codes.CREDENTIAL);
});
