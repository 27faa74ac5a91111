'use strict';
// The two hosts bench/do.js compares, each started in a process of its own on
// a fresh directory and stopped with SIGTERM: the Node host as a user runs it
// (`durable-workers serve`), and local workerd on the same module bundled raw
// (js/cloudflare/raw.js: the classes exactly as written, no wrapper), behind
// a node:http front of its own (./front.js): both hosts sit behind the same
// kind of front, as the targets are set.
// Each resolves to { url, pid (the process holding the objects, whose RSS is
// measured), pids (every process serving: their CPU is the server's),
// output() (its last lines, for error messages), stop() }.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { once } = require('node:events');

const ROOT = path.join(__dirname, '..', '..');
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'do-bench');
const ENTRY = path.join(FIXTURE, 'src', 'index.mjs');
const CONFIG = path.join(FIXTURE, 'wrangler.jsonc');
/** As the fixture's wrangler.jsonc declares them (its "name", bindings and new_sqlite_classes). */
const NAME = 'do-bench';
const OBJECTS = [
  { binding: 'COUNTER', className: 'Counter', sql: true },
  { binding: 'CHAT', className: 'ChatRoom', sql: true },
];
const START_TIMEOUT_MS = 30_000;

/** Keeps a process's last output lines. */
function tailOf(stream, lines = []) {
  stream.on('data', (buf) => {
    for (const line of String(buf).split('\n')) if (line) lines.push(line);
    if (lines.length > 20) lines.splice(0, lines.length - 20);
  });
  return lines;
}

/**
 * `node bin/durable-workers.js serve <entry> --config … --dir … --port 0`,
 * ready once it prints "ready on <url>".
 * @param {string} dir this host's own directory (its objects go to dir/data)
 * @param {string} [execPath] the node binary (default: this one)
 */
async function startNodeHost(dir, execPath = process.execPath) {
  fs.mkdirSync(dir, { recursive: true });
  const args = [path.join(ROOT, 'bin', 'durable-workers.js'), 'serve', ENTRY, '--config', CONFIG, '--dir', path.join(dir, 'data'), '--port', '0'];
  const child = spawn(execPath, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = tailOf(child.stderr);
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    // serve drains and closes the objects on SIGTERM; a hang past this is the host's, not ours to wait for.
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  };
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the Node host did not print "ready on" within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.stdout.on('data', (buf) => {
        out += buf;
        const m = /ready on (\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      exited.then(([code, signal]) => reject(new Error(`the Node host exited (code ${code}, signal ${signal}) before it served: ${lines.join(' | ')}`)));
    });
    return { url, pid: child.pid, pids: [child.pid], output: () => lines, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The fixture bundled for workerd (buildRawWorkerd) and `workerd serve`
 * (startWorkerd: a child process of this one; its pid is workerd's own),
 * reached through ./front.js, a node:http process of its own.
 * @param {string} dir this host's own directory (build/ and data/)
 */
async function startWorkerdHost(dir) {
  const { buildRawWorkerd } = require('../../js/cloudflare/raw');
  const { startWorkerd, freePort } = require('../../js/cloudflare/process');
  const port = await freePort();
  const { config } = await buildRawWorkerd({ entry: ENTRY, objects: OBJECTS, name: NAME, outDir: path.join(dir, 'build'), dataDir: path.join(dir, 'data'), port });
  const lines = [];
  const w = await startWorkerd({ config, port, startTimeoutMs: START_TIMEOUT_MS, onOutput: (line) => lines.push(line) && lines.length > 20 && lines.shift() });
  const front = spawn(process.execPath, [path.join(__dirname, 'front.js'), String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  tailOf(front.stderr, lines);
  const stop = async () => {
    if (front.exitCode === null && front.signalCode === null) {
      front.kill('SIGTERM');
      await once(front, 'exit');
    }
    await w.stop();
  };
  try {
    const [buf] = await Promise.race([
      once(front.stdout, 'data'),
      once(front, 'exit').then(([code]) => Promise.reject(new Error(`the node:http front before workerd exited (${code}): ${lines.join(' | ')}`))),
    ]);
    const m = /ready on (\S+)/.exec(String(buf));
    if (!m) throw new Error(`the node:http front before workerd printed ${String(buf)}`);
    return { url: m[1], pid: w.pid, pids: [w.pid, front.pid], output: () => lines, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

module.exports = { startNodeHost, startWorkerdHost, ENTRY, CONFIG };
