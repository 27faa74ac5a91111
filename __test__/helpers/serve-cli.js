'use strict';
// `durable-workers serve` in a child process, as a user runs it: started
// through the package's bin, ready once it prints "ready on <url>".
const { spawn } = require('node:child_process');
const path = require('node:path');

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
/** The fixture project the serve tests run. */
const APP = path.join(__dirname, '..', 'fixtures', 'do-app');

/**
 * Starts `durable-workers serve <args>` and waits until it is ready or has exited.
 * @param {string[]} args after `serve`
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, t?: import('ava').ExecutionContext, readyMs?: number }} [o]
 *   t: the child is SIGKILLed when the test ends, if still running
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, url: string | null,
 *   exited: Promise<{ code: number | null, signal: string | null }>, stdout: () => string, stderr: () => string }>}
 *   url: null when the child exited before it was ready
 */
async function startServe(args, o = {}) {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { cwd: o.cwd ?? APP, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  o.t?.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve was not ready after ${o.readyMs ?? 20_000} ms; stdout: ${out}; stderr: ${err}`)), o.readyMs ?? 20_000);
    const onData = () => {
      const m = /^ready on (\S+)$/m.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve(m[1]);
    };
    child.stdout.on('data', onData);
    exited.then(() => {
      clearTimeout(timer);
      resolve(null);
    });
  });
  return { child, url, exited, stdout: () => out, stderr: () => err };
}

module.exports = { startServe, BIN, APP };
