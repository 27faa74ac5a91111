'use strict';
// File modes: every directory the engine creates is 0700 and every file it or
// SQLite creates is 0600, created that way rather than by the umask. Each
// directory here is made by a child process that first sets umask 0, so a
// mode that comes out right proves the engine asked for it: under umask 0 the
// old code made 0777 directories and 0644 files. The same for Peek's state
// directory and its embedded store. As root, a uid 65534 process is refused a
// worker file (skipped, saying why, when not root).
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tmpDir } = require('../helpers/tmp');

const ROOT = path.join(__dirname, '..', '..');
const NOBODY = 65534;
const posix = process.platform !== 'win32';
// Decided when the file loads, so a skip is visible in the report.
if (!posix) console.log('files/modes: skipped: Unix file modes do not apply on Windows');
const unix = posix ? test : test.skip;

/**
 * Runs `body` (an async function's text, given `dir`) in a child process with
 * umask 0; returns what it printed as JSON on its last line.
 */
function inChild(t, body, dir) {
  const script = `
    process.umask(0);
    const { open, DurableWorker } = require(${JSON.stringify(ROOT)});
    const fs = require('node:fs');
    const path = require('node:path');
    ${walk.toString()}
    (async (dir) => { ${body} })(${JSON.stringify(dir)}).then(
      (v) => console.log(JSON.stringify(v ?? null)),
      (e) => { console.error(e && e.stack || e); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...childEnv } });
  t.is(r.status, 0, `child failed: ${r.stderr}`);
  const last = r.stdout.trim().split('\n').pop();
  return last ? JSON.parse(last) : null;
}
const childEnv = {};

/** Every directory and file under `root` (itself included), with its permission bits. */
function walk(root) {
  const out = [];
  const visit = (p) => {
    const st = fs.lstatSync(p);
    out.push({ path: p, dir: st.isDirectory(), mode: (st.mode & 0o777).toString(8).padStart(3, '0') });
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) visit(path.join(p, name));
  };
  visit(root);
  return out;
}

/** Asserts every directory in `entries` is 0700 and every file 0600, naming the ones that are not. */
function assertPrivate(t, entries, what) {
  const wrong = entries.filter((e) => e.mode !== (e.dir ? '700' : '600'));
  t.deepEqual(
    wrong.map((e) => `${e.dir ? 'dir' : 'file'} ${e.path} is ${e.mode}`),
    [],
    `${what}: every directory 0700, every file 0600`,
  );
  t.true(entries.some((e) => e.dir) && entries.some((e) => !e.dir), `${what}: saw directories and files`);
}

// Worker classes for the children: two classes, one with a collection and an alarm.
const CLASSES = `
  class Notes extends DurableWorker {
    static collections = { docs: { n: 'integer' } };
    async put(i) {
      this.state.set('k' + i, 'x'.repeat(2000));
      this.state.collection('docs').put('d' + i, { n: i, body: 'y'.repeat(500) });
      await this.state.setAlarm(Date.now() + 3_600_000);
      return i;
    }
    async alarm() {}
  }
  class Cart extends DurableWorker {
    async add(i) { const a = this.state.get('a') ?? []; a.push(i); this.state.set('a', a); return a.length; }
  }`;

const WORK = `
  ${CLASSES}
  const host = await open({ dir: path.join(dir, 'made', 'by', 'engine') });
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 12 }, (_, i) => host.get(Notes, 'n' + i).put(round * 100 + i)));
    await Promise.all(Array.from({ length: 12 }, (_, i) => host.get(Cart, 'c/' + i).add(round)));
  }
  const whileOpen = walk(path.join(dir, 'made'));
  await host.close();
  return { whileOpen, afterClose: walk(path.join(dir, 'made')) };`;

unix('an engine directory made under umask 0: directories 0700, worker files, WALs and the catalog 0600, open and closed', (t) => {
  const dir = tmpDir(t);
  const { whileOpen, afterClose } = inChild(t, WORK, dir);
  // The parents the engine made on the way are its own too.
  t.true(whileOpen.some((e) => e.path.endsWith(`${path.sep}made`) && e.dir));
  t.true(
    whileOpen.some((e) => e.path.endsWith('_registry.db-wal')),
    'the catalog has a WAL while open',
  );
  t.true(
    whileOpen.some((e) => /[0-9a-f]{64}\.db-wal$/.test(e.path)),
    'workers have WALs while open',
  );
  t.true(afterClose.filter((e) => /[0-9a-f]{64}\.db$/.test(e.path)).length === 24, 'one file per worker');
  assertPrivate(t, whileOpen, 'while open');
  assertPrivate(t, afterClose, 'after close');
});

unix('a catalog rebuilt after it was deleted, and a reopened directory, stay 0600 and 0700', (t) => {
  const dir = tmpDir(t);
  inChild(t, WORK, dir);
  const engineDir = path.join(dir, 'made', 'by', 'engine');
  for (const f of fs.readdirSync(engineDir)) if (f.startsWith('_registry.db')) fs.rmSync(path.join(engineDir, f));
  const after = inChild(
    t,
    `${CLASSES}
    const host = await open({ dir: path.join(dir, 'made', 'by', 'engine') });
    await host.get(Cart, 'new one').add(1);
    await host.get(Notes, 'n0').put(7);
    await host.close();
    return walk(path.join(dir, 'made'));`,
    dir,
  );
  t.true(
    after.some((e) => e.path.endsWith('_registry.db')),
    'the catalog was rebuilt',
  );
  assertPrivate(t, after, 'after a rebuild');
});

unix('a directory the user made is left as it is; what the engine makes inside it is private', (t) => {
  const dir = tmpDir(t);
  const mine = path.join(dir, 'mine');
  fs.mkdirSync(mine);
  fs.chmodSync(mine, 0o755);
  const entries = inChild(
    t,
    `${CLASSES}
    const host = await open({ dir: path.join(dir, 'mine') });
    await host.get(Cart, 'a').add(1);
    await host.close();
    return walk(path.join(dir, 'mine'));`,
    dir,
  );
  t.is(entries[0].mode, '755', 'the directory handed to open() keeps its mode');
  assertPrivate(t, entries.slice(1), 'inside a user-made directory');
});

unix("Peek under umask 0: the run's state directory 0700, the embedded store's and schedules' files 0600", (t) => {
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  fs.writeFileSync(path.join(dir, 'keeper.js'), `export default async (api) => (await api.datastore.addItem('note', 'secret text')).success;`);
  const manifest = path.join(dir, 'keeper.json');
  fs.writeFileSync(manifest, JSON.stringify({ name: 'keeper', worker: { url: 'keeper.js' }, capabilities: { datastore: { methods: ['addItem'] } } }));
  childEnv.PEEK_CREDENTIAL_KEEPER = 'c';
  t.teardown(() => delete childEnv.PEEK_CREDENTIAL_KEEPER);
  const entries = inChild(
    t,
    `const { createWorkerHost, nodeAdapter } = require(${JSON.stringify(require.resolve('durable-workers/peek'))});
    const state = path.join(dir, 'runs', '.peek-state');
    const adapter = nodeAdapter({ dir: state, warm: false, log: () => {} });
    const host = createWorkerHost({ adapter });
    const r = await host.run(${JSON.stringify(manifest)}, { kind: 'command', name: 'test', params: {} });
    if (!r.ok || r.value !== true) throw new Error('the run failed: ' + JSON.stringify(r.error));
    await adapter.ensureSchedule(${JSON.stringify(manifest)}, 'every 1h');
    const snap = walk(path.join(dir, 'runs'));
    await host.close();
    await adapter.close();
    return [...snap, ...walk(path.join(dir, 'runs'))];`,
    dir,
  );
  t.true(
    entries.some((e) => /peek-store/.test(e.path) && e.path.endsWith('.db')),
    'the embedded store has a file',
  );
  t.true(
    entries.some((e) => /peek-worker/i.test(e.path) && e.path.endsWith('.db')),
    'the schedule has a file',
  );
  assertPrivate(t, entries, 'Peek state');
});

// Decided when the file loads, so the skip is visible in the report.
const whyNotRoot = !posix ? `${process.platform} has no uids` : process.getuid() !== 0 ? `not root (uid ${process.getuid()}): only root may start a process as uid ${NOBODY}` : null;
if (whyNotRoot) console.log(`files/modes: skipping the uid ${NOBODY} test: ${whyNotRoot}`);

(whyNotRoot ? test.skip : test)(`a uid ${NOBODY} process cannot read a worker file or list the directory`, (t) => {
  const dir = tmpDir(t);
  // The test's own directory is opened to all, so only the engine's modes stand in the way.
  fs.chmodSync(dir, 0o755);
  inChild(t, WORK, dir);
  const engineDir = path.join(dir, 'made', 'by', 'engine');
  const workerFile = walk(engineDir).find((e) => /[0-9a-f]{64}\.db$/.test(e.path)).path;
  const control = path.join(dir, 'control.txt');
  fs.writeFileSync(control, 'readable');
  fs.chmodSync(control, 0o644);
  const as = (cmd, args) => spawnSync(cmd, args, { uid: NOBODY, gid: NOBODY, encoding: 'utf8' });
  const ok = as('cat', [control]);
  t.is(ok.status, 0, `the probe works: uid ${NOBODY} reads a 0644 file beside it (${ok.stderr})`);
  for (const [what, r] of [
    ['a worker file', as('cat', [workerFile])],
    ['the catalog', as('cat', [path.join(engineDir, '_registry.db')])],
    ['the directory', as('ls', [engineDir])],
    ['a parent the engine made', as('ls', [path.join(dir, 'made')])],
  ]) {
    t.not(r.status, 0, `uid ${NOBODY} read ${what}`);
    t.regex(r.stderr, /Permission denied/, what);
  }
  // Even with every directory opened up, the file itself refuses.
  for (let p = path.dirname(workerFile); p.startsWith(dir) && p !== dir; p = path.dirname(p)) fs.chmodSync(p, 0o755);
  const direct = as('cat', [workerFile]);
  t.not(direct.status, 0, `uid ${NOBODY} read the worker file once the directories were open`);
  t.regex(direct.stderr, /Permission denied/);
});
