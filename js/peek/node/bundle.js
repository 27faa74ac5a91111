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
/** At most this much is shipped per run (it travels in one frame, under frames.js's cap). */
const MAX_BUNDLE_BYTES = 12 * 1024 * 1024;
const MAX_BUNDLE_FILES = 2000;
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
 * relative path. Symbolic links are followed while they stay inside the
 * package; one that leads out of it, or a loop, is left out.
 * @param {string} workerFile the worker module's absolute path (manifest.worker.path)
 * @param {string} name the worker's name, for errors
 * @returns {{ root: string, entry: string, files: [string, Uint8Array][], bytes: number }}
 */
function readBundle(workerFile, name) {
  // A symlinked worker is shipped from where it points, with its package there.
  const root = packageRoot(fs.realpathSync(workerFile));
  const realRoot = fs.realpathSync(root);
  const files = [];
  let bytes = 0;
  const over = (what) => {
    throw peekError(
      codes.SANDBOX,
      `worker ${name}: its package ${root} is more than ${what} (the sandbox ships at most ${MAX_BUNDLE_FILES} files and ${MAX_BUNDLE_BYTES} bytes to each run); bundle the worker, or give it a directory and package.json of its own`,
    );
  };
  const walk = (dir, rel, seen) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
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
      const stat = fs.statSync(real);
      if (stat.isDirectory()) {
        if (seen.has(real)) continue;
        walk(real, relPath, new Set(seen).add(real));
      } else if (stat.isFile()) {
        if (files.length >= MAX_BUNDLE_FILES) over(`${MAX_BUNDLE_FILES} files`);
        bytes += stat.size;
        if (bytes > MAX_BUNDLE_BYTES) over(`${MAX_BUNDLE_BYTES} bytes`);
        files.push([relPath, fs.readFileSync(real)]);
      }
    }
  };
  walk(realRoot, '', new Set([realRoot]));
  const entry = path.relative(realRoot, fs.realpathSync(workerFile)).split(path.sep).join('/');
  if (entry.startsWith('..')) throw peekError(codes.SANDBOX, `worker ${name}: ${workerFile} is outside its package ${root}`);
  return { root, entry, files, bytes };
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
