'use strict';
// Snapshots of a durable directory and their restore (docs/backups.md).
//
// A snapshot is a directory laid out like a durable one, every worker file
// and the catalog copied while the host serves (src/backup.rs), and a
// manifest, backup.json, written and synced last: it lists each file with
// its size and BLAKE3 hash, and a snapshot without it is incomplete. A
// restore checks every file against it, so a damaged file fails its worker
// by name and the others are restored.
const fs = require('node:fs');
const path = require('node:path');
const { DurableError, codes, fromNative } = require('../api/errors');

const MANIFEST = 'backup.json';
const FORMAT = 'durable-workers/snapshot';
const VERSION = 1;

/**
 * @typedef {object} SnapshotReport
 * @property {string} dest the snapshot's directory
 * @property {number} workers worker files copied
 * @property {number} bytes bytes copied, the catalog included
 * @property {number} takenAt when the copy began (epoch ms)
 * @property {number} ms how long it took
 */

/**
 * Takes a snapshot of the directory `native` serves into `dest`.
 * @param {object} native the host's NativeHost
 * @param {string} dir the directory it serves
 * @param {string} dest a new or empty directory, outside `dir`
 * @returns {Promise<SnapshotReport>}
 */
async function takeSnapshot(native, dir, dest) {
  if (typeof dest !== 'string' || dest === '') throw new TypeError(`backup(dest): dest must be a directory path, got ${JSON.stringify(dest)}`);
  const source = path.resolve(dir);
  const target = path.resolve(dest);
  if (inside(target, source) || inside(source, target)) {
    throw new DurableError(codes.BACKUP, `backup(${JSON.stringify(dest)}): a snapshot of ${source} cannot go inside it, nor contain it`);
  }
  const takenAt = Date.now();
  let r;
  try {
    r = await native.snapshot(target);
  } catch (err) {
    throw fromNative(err, `backup(${JSON.stringify(dest)})`);
  }
  const files = r.files.map((file, i) => ({ file, size: r.sizes[i], hash: r.hashes[i] }));
  const failed = r.failedFiles.map((file, i) => ({ file, reason: r.failedReasons[i] }));
  const report = {
    dest: target,
    workers: files.length - 1,
    bytes: files.reduce((n, f) => n + f.size, 0),
    takenAt,
    ms: Date.now() - takenAt,
  };
  if (failed.length > 0) {
    // No manifest: a snapshot that misses a worker must not restore as whole.
    const list = failed.map((f) => `${f.file}: ${f.reason}`).join('; ');
    throw Object.assign(new DurableError(codes.BACKUP, `backup(${JSON.stringify(dest)}): ${failed.length} worker file(s) could not be copied, so the snapshot has no manifest: ${list}`), { failed });
  }
  writeSynced(path.join(target, MANIFEST), `${JSON.stringify({ format: FORMAT, version: VERSION, source, takenAt, finishedAt: Date.now(), files })}\n`);
  return report;
}

/**
 * @typedef {object} RestoreReport
 * @property {string} dir the restored directory
 * @property {{ class: string, id: string, file: string }[]} workers the workers restored
 * @property {{ file: string, reason: string }[]} failed the files left out, and why
 * @property {number | null} takenAt when the snapshot was taken (epoch ms); for an archive, the moment asked for, or null for its latest
 */

/**
 * Restores a snapshot or an archive into `to`, a new or empty directory, and builds its
 * catalog from the restored files. A file that fails its hash or SQLite's
 * integrity check is left out and named in `failed`; the rest are restored.
 * @param {string | { s3: import('./s3-archive').S3Target }} from a snapshot directory (with its
 *   backup.json), an archive's directory, or an archive in a bucket
 * @param {string} to
 * @param {{ only?: string[], at?: number, durability?: 'full' | 'relaxed' }} [options]
 *   `only`: `Class/id` names, restoring just those workers; `at`: epoch ms, refused
 *   unless the snapshot was taken by then (a snapshot holds one moment)
 * @returns {Promise<RestoreReport>}
 */
