'use strict';
// Node side: runs workerd on a config written by ./build.js, waits until it
// answers HTTP with the deployment's own readiness token (./ready.js: another
// server on the port is not mistaken for it), and stops it. One workerd
// process per call; stop() sends SIGTERM and, after a grace period, SIGKILL;
// kill() is the crash.
const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const fs = require('node:fs');
const { workerdBinary } = require('./build');
const { PING_PATH, TOKEN_FILE } = require('./ready');
const { DurableError, codes } = require('../api/errors');

/** A free TCP port on 127.0.0.1 (free when asked; taken again by workerd right after). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `workerd serve <config>`; resolves when it answers on `port`.
 * @param {{ config: string, port: number, startTimeoutMs?: number, onOutput?: (line: string) => void, verbose?: boolean }} o
 */
async function startWorkerd(o) {
  const args = ['serve', path.basename(o.config)];
  if (o.verbose) args.push('--verbose');
  const child = spawn(workerdBinary(), args, { cwd: path.dirname(o.config), stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = [];
  const onData = (buf) => {
    for (const line of String(buf).split('\n')) {
      if (line.length === 0) continue;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      o.onOutput?.(line);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  // Never outlive the Node process that started it (a crash, process.exit()).
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);
  exited.then(() => process.off('exit', killOnExit));
  const url = `http://127.0.0.1:${o.port}`;
  // A config without a token beside it (written by hand) takes any answer.
  let token = null;
  try {
    token = fs.readFileSync(path.join(path.dirname(o.config), TOKEN_FILE), 'utf8');
  } catch {}
  let stranger = false;
  const deadline = Date.now() + (o.startTimeoutMs ?? 20_000);
  let done = false;
  exited.then(() => {
    done = true;
  });
  try {
    for (;;) {
      if (done) {
        const busy = stranger ? ` (something else answers on ${url}: is the port taken?)` : '';
        throw new DurableError(codes.IO, `workerd exited before it answered on ${url}${busy}: ${tail.join(' | ')}`);
      }
      try {
        const res = await fetch(`${url}${PING_PATH}`, { signal: AbortSignal.timeout(1000) });
        const body = await res.text();
        if (token === null || body === token) break;
        stranger = true; // something else answers there; workerd may yet bind, or exit
        throw new Error('not this deployment');
      } catch {
        if (Date.now() > deadline) {
          const why = stranger ? `something else answers on ${url}, not this workerd` : `workerd did not answer on ${url}`;
          throw new DurableError(codes.IO, `${why} within ${o.startTimeoutMs ?? 20_000} ms: ${tail.join(' | ')}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } catch (err) {
    // A failed start leaves no workerd behind.
    killOnExit();
    await exited;
    throw err;
  }
  return {
    url,
    port: o.port,
    pid: child.pid,
    exited,
    output: tail,
    /** SIGTERM, then SIGKILL after `graceMs`; resolves on exit. */
    async stop(graceMs = 3000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
    /** SIGKILL: the crash. */
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
}

module.exports = { startWorkerd, freePort };
