'use strict';
// Power cuts under a real ext4, for files/powercut-ext4.test.js. An ext4
// image lives on the power-cut mount (helpers/powercut.js) and is attached
// with a loop device: the loop device's writes reach the image as unsynced
// writes, and its flushes (what ext4 sends when it must reach the device) as
// fsyncs of the image, so a cut keeps exactly what ext4 made durable: its
// own ordering of data, inodes and directory blocks, its journal or none,
// which the FUSE mount's simpler model does not have.
//
// Also the program the test forks, with its own arguments:
//   node powercut-ext4.js create <dir> <round>   new Cell workers r<round>-<b>-<i> in batches
//     of 64, each written once; to ACK_FILE: `b <b>` as batch b starts, `n <id> <i>` for each
//     acknowledgement
//   node powercut-ext4.js write <dir> <round>    Cell workers w0 … w<WRITERS - 1>, each written
//     again and again, one write after another, and GROWERS more writers that go on to a new
//     worker (g<round>-<k>-<n>) every GENERATION writes; to ACK_FILE: `w <id> <value>` for
//     each acknowledgement, and every 100 `s <stats().syncsInPlace>`
//   node powercut-ext4.js check <dir> <list>     opens <dir>, reads every worker that an
//     `n <id> <i>` line of the file <list> names (acknowledged: must hold i) or an `f <id> <i>`
//     line names (in flight at the cut: i, or nothing, but no error), or a `w <id> <v>…` line
//     names (its value must be one of the v, `none` for no value); prints
//     { workers, missing, damaged, values } as JSON
// A program of its own so that its descriptors are gone when it exits and
// the ext4 mount it used can be unmounted at once.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { available } = require('./powercut');
const { startChild, ackWriter, readAcks, idsOf } = require('./powercut-rounds');

const TOOLS = ['losetup', 'mkfs.ext4', 'e2fsck', 'mount', 'umount'];
/** New workers made at once by the child. */
const BATCH = 64;
/** Workers the writing child rewrites, each one write after another. */
const WRITERS = 4;
/** Its writers that move to a new worker every GENERATION writes, so that some log is always growing. */
const GROWERS = 2;
const GENERATION = 150;
/** What the writing child writes in round `round` as its `i`th value to a worker. */
const valueOf = (round, i) => round * 1_000_000 + i;
/** The image's size (sparse; about 32,000 inodes): room for a soak's thousands of worker files. */
const IMAGE_BYTES = 512 << 20;

/** The full path of `name` on PATH (or in the sbin directories), or undefined. */
function which(name) {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/sbin', '/usr/sbin', '/usr/local/sbin'];
  return dirs.map((d) => path.join(d, name)).find((p) => fs.existsSync(p));
}

/**
 * Whether this machine can run the test: the power-cut mount (root,
 * /dev/fuse), the ext4 tools, ext4 in the kernel, and a loop device this
 * process can attach (a container may list one it cannot open).
 * Synchronous, so a test file can decide at load time to skip visibly.
 * @returns {{ ok: boolean, reason?: string }}
 */
function ext4Available() {
  const can = available();
  if (!can.ok) return can;
  const missing = TOOLS.filter((tool) => which(tool) === undefined);
  if (missing.length > 0) return { ok: false, reason: `${missing.join(', ')} not found` };
  if (!fs.readFileSync('/proc/filesystems', 'utf8').includes('\text4\n')) {
    if (which('modprobe') === undefined) return { ok: false, reason: 'ext4 is not in /proc/filesystems and there is no modprobe to load it' };
    if (spawnSync(which('modprobe'), ['ext4'], { stdio: 'ignore', timeout: 30_000 }).status !== 0) return { ok: false, reason: 'modprobe ext4 failed: the kernel has no ext4' };
  }
  return loopWorks();
}

/** Attaches and detaches a small file: whether a loop device can be used here. */
function loopWorks() {
  const probe = path.join(os.tmpdir(), `dw-loop-probe-${process.pid}`);
  try {
    fs.writeFileSync(probe, Buffer.alloc(1 << 20));
    const r = spawnSync(which('losetup'), ['-f', '--show', probe], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) return { ok: false, reason: `no loop device to attach (losetup -f --show: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()})` };
    spawnSync(which('losetup'), ['-d', r.stdout.trim()], { timeout: 30_000 });
    return { ok: true };
  } finally {
    fs.rmSync(probe, { force: true });
  }
}

/**
 * Runs `tool` with `args`; throws with its output unless it exits with a
 * status in `ok`.
 * @returns {{ status: number, output: string }}
 */
