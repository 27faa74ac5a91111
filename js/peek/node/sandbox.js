'use strict';
// The sandbox a run's process starts in, on Linux: bubblewrap (bwrap, from
// the distribution's packages) puts it in PID, mount, IPC, UTS, cgroup and
// network namespaces of its own. Inside, the run sees its own processes and
// nothing else in /proc; a root made of read-only binds of what Node needs
// (/usr, the libraries, Node's own directory, this package's js/) and a
// private /tmp; no network at all, loopback included (its namespace has a
// loopback of its own, which reaches nothing of the host's); none of the
// supervisor's files: not the state directory, not the store, not a
// credential file. The worker's code arrives over the frame pipe at run time
// (./bundle.js), so a warm spare started before anyone knew which worker it
// would run needs no bind added later.
//
// Two ways in, by who the supervisor is:
// - root: bwrap runs privileged (no user namespace) and the last step before
//   Node is setpriv, which takes each run to a uid and gid of its own from a
//   pool (UidPool), with no supplementary groups, no capabilities (bounding
//   set included) and no_new_privs. Concurrent runs are distinct users.
// - any other user: bwrap makes a user namespace as well (the kernel must
//   allow unprivileged ones), and every run is the supervisor's uid. The
//   namespaces still keep runs apart; a distinct uid per run needs root.
//
// Where neither works (not Linux, no bwrap, user namespaces refused) the
// adapter runs without it and says so (`sandboxStatus()` explains).
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { codes, peekError } = require('../errors');
const { WORKER_ROOT } = require('./bundle');

/** Processes and threads of one run, at most, where its uid is its own (a fork bomb stops there). */
const MAX_TASKS = 512;
/** Size of the run's private /tmp and of the worker's tmpfs: RAM, so bounded. */
const TMP_BYTES = 64 * 1024 * 1024;
/** The default pool of run uids (and gids) when the supervisor is root: unassigned on common distributions. */
const DEFAULT_UIDS = Object.freeze([0x60000000, 65536]);
/** Host paths bound read-only when they exist: the dynamic loader, libraries, a shell for nothing. */
const SYSTEM_BINDS = ['/usr', '/lib', '/lib64', '/lib32', '/bin', '/etc/ld.so.cache', '/etc/ld.so.conf', '/etc/ld.so.conf.d', '/etc/localtime'];
const PACKAGE_ROOT = path.join(__dirname, '..', '..', '..');

const find = (names) => names.find((f) => fs.existsSync(f)) ?? null;
const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

let cached = null;

/**
 * Whether runs can be sandboxed here, and if not, why: { ok: true, mode }
 * or { ok: false, reason }. Probed once per process by starting a sandbox
 * for real.
 * @returns {{ ok: true, mode: 'root' | 'userns', bwrap: string, setpriv: string | null } | { ok: false, reason: string }}
 */
function sandboxStatus() {
  cached ??= probe();
  return cached;
}

function probe() {
  if (process.platform !== 'linux') return { ok: false, reason: `${process.platform} has no Linux namespaces` };
  const bwrap = find(['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap']);
  if (bwrap === null) return { ok: false, reason: 'bubblewrap (bwrap) is not installed (Debian and Ubuntu: apt install bubblewrap)' };
  const root = isRoot();
  const setpriv = find(['/usr/bin/setpriv', '/bin/setpriv']);
  if (root && setpriv === null) return { ok: false, reason: "util-linux's setpriv is not installed: a root supervisor needs it to give each run a uid of its own" };
  const status = { ok: true, mode: root ? 'root' : 'userns', bwrap, setpriv, prlimit: find(['/usr/bin/prlimit', '/bin/prlimit']) };
  // The trial is a real run's: Node, with the binds a run gets, as a run's uid.
  let binds;
  try {
    binds = runtimeBinds();
  } catch (err) {
    return { ok: false, reason: `what a run needs could not be found: ${err.message}` };
  }
  const trial = spawnSync(bwrap, [...bwrapArgs(status, { uid: DEFAULT_UIDS[0], binds }), fs.realpathSync(process.execPath), '-e', '0'], { encoding: 'utf8', timeout: 20_000, env: {} });
  if (trial.error) return { ok: false, reason: `bwrap could not be started: ${trial.error.message}` };
  if (trial.status !== 0) {
    const said = `${trial.stderr}`.trim().split('\n').pop() || `exit ${trial.status}`;
    // Inside a container the usual causes are the engine's: its /proc masks and its seccomp profile.
    const engine = /Can't mount proc/.test(said)
      ? ' (in a container: the engine masks parts of /proc, so no fresh /proc can be mounted; podman run --security-opt unmask=/proc/*, docs/peek.md)'
      : /Can't set hostname/.test(said)
        ? ' (in a container: the seccomp profile refuses sethostname; deploy/peek/seccomp-profile.js makes one that allows it)'
        : '';
    const hint = engine || (root ? '' : ' (unprivileged user namespaces may be disabled: kernel.unprivileged_userns_clone, user.max_user_namespaces, or an AppArmor restriction)');
    return { ok: false, reason: `a trial sandbox failed: ${said}${hint}` };
  }
  return status;
}

