'use strict';
// Forking a run's process: a fresh Node with nothing but child.js loaded, a
// heap ceiling, an environment reduced to an allowlist (the supervisor's own
// environment may hold credentials, PEEK_CREDENTIAL_*, and a child inherits
// everything by default), and stdout/stderr piped so worker output reaches
// the log sink instead of the supervisor's terminal.
const { fork } = require('node:child_process');
const path = require('node:path');
const { codes, peekError } = require('../errors');

const CHILD = path.join(__dirname, 'child.js');
/** Variables a run's process keeps; everything else is dropped. */
const ENV_ALLOW = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT', 'NODE_DEBUG'];
// Before Node 22.15 the child walks the worker's graph with Node's resolver
// (prescan.js), which needs import.meta.resolve's parent argument.
const EXEC_ARGV = typeof require('node:module').registerHooks === 'function' ? [] : ['--experimental-import-meta-resolve'];

const now = () => performance.timeOrigin + performance.now();

/** The environment a run's process gets: the allowlisted part of this one. */
function runEnv() {
  const env = {};
  for (const key of ENV_ALLOW) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

/**
 * Forks a run's process. Resolves `ready` when the child has booted (import
 * refusal in place, nothing of a worker loaded).
 * @param {{ memoryMb: number, uid?: number, gid?: number }} options
 *   uid/gid: run the process as this user and group (the supervisor must be
 *   allowed to, e.g. root); then it cannot read the supervisor's memory,
 *   environment, command line or files that user may not read.
 */
function forkRunProcess({ memoryMb, uid, gid }) {
  const env = runEnv();
  const forkAt = now();
  const proc = fork(CHILD, [], {
    execArgv: [`--max-old-space-size=${memoryMb}`, ...EXEC_ARGV],
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
    ...(uid !== undefined ? { uid } : {}),
    ...(gid !== undefined ? { gid } : {}),
  });
  const exited = new Promise((resolve) => proc.once('close', (code, signal) => resolve({ code, signal, at: now() })));
  const ready = new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (m && m.t === 'ready') {
        proc.off('message', onMessage);
        resolve({ origin: m.origin, at: m.at });
      }
    };
    proc.on('message', onMessage);
    proc.once('error', reject);
    exited.then(({ code, signal }) => reject(peekError(codes.CRASHED, `the run's process exited while booting (code ${code}, signal ${signal})${uid !== undefined ? `; it runs as uid ${uid}: can that user read ${CHILD} and the worker's files?` : ''}`)));
  });
  ready.catch(() => {});
  return { proc, forkAt, ready, exited };
}

/** Lets a process that only holds an idle spare exit; `hold` undoes it. */
function release(proc) {
  proc.unref();
  proc.channel?.unref();
  proc.stdout?.unref?.();
  proc.stderr?.unref?.();
}

function hold(proc) {
  proc.ref();
  proc.channel?.ref();
  proc.stdout?.ref?.();
  proc.stderr?.ref?.();
}

module.exports = { forkRunProcess, runEnv, release, hold, now };