function run(tool, args, ok = [0]) {
  const r = spawnSync(which(tool) ?? tool, args, { encoding: 'utf8', timeout: 60_000 });
  const output = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim();
  if (!ok.includes(r.status)) throw new Error(`${tool} ${args.join(' ')}: ${r.error?.message ?? `exit ${r.status}`}\n${output}`);
  return { status: r.status, output };
}

/**
 * Makes an ext4 image at `image` (on the power-cut mount `m`) and makes it
 * durable. `journal` false: `-O ^has_journal` (ext2-like, fsck after a crash).
 * @param {import('./powercut').Mount} m
 */
async function makeImage(m, image, { journal }) {
  mkfs(image, IMAGE_BYTES, { journal });
  await m.sync();
}

/** Makes a sparse ext4 image of `bytes` at `image`, with a journal or without. */
function mkfs(image, bytes, { journal }) {
  fs.writeFileSync(image, '');
  fs.truncateSync(image, bytes);
  run('mkfs.ext4', ['-q', '-F', ...(journal ? [] : ['-O', '^has_journal']), image]);
}

/** What attach() made and detach() has not undone yet. */
const live = new Set();
// Teardowns do not run when ava ends the worker (a signal, --fail-fast):
// no mount or loop device may outlive the process all the same.
const detachAll = () => {
  for (const a of live) detach(a);
};
process.on('exit', detachAll);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    detachAll();
    process.exit(128 + (signal === 'SIGTERM' ? 15 : 2));
  });
}

/**
 * Attaches `image` to a free loop device and mounts it as ext4 at `mnt`
 * (made if missing), with mount `options` if given. Returns the attachment;
 * its detach() is also a teardown of `t`, so nothing stays attached after a
 * failure.
 * @param {import('ava').ExecutionContext} t
 * @returns {{ dev: string, mnt: string, detach: () => string[] }}
 */
function attach(t, image, mnt, options) {
  let a = null;
  // First: once the test has ended (timed out), this throws, before anything is attached.
  t.teardown(() => a?.detach());
  a = attachImage(image, mnt, options);
  return a;
}

/**
 * attach() for code that is not a test (a probe at load time): throws if the
 * image cannot be attached or mounted, with nothing left attached; otherwise
 * the caller detaches, or the process's exit does.
 * @returns {{ dev: string, mnt: string, detach: () => string[] }}
 */
function attachImage(image, mnt, options) {
  fs.mkdirSync(mnt, { recursive: true });
  const a = { dev: undefined, mnt, mounted: false, attached: false };
  a.detach = () => detach(a);
  live.add(a);
  try {
    a.dev = run('losetup', ['-f', '--show', image]).output;
    a.attached = true;
    // errors=continue whatever the image's default: a cut's I/O errors must never panic the machine.
    run('mount', ['-t', 'ext4', '-o', ['errors=continue', options].filter(Boolean).join(','), a.dev, mnt]);
    a.mounted = true;
  } catch (err) {
    detach(a);
    throw err;
  }
  return a;
}

/**
 * Unmounts and detaches what attach() made; safe to call twice. After a cut
 * the image's file fails with EIO, so the unmount may complain: it falls back
 * to a lazy unmount, and a loop device still busy is detached when released.
 * @returns {string[]} what did not go cleanly (for the test's log)
 */
function detach(a) {
  live.delete(a);
  const notes = [];
  if (a.mounted) {
    a.mounted = false;
    const r = spawnSync(which('umount'), [a.mnt], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) {
      notes.push(`umount ${a.mnt}: ${(r.stderr || r.error?.message || '').trim()}; lazily`);
      spawnSync(which('umount'), ['-l', a.mnt], { timeout: 30_000 });
    }
  }
  if (a.attached) {
    a.attached = false;
    const r = spawnSync(which('losetup'), ['-d', a.dev], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) notes.push(`losetup -d ${a.dev}: ${(r.stderr || r.error?.message || '').trim()}`);
  }
  return notes;
}

/**
 * e2fsck -fy of `image`, in place: the repair a boot after the power loss
 * would make (it runs -p, which stops where -y goes on). Status 0 (clean) or
 * 1 (errors corrected); throws on anything worse.
 * @returns {{ status: number, output: string }}
 */
function fsck(image) {
  return run('e2fsck', ['-fy', image], [0, 1]);
}

/**
 * Forks this file as `create <dir> <round>`, acknowledging to `ackFile`.
 * `ready` resolves at its first acknowledgement and rejects if it ends first.
 * @param {import('ava').ExecutionContext} t
 */
function startCreator(t, dir, round, ackFile) {
  return startChild(t, __filename, ['create', dir, String(round)], ackFile);
}

