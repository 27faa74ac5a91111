'use strict';
// What the Peek tests share: a worker module and its manifest on disk, and a
// host over a real Node adapter in a fresh directory, closed at teardown.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
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

module.exports = { worker, setup, command, httpServer };
