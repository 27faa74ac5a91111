'use strict';
// The slow-sync shim for crash tests: an LD_PRELOAD library whose fsync and
// fdatasync sleep first (bench/slowsync/slowsync.c). Under it a commit takes
// milliseconds, so a result released before its commit has landed is caught
// by a SIGKILL instead of hiding behind a fast device.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const SOURCE = path.join(ROOT, 'bench', 'slowsync', 'slowsync.c');
const BUILD_DIR = path.join(ROOT, 'bench', '.build');
const LIBRARY = path.join(BUILD_DIR, 'slowsync.so');

let built = null;

/**
 * Compiles the shim unless an up-to-date build exists (once per process).
 * @returns {string} absolute path of the shared library
 */
function slowSyncLibrary() {
  if (built !== null) return built;
  const lib = fs.statSync(LIBRARY, { throwIfNoEntry: false });
  if (!lib || lib.mtimeMs < fs.statSync(SOURCE).mtimeMs) {
    fs.mkdirSync(BUILD_DIR, { recursive: true });
    // Build under a private name and rename: test files run in parallel
    // processes, and none may load a half-written library.
    const partial = `${LIBRARY}.${process.pid}.tmp`;
    try {
      execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', partial, SOURCE, '-ldl'], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw new Error(`cannot build the slowsync shim from ${SOURCE}: ${err.stderr ? String(err.stderr).trim() : err.message}`, {
        cause: err,
      });
    }
    fs.renameSync(partial, LIBRARY);
  }
  built = LIBRARY;
  return built;
}

/**
 * An environment whose every fsync/fdatasync first sleeps `ms` milliseconds.
 * @param {number} ms
 * @returns {NodeJS.ProcessEnv}
 */
function slowSyncEnv(ms) {
  const preload = [slowSyncLibrary(), process.env.LD_PRELOAD].filter(Boolean).join(':');
  return { ...process.env, LD_PRELOAD: preload, DW_SLOWSYNC_MS: String(ms) };
}

/** True when the shim is mapped into this process (a child reports this). */
function slowSyncLoaded() {
  try {
    return fs.readFileSync('/proc/self/maps', 'utf8').includes(path.basename(LIBRARY));
  } catch {
    return false;
  }
}

module.exports = { slowSyncLibrary, slowSyncEnv, slowSyncLoaded };
