'use strict';
// A full disk, for real: the directory lives on a small tmpfs mounted by the
// test, filled to the last byte. Writes fail with ERR_DURABLE_IO naming the
// worker and the cause, nothing acknowledged is lost, reads go on, and writes
// work again once space is freed. Skipped, saying why, where the machine
// refuses to mount.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { open, DurableWorker } = require('../..');

class Box extends DurableWorker {
  static collections = { docs: { n: 'integer' } };

  async put(key, value) {
    this.state.set(key, value);
  }

  async putDoc(id, n, body) {
    this.state.collection('docs').put(id, { n, body });
  }

  async read() {
    return { keys: this.state.keys(), docs: await this.state.collection('docs').count() };
  }
}

/** Mounts a tmpfs of `mb` MiB; null (with the reason) where mounting is refused. */
function mountSmall(t, mb) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    return { dir: null, why: String(err.stderr || err.message).trim() };
  }
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  return { dir, why: null };
}

/** Writes a filler file until the file system is full; returns its path. */
function fill(dir) {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if (err.code !== 'ENOSPC') throw err;
    // Then the last few bytes.
    try {
      for (;;) fs.writeSync(fd, chunk, 0, 512);
    } catch (e) {
      if (e.code !== 'ENOSPC') throw e;
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

/** Why a tmpfs cannot be mounted here (decided once, when the file loads), or null. */
function cannotMount() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-full-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'pipe' });
    execFileSync('umount', [dir], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return String(err.stderr || err.message).trim();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const refused = cannotMount();
if (refused !== null) console.log(`files/full-disk: skipped: this machine refuses to mount a tmpfs (${refused})`);

(refused === null ? test.serial : test.serial.skip)('on a full disk writes fail with ERR_DURABLE_IO, reads go on, nothing acknowledged is lost, and writes resume once space is freed', async (t) => {
  const { dir: mnt, why } = mountSmall(t, 16);
  if (mnt === null) throw new Error(`a 1 MiB tmpfs mounted, a 16 MiB one did not: ${why}`);
  const dir = path.join(mnt, 'data');
  let host = await open({ dir });
  const a = host.get(Box, 'a');
  const c = host.get(Box, 'c');
  for (let i = 0; i < 20; i++) await a.put(`k${i}`, 'v'.repeat(1000));
  for (let i = 0; i < 20; i++) await a.putDoc(`d${i}`, i, 'x'.repeat(1000));
  await c.put('here', true);
  t.true(host.stats().commitsInline > 0, 'serial writes are made on the JS thread, so the failure below is met there');

  const filler = fill(mnt);
  const big = 'z'.repeat(100_000);
  const failures = [];
  for (let i = 0; i < 50 && failures.length === 0; i++) {
    try {
      await a.putDoc(`full${i}`, i, big);
    } catch (err) {
      failures.push(err);
    }
  }
  t.is(failures.length, 1, 'a write on the full disk fails');
  t.is(failures[0].code, 'ERR_DURABLE_IO');
  t.regex(failures[0].message, /Box "a".*(full|space)/i);
  const fresh = await t.throwsAsync(host.get(Box, 'new').put('x', big));
  t.is(fresh.code, 'ERR_DURABLE_IO', 'a new worker cannot be created either');

  // Reads go on: the live worker from memory, the failed one from its file.
  t.deepEqual((await c.read()).keys, ['here']);
  const seen = await a.read();
  t.true(seen.keys.length === 20 && seen.docs >= 20, JSON.stringify(seen));

  fs.rmSync(filler);
  await a.putDoc('after', 1, big);
  await host.get(Box, 'new').put('x', big);
  t.is((await a.read()).docs, seen.docs + 1);
  await host.close();

  host = await open({ dir });
  t.teardown(() => host.close());
  const back = await host.get(Box, 'a').read();
  t.is(back.keys.length, 20);
  t.is(back.docs, seen.docs + 1);
  t.deepEqual((await host.get(Box, 'new').read()).keys, ['x']);
  await host.close();
  for (const sub of fs.readdirSync(path.join(dir, 'Box'))) {
    for (const f of fs.readdirSync(path.join(dir, 'Box', sub)).filter((x) => x.endsWith('.db'))) {
      t.is(execFileSync('sqlite3', [path.join(dir, 'Box', sub, f), 'PRAGMA integrity_check'], { encoding: 'utf8' }), 'ok\n');
    }
  }
});
