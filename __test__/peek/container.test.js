'use strict';
// Peek's container target (deploy/peek/): the root file system build-rootfs.sh
// makes from Debian packages and the npm registry, the image the Dockerfile
// makes of it, the conformance suite run inside, the supervisor serving
// there as uid 10001 with its HEALTHCHECK answering, a run that cannot see the
// credentials file, and the systemd unit passing `systemd-analyze verify`.
//
// The image runs under podman where podman can run a container here;
// otherwise the same root file system runs under bwrap (as uid 10001, in a
// user namespace), and the test says which. Each part that needs a tool the
// machine lacks (root, mmdebstrap, podman, bwrap, systemd-analyze) is
// skipped, saying so when the file loads; .ci/check-skips.js catches a skip
// CI did not expect.
//
// PEEK_CONTAINER_ENGINE=bwrap runs the bwrap path even where podman works.
//
// Slow the first time: the Debian layer is built by mmdebstrap (about 20 s
// with a close mirror) and Node is fetched; both are kept in
// PEEK_ROOTFS_CACHE (default /tmp/dw-peek-rootfs-cache), keyed by the
// package list, the Node version and the packed release's hashes, so a rerun
// with nothing changed reuses the root file system (a few seconds: the
// release is packed again to compute its key).
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { tmpDir } = require('../helpers/tmp');
const { triple, sourceBuildPath } = require('../../js/native/platform');

const ROOT = path.join(__dirname, '..', '..');
const DEPLOY = path.join(ROOT, 'deploy', 'peek');
const CACHE = process.env.PEEK_ROOTFS_CACHE ?? path.join(os.tmpdir(), 'dw-peek-rootfs-cache');
const PEEK_UID = 10001;
const SECRET = '/run/secrets/peek-credentials';
const { version } = require('../../package.json');

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** Why the root file system cannot be built here, or null. */
function cannotBuild() {
  if (process.platform !== 'linux') return `${process.platform}: the image is Linux`;
  if (process.arch !== 'x64' && process.arch !== 'arm64') return `no node-linux-${process.arch} package`;
  if (process.getuid() !== 0) return `not root (uid ${process.getuid()}): mmdebstrap's root mode and the files' owners need root`;
  if (!has('mmdebstrap')) return 'mmdebstrap is not installed (apt-get install mmdebstrap)';
  if (!fs.existsSync(sourceBuildPath(triple()))) return `native/durable-workers.${triple()}.node is not built (npm ci)`;
  return null;
}

/** Runs a command; resolves { status, stdout, stderr, ms }, never rejects (a timeout is SIGKILL, status null). */
function run(file, args, { timeout = 600_000, env = process.env, input } = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ status: null, stdout, stderr: `${stderr}${err.message}`, ms: Date.now() - started });
    });
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, ms: Date.now() - started });
    });
    child.stdin.end(input ?? '');
  });
}

const podmanEnv = { ...process.env, CONTAINERS_CONF: path.join(DEPLOY, 'containers.conf') };
const podman = (args, options = {}) => run('podman', args, { env: podmanEnv, ...options });

/** The hard limit of open files of this process: podman's default (1048576) needs CAP_SYS_RESOURCE to set. */
function hardNofile() {
  const line = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const hard = line?.split(/\s+/)[4];
  return /^\d+$/.test(hard ?? '') ? Math.min(Number(hard), 1048576) : 65536;
}

const buildSkip = cannotBuild();
if (buildSkip !== null) console.log(`peek/container: skipped: ${buildSkip}`);

/** The root file system (a tarball and, for bwrap, a directory), built once per test process. */
let built = null;
function rootfs() {
  built ??= (async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-peek-container-'));
    const tar = path.join(dir, 'rootfs.tar');
    const r = await run('bash', [path.join(DEPLOY, 'build-rootfs.sh'), tar], { env: { ...process.env, PEEK_ROOTFS_CACHE: CACHE } });
    if (r.status !== 0) throw new Error(`build-rootfs.sh failed (${r.status}):\n${r.stderr}`);
    return { dir, tar, ms: r.ms, log: r.stderr.trim() };
  })();
  return built;
}
test.after.always(async () => {
  if (built === null) return;
  const b = await built.catch(() => null);
  if (b) fs.rmSync(b.dir, { recursive: true, force: true });
});

/**
 * How the image runs here: { how: 'podman', runtime, run: [...options] }, or
 * { how: 'bwrap' } with why podman could not, or { how: null, why }.
 */
