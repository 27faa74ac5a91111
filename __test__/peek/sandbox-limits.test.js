'use strict';
// The sandbox's own limits, attacked: what is shipped into a run (never a
// file others may not read, never a durable directory, never a path named
// excluded, never a walk that multiplies through links), a uid pool run dry,
// and a relay asked to hold more than it counts.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { readBundle, MAX_BUNDLE_BYTES } = require('../../js/peek/node/bundle');
const { sandboxStatus } = require('../../js/peek/node/sandbox');
const { checkRealmMessage } = require('../../js/peek/protocol/frames');
const { worker, setup } = require('../helpers/peek');
const { tmpDir } = require('../helpers/tmp');
const v8 = require('node:v8');

test('a bundle ships what anyone may read and nothing else: not a 0600 file, a 0700 directory, a durable directory, an excluded path', (t) => {
  const dir = tmpDir(t);
  const file = worker(dir, 'w', 'export default () => 1;');
  fs.writeFileSync(path.join(dir, 'secret.json'), '{}', { mode: 0o600 });
  fs.mkdirSync(path.join(dir, 'private'), { mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'private', 'x.js'), '', { mode: 0o644 });
  fs.mkdirSync(path.join(dir, 'data'), { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'data', '_registry.db'), '', { mode: 0o644 });
  fs.writeFileSync(path.join(dir, 'data', 'other.js'), '', { mode: 0o644 });
  fs.writeFileSync(path.join(dir, 'named.js'), '', { mode: 0o644 });
  fs.writeFileSync(path.join(dir, 'lib.js'), 'export const x = 1;', { mode: 0o644 });
  const b = readBundle(fs.realpathSync(path.join(dir, 'w.js')), 'w', { exclude: [path.join(dir, 'named.js')] });
  t.deepEqual(b.files.map(([p]) => p).sort(), ['lib.js', 'package.json', 'w.js', 'w.json']);
  t.truthy(file);
});

test('a package whose links multiply (a diamond of directory links) is walked once per real directory, not 2^n times', (t) => {
  const dir = tmpDir(t);
  worker(dir, 'w', 'export default () => 1;');
  for (let i = 0; i < 24; i++) fs.mkdirSync(path.join(dir, `d${i}`));
  for (let i = 0; i < 23; i++) {
    fs.symlinkSync(path.join(dir, `d${i + 1}`), path.join(dir, `d${i}`, 'a'));
    fs.symlinkSync(path.join(dir, `d${i + 1}`), path.join(dir, `d${i}`, 'b'));
  }
  const started = Date.now();
  let err = null;
  try {
    readBundle(fs.realpathSync(path.join(dir, 'w.js')), 'w');
  } catch (e) {
    err = e;
  }
  // Each real directory is walked once: the 24 directories are few, and quick.
  t.true(Date.now() - started < 2000, `${Date.now() - started} ms`);
  t.is(err, null, String(err));
});

test('a bundle is counted with its paths: long paths cannot make a job larger than a frame', (t) => {
  const dir = tmpDir(t);
  worker(dir, 'w', 'export default () => 1;');
  const deep = path.join(dir, 'x'.repeat(200), 'y'.repeat(200), 'z'.repeat(200));
  fs.mkdirSync(deep, { recursive: true });
  const chunk = Buffer.alloc(Math.ceil(MAX_BUNDLE_BYTES / 1500), 'a');
  for (let i = 0; i < 1500; i++) fs.writeFileSync(path.join(deep, `${'f'.repeat(200)}${i}.js`), chunk);
  const err = t.throws(() => readBundle(fs.realpathSync(path.join(dir, 'w.js')), 'w'));
  t.is(err.code, 'ERR_PEEK_SANDBOX');
  t.regex(err.message, /is more than 12582912 bytes/);
});

test('a relayed fetch body is copied out of its frame: a one-byte body does not keep a 15 MB frame alive', (t) => {
  const frame = v8.deserialize(v8.serialize({ t: 'fetch', id: 1, url: 'https://x.example/', method: 'POST', headers: [], body: new Uint8Array(1), pad: 'p'.repeat(15e6) }));
  const m = checkRealmMessage(frame, { allow: new Set(['fetch']) });
  t.is(m.body.byteLength, 1);
  t.is(m.body.buffer.byteLength, 1, 'the body owns its own bytes');
});

const sandbox = sandboxStatus();
(sandbox.ok && sandbox.mode === 'root' ? test.serial : test.serial.skip)('a pool of sandbox uids run dry fails the run with ERR_PEEK_SANDBOX, and the supervisor serves on', async (t) => {
  const { dir, host } = setup(t, { sandbox: 'required', sandboxUids: [0x61000000, 1], spares: 1 });
  const file = worker(dir, 'slow', 'export default async () => { await new Promise((r) => setTimeout(r, 500)); return process.getuid(); };');
  const trigger = { kind: 'command', name: 'slow', params: {} };
  const first = host.run(file, trigger);
  const second = await host.run(file, trigger);
  const a = await first;
  t.true(a.ok || second.ok, JSON.stringify([a, second]));
  const failed = [a, second].filter((r) => !r.ok);
  t.is(failed.length, 1, 'with one uid, one of two runs at once has none');
  t.is(failed[0].error.code, 'ERR_PEEK_SANDBOX', failed[0].error.message);
  // One uid: later runs take it back in turn.
  const third = await host.run(file, trigger);
  t.true(third.ok, JSON.stringify(third));
});
