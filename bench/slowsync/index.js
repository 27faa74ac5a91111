'use strict';
// Builds and hands out the slowsync LD_PRELOAD shim (see slowsync.c).

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const SOURCE = path.join(__dirname, 'slowsync.c');
const BUILD_DIR = path.join(__dirname, '..', '.build');
const LIBRARY = path.join(BUILD_DIR, 'slowsync.so');

/**
 * Compiles the shim into bench/.build/slowsync.so unless an up-to-date build
 * is already there.
 * @returns {string} absolute path of the shared library
 * @throws {Error} when no C compiler is available or the build fails
 */
function ensureShim() {
  const built = fs.statSync(LIBRARY, { throwIfNoEntry: false });
  if (built && built.mtimeMs >= fs.statSync(SOURCE).mtimeMs) return LIBRARY;
  fs.mkdirSync(BUILD_DIR, { recursive: true });
  // Build to a temporary name and rename, so an interrupted build never
  // leaves a half-written library that a later run would trust.
  const partial = `${LIBRARY}.${process.pid}.tmp`;
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', partial, SOURCE, '-ldl'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
  } catch (err) {
    fs.rmSync(partial, { force: true });
    const detail = err.stderr ? String(err.stderr).trim() : err.message;
    throw new Error(`cannot build the slowsync shim: ${detail}`, { cause: err });
  }
  fs.renameSync(partial, LIBRARY);
  return LIBRARY;
}

/**
 * Environment for a child process whose every fsync/fdatasync takes `ms`
 * milliseconds longer.
 * @param {number} ms added latency per sync
 * @param {NodeJS.ProcessEnv} [base] environment to extend
 * @returns {NodeJS.ProcessEnv}
 */
function slowSyncEnv(ms, base = process.env) {
  const preload = [ensureShim(), base.LD_PRELOAD].filter(Boolean).join(':');
  return { ...base, LD_PRELOAD: preload, DW_SLOWSYNC_MS: String(ms) };
}

module.exports = { ensureShim, slowSyncEnv };