let engine = null;
function containerEngine(tar) {
  engine ??= (async () => {
    const notes = [];
    // PEEK_CONTAINER_ENGINE=bwrap: the fallback, even where podman works.
    const only = process.env.PEEK_CONTAINER_ENGINE;
    if (only === 'bwrap') notes.push('PEEK_CONTAINER_ENGINE=bwrap: podman is not tried');
    else if (has('podman')) {
      const image = `localhost/durable-workers-peek-test:${process.pid}`;
      const context = path.dirname(tar);
      fs.copyFileSync(path.join(DEPLOY, 'Dockerfile'), path.join(context, 'Dockerfile'));
      const b = await podman(['build', '--format', 'docker', '--quiet', '-t', image, context], { timeout: 300_000 });
      if (b.status !== 0) notes.push(`podman build failed: ${b.stderr.trim().split('\n').pop()}`);
      else {
        const seccomp = path.join(path.dirname(tar), 'peek-seccomp.json');
        const profile = await run(process.execPath, [path.join(DEPLOY, 'seccomp-profile.js')]);
        fs.writeFileSync(seccomp, profile.stdout);
        // What each run's sandbox needs from the engine: a fresh /proc may be
        // mounted (nothing of /proc masked) and sethostname is allowed.
        const base = ['--read-only', '--ulimit', `nofile=${hardNofile()}:${hardNofile()}`, '--ulimit', 'nproc=4096:4096', '--security-opt', 'unmask=/proc/*', '--security-opt', `seccomp=${seccomp}`];
        // crun refuses a cgroup v1 host with controllers also on the v2 hierarchy ("hybrid mode"); runc does not.
        for (const runtime of [null, ...(has('runc') ? ['runc'] : [])]) {
          const global = runtime ? ['--runtime', runtime] : [];
          const probe = await podman([...global, 'run', '--rm', ...base, '--entrypoint', '/usr/local/bin/node', image, '-e', '0'], { timeout: 120_000 });
          if (probe.status === 0) return { how: 'podman', image, global, base, notes };
          notes.push(`podman run${runtime ? ` --runtime ${runtime}` : ''}: ${probe.stderr.trim().split('\n').pop()}`);
        }
        await podman(['rmi', '-f', image]);
      }
    } else notes.push('podman is not installed');
    if (has('bwrap')) return { how: 'bwrap', notes };
    return { how: null, notes: [...notes, 'bubblewrap is not installed'] };
  })();
  return engine;
}
test.after.always(async () => {
  if (engine === null) return;
  const e = await engine.catch(() => null);
  if (e?.how === 'podman') await podman(['rmi', '-f', e.image]);
});

/** The root file system unpacked, for bwrap. */
async function unpacked(b) {
  const dir = path.join(b.dir, 'root');
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir);
    const r = await run('tar', ['-xpf', b.tar, '-C', dir, '--numeric-owner']);
    if (r.status !== 0) throw new Error(`tar: ${r.stderr}`);
  }
  return dir;
}

/**
 * bwrap's arguments that make the root file system nearly a container:
 * uid 10001 in a user namespace, IPC and UTS namespaces of its own, a /tmp of
 * its own, and the host's /proc. Not a /proc of its own: bwrap covers parts of
 * the /proc it mounts, and the kernel then refuses the runs' sandboxes one
 * ("Can't mount proc on /newroot/proc"). So not a PID namespace of its own
 * either: with the host's /proc, the runs' bwrap would look itself up under
 * the wrong pid ("open /proc/74/ns/ns failed").
 */
function bwrapArgs(dir, binds = []) {
  return [
    '--unshare-user',
    '--uid',
    String(PEEK_UID),
    '--gid',
    String(PEEK_UID),
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--bind',
    dir,
    '/',
    '--dev',
    '/dev',
    '--bind',
    '/proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    ...binds,
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/local/bin:/usr/bin:/bin',
    '--setenv',
    'HOME',
    '/tmp',
    '--chdir',
    '/tmp',
  ];
}