async function restore(from, to, { only, at, durability = 'full' } = {}) {
  if (typeof from === 'object' && from !== null && from.s3 !== undefined) return fromBucket(from.s3, to, { only, at, durability });
  const source = path.resolve(from);
  const target = path.resolve(to);
  if (at !== undefined && !Number.isFinite(at)) throw new TypeError(`restore(): at must be a time in epoch ms, got ${JSON.stringify(at)}`);
  if (only !== undefined && (!Array.isArray(only) || only.length === 0)) throw new TypeError('restore(): only must be a non-empty array of "Class/id" names');
  const native = require('../native/load');
  const who = `restore(${JSON.stringify(from)}, ${JSON.stringify(to)})`;
  if (!fs.existsSync(path.join(source, MANIFEST)) && ['base', 'log'].some((sub) => fs.existsSync(path.join(source, sub)))) {
    // An archive: any moment it retains (one without a finished base says so).
    const files = only?.map((name) => fileOf(name, native.workerFile));
    const r = await native.restoreArchive(source, target, at ?? null, files ?? null, durability).catch((err) => {
      throw fromNative(err, who);
    });
    return report(target, r, at ?? null);
  }
  const manifest = readManifest(source);
  if (at !== undefined && at < manifest.finishedAt) {
    throw new DurableError(
      codes.BACKUP,
      `restore(): the snapshot in ${source} holds the workers as of ${new Date(manifest.takenAt).toISOString()}–${new Date(manifest.finishedAt).toISOString()}, not as of ${new Date(at).toISOString()}: a snapshot restores only the moment it was taken`,
    );
  }
  const files = only === undefined ? manifest.files : pick(manifest.files, only, source, native.workerFile);
  const r = await native
    .restoreSnapshot(
      source,
      target,
      files.map((f) => f.file),
      files.map((f) => f.hash),
      durability,
    )
    .catch((err) => {
      throw fromNative(err, who);
    });
  return report(target, r, manifest.takenAt);
}

/** An archive in a bucket: downloaded beside the target, restored, and the download removed. */
async function fromBucket(s3, to, options) {
  const { download } = require('./s3-archive');
  const target = path.resolve(to);
  const scratch = fs.mkdtempSync(path.join(path.dirname(target), `.${path.basename(target)}.download-`));
  try {
    await download(s3, scratch);
    return await restore(scratch, target, options);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

function report(dir, r, takenAt) {
  return {
    dir,
    workers: r.files.map((file, i) => ({ class: r.classes[i], id: r.ids[i], file })),
    failed: r.failedFiles.map((file, i) => ({ file, reason: r.failedReasons[i] })),
    takenAt,
  };
}

/** The file of the worker named `Class/id`. */
function fileOf(name, workerFile) {
  const slash = typeof name === 'string' ? name.indexOf('/') : -1;
  if (slash <= 0 || slash === name.length - 1) throw new TypeError(`restore(): ${JSON.stringify(name)} is not a "Class/id" name`);
  return workerFile(name.slice(0, slash), name.slice(slash + 1));
}

/** The manifest entries of the workers named `Class/id`; each must be there. */
function pick(files, only, source, workerFile) {
  const byFile = new Map(files.map((f) => [f.file, f]));
  return only.map((name) => {
    const entry = byFile.get(fileOf(name, workerFile));
    if (entry === undefined) throw new DurableError(codes.BACKUP, `restore(): the snapshot in ${source} holds no worker ${name}`);
    return entry;
  });
}

function readManifest(dir) {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, MANIFEST), 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') throw new DurableError(codes.BACKUP, `${dir} holds no ${MANIFEST}: it is not a snapshot, or one that did not finish`);
    throw new DurableError(codes.IO, `read ${path.join(dir, MANIFEST)}: ${err.message}`, { cause: err });
  }
  let m;
  try {
    m = JSON.parse(text);
  } catch {
    m = null;
  }
  const valid =
    m?.format === FORMAT && Array.isArray(m.files) && m.files.every((f) => typeof f?.file === 'string' && typeof f.hash === 'string') && Number.isFinite(m.takenAt) && Number.isFinite(m.finishedAt);
  if (!valid) throw new DurableError(codes.BACKUP, `${path.join(dir, MANIFEST)} is not a snapshot manifest this version reads`);
  if (m.version > VERSION) throw new DurableError(codes.BACKUP, `${path.join(dir, MANIFEST)} is version ${m.version}, written by a newer durable-workers; this one reads ${VERSION}`);
  return m;
}

/** Writes a file and makes it and its name durable. */
function writeSynced(file, text) {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  const dirFd = fs.openSync(path.dirname(file), 'r');
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
}

/** Whether `a` is `b` or inside it. */
function inside(a, b) {
  const rel = path.relative(b, a);
  return rel === '' || (rel.split(path.sep)[0] !== '..' && !path.isAbsolute(rel));
}

module.exports = { takeSnapshot, restore };
