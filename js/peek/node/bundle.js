'use strict';
// A sandboxed run cannot open the worker's files where they live (the
// sandbox binds none of the host's directories but Node and this package),
// and its process was started before anyone knew which worker it would run.
// So the supervisor reads the worker's package at run time and ships it in
// the job message; the run's process writes it to a tmpfs of its own
// (sandbox.js, WORKER_ROOT) and imports it from there. Read again for every
// run: an edited worker runs as edited (install.codeLoad: 'runtime').
//
// The package is the directory of the nearest package.json above the worker
// file (Node decides a .js file's module type from it), or the worker's own
// directory when there is none. Bounded: a bundled worker is a few files;
// a directory that is more than the bounds is refused with ERR_PEEK_SANDBOX
// naming it, rather than copied for ever.
const fs = require('node:fs');
const path = require('node:path');
const { codes, peekError } = require('../errors');

/** Where the worker's files are written inside the sandbox (a tmpfs of its own, ./sandbox.js). */
const WORKER_ROOT = '/peek/worker';
/** At most this much is shipped per run, paths included (it travels in one frame, under frames.js's 16 MiB cap). */
const MAX_BUNDLE_BYTES = 12 * 1024 * 1024;
const MAX_BUNDLE_FILES = 2000;
/** Directory entries looked at, at most (a package of links that multiply is refused, not walked for ever). */
const MAX_VISITED = 20_000;
/** Not part of what runs. */
const SKIP = new Set(['.git', '.hg', '.svn']);

/** The directory whose files a sandboxed run of `workerFile` gets. */
function packageRoot(workerFile) {
  const start = path.dirname(workerFile);
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return start;
  }
}

/**
 * The worker's package as [relative path, bytes] pairs and the entry's
 * relative path.
 *
 * Only what anyone on the machine may read is shipped: a file not readable
 * by others, or a directory others cannot enter, is left out, and so is a
 * durable directory (one holding a catalog, _registry.db) and every path
 * named in `exclude`. So Peek's state directory (0700, and a durable
 * directory), its embedded store (0600) and a credentials file (0600, or the
 * reader refuses it) never reach a run, wherever they sit in the package.
 * A file is opened without following a last link and checked on its
 * descriptor, so a path swapped while it is read yields at most another file
 * anyone may read. Symbolic links are followed while they stay inside the
 * package; each real directory is walked once.
 * @param {string} workerFile the worker module's absolute path (manifest.worker.path)
 * @param {string} name the worker's name, for errors
 * @param {{ exclude?: string[] }} [options] host paths never shipped (the state directory, the credentials file)
 * @returns {{ root: string, entry: string, files: [string, Uint8Array][], bytes: number }}
 */
function readBundle(workerFile, name, { exclude = [] } = {}) {
  // A symlinked worker is shipped from where it points, with its package there.
  const root = packageRoot(fs.realpathSync(workerFile));
  const realRoot = fs.realpathSync(root);
  const excluded = new Set(exclude.flatMap((p) => (fs.existsSync(p) ? [fs.realpathSync(p)] : [])));
  const files = [];
  let bytes = 0;
  let visited = 0;
  const over = (what) => {
    throw peekError(
      codes.SANDBOX,
      `worker ${name}: its package ${root} is more than ${what} (the sandbox ships at most ${MAX_BUNDLE_FILES} files and ${MAX_BUNDLE_BYTES} bytes to each run); bundle the worker, or give it a directory and package.json of its own`,
    );
  };
  const seen = new Set([realRoot]);
  const walk = (dir, rel) => {
    if (fs.existsSync(path.join(dir, '_registry.db'))) return; // a durable directory: data, not code
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (++visited > MAX_VISITED) over(`${MAX_VISITED} entries to look at`);
      if (SKIP.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      const relPath = rel === '' ? entry.name : `${rel}/${entry.name}`;
      let real;
      try {
        real = fs.realpathSync(full);
      } catch {
        continue; // a dangling link
      }
      if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) continue;
      if (excluded.has(real)) continue;
      const stat = fs.statSync(real);
      if (stat.isDirectory()) {
        if (seen.has(real) || (stat.mode & 0o005) !== 0o005) continue;
        seen.add(real);
        walk(real, relPath);
      } else if (stat.isFile()) {
        const data = readPublic(real);
        if (data === null) continue;
        if (files.length >= MAX_BUNDLE_FILES) over(`${MAX_BUNDLE_FILES} files`);
        bytes += data.length + Buffer.byteLength(relPath);
        if (bytes > MAX_BUNDLE_BYTES) over(`${MAX_BUNDLE_BYTES} bytes`);
        files.push([relPath, data]);
      }
    }
  };
  walk(realRoot, '');
  const entry = path.relative(realRoot, fs.realpathSync(workerFile)).split(path.sep).join('/');
  if (entry.startsWith('..')) throw peekError(codes.SANDBOX, `worker ${name}: ${workerFile} is outside its package ${root}`);
  if (!files.some(([rel]) => rel === entry)) throw peekError(codes.SANDBOX, `worker ${name}: ${workerFile} is not readable by others, so it is not shipped into the sandbox (make it mode 644)`);
  return { root, entry, files, bytes };
}

/** The bytes of `file` if anyone may read it (checked on the open descriptor), else null. */
function readPublic(file) {
  let fd;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
  } catch {
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || (st.mode & 0o004) === 0) return null;
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes a shipped bundle under `dir` (inside the sandbox) and returns the
 * entry's file URL. Paths are checked: nothing is written outside `dir`.
 * @param {string} dir
 * @param {{ entry: string, files: [string, Uint8Array][] }} bundle
 */
function writeBundle(dir, { entry, files }) {
  const inside = (rel) => {
    const full = path.resolve(dir, rel);
    if (!full.startsWith(`${dir}/`)) throw new Error(`a bundle path leaves ${dir}: ${rel}`);
    return full;
  };
  for (const [rel, data] of files) {
    const full = inside(rel);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, data);
  }
  return require('node:url').pathToFileURL(inside(entry)).href;
}

module.exports = { readBundle, writeBundle, packageRoot, WORKER_ROOT, MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES };
