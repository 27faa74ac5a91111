'use strict';
// Starting a run's process: a fresh Node with nothing but child.js loaded, a
// heap ceiling, an environment reduced to an allowlist (the supervisor's own
// environment may hold credentials, PEEK_CREDENTIAL_*, and a child inherits
// everything by default), and stdout/stderr piped so worker output reaches
// the log sink instead of the supervisor's terminal.
//
// The realm protocol goes over a pipe of its own (fd 3) in frames
// (../protocol/frames.js), not over Node's IPC channel: the child has no
// process.send, no 'message' events, none of Node's internal IPC commands,
// and every byte that comes back is read by code that treats it as hostile.
// The worker runs in that process and can write to fd 3 itself: what it can
// forge there is checked like anything else, and hurts its own run only.
//
// The process leads a process group of its own (detached: setsid), and it is
// ended by killing the group: what the run started (a grandchild, if it found
// a way to spawn one) ends with it, at the deadline, at a violation, when the
// result is in, and when the process exits by itself. A descendant that left
// the group (setsid again) is not reached; the sandbox's PID namespace is what
// reaches it (issue 24, item 3). Whatever holds the pipes, the exit is
// reported STDIO_GRACE_MS after the process ended: run() does not wait on
// pipes a descendant keeps open. Where util-linux's setpriv is installed the
// process also gets a parent-death signal: the supervisor's death (even
// SIGKILL) ends it, whatever the worker did to the pipe's listeners.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { codes, peekError } = require('../errors');
const { frameReader, checkRealmMessage, encodeFrame } = require('../protocol/frames');
const { sandboxCommand } = require('./sandbox');

const CHILD = path.join(__dirname, 'child.js');
/** The child's end of the frame pipe. */
const FRAME_FD = 3;
/** Variables a run's process keeps; everything else is dropped. */
const ENV_ALLOW = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT', 'NODE_DEBUG'];
// Before Node 22.15 the child walks the worker's graph with Node's resolver
// (prescan.js), which needs import.meta.resolve's parent argument.
const EXEC_ARGV = typeof require('node:module').registerHooks === 'function' ? [] : ['--experimental-import-meta-resolve'];
/**
 * util-linux's setpriv, where there is one: the run's process is started
 * through it with a parent-death signal (PR_SET_PDEATHSIG, SIGKILL), so it
 * ends with the supervisor even if the worker took away the child's own
 * watch on the frame pipe (its 'end' listener is the worker's to remove).
 * Without it (not Linux, no util-linux) that watch is all there is.
 */
const SETPRIV = process.platform === 'linux' ? findSetpriv() : null;

/** setpriv's path, if there is one that knows --pdeathsig (util-linux 2.33 and later). */
function findSetpriv() {
  const file = ['/usr/bin/setpriv', '/bin/setpriv'].find((f) => fs.existsSync(f));
  if (file === undefined) return null;
  const help = spawnSync(file, ['--help'], { encoding: 'utf8', timeout: 5000 });
  return /--pdeathsig/.test(`${help.stdout}${help.stderr}`) ? file : null;
}
/** Replies waiting for the run's process to read them, at most: past this, it is not reading (a violation). */
const OUTBOUND_MAX_BYTES = 64 * 1024 * 1024;
/** After the process exited, how long its pipes may stay open (a descendant holding them) before they are destroyed. */
const STDIO_GRACE_MS = 500;

const now = () => performance.timeOrigin + performance.now();
const READY_ONLY = new Set(['ready']);