/**
 * Forks this file as `write <dir> <round>`, acknowledging to `ackFile`.
 * @param {import('ava').ExecutionContext} t
 */
function startWriter(t, dir, round, ackFile) {
  return startChild(t, __filename, ['write', dir, String(round)], ackFile);
}

/**
 * Runs this file as `check <dir> <list>` and returns what it printed:
 * { workers, missing: string[], damaged: string[] }, or { error } if it
 * could not open or read.
 */
function checkWorkers(dir, ackFile) {
  const r = spawnSync(process.execPath, [__filename, 'check', dir, ackFile], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
  try {
    return JSON.parse(r.stdout);
  } catch {
    return { error: `the checker exited with ${r.status ?? r.signal}: ${r.stderr.trim() || r.stdout.trim()}` };
  }
}

/** The child: new workers in batches until it is killed. */
async function create(dir, round) {
  const { open } = require('../..');
  const { Cell } = require('./powercut-workers');
  const { ack, note } = ackWriter();
  const host = await open({ dir });
  for (let b = 0; ; b++) {
    note(`b ${b}`);
    await Promise.all(
      Array.from({ length: BATCH }, async (_, i) => {
        const id = `r${round}-${b}-${i}`;
        await host.get(Cell, id).put('v', i);
        ack(`n ${id} ${i}`);
      }),
    );
  }
}

/** The child: WRITERS workers rewritten and GROWERS writers moving on to new ones, one write after another each, until it is killed. */
async function write(dir, round) {
  const { open } = require('../..');
  const { Cell } = require('./powercut-workers');
  const { ack, note } = ackWriter();
  const host = await open({ dir });
  let acks = 0;
  const writer = async (idOf) => {
    for (let i = 0; ; i++) {
      const v = valueOf(Number(round), i);
      await host.get(Cell, idOf(i)).put('v', v);
      ack(`w ${idOf(i)} ${v}`);
      if (++acks % 100 === 0) note(`s ${host.stats().syncsInPlace}`);
    }
  };
  await Promise.all([...Array.from({ length: WRITERS }, (_, k) => writer(() => `w${k}`)), ...Array.from({ length: GROWERS }, (_, k) => writer((i) => `g${round}-${k}-${Math.floor(i / GENERATION)}`))]);
}

/** The value of `id`'s Cell, or the error reading it as a string. */
async function readCell(host, Cell, id) {
  try {
    return await host.get(Cell, id).read('v');
  } catch (err) {
    return `${err.code} ${err.message}`;
  }
}

/**
 * The checker: every acknowledged worker of `list` read back from `dir`
 * (missing: not there with its value, or not listed), and every one in
 * flight at the cut (damaged: it answers with an error).
 */
async function check(dir, list) {
  const { open } = require('../..');
  const { Cell } = require('./powercut-workers');
  const lines = readAcks(list);
  const host = await open({ dir });
  const listed = await idsOf(host, Cell);
  const out = { workers: 0, missing: [], damaged: [], values: {} };
  for (const [kind, id, n, ...more] of lines) {
    const i = Number(n);
    const v = await readCell(host, Cell, id);
    if (kind === 'w') {
      out.workers++;
      out.values[id] = v ?? 'none';
      if (![n, ...more].includes(String(v ?? 'none'))) out.missing.push(`${id}: ${v ?? 'no value'}, not one of ${[n, ...more].join(', ')}`);
    } else if (kind === 'n') {
      out.workers++;
      if (v !== i || !listed.has(id)) out.missing.push(`${id}: ${v === undefined ? 'no value' : v}${listed.has(id) ? '' : ', not listed'}`);
    } else if (v !== i && v !== undefined) out.damaged.push(`${id} (in flight at the cut): ${v}`);
  }
  await host.close();
  return out;
}

if (require.main === module) {
  const [mode, dir, arg] = process.argv.slice(2);
  if (mode === 'create' || mode === 'write') {
    // An orphan (the parent gone) stops instead of writing for ever.
    process.on('disconnect', () => process.exit(3));
    (mode === 'create' ? create : write)(dir, arg).catch((err) => {
      console.error(err);
      process.exit(2);
    });
  } else if (mode === 'check') {
    check(dir, arg).then(
      (r) => {
        process.stdout.write(JSON.stringify(r));
        process.exit(0);
      },
      (err) => {
        process.stdout.write(JSON.stringify({ error: `${err.code ?? ''} ${err.message}` }));
        process.exit(0);
      },
    );
  }
}

module.exports = { BATCH, WRITERS, valueOf, ext4Available, makeImage, mkfs, attach, attachImage, fsck, readAcks, startCreator, startWriter, checkWorkers };