let loaded = null;

/**
 * The directories of every file a Node process maps at start: Node itself,
 * its dynamic loader and its shared libraries, wherever they are (a Node
 * from a wheel or a Nix store brings its own loader and libraries). Read once
 * from a child's /proc/self/maps.
 */
function nodeFiles() {
  if (loaded !== null) return loaded;
  // Node itself as a file (what sits beside it, in /opt/app or ~/bin, stays out); its libraries by directory.
  const node = fs.realpathSync(process.execPath);
  const dirs = new Set([node]);
  const r = spawnSync(process.execPath, ['-e', "process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"], { encoding: 'utf8', env: {}, timeout: 10_000 });
  for (const line of `${r.stdout ?? ''}`.split('\n')) {
    const file = line.split(/\s+/)[5];
    if (file?.startsWith('/') && !file.startsWith('/dev/') && file !== node && fs.existsSync(file)) dirs.add(path.dirname(file));
  }
  const interp = elfInterpreter(process.execPath);
  if (interp !== null) dirs.add(path.dirname(interp));
  loaded = [...dirs];
  return loaded;
}

/**
 * The program interpreter (PT_INTERP) a 64-bit little-endian ELF file names,
 * or null. /proc/self/maps shows where it resolves; exec needs the path as
 * named, which may be a link in another directory.
 */