(buildSkip === null ? test.serial : test.serial.skip)(
  'build-rootfs.sh: Debian minbase, the pinned Node line, the packed release in /opt/peek, user peek (10001); a rerun reuses the cache',
  async (t) => {
    t.timeout(900_000);
    const b = await rootfs();
    t.log(b.log);
    t.log(`build took ${(b.ms / 1000).toFixed(1)} s`);
    const list = await run('tar', ['-tvf', b.tar, '--numeric-owner']);
    t.is(list.status, 0);
    const entries = list.stdout.split('\n');
    const find = (p) => entries.find((l) => l.endsWith(` ./${p}`) || l.includes(` ./${p} -> `));
    for (const p of [
      'usr/local/bin/node',
      'usr/bin/bwrap',
      'usr/bin/setpriv',
      'usr/bin/tini',
      'usr/local/bin/peek-healthcheck',
      'usr/local/bin/durable-workers',
      `opt/peek/node_modules/durable-workers-${triple()}/durable-workers.${triple()}.node`,
      'opt/peek/node_modules/durable-workers/bin/durable-workers.js',
    ]) {
      t.truthy(find(p), `${p} is in the image`);
    }
    t.regex(find('var/lib/peek/') ?? '', new RegExp(`^drwx------ ${PEEK_UID}/${PEEK_UID} `), '/var/lib/peek is peek’s, 0700');
    t.falsy(
      entries.some((l) => / \.\/opt\/peek\/node_modules\/(ava|eslint|@napi-rs)\//.test(l)),
      'no dev dependency is installed',
    );
    const passwd = await run('tar', ['-xOf', b.tar, './etc/passwd']);
    t.regex(passwd.stdout, /^peek:x:10001:10001:/m);
    const pkg = JSON.parse((await run('tar', ['-xOf', b.tar, './opt/peek/node_modules/durable-workers/package.json'])).stdout);
    t.is(pkg.version, version);
    t.log(`${(fs.statSync(b.tar).size / 1024 / 1024).toFixed(0)} MiB as a tarball`);

    const again = await run('bash', [path.join(DEPLOY, 'build-rootfs.sh'), path.join(b.dir, 'again.tar')], { env: { ...process.env, PEEK_ROOTFS_CACHE: CACHE } });
    t.is(again.status, 0, again.stderr);
    t.notRegex(again.stderr, /mmdebstrap into|built in/, 'nothing is built again');
    t.log(`a rerun with the cache warm took ${(again.ms / 1000).toFixed(1)} s`);
    fs.rmSync(path.join(b.dir, 'again.tar'));
  },
);

(buildSkip === null ? test.serial : test.serial.skip)('durable-workers conformance passes inside the image, as uid 10001, runs sandboxed (network.enforcement egress-control)', async (t) => {
  t.timeout(900_000);
  const b = await rootfs();
  const e = await containerEngine(b.tar);
  for (const n of e.notes) t.log(n);
  if (e.how === null) return t.fail(`no way to run the image here: ${e.notes.join('; ')}`);
  let r;
  if (e.how === 'podman') {
    t.log(`podman${e.global.length ? ` ${e.global.join(' ')}` : ''} run ${e.base.join(' ')} … conformance`);
    r = await podman([...e.global, 'run', '--rm', ...e.base, '--no-healthcheck', e.image, 'conformance', '--adapter', 'container'], { timeout: 600_000 });
  } else {
    t.log('podman cannot run the image here: the same root file system under bwrap instead');
    r = await run('bwrap', [...bwrapArgs(await unpacked(b)), '/usr/local/bin/durable-workers', 'conformance', '--adapter', 'container'], { timeout: 600_000 });
  }
  t.log(r.stdout.trim());
  t.log(`conformance in the image (${e.how}) took ${(r.ms / 1000).toFixed(1)} s`);
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /^conformance of adapter "container"/m);
  t.regex(r.stdout, /all \d+ checks pass/);
  t.regex(r.stdout, /^pass\s+declaration\s+network\.enforcement = "egress-control"/m, 'runs are sandboxed inside the image');
});

/** A worker that tries to read the supervisor's files from inside its run. */
function workersDir(t) {
  const dir = path.join(tmpDir(t), 'workers');
  fs.mkdirSync(path.join(dir, 'probe'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'probe', 'manifest.json'),
    JSON.stringify({ name: 'probe', worker: { url: 'worker.js', entry: 'probe' }, schedule: 'every 1h', capabilities: { datastore: { methods: ['describe'] }, log: {} } }),
  );
  fs.writeFileSync(path.join(dir, 'probe', 'package.json'), '{ "type": "module" }\n');
  fs.writeFileSync(
    path.join(dir, 'probe', 'worker.js'),
    `import fs from 'node:fs';
export async function probe(api) {
  const out = { uid: process.getuid() };
  for (const p of [${JSON.stringify(SECRET)}, '/var/lib/peek', '/workers']) {
    try { out[p] = 'READ ' + (fs.statSync(p).isDirectory() ? fs.readdirSync(p).join(',') : fs.readFileSync(p, 'utf8').length + ' bytes'); } catch (err) { out[p] = err.code; }
  }
  return out;
}
`,
  );
  fs.chmodSync(path.dirname(dir), 0o755);
  for (const f of ['', 'probe', 'probe/manifest.json', 'probe/package.json', 'probe/worker.js']) fs.chmodSync(path.join(dir, f), f.endsWith('.json') || f.endsWith('.js') ? 0o644 : 0o755);
  const creds = path.join(path.dirname(dir), 'credentials.json');
  fs.writeFileSync(creds, JSON.stringify({ probe: 'peek-container-test-credential' }), { mode: 0o600 });
  fs.chownSync(creds, PEEK_UID, PEEK_UID);
  return { dir, creds };
}

