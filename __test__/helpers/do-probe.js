'use strict';
// The workerd half of the Durable Objects differential test: the probe
// fixture (../fixtures/do-probe.mjs) bundled as a raw Durable Object module by
// buildRawWorkerd and run by a real workerd. A Node-host twin must give the
// same client shape, so one test can run the same ops on both and compare:
//   run(name, ops, { binding }) → transcript (wire-decoded: Map, Date, BigInt,
//     ArrayBuffer, undefined survive)
//   stop() SIGTERM, kill() SIGKILL (the crash), restart({ crash }) → the same
//   storage again, close() stop and remove the directory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildRawWorkerd } = require('../../js/cloudflare/raw');
const { startWorkerd, freePort } = require('../../js/cloudflare/process');
const wire = require('../../js/cloudflare/wire');

/** The fixture module both hosts run. */
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'do-probe.mjs');
/** The deployment name: uniqueKey = `${NAME}-${className}` (miniflare's convention), so both hosts can derive the same ids. */
const NAME = 'do-probe';
/** The namespaces, as the Node host must declare them too. */
const OBJECTS = [
  { binding: 'PROBE', className: 'Probe', sql: true },
  { binding: 'PROBE_NO_ALARM', className: 'ProbeNoAlarm', sql: true },
  { binding: 'PROBE_KV', className: 'ProbeKv', sql: false },
];

/**
 * POSTs ops to a probe deployment (either host) and decodes the transcript.
 * @param {string} url the deployment's base URL
 * @param {string} name the object's name (getByName)
 * @param {unknown[][]} ops
 * @param {{ binding?: string }} [o]
 * @returns {Promise<object[]>}
 */
async function postRun(url, name, ops, { binding } = {}) {
  const q = binding ? `?binding=${encodeURIComponent(binding)}` : '';
  const res = await fetch(`${url}/run/${encodeURIComponent(name)}${q}`, { method: 'POST', body: wire.encode(ops) });
  const body = wire.decode(await res.text());
  if (!res.ok) {
    const err = new Error(`probe ${name}: ${body?.error?.name}: ${body?.error?.message}`);
    err.remote = body?.error;
    throw err;
  }
  return body;
}

/**
 * Builds the probe and starts it on local workerd (one process; the machine
 * the tests run on has two cores, so one per test file).
 * @param {{ t?: import('ava').ExecutionContext, dir?: string, startTimeoutMs?: number }} [o]
 *   t: close() when the test ends; dir: where build/ and data/ go (a fresh temporary directory by default, removed by close())
 * @returns {Promise<{ host: 'workerd', url: string, dir: string, uniqueKeys: Record<string, string>, output: string[],
 *   run: (name: string, ops: unknown[][], o?: { binding?: string }) => Promise<object[]>,
 *   stop: () => Promise<unknown>, kill: () => Promise<unknown>, restart: (o?: { crash?: boolean }) => Promise<void>, close: () => Promise<void> }>}
 */
async function startProbeOnWorkerd({ t, dir, startTimeoutMs } = {}) {
  const own = dir === undefined;
  const root = own ? fs.mkdtempSync(path.join(os.tmpdir(), 'dw-do-probe-')) : dir;
  const port = await freePort();
  const built = await buildRawWorkerd({ entry: FIXTURE, objects: OBJECTS, name: NAME, outDir: path.join(root, 'build'), dataDir: path.join(root, 'data'), port });
  const output = [];
  const start = () => startWorkerd({ config: built.config, port, startTimeoutMs, onOutput: (line) => output.push(line) });
  let w = await start();
  let closed = false;
  const probe = {
    host: 'workerd',
    url: w.url,
    dir: root,
    uniqueKeys: built.uniqueKeys,
    /** Everything workerd printed (uncaught errors in the object show here). */
    output,
    run: (name, ops, o) => postRun(w.url, name, ops, o),
    /** SIGTERM (SIGKILL after a grace period); storage stays. */
    stop: () => w.stop(),
    /** SIGKILL: the crash; storage stays. */
    kill: () => w.kill(),
    /** Ends the running process (SIGKILL if crash, else SIGTERM) and starts a new one on the same config and storage. */
    async restart({ crash = false } = {}) {
      if (crash) await w.kill();
      else await w.stop();
      w = await start();
    },
    /** Stops workerd and removes the directory if this helper made it. */
    async close() {
      if (closed) return;
      closed = true;
      await w.stop();
      if (own) fs.rmSync(root, { recursive: true, force: true });
    },
  };
  t?.teardown(() => probe.close());
  return probe;
}

module.exports = { startProbeOnWorkerd, postRun, FIXTURE, NAME, OBJECTS };

/**
 * The same probe on this package's Durable Objects host, in a child process
 * (./do-probe-node-child.mjs), with the client shape of startProbeOnWorkerd.
 * @param {{ t?: import('ava').ExecutionContext, dir?: string }} [o]
 */
async function startProbeOnNode({ t, dir } = {}) {
  const { spawn } = require('node:child_process');
  const own = dir === undefined;
  const root = own ? fs.mkdtempSync(path.join(os.tmpdir(), 'dw-do-node-')) : dir;
  const data = path.join(root, 'data');
  const output = [];
  const start = () =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [path.join(__dirname, 'do-probe-node-child.mjs'), data, FIXTURE, NAME, JSON.stringify(OBJECTS)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stderr.on('data', (b) => output.push(String(b)));
      child.once('exit', (code) => reject(new Error(`the probe host exited (${code}): ${output.join('')}`)));
      child.stdout.once('data', (b) => resolve({ child, url: `http://127.0.0.1:${String(b).trim()}` }));
    });
  const end = (child, signal) =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', resolve);
      child.kill(signal);
    });
  let w = await start();
  let closed = false;
  const probe = {
    host: 'node',
    get url() {
      return w.url;
    },
    dir: root,
    output,
    run: (name, ops, o) => postRun(w.url, name, ops, o),
    stop: () => end(w.child, 'SIGTERM'),
    kill: () => end(w.child, 'SIGKILL'),
    async restart({ crash = false } = {}) {
      await end(w.child, crash ? 'SIGKILL' : 'SIGTERM');
      w = await start();
    },
    async close() {
      if (closed) return;
      closed = true;
      await end(w.child, 'SIGTERM');
      if (own) fs.rmSync(root, { recursive: true, force: true });
    },
  };
  t?.teardown(() => probe.close());
  return probe;
}

module.exports.startProbeOnNode = startProbeOnNode;
