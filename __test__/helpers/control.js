'use strict';
// For the control socket's tests: a separate process serving a directory
// (fixtures/control-owner.js), and the command line run as a user runs it,
// without blocking this process (which may be serving the directory itself).
const path = require('node:path');
const { fork, spawn } = require('node:child_process');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
const OWNER = path.join(__dirname, '..', 'fixtures', 'control-owner.js');

/**
 * Forks an owner of `dir` and resolves once it serves it; SIGKILLed when the test ends.
 * @returns {Promise<import('node:child_process').ChildProcess>}
 */
function startOwner(t, dir, flags = [], env = process.env) {
  const child = fork(OWNER, [dir, ...flags], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  t.teardown(() => child.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    child.once('message', (m) => (m?.ready ? resolve(child) : reject(new Error(`the owner said ${JSON.stringify(m)}`))));
    child.once('exit', (code, signal) => reject(new Error(`the owner exited (${code ?? signal}) before it was ready`)));
  });
}

/** Resolves when `child` has exited. */
function exited(child) {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', resolve));
}

/**
 * Runs `durable-workers <args>` in a child process.
 * @returns {Promise<{ status: number | null, stdout: string, stderr: string }>}
 */
function cli(args, { env = process.env, timeout = 60_000 } = {}) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeout);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

module.exports = { BIN, startOwner, exited, cli };