function elfInterpreter(file) {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const head = Buffer.alloc(64);
      fs.readSync(fd, head, 0, 64, 0);
      if (head.readUInt32BE(0) !== 0x7f454c46 || head[4] !== 2 || head[5] !== 1) return null;
      const phoff = Number(head.readBigUInt64LE(0x20));
      const phentsize = head.readUInt16LE(0x36);
      const phnum = head.readUInt16LE(0x38);
      const ph = Buffer.alloc(phentsize * phnum);
      fs.readSync(fd, ph, 0, ph.length, phoff);
      for (let i = 0; i < phnum; i++) {
        const at = i * phentsize;
        if (ph.readUInt32LE(at) !== 3) continue; // PT_INTERP
        const offset = Number(ph.readBigUInt64LE(at + 8));
        const size = Number(ph.readBigUInt64LE(at + 32));
        const name = Buffer.alloc(size);
        fs.readSync(fd, name, 0, size, offset);
        return name.toString('utf8').replace(/\0+$/, '');
      }
      return null;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/**
 * The read-only binds a run's process needs besides the system's: Node's
 * files, this package's js/ and package.json, and, where Node has no
 * synchronous module hooks, the lexer the import walk uses (prescan.js).
 */
function runtimeBinds() {
  const binds = [...nodeFiles(), path.join(PACKAGE_ROOT, 'js'), path.join(PACKAGE_ROOT, 'package.json')];
  if (typeof require('node:module').registerHooks !== 'function') {
    // The package's directory: its package.json is not among what it exports.
    let dir = path.dirname(require.resolve('es-module-lexer'));
    while (path.basename(dir) !== 'es-module-lexer' && path.dirname(dir) !== dir) dir = path.dirname(dir);
    binds.push(dir);
  }
  return binds;
}

/**
 * bwrap's arguments up to (not including) the command: namespaces, the
 * root, and, as root, the switch to the run's uid.
 * @param {{ mode: 'root' | 'userns', setpriv: string | null }} status
 * @param {{ uid: number, binds: string[] }} options binds: host paths bound read-only at the same path
 */
function bwrapArgs(status, { uid, binds }) {
  const args = ['--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try', '--die-with-parent', '--new-session', '--hostname', 'peek-run'];
  if (status.mode === 'userns') args.push('--unshare-user', '--disable-userns');
  else args.push('--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID', '--cap-add', 'CAP_SETPCAP');
  // Directories bwrap makes on its own are 0700 (root's): every ancestor of a
  // bind is made first, 0755, so the run's uid can walk to what is bound.
  args.push('--perms', '1777', '--size', String(TMP_BYTES), '--tmpfs', '/tmp');
  const made = new Set(['/', '/tmp']);
  const bound = new Set();
  const dirFor = (target) => {
    const parts = path.dirname(target).split('/').filter(Boolean);
    let at = '';
    for (const p of parts) {
      at += `/${p}`;
      if (made.has(at)) continue;
      made.add(at);
      args.push('--perms', '0755', '--dir', at);
    }
  };
  for (const host of [...SYSTEM_BINDS, ...binds]) {
    if (!fs.existsSync(host)) continue;
    if ([...bound].some((m) => host.startsWith(`${m}/`))) continue; // inside a bind already
    dirFor(host);
    made.add(host);
    bound.add(host);
    args.push('--ro-bind', host, host);
  }
  // /dev's own tmpfs is made read-only, and /dev/shm is a bounded tmpfs of its own (RAM, like /tmp).
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--size', String(TMP_BYTES), '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
  dirFor(WORKER_ROOT);
  // The worker's files are written here by the run's process itself: as
  // root, the tmpfs is root's, so it is world-writable (sticky) for the run's uid.
  args.push('--perms', '1777', '--size', String(TMP_BYTES), '--tmpfs', WORKER_ROOT);
  // The root bwrap builds is a tmpfs (the run's own, in a user namespace): read-only once built.
  args.push('--remount-ro', '/');
  args.push('--');
  if (status.mode === 'root') {
    args.push(status.setpriv, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--');
    // The run's uid is its own: a limit on its processes (threads count) is a limit on this run's.
    if (status.prlimit !== null) args.push(status.prlimit, `--nproc=${MAX_TASKS}`, '--');
  }
  return args;
}

/**
 * The uids handed to concurrent runs when the supervisor is root: each
 * process takes one when it is forked and gives it back when it has exited,
 * and one is not handed out again until the rest of the pool has been.
 * Distinct within one supervisor; supervisors do not coordinate.
 */
class UidPool {
  #first;
  #count;
  #next = 0;
  #used = new Set();

  /** @param {[first: number, count: number]} range */
  constructor([first, count] = DEFAULT_UIDS) {
    this.#first = first;
    this.#count = count;
    // Two supervisors on one machine (two `peek run`s) most likely start apart.
    this.#next = require('node:crypto').randomInt(count);
  }

  take() {
    for (let i = 0; i < this.#count; i++) {
      const uid = this.#first + ((this.#next + i) % this.#count);
      if (this.#used.has(uid)) continue;
      this.#next = (this.#next + i + 1) % this.#count;
      this.#used.add(uid);
      return uid;
    }
    throw peekError(codes.SANDBOX, `every one of the ${this.#count} sandbox uids from ${this.#first} is in use by a run`);
  }

  give(uid) {
    this.#used.delete(uid);
  }
}

/**
 * The command that starts Node in a sandbox: [file, ...args] with `node`
 * (the Node command line) at the end, and the uid it runs as.
 * @param {ReturnType<typeof sandboxStatus>} status an ok status
 * @param {UidPool | null} pool root only: where the run's uid comes from
 * @param {string[]} node
 */
function sandboxCommand(status, pool, node) {
  const binds = runtimeBinds();
  // Taken last: nothing after this can throw and leave it taken.
  const uid = status.mode === 'root' ? pool.take() : process.getuid();
  let released = false;
  const release = () => {
    if (released || status.mode !== 'root') return;
    released = true;
    pool.give(uid);
  };
  // Node by its real path: that is the file bound in.
  const exec = [fs.realpathSync(node[0]), ...node.slice(1)];
  return { command: [status.bwrap, ...bwrapArgs(status, { uid, binds }), ...exec], uid, release };
}

module.exports = { sandboxStatus, sandboxCommand, UidPool, WORKER_ROOT, DEFAULT_UIDS, TMP_BYTES };