/** The environment a run's process gets: the allowlisted part of this one. */
function runEnv() {
  const env = {};
  for (const key of ENV_ALLOW) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

/**
 * Starts a run's process. Resolves `ready` when the child has booted (import
 * refusal in place, nothing of a worker loaded).
 *
 * `frames` is the process's frame pipe: `send(message)` (throws for a value
 * that cannot cross), and `attach({ onMessage, onViolation })` for whoever
 * takes the process (the realm); until then only 'ready' is accepted. A
 * violation kills the process at once (SIGKILL): nothing more of it is read.
 * @param {{ memoryMb: number, uid?: number, gid?: number, sandbox?: { status: object, pool: import('./sandbox').UidPool | null } | null }} options
 *   uid/gid: run the process as this user and group (the supervisor must be
 *   allowed to, e.g. root); then it cannot read the supervisor's memory,
 *   environment, command line or files that user may not read.
 *   sandbox: start it in a sandbox (./sandbox.js) instead, where the
 *   sandbox decides the uid; the child then expects its worker shipped in.
 *   warm: a spare: it takes the platform's fetch before it says ready, so a
 *   run granted network does not pay that (./guarded-fetch.js, preparePlatform).
 */
function forkRunProcess({ memoryMb, uid, gid, sandbox = null, warm = false }) {
  const env = runEnv();
  const forkAt = now();
  let node = [process.execPath, `--max-old-space-size=${memoryMb}`, ...EXEC_ARGV, CHILD, ...(warm ? ['--warm'] : [])];
  let releaseUid = () => {};
  if (sandbox !== null) {
    // The host's temporary directory is not in the sandbox; its own /tmp is.
    env.TMPDIR = '/tmp';
    const s = sandboxCommand(sandbox.status, sandbox.pool, [...node, '--sandboxed']);
    node = s.command;
    releaseUid = s.release;
    uid = undefined;
    gid = undefined;
  }
  const [file, ...args] = SETPRIV === null ? node : [SETPRIV, '--pdeathsig', 'KILL', '--', ...node];
  let proc;
  try {
    proc = spawn(file, args, {
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      detached: true,
      ...(uid !== undefined ? { uid } : {}),
      ...(gid !== undefined ? { gid } : {}),
    });
  } catch (err) {
    releaseUid();
    throw err;
  }
  const pipe = proc.stdio[FRAME_FD];
  let violation = null;
  let handler = null;
  let booted = false;
  let readyResolve;
  let readyReject;
  const ready = new Promise((resolve, reject) => {
    readyResolve = resolve;
    readyReject = reject;
  });
  ready.catch(() => {});

  const violate = (reason) => {
    if (violation !== null) return;
    violation = reason;
    killGroup(proc);
    pipe?.destroy();
    readyReject(peekError(codes.PROTOCOL, `the run's process broke the frame protocol while booting: ${reason}`));
    handler?.onViolation(reason);
  };
  const reader = frameReader({
    onMessage: (value) => {
      if (violation !== null) return; // (a violation found by the realm, mid-chunk)
      if (!booted) {
        const m = checkRealmMessage(value, { allow: READY_ONLY });
        booted = true;
        readyResolve({ origin: m.origin, at: m.at });
        return;
      }
      if (handler === null) return violate('it sent a message before it was given a job');
      handler.onMessage(value);
    },
    onViolation: violate,
  });
  pipe?.on('data', (chunk) => reader.push(chunk));
  pipe?.on('error', () => {}); // the process is gone: its exit reports the run
  proc.once('error', (err) => {
    // (An 'error' of a process that runs, a failed kill, is not its end.)
    if (proc.pid === undefined) releaseUid();
    readyReject(err);
  });

  let exitedResolve;
  const exited = new Promise((resolve) => {
    exitedResolve = resolve;
  });
  let exitInfo = null;
  proc.once('exit', (code, signal) => {
    exitInfo = { code, signal, at: now() };
    releaseUid();
    // Whatever it started goes with it, however it ended.
    killGroup(proc);
    // Whatever the process left holding its pipes (a descendant), the exit
    // is reported: its pipes are destroyed after a short grace.
    const t = setTimeout(() => {
      for (const s of proc.stdio) s?.destroy?.();
      exitedResolve(exitInfo);
    }, STDIO_GRACE_MS);
    t.unref();
  });
  proc.once('close', () => exitedResolve(exitInfo ?? { code: proc.exitCode, signal: proc.signalCode, at: now() }));
  exited.then(({ code, signal }) =>
    readyReject(
      peekError(
        codes.CRASHED,
        `the run's process exited while booting (code ${code}, signal ${signal})${uid !== undefined ? `; it runs as uid ${uid}: can that user read ${CHILD} and the worker's files?` : ''}`,
      ),
    ),
  );

  const frames = {
    /** Sends one message; throws for a value that cannot cross; false once the pipe is gone. */
    send(message) {
      const frame = encodeFrame(message);
      if (violation !== null || !pipe || pipe.destroyed || !pipe.writable) return false;
      // A run that asks and does not read would have the answers pile up here.
      if (pipe.writableLength + frame.length > OUTBOUND_MAX_BYTES) {
        violate(`it left more than ${OUTBOUND_MAX_BYTES} bytes of answers unread`);
        return false;
      }
      pipe.write(frame);
      return true;
    },
    attach(h) {
      handler = h;
      if (violation !== null) h.onViolation(violation);
    },
    /** The violation that ended the process, if one did. */
    get violation() {
      return violation;
    },
    violate,
  };
  return { proc, forkAt, ready, exited, frames, sandboxed: sandbox !== null };
}

/**
 * SIGKILLs a run's process and its process group (everything it started
 * that stayed in the group).
 */
function killGroup(proc) {
  if (proc.pid !== undefined) {
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {} // ESRCH: nothing left in the group
  }
  proc.kill('SIGKILL');
}

const streams = (proc) => [proc.stdout, proc.stderr, proc.stdio[FRAME_FD]];

/** Lets a process that only holds an idle spare exit; `hold` undoes it. */
function release(proc) {
  proc.unref();
  for (const s of streams(proc)) s?.unref?.();
}

function hold(proc) {
  proc.ref();
  for (const s of streams(proc)) s?.ref?.();
}

module.exports = { forkRunProcess, killGroup, SETPRIV, runEnv, release, hold, now, FRAME_FD, STDIO_GRACE_MS };
