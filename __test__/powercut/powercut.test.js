'use strict';
// The power-cut file system itself (__test__/helpers/powercut.js): what a cut
// keeps is exactly what fsync, fdatasync and directory fsyncs made durable,
// a real SQLite database keeps every acknowledged commit across cuts, and
// chaos mode is reproducible from its seed and tears writes.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { available, mount } = require('../helpers/powercut');

/** A mount over a fresh backing directory, unmounted and removed at teardown. */
async function setup(t, options = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-powercut-'));
  const m = await mount({ backing: path.join(dir, 'backing'), mountpoint: path.join(dir, 'mnt'), ...options });
  t.teardown(async () => {
    await m.unmount();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const at = (...names) => path.join(m.mountpoint, ...names);
  return { m, at };
}

/** Writes `data` at `offset` through a fresh descriptor, then syncs it: 'fsync', 'fdatasync' or 'none'. */
function put(file, data, { sync = 'fsync', offset = 0, flags = 'w', mode = 0o600 } = {}) {
  const fd = fs.openSync(file, flags, mode);
  try {
    fs.writeSync(fd, data, 0, data.length, offset);
    if (sync === 'fsync') fs.fsyncSync(fd);
    if (sync === 'fdatasync') fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** fsync of a directory: what makes its entries durable. */
function syncDir(dir) {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

const read = (file) => fs.readFileSync(file, 'utf8');
const exists = (file) => fs.existsSync(file);

const why = available();
if (!why.ok) {
  test.skip(`powercut: needs root, /dev/fuse and cargo (${why.reason})`, () => {});
} else {
  test('a write without a sync is gone after a cut; the file is back to its synced content', async (t) => {
    const { m, at } = await setup(t);
    put(at('f'), Buffer.from('v1'));
    syncDir(m.mountpoint);
    put(at('f'), Buffer.from('v2-longer'), { sync: 'none', flags: 'r+' });
    t.is(read(at('f')), 'v2-longer', 'readers see the unsynced write');
    t.is(fs.readFileSync(path.join(m.backing, 'f'), 'utf8'), 'v1', 'the backing store does not');
    const report = await m.cut();
    t.is(report.droppedWrites, 1);
    t.is(read(at('f')), 'v1');
  });

  test('fsync and fdatasync each keep a write, and the mode of a 0600 file', async (t) => {
    const { m, at } = await setup(t);
    put(at('a'), Buffer.from('old'));
    put(at('b'), Buffer.from('old'));
    syncDir(m.mountpoint);
    put(at('a'), Buffer.from('new by fsync'), { flags: 'r+' });
    put(at('b'), Buffer.from('new by fdatasync'), { sync: 'fdatasync', flags: 'r+' });
    const stats = await m.stats();
    t.true(stats.fsyncs >= 3 && stats.fdatasyncs === 1 && stats.dirSyncs === 1, JSON.stringify(stats));
    await m.cut();
    t.is(read(at('a')), 'new by fsync');
    t.is(read(at('b')), 'new by fdatasync');
    t.is(fs.statSync(at('a')).mode & 0o777, 0o600);
    t.is(fs.statSync(at('b')).mode & 0o777, 0o600);
  });

  test('a new file fsynced in a directory never synced is gone after a cut; with the directory synced it stays', async (t) => {
    const { m, at } = await setup(t);
    fs.mkdirSync(at('sub'), { mode: 0o700 });
    syncDir(m.mountpoint);
    put(at('sub', 'kept'), Buffer.from('data'));
    syncDir(at('sub'));
    // Created after the directory's sync: fsynced, yet no synced entry names it.
    put(at('sub', 'lost'), Buffer.from('data'));
    // A directory whose parent was not synced takes its synced entries with it.
    fs.mkdirSync(at('new'));
    put(at('new', 'f'), Buffer.from('data'));
    syncDir(at('new'));
    await m.cut();
    t.deepEqual(fs.readdirSync(m.mountpoint).sort(), ['sub']);
    t.deepEqual(fs.readdirSync(at('sub')).sort(), ['kept']);
    t.is(read(at('sub', 'kept')), 'data');
    t.is(fs.statSync(at('sub', 'kept')).mode & 0o777, 0o600);
    t.is(fs.statSync(at('sub')).mode & 0o777, 0o700);
  });

  test('a rename, and a rename over an existing file, is undone without a directory sync and stays with one', async (t) => {
    const { m, at } = await setup(t);
    put(at('a'), Buffer.from('A'));
    put(at('target'), Buffer.from('T'));
    syncDir(m.mountpoint);

    fs.renameSync(at('a'), at('b'));
    await m.cut();
    t.deepEqual(fs.readdirSync(m.mountpoint).sort(), ['a', 'target']);

    fs.renameSync(at('a'), at('b'));
    syncDir(m.mountpoint);
    await m.cut();
    t.deepEqual(fs.readdirSync(m.mountpoint).sort(), ['b', 'target']);

    fs.renameSync(at('b'), at('target'));
    t.is(read(at('target')), 'A');
    await m.cut();
    t.is(read(at('b')), 'A');
    t.is(read(at('target')), 'T', 'the replaced file is back');

    // The classic atomic replace: write aside, fsync, rename over, fsync the directory.
    put(at('target.tmp'), Buffer.from('T2'));
    fs.renameSync(at('target.tmp'), at('target'));
    syncDir(m.mountpoint);
    await m.cut();
    t.deepEqual(fs.readdirSync(m.mountpoint).sort(), ['b', 'target']);
    t.is(read(at('target')), 'T2');
  });

  test('an unlink is undone without a directory sync and stays with one', async (t) => {
    const { m, at } = await setup(t);
    put(at('f'), Buffer.from('still here'));
    syncDir(m.mountpoint);
    fs.unlinkSync(at('f'));
    t.false(exists(at('f')));
    await m.cut();
    t.is(read(at('f')), 'still here');
    fs.unlinkSync(at('f'));
    syncDir(m.mountpoint);
    await m.cut();
    t.false(exists(at('f')));
  });

  test('after a cut the old mount answers EIO and the new one shows the synced state', async (t) => {
    const { m, at } = await setup(t);
    put(at('f'), Buffer.from('synced'));
    syncDir(m.mountpoint);
    const fd = fs.openSync(at('f'), 'r+');
    fs.writeSync(fd, 'UNSYNCED', 0);
    await m.cut();
    const codes = ['EIO', 'ENOTCONN'];
    const buf = Buffer.alloc(16);
    t.true(codes.includes(t.throws(() => fs.readSync(fd, buf, 0, 16, 0)).code));
    t.true(codes.includes(t.throws(() => fs.writeSync(fd, 'more', 0)).code));
    t.true(codes.includes(t.throws(() => fs.fsyncSync(fd)).code));
    try {
      fs.closeSync(fd);
    } catch {}
    t.is(read(at('f')), 'synced');
    const stats = await m.stats();
    t.false(stats.dead);
    t.is(stats.writes, 0);
  });

  test('ftruncate with fdatasync keeps the new size; sparse writes far past the end too', async (t) => {
    const { m, at } = await setup(t);
    const big = Buffer.alloc(10_000, 'x');
    put(at('f'), big);
    syncDir(m.mountpoint);
    let fd = fs.openSync(at('f'), 'r+');
    fs.ftruncateSync(fd, 100);
    fs.fdatasyncSync(fd);
    fs.ftruncateSync(fd, 50);
    fs.closeSync(fd);
    await m.cut();
    t.is(fs.statSync(at('f')).size, 100);

    fd = fs.openSync(at('f'), 'r+');
    fs.ftruncateSync(fd, 1 << 20);
    fs.writeSync(fd, 'end', 3 << 20);
    fs.fdatasyncSync(fd);
    fs.writeSync(fd, 'lost', 0);
    fs.closeSync(fd);
    await m.cut();
    const content = fs.readFileSync(at('f'));
    t.is(content.length, (3 << 20) + 3);
    t.true(content.subarray(0, 100).equals(big.subarray(0, 100)));
    t.true(content.subarray(100, 3 << 20).every((b) => b === 0));
    t.is(content.subarray(3 << 20).toString(), 'end');
  });

  test('O_EXCL, access, chmod, and writing an open file after its unlink behave as on a disk', async (t) => {
    const { m, at } = await setup(t);
    put(at('f'), Buffer.from('x'), { flags: 'wx' });
    put(at('g'), Buffer.from('g'), { flags: 'wx' });
    syncDir(m.mountpoint);
    t.is(t.throws(() => fs.openSync(at('f'), 'wx')).code, 'EEXIST');
    fs.accessSync(at('f'), fs.constants.R_OK | fs.constants.W_OK);
    t.is(t.throws(() => fs.accessSync(at('nope'))).code, 'ENOENT');

    // An fsync of an unlinked file still syncs its data; the unlink itself
    // is undone by a cut, so the name comes back with the new data.
    const fd = fs.openSync(at('f'), 'r+');
    fs.unlinkSync(at('f'));
    t.false(exists(at('f')));
    fs.writeSync(fd, 'still writable', 0);
    fs.fsyncSync(fd);
    t.is(fs.fstatSync(fd).size, 14);
    t.is(fs.fstatSync(fd).nlink, 0);
    const buf = Buffer.alloc(14);
    fs.readSync(fd, buf, 0, 14, 0);
    t.is(buf.toString(), 'still writable');
    fs.closeSync(fd);

    // A mode change is metadata: an fsync keeps it, an fdatasync does not.
    fs.chmodSync(at('g'), 0o640);
    const gd = fs.openSync(at('g'), 'r');
    fs.fdatasyncSync(gd);
    fs.closeSync(gd);
    await m.cut();
    t.is(read(at('f')), 'still writable');
    t.is(fs.statSync(at('g')).mode & 0o777, 0o600);
    fs.chmodSync(at('g'), 0o640);
    const gd2 = fs.openSync(at('g'), 'r');
    fs.fsyncSync(gd2);
    fs.closeSync(gd2);
    await m.cut();
    t.is(fs.statSync(at('g')).mode & 0o777, 0o640);
  });

  // A child commits rows one at a time (WAL, synchronous as argv[3] says)
  // and prints each id once its commit returned; it is SIGKILLed with the cut.
  const CHILD = `
    const fs = require('node:fs');
    const Database = require(process.argv[1]);
    const db = new Database(process.argv[2]);
    db.pragma('synchronous = ' + process.argv[3]);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE IF NOT EXISTS acks(id INTEGER PRIMARY KEY, payload BLOB NOT NULL)');
    const insert = db.prepare('INSERT INTO acks(id, payload) VALUES (?, randomblob(?))');
    let id = db.prepare('SELECT coalesce(max(id), 0) AS n FROM acks').get().n;
    for (;;) {
      id++;
      insert.run(id, 100 + (id % 13) * 400);
      fs.writeSync(1, id + '\\n');
    }`;

  /** Runs the writer until it has acknowledged `count` more rows; returns it and the last id acknowledged. */
  async function writer(t, file, synchronous, from, count) {
    const child = spawn(process.execPath, ['-e', CHILD, require.resolve('better-sqlite3'), file, synchronous], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.teardown(() => child.kill('SIGKILL')); // a failed test must not leave it writing
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    let acked = from;
    await new Promise((resolve, reject) => {
      readline.createInterface({ input: child.stdout }).on('line', (line) => {
        acked = Number(line);
        if (acked - from >= count) resolve();
      });
      child.on('exit', (code) => reject(new Error(`the writer exited (${code}): ${stderr}`)));
    });
    return { child, acked };
  }

  /** Opens the database after a cut: integrity checked, every row from 1 to max present; returns max. */
  function check(t, file) {
    const Database = require('better-sqlite3');
    const db = new Database(file);
    try {
      t.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
      const { n, max } = db.prepare('SELECT count(*) AS n, coalesce(max(id), 0) AS max FROM acks').get();
      t.is(n, max, 'no gap');
      return max;
    } finally {
      db.close();
    }
  }

  for (const mode of ['drop', 'chaos']) {
    test(`SQLite in WAL mode with synchronous=FULL keeps every acknowledged commit across cuts (${mode})`, async (t) => {
      const { m, at } = await setup(t, { mode, seed: 11 });
      const file = at('acks.db');
      let acked = 0;
      for (let round = 0; round < 4; round++) {
        // Past a few checkpoints (100 pages each) in some rounds, not others.
        const w = await writer(t, file, 'FULL', acked, 40 + round * 60);
        const report = await m.cut([w.child]);
        const max = check(t, file);
        t.log(`round ${round}: ${w.acked} acknowledged, ${max} on disk; cut ${JSON.stringify(report)}`);
        t.true(max >= w.acked, `round ${round}: ${w.acked} acknowledged, ${max} on disk`);
        acked = max;
      }
    });
  }

  test('the control: with synchronous=OFF acknowledged commits do not survive a cut (a SIGKILL alone keeps them)', async (t) => {
    const { m, at } = await setup(t);
    const file = at('acks.db');
    const w = await writer(t, file, 'OFF', 0, 50);
    w.child.kill('SIGKILL');
    await new Promise((resolve) => (w.child.exitCode === null && w.child.signalCode === null ? w.child.once('exit', resolve) : resolve()));
    const Database = require('better-sqlite3');
    const db = new Database(file, { readonly: true });
    t.true(db.prepare('SELECT max(id) AS max FROM acks').get().max >= w.acked, 'after the SIGKILL every acknowledged row is there');
    db.close();
    await m.cut();
    // Nothing was ever synced, not even the directory entry.
    t.false(exists(file));
  });

  /**
   * One chaos run: 16 files with synced content, each appended to and
   * overwritten without a sync, plus new files fsynced in a directory never
   * synced; then a cut. Returns every file of the new mount by name.
   */
  async function chaosRun(t, seed) {
    const { m, at } = await setup(t, { mode: 'chaos', seed });
    const base = Buffer.alloc(1000, 'a');
    for (let i = 0; i < 16; i++) put(at(`f${i}`), base);
    syncDir(m.mountpoint);
    for (let i = 0; i < 16; i++) {
      put(at(`f${i}`), Buffer.alloc(8192, 'b'), { sync: 'none', flags: 'r+', offset: 1000 });
      put(at(`f${i}`), Buffer.from('c'), { sync: 'none', flags: 'r+', offset: 10 });
      put(at(`new${i}`), Buffer.from(`new ${i}`));
    }
    const report = await m.cut();
    const files = {};
    for (const name of fs.readdirSync(m.mountpoint).sort()) files[name] = fs.readFileSync(at(name));
    return { files, report };
  }

  test('chaos: the same seed keeps the same bytes, another seed others, and some writes are torn', async (t) => {
    const [a, again, other] = [await chaosRun(t, 7), await chaosRun(t, 7), await chaosRun(t, 8)];
    t.deepEqual(again.files, a.files);
    t.deepEqual(again.report, a.report);
    t.notDeepEqual(other.files, a.files);
    t.true(a.report.appliedWrites > 0 && a.report.droppedWrites > 0 && a.report.appliedDirOps > 0 && a.report.droppedDirOps > 0, JSON.stringify(a.report));
    let torn = 0;
    for (const run of [a, other]) {
      for (const [name, content] of Object.entries(run.files)) {
        if (name.startsWith('new')) {
          t.is(content.toString(), name.replace('new', 'new '), 'a fsynced file that survives has its data');
          continue;
        }
        // The synced bytes are all there, but for the unsynced overwrite at 10.
        t.true(content.length >= 1000, name);
        t.true(
          content.subarray(0, 1000).every((b, i) => b === 0x61 || (i === 10 && b === 0x63)),
          name,
        );
        // Past them: sectors of the append, or zeros where one was lost.
        const tail = content.subarray(1000);
        t.true(tail.every((b) => b === 0x62 || b === 0));
        if (tail.length > 0 && (tail.length < 8192 || tail.includes(0))) torn++;
      }
    }
    t.true(torn > 0, 'some file ends with part of an unsynced write');
    t.log(`seed 7: ${JSON.stringify(a.report)}; ${torn} torn appends over seeds 7 and 8`);
  });
}
