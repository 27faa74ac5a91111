'use strict';
// A local npm registry for the install tests: Verdaccio (a devDependency) run
// on the pinned Node 22 (it needs 22 or newer), storing in a temporary
// directory. Packages named durable-workers* live only here; every other
// package is proxied from the public registry, so a fresh project installs
// the way a user's does.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { nodePath } = require('../../scripts/node-lines');

const VERDACCIO = path.join(__dirname, '..', '..', 'node_modules', 'verdaccio', 'bin', 'verdaccio');

/** A port free right now on loopback. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

const CONFIG = (dir) => `storage: ${JSON.stringify(path.join(dir, 'storage'))}
auth:
  htpasswd:
    file: ${JSON.stringify(path.join(dir, 'htpasswd'))}
    max_users: 10
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 60s
    max_fails: 5
packages:
  'durable-workers':
    access: $all
    publish: $authenticated
  'durable-workers-*':
    access: $all
    publish: $authenticated
  '**':
    access: $all
    publish: $authenticated
    proxy: npmjs
log: { type: stdout, format: pretty, level: warn }
`;

/**
 * Starts Verdaccio in `dir`; resolves once it answers, with its URL, an npm
 * auth token for a fresh user, and stop().
 * @param {string} dir an empty directory of the test's
 * @returns {Promise<{ url: string, token: string, stop: () => Promise<void>, log: () => string }>}
 */
async function startRegistry(dir) {
  fs.writeFileSync(path.join(dir, 'config.yaml'), CONFIG(dir));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const child = spawn(nodePath(22), [VERDACCIO, '--config', path.join(dir, 'config.yaml'), '--listen', `127.0.0.1:${port}`], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`verdaccio exited ${child.exitCode}:\n${output}`);
      if (Date.now() > deadline) throw new Error(`verdaccio did not answer on ${url} within 60 s:\n${output}`);
      const ok = await fetch(`${url}-/ping`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // npm's own adduser request: creates the user and answers its token.
    const res = await fetch(`${url}-/user/org.couchdb.user:ci`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ci', password: 'ci-password', type: 'user' }),
    });
    const body = await res.json();
    if (!res.ok || typeof body.token !== 'string') throw new Error(`verdaccio refused adduser: ${res.status} ${JSON.stringify(body)}`);
    return { url, token: body.token, stop, log: () => output };
  } catch (err) {
    await stop();
    throw err;
  }
}

module.exports = { startRegistry };
