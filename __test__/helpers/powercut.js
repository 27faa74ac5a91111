'use strict';
// The power-cut file system (__test__/powercut): a FUSE mount over a backing
// directory that forgets whatever was not fsynced when told to lose power.
// A SIGKILL leaves every write in the kernel; a cut here leaves only what
// fsync, fdatasync and directory fsyncs made durable, so a test can check
// that a process's sync discipline survives power loss. Built with cargo on
// first use; mounting needs root and /dev/fuse.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const CRATE = path.join(__dirname, '..', 'powercut');
const MANIFEST = path.join(CRATE, 'Cargo.toml');
const BINARY = path.join(CRATE, 'target', 'release', 'powercut');

/** The newest modification time (ms) under the crate's sources and manifests. */
function newestSource() {
  let newest = 0;
  const visit = (file) => {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (st === undefined) return;
    if (st.isDirectory()) for (const name of fs.readdirSync(file)) visit(path.join(file, name));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const f of ['Cargo.toml', 'Cargo.lock', 'src']) visit(path.join(CRATE, f));
  return newest;
}

let built = false;

/**
 * Builds the binary with `cargo build --release` unless it is newer than
 * every source; once per process. Returns its path; throws with cargo's
 * output on failure.
 */
function build() {
  if (built) return BINARY;
  const bin = fs.statSync(BINARY, { throwIfNoEntry: false });
  if (bin === undefined || bin.mtimeMs < newestSource()) {
    const r = spawnSync('cargo', ['build', '--release', '--quiet', '--manifest-path', MANIFEST, '--target-dir', path.join(CRATE, 'target')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw new Error(`cargo build of ${MANIFEST} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stderr.slice(-4000)}`);
  }
  built = true;
  return BINARY;
}

/**
 * Whether this machine can mount it: Linux, root (CAP_SYS_ADMIN), /dev/fuse,
 * and the binary built or cargo to build it. Synchronous, so a test file can
 * decide at load time to skip visibly.
 * @returns {{ ok: boolean, reason?: string }}
 */
function available() {
  if (process.platform !== 'linux') return { ok: false, reason: `FUSE mounts are tested on Linux only, not ${process.platform}` };
  if (process.getuid() !== 0) return { ok: false, reason: `mounting without fusermount needs root, not uid ${process.getuid()}` };
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  const CAP_SYS_ADMIN = 21n;
  if (capEff === null || ((BigInt(`0x${capEff[1]}`) >> CAP_SYS_ADMIN) & 1n) === 0n) return { ok: false, reason: 'no CAP_SYS_ADMIN (a container without it cannot mount)' };
  try {
    fs.accessSync('/dev/fuse', fs.constants.R_OK | fs.constants.W_OK);
  } catch (err) {
    return { ok: false, reason: `/dev/fuse: ${err.code}` };
  }
  if (!fs.existsSync(BINARY) && spawnSync('cargo', ['--version'], { stdio: 'ignore' }).status !== 0) return { ok: false, reason: 'cargo is not on PATH to build it' };
  return { ok: true };
}

/** Sends one control command; resolves with the JSON answer, rejects if it says ok: false. */
function command(socket, line, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    let data = '';
    const timer = setTimeout(() => conn.destroy(new Error(`no answer to ${line} on ${socket} within ${ms} ms`)), ms);
    conn.setEncoding('utf8');
    conn.on('connect', () => conn.write(`${line}\n`));
    conn.on('data', (d) => {
      data += d;
      const nl = data.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      conn.end();
      try {
        const answer = JSON.parse(data.slice(0, nl));
        if (answer.ok) resolve(answer);
        else reject(new Error(`powercut ${line}: ${answer.error}`));
      } catch (err) {
        reject(err);
      }
    });
    conn.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const exited = (child) => child.exitCode !== null || child.signalCode !== null;

/** Resolves when `child` has exited, or with false after `ms`. */
function waitExit(child, ms) {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** True once `pid` is gone or a zombie (its descriptors are closed either way). */
function pidDead(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
  } catch {
    return true;
  }
}

/** SIGKILLs a ChildProcess or a pid and resolves once it is dead. */
async function kill(victim) {
  if (typeof victim === 'number') {
    try {
      process.kill(victim, 'SIGKILL');
    } catch {}
    const deadline = Date.now() + 10_000;
    while (!pidDead(victim)) {
      if (Date.now() > deadline) throw new Error(`pid ${victim} survived SIGKILL for 10 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return;
  }
  if (exited(victim)) return;
  victim.kill('SIGKILL');
  if (!(await waitExit(victim, 10_000))) throw new Error(`pid ${victim.pid} survived SIGKILL for 10 s`);
}

/** A mounted power-cut file system; see mount(). */
class Mount {
  constructor({ backing, mountpoint, mode, seed }) {
    /** The directory holding the durable state (what survives a cut). */
    this.backing = backing;
    /** Where the file system is mounted, for the process under test. */
    this.mountpoint = mountpoint;
    this.mode = mode;
    this.seed = seed;
    /** How many cuts so far; each remount is one generation. */
    this.generation = 0;
    this.registered = new Set();
    this.daemon = null;
    this.socket = null;
    this.stderr = '';
    /** Daemons of earlier generations, alive while something holds a file of their (detached) mount. */
    this.old = [];
    this.closed = false;
  }

  async start() {
    // A socket of its own per generation: the previous daemon may outlive
    // its mount while a descriptor on it is still open.
    this.socket = `${this.mountpoint}.${this.generation}.sock`;
    // Chaos choices differ from one cut to the next, yet a run is reproducible.
    const seed = BigInt.asUintN(64, BigInt(this.seed) + BigInt(this.generation));
    const args = [this.backing, this.mountpoint, '--mode', this.mode, '--seed', String(seed), '--control', this.socket];
    const daemon = spawn(build(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.daemon = daemon;
    this.stderr = '';
    daemon.stderr.setEncoding('utf8');
    daemon.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-8000)));
    await new Promise((resolve, reject) => {
      let out = '';
      let settled = false;
      const timer = setTimeout(() => fail(new Error('not ready within 20 s')), 20_000);
      const fail = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        daemon.kill('SIGKILL');
        reject(new Error(`powercut ${args.join(' ')}: ${err.message}\n${this.stderr}`));
      };
      daemon.on('error', fail);
      daemon.on('exit', (code, signal) => fail(new Error(`exited (code ${code}, signal ${signal}) before it was ready`)));
      daemon.stdout.setEncoding('utf8');
      daemon.stdout.on('data', (d) => {
        out += d;
        if (!settled && out.includes('ready\n')) {
          settled = true;
          clearTimeout(timer);
          resolve();
        }
      });
    });
    // A test that forgets to unmount must not keep its worker alive; when
    // this process dies the daemon gets SIGTERM and unmounts cleanly.
    daemon.unref();
    daemon.stdout.unref();
    daemon.stderr.unref();
  }

  /** Adds processes (ChildProcess objects or pids) that every cut SIGKILLs first. */
  register(...processes) {
    for (const p of processes) this.registered.add(p);
  }

  /**
   * Loses power. SIGKILLs `processes` and the registered ones and waits for
   * them to die (nothing under test may sync after the power is gone); then
   * the file system forgets what was not synced (drop) or keeps a seeded
   * random part of it (chaos) and answers EIO from then on; then its mount
   * is detached and a fresh one is mounted over the same backing directory.
   * Resolves with the cut's report ({ appliedWrites, tornWrites,
   * droppedWrites, appliedDirOps, droppedDirOps }) once the new mount is ready.
   * @param {Array<import('node:child_process').ChildProcess | number>} [processes]
   */
  async cut(processes = []) {
    if (this.closed) throw new Error('powercut: cut after unmount');
    await Promise.all([...this.registered, ...processes].map(kill));
    this.registered.clear();
    const report = await command(this.socket, 'cut');
    await command(this.socket, 'unmount');
    this.old.push(this.daemon);
    this.generation++;
    await this.start();
    return report;
  }

  /** Counters of the current mount: syncs, writes, what a cut would lose now. */
  stats() {
    return command(this.socket, 'stats');
  }

  /**
   * What a cut would lose now, by name: { files: [{ path, writes, bytes }],
   * entries: [{ path, op: 'create' | 'remove' | 'replace' }] }, paths from
   * the mount's root.
   */
  dirty() {
    return command(this.socket, 'dirty');
  }

  /** Makes everything durable, like sync(1). */
  async sync() {
    await command(this.socket, 'sync');
  }

  /**
   * A clean unmount: what is unsynced is written (as umount does), the
   * daemons of this and earlier generations exit. Safe to call twice.
   */
  async unmount() {
    if (this.closed) return;
    this.closed = true;
    if (this.daemon !== null && !exited(this.daemon)) {
      try {
        await command(this.socket, 'unmount');
      } catch {}
    }
    await Promise.all(
      [this.daemon, ...this.old]
        .filter((d) => d !== null)
        .map(async (d) => {
          // A daemon lingers while a descriptor on its detached mount is
          // open; SIGTERM makes it go (those descriptors then fail).
          if (await waitExit(d, 2_000)) return;
          d.kill('SIGTERM');
          if (await waitExit(d, 3_000)) return;
          d.kill('SIGKILL');
          await waitExit(d, 3_000);
        }),
    );
  }
}

/**
 * Mounts a power-cut file system over `backing` at `mountpoint` (both made
 * if missing), building the binary first if needed.
 * @param {{ backing: string, mountpoint: string, mode?: 'drop' | 'chaos', seed?: number | bigint }} options
 *   mode `drop` (default): a cut forgets everything unsynced. `chaos`: a cut
 *   applies a random subset of unsynced writes (some torn at 512-byte
 *   sectors) and directory changes, chosen from `seed` (the n-th cut of a
 *   Mount uses seed + n).
 * @returns {Promise<Mount>}
 */
async function mount({ backing, mountpoint, mode = 'drop', seed = 0 }) {
  fs.mkdirSync(backing, { recursive: true });
  fs.mkdirSync(mountpoint, { recursive: true });
  const m = new Mount({ backing: path.resolve(backing), mountpoint: path.resolve(mountpoint), mode, seed });
  await m.start();
  return m;
}

module.exports = { available, build, mount, BINARY };
