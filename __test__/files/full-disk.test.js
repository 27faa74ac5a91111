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
const { mkfs, attachImage } = require('../helpers/powercut-ext4');

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

  async get(key) {
    return this.state.get(key);
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

/**
 * Mounts a fresh ext4 image of `mb` MiB without a journal (the file system on
 * which logs are synced in place, with zeros written ahead of a growing one),
 * on a loop device; null (with the reason) where that is refused.
 */
function mountExt4(t, mb) {
  const m = attachExt4(mb);
  if (m.dir !== null) t.teardown(m.undo);
  return m;
}

/** mountExt4's mount, with its undo; { dir: null, why } where refused. */
function attachExt4(mb) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-full-ext4-'));
  const image = `${dir}.img`;
  const remove = () => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(image, { force: true });
  };
  try {
    mkfs(image, mb << 20, { journal: false });
    const a = attachImage(image, dir);
    return { dir, why: null, undo: () => (a.detach(), remove()) };
  } catch (err) {
    remove();
    return { dir: null, why: err.message.trim() };
  }
}

/** Why no ext4 image can be mounted here (decided once, when the file loads), or null. */
function cannotMountExt4() {
  if (refused !== null) return `no tmpfs either (${refused})`;
  const m = attachExt4(8);
  if (m.dir === null) return m.why;
  m.undo();
  return null;
}
const ext4Refused = cannotMountExt4();
if (ext4Refused !== null) console.log(`files/full-disk: the ext4 test is skipped: no ext4 image can be mounted here (${ext4Refused})`);

(ext4Refused === null ? test.serial : test.serial.skip)('on a full ext4 without a journal, a commit whose zeros ahead do not fit stands, and a write that fails leaves nothing behind', async (t) => {
  const { dir: mnt, why } = mountExt4(t, 8);
  if (mnt === null) throw new Error(`an ext4 image mounted once, then not: ${why}`);
  const dir = path.join(mnt, 'data');
  let host = await open({ dir });
  const a = host.get(Box, 'a');
  // A log with zeros written ahead of it (its first write made the file).
  for (let i = 0; i < 10; i++) await a.put('n', -i);
  const filler = fill(mnt);
  // Room for a few frames, not for the zeros written ahead past them.
  fs.truncateSync(filler, fs.statSync(filler).size - 12 * 1024);
  let acked = 0;
  let failed = null;
  for (let i = 1; i <= 2000 && failed === null; i++) {
    try {
      await a.put('n', i);
      acked = i;
    } catch (err) {
      failed = err;
    }
  }
  t.log(`${acked} writes acknowledged on the full disk, ${host.stats().syncsInPlace} synced in place; then ${failed?.code}: ${failed?.message}`);
  t.true(acked > 1, 'commits whose frames fit stand, though their zeros ahead did not');
  t.true(host.stats().syncsInPlace > 0, 'the log was synced in place (ext4 without a journal)');
  t.is(failed?.code, 'ERR_DURABLE_IO', 'once the frames do not fit either, the write fails');
  fs.rmSync(filler);
  await host.close();
  host = await open({ dir });
  t.teardown(() => host.close());
  t.is(await host.get(Box, 'a').get('n'), acked, 'the last acknowledged write, not the one that failed');
});
