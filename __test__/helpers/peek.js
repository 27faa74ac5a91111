'use strict';
// What the Peek tests share: a worker module and its manifest on disk, and a
// host over a real Node adapter in a fresh directory, closed at teardown.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const { createWorkerHost, nodeAdapter } = require('durable-workers/peek');
const { tmpDir } = require('./tmp');

/**
 * A worker module and its manifest in `dir`; returns the manifest path.
 * `type` is the package.json type of `dir`, `ext` the module's extension.
 */
function worker(dir, name, source, manifest = {}, { type = 'module', ext = 'js' } = {}) {
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type }));
  fs.writeFileSync(path.join(dir, `${name}.${ext}`), source);
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ name, worker: { url: `${name}.${ext}` }, ...manifest }));
  return file;
}

/** An adapter and host over a fresh directory, with the log records collected; `wrap` may decorate the adapter. */
function setup(t, options = {}, wrap = (a) => a) {
  const dir = tmpDir(t);
  const logs = [];
  const adapter = nodeAdapter({ dir: path.join(dir, 'state'), log: (r) => logs.push(r), ...options });
  const host = createWorkerHost({ adapter: wrap(adapter) });
  t.teardown(async () => {
    await host.close();
    await adapter.close();
  });
  return { dir, adapter, host, logs };
}

/** A command trigger. */
const command = (params = {}) => ({ kind: 'command', name: 'test', params });

/** A node:http server on 127.0.0.1 for the test's lifetime; returns its origin. */
async function httpServer(t, handler) {
  const server = http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${server.address().port}`;
}

const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');

/**
 * Starts the real `durable-workers peek serve <dir> --json ...extra` (with
 * `env` for its environment, if given); collects its JSON lines, each stamped
 * with `at` (when it was read); `closed` resolves once its output has ended
 * (every line written before a kill is read by then); SIGKILLed at teardown
 * if still running.
 */
function serve(t, dir, extra = [], { env } = {}) {
  const proc = spawn(process.execPath, [BIN, 'peek', 'serve', dir, '--json', ...extra], { stdio: ['ignore', 'pipe', 'pipe'], ...(env === undefined ? {} : { env }) });
  const lines = [];
  let stderr = '';
  readline.createInterface({ input: proc.stdout }).on('line', (l) => {
    try {
      lines.push({ ...JSON.parse(l), at: Date.now() });
    } catch {
      stderr += `${l}\n`;
    }
  });
  proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise((resolve) => proc.once('close', resolve));
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return { proc, lines, exited, closed, stderr: () => stderr };
}

/**
 * Runs the real `durable-workers peek run <manifest> --json ...extra` to its
 * end (SIGKILLed after `timeoutMs`); resolves { code, signal, lines, run,
 * stderr, ms }: `run` is its 'run' line, lines its JSON lines.
 */
function runCli(manifest, extra = [], { timeoutMs = 60_000 } = {}) {
  const started = Date.now();
  const proc = spawn(process.execPath, [BIN, 'peek', 'run', manifest, '--json', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  let stderr = '';
  readline.createInterface({ input: proc.stdout }).on('line', (l) => {
    try {
      lines.push(JSON.parse(l));
    } catch {
      stderr += `${l}\n`;
    }
  });
  proc.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    proc.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, lines, run: lines.find((l) => l.event === 'run'), stderr, ms: Date.now() - started });
    }),
  );
}

/** An object's leaf paths ('scheduler.precisionMs', ...). */
function leaves(o, prefix = '') {
  return Object.entries(o).flatMap(([k, v]) => (v && typeof v === 'object' ? leaves(v, `${prefix}${k}.`) : [`${prefix}${k}`]));
}

/** A conformance report passed: every assertion (1–10) and every declaration, and no declared field went unchecked. */
function assertConformant(t, report, declares, why = '') {
  const failed = [...report.assertions, ...report.declarations].filter((r) => !r.ok);
  t.deepEqual(failed, [], why);
  t.deepEqual(
    report.assertions.map((a) => a.id),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  const checked = new Set(report.declarations.flatMap((d) => d.field.split(', ')));
  t.deepEqual(
    leaves(declares).filter((f) => !checked.has(f)),
    [],
    'no declared field goes unchecked',
  );
  t.true(report.ok);
}

/**
 * Source for a hostile Node worker: `forge(message)` writes a realm frame to
 * fd 3 itself (a 4-byte big-endian length and a node:v8 payload), as the
 * realm's own side does, so it can send the host what the realm never would.
 */
const FORGE = `
import fs from 'node:fs';
import v8 from 'node:v8';
const frame = (payload) => {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(payload.length);
  return Buffer.concat([h, payload]);
};
const writeAll = async (buf) => {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(3, buf, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      await new Promise((r) => setTimeout(r, 1));
    }
  }
};
const forge = (m) => writeAll(frame(v8.serialize(m)));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
`;

module.exports = { worker, setup, command, httpServer, serve, runCli, assertConformant, FORGE };
