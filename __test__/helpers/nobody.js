'use strict';
// A supervisor whose runs are another user (uid/gid 65534, "nobody"), for the
// tests of nodeAdapter({ uid, gid }). That user must read the package and
// execute node, and it cannot when the checkout lives in a private directory
// (mode 0700, as under `mktemp -d` or in many home directories) or node is
// the checkout's own (.nodes/). So the supervisor runs from a readable
// install instead: package.json, js/ and the runtime dependencies copied into
// a 0755 temporary directory, and the node binary too when that user cannot
// execute this one. The addon is not copied: only the supervisor, as root,
// loads it, from where this process did (DURABLE_WORKERS_ADDON).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');
const NOBODY = 65534;

/**
 * Why a run cannot be started as another user on this machine, or null when
 * it can. Known when a test file loads, so the test is skipped visibly.
 */
function cannotSwitchUser() {
  if (typeof process.getuid !== 'function') return `${process.platform} has no uids`;
  if (process.getuid() !== 0) return `not root (uid ${process.getuid()}): only root may start a process as uid ${NOBODY}`;
  return whyNodeUnrunnable();
}

/**
 * Why uid 65534 can run neither this node nor a copy of it, or null. A copy
 * fails where node is not self-contained: a musl Node from a private folder
 * needs its loader and libraries from that folder (.ci/musl.sh).
 */
function whyNodeUnrunnable() {
  const run = (node) => spawnSync(node, ['-e', '0'], { cwd: '/', uid: NOBODY, gid: NOBODY, stdio: 'ignore' });
  if (run(process.execPath).status === 0) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-nobody-probe-'));
  try {
    fs.chmodSync(dir, 0o755);
    const copy = path.join(dir, 'node');
    fs.copyFileSync(process.execPath, copy);
    fs.chmodSync(copy, 0o755);
    const r = run(copy);
    if (r.status === 0) return null;
    return `uid ${NOBODY} can run neither ${process.execPath} (in a directory it cannot search) nor a copy of it (${r.error?.message ?? `exit ${r.status}, signal ${r.signal}`}): this Node is not self-contained`;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Why uid 65534 cannot execute `node` and require `file` with it, or null
 * when it can. It runs in `cwd`: Node 24 reads the package.json scope of the
 * working directory for -e, and fails where it may not.
 */
function whyNobodyCannot(node, file, cwd) {
  const r = spawnSync(node, ['-e', `require(${JSON.stringify(file)})`], { cwd, uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status === 0) return null;
  return (
    r.error?.message ??
    r.stderr
      .trim()
      .split('\n')
      .find((l) => /Error|denied/.test(l)) ??
    `exit code ${r.status}`
  );
}

/** The directory npm installed `name` in, as seen from `from` (Node's lookup, without resolving exports). */
function packageDir(name, from) {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`${name} is not installed (looked up from ${from}): run npm ci`);
  }
}

/**
 * Copies the runtime dependencies of the package in `from`, and theirs, into
 * `to`, each where npm put it relative to the checkout (a nested version
 * stays nested).
 */
function copyDependencies(from, to, done = new Set()) {
  const { dependencies = {} } = JSON.parse(fs.readFileSync(path.join(from, 'package.json'), 'utf8'));
  for (const name of Object.keys(dependencies)) {
    const dir = packageDir(name, from);
    if (done.has(dir)) continue;
    done.add(dir);
    const at = path.relative(ROOT, dir);
    const into = path.join(to, at.startsWith('..') ? path.join('node_modules', name) : at);
    fs.cpSync(dir, into, { recursive: true, dereference: true, filter: (f) => path.relative(dir, f) !== 'node_modules' });
    copyDependencies(dir, to, done);
  }
}

/** Makes everything under `dir` readable by all, and its directories searchable: a copy keeps a private umask's modes. */
function openUp(dir) {
  fs.chmodSync(dir, 0o755);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const f = path.join(dir, e.name);
    if (e.isDirectory()) openUp(f);
    else fs.chmodSync(f, fs.statSync(f).mode | 0o444);
  }
}

let made = null;

/**
 * The readable install, made once per test file and removed when it exits.
 * @returns {{ root: string, node: string, nodeCopied: boolean, addon: string }}
 */
function readableInstall() {
  if (made !== null) return made;
  require(path.join(ROOT, 'js', 'native', 'load')); // loads the addon, whose path the supervisor is given
  const addon = Object.keys(require.cache).find((f) => f.endsWith('.node'));
  if (addon === undefined) throw new Error('the package loaded no .node file');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-nobody-'));
  process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }));
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(root, 'package.json'));
  fs.cpSync(path.join(ROOT, 'js'), path.join(root, 'js'), { recursive: true });
  copyDependencies(ROOT, root);
  openUp(root);
  const probe = path.join(root, 'js', 'peek', 'node', 'refused.js');
  let node = process.execPath;
  const nodeCopied = whyNobodyCannot(node, probe, root) !== null;
  if (nodeCopied) {
    node = path.join(root, 'node');
    fs.copyFileSync(process.execPath, node);
    fs.chmodSync(node, 0o755);
  }
  const why = whyNobodyCannot(node, probe, root);
  if (why !== null) throw new Error(`uid ${NOBODY} cannot run ${node} on ${probe} even from a copy: ${why}`);
  made = { root, node, nodeCopied, addon };
  return made;
}

/**
 * Runs `body` (the text of an async function's body, where `root` names the
 * install and `args` are `args`, on the process's command line) in a
 * supervisor process of its own, started with `install.node` in
 * `install.root`; resolves with what the body returns, through JSON.
 * @param {{ root: string, node: string, addon?: string }} install readableInstall(), or the checkout
 * @param {{ asNobody?: boolean }} [options] asNobody: the supervisor itself runs as uid 65534 (not root)
 */
function superviseFrom(install, body, args = [], { asNobody = false } = {}) {
  const script = `const root = ${JSON.stringify(install.root)}; const args = process.argv.slice(1);
    (async () => { ${body} })().then((v) => process.stdout.write(JSON.stringify(v)), (err) => { console.error(err); process.exit(1); });`;
  return new Promise((resolve, reject) => {
    const p = spawn(install.node, ['-e', script, ...args], {
      cwd: install.root, // the runs inherit it
      env: install.addon === undefined ? process.env : { ...process.env, DURABLE_WORKERS_ADDON: install.addon },
      stdio: ['ignore', 'pipe', 'inherit'],
      ...(asNobody ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('close', (code) => {
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`the supervisor exited (code ${code}) without an answer: ${out}`));
      }
    });
  });
}

module.exports = { NOBODY, cannotSwitchUser, readableInstall, superviseFrom };