(buildSkip === null ? test.serial : test.serial.skip)(
  'peek serve in the image: the HEALTHCHECK reports healthy; a run cannot open the credentials file (not in its mount namespace); SIGTERM stops it',
  async (t) => {
    t.timeout(600_000);
    const b = await rootfs();
    const e = await containerEngine(b.tar);
    if (e.how === null) return t.fail(`no way to run the image here: ${e.notes.join('; ')}`);
    const { dir, creds } = workersDir(t);
    const mounts = ['-v', `${dir}:/workers:ro`, '-v', `${creds}:${SECRET}:ro`];
    const probeArgs = ['peek', 'run', '/workers/probe/manifest.json', '--state', '/tmp/state', '--credentials', SECRET, '--sandbox', 'required', '--json'];
    let probe;
    if (e.how === 'podman') {
      const name = `dw-peek-test-${process.pid}`;
      const volume = `${name}-state`;
      t.teardown(async () => {
        await podman(['rm', '-f', '-v', '-t', '0', name]);
        await podman(['volume', 'rm', '-f', volume]);
      });
      const started = await podman([...e.global, 'run', '-d', '--name', name, ...e.base, ...mounts, '-v', `${volume}:/var/lib/peek`, e.image]);
      // Without systemd podman cannot time the checks ("unable to get systemd connection to start healthchecks"); `podman healthcheck run` runs one.
      t.is(started.status, 0, started.stderr);
      let health;
      for (let i = 0; i < 60; i++) {
        health = await podman(['healthcheck', 'run', name]);
        if (health.status === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      t.is(health.status, 0, `the HEALTHCHECK: ${health.stdout}${health.stderr}`);
      const said = await podman(['exec', name, '/usr/local/bin/peek-healthcheck']);
      t.regex(said.stdout, /^healthy: peek serve answers on \/var\/lib\/peek/);
      t.log(said.stdout.trim());
      const user = await podman(['exec', name, 'sh', '-c', 'id -u; stat -c "%a %u" /run/secrets/peek-credentials']);
      t.deepEqual(user.stdout.trim().split('\n'), [String(PEEK_UID), `600 ${PEEK_UID}`], 'the supervisor is uid 10001; the file is its own, mode 600');
      probe = await podman(['exec', name, 'durable-workers', ...probeArgs]);
      const logs = await podman(['logs', name]);
      t.regex(logs.stderr, /runs are sandboxed/, logs.stderr);
      const cmd = await podman(['inspect', '-f', '{{join .Config.Cmd " "}}', name]);
      t.regex(cmd.stdout, /--target container/, 'the image declares the container target');
      const stop = await podman(['stop', '-t', '20', name]);
      t.is(stop.status, 0, stop.stderr);
      const exited = await podman(['inspect', '-f', '{{.State.ExitCode}}', name]);
      t.is(exited.stdout.trim(), '0', 'peek serve exits 0 on SIGTERM');
    } else {
      // bwrap maps uid 10001 inside to this process's uid outside: the file is
      // that uid's outside to be uid 10001's (mode 600) inside.
      fs.chownSync(creds, process.getuid(), process.getgid());
      const root = await unpacked(b);
      const state = path.join(tmpDir(t), 'state');
      fs.mkdirSync(state, { mode: 0o700 });
      const binds = ['--ro-bind', dir, '/workers', '--ro-bind', creds, SECRET, '--bind', state, '/var/lib/peek'];
      // The image's command, and its HEALTHCHECK as a second process beside it (another bwrap, the same state directory).
      const serve = spawn(
        'bwrap',
        [...bwrapArgs(root, binds), '/usr/local/bin/durable-workers', 'peek', 'serve', '/workers', '--state', '/var/lib/peek', '--credentials', SECRET, '--sandbox', 'required'],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let said = '';
      serve.stderr.on('data', (d) => (said += d));
      const exited = new Promise((resolve) => serve.on('close', (code) => resolve(code)));
      t.teardown(() => serve.kill('SIGKILL'));
      let health;
      for (let i = 0; i < 60; i++) {
        health = await run('bwrap', [...bwrapArgs(root, ['--bind', state, '/var/lib/peek']), '/usr/local/bin/peek-healthcheck']);
        if (health.status === 0) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      t.is(health.status, 0, `the HEALTHCHECK: ${health.stdout}${health.stderr}`);
      t.regex(health.stdout, /^healthy: peek serve answers on \/var\/lib\/peek/);
      t.log(health.stdout.trim());
      t.regex(said, /runs are sandboxed/, said);
      probe = await run('bwrap', [...bwrapArgs(root, binds.slice(0, 6)), '/usr/local/bin/durable-workers', ...probeArgs]);
      // SIGTERM to peek serve itself (bwrap, its parent, passes no signal on).
      const child = fs.readFileSync(`/proc/${serve.pid}/task/${serve.pid}/children`, 'utf8').trim().split(/\s+/)[0];
      process.kill(Number(child), 'SIGTERM');
      t.is(await exited, 0, 'peek serve exits 0 on SIGTERM');
    }
    t.is(probe.status, 0, probe.stderr);
    const result = probe.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((l) => l.event === 'run');
    t.log(`the probe run saw: ${JSON.stringify(result.value)}`);
    t.true(result.ok);
    t.is(result.value[SECRET], 'ENOENT', 'the credentials file is not in the run’s file system');
    t.is(result.value['/var/lib/peek'], 'ENOENT', 'nor is the state directory');
  },
);

const verifySkip = has('systemd-analyze') ? null : 'systemd-analyze is not installed (apt-get install systemd)';
if (verifySkip !== null) console.log(`peek/container: the unit's verify is skipped: ${verifySkip}`);

(verifySkip === null ? test : test.skip)('deploy/peek/peek.service passes systemd-analyze verify', async (t) => {
  // verify wants ExecStart's program to exist: the checkout's bin stands in
  // for /usr/local/bin/durable-workers (what `npm install -g` links there).
  const dir = tmpDir(t);
  const unit = fs.readFileSync(path.join(DEPLOY, 'peek.service'), 'utf8');
  t.regex(unit, /^ExecStart=\/usr\/local\/bin\/durable-workers peek serve /m);
  fs.writeFileSync(path.join(dir, 'peek.service'), unit.replace(/^ExecStart=\/usr\/local\/bin\/durable-workers /m, `ExecStart=${path.join(ROOT, 'bin', 'durable-workers.js')} `));
  const r = await run('systemd-analyze', ['verify', path.join(dir, 'peek.service')]);
  t.is(r.status, 0, r.stderr);
  t.is(r.stderr.trim(), '', 'no warning');
  const security = await run('systemd-analyze', ['security', '--offline=yes', path.join(dir, 'peek.service')]);
  t.log(security.stdout.trim().split('\n').pop());
});

const podmanSkip = buildSkip ?? (has('podman') ? null : 'podman is not installed (apt-get install podman)');
if (podmanSkip !== null && buildSkip === null) console.log(`peek/container: the engine-options test is skipped: ${podmanSkip}`);

(podmanSkip === null ? test.serial : test.serial.skip)('without the engine options the sandbox needs, --sandbox required refuses, naming the option', async (t) => {
  t.timeout(600_000);
  const b = await rootfs();
  const e = await containerEngine(b.tar);
  if (e.how !== 'podman') return t.fail(`podman is installed but cannot run the image here: ${e.notes.join('; ')}`);
  const { dir } = workersDir(t);
  const without = (option) => e.base.filter((a, i, all) => !(a.startsWith(option) || all[i + 1]?.startsWith(option)));
  for (const [option, said] of [
    ['unmask=', /the engine masks parts of \/proc.*unmask=\/proc\/\*/],
    ['seccomp=', /the seccomp profile refuses sethostname; deploy\/peek\/seccomp-profile\.js/],
  ]) {
    const r = await podman([
      ...e.global,
      'run',
      '--rm',
      ...without(option),
      '-v',
      `${dir}:/workers:ro`,
      e.image,
      'peek',
      'run',
      '/workers/probe/manifest.json',
      '--state',
      '/tmp/state',
      '--sandbox',
      'required',
    ]);
    t.not(r.status, 0, option);
    t.regex(r.stderr, /ERR_PEEK_SANDBOX/, option);
    t.regex(r.stderr, said, option);
  }
});
