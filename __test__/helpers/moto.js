'use strict';
// An S3-compatible server on loopback for the archive's tests: moto's server
// mode (PyPI), which .ci/run installs (pip --target) and names in
// DW_MOTO_PYTHONPATH. No real S3 server installs from the registries here.
const { spawn } = require('node:child_process');

/** Where moto is, or null: the tests that need it skip, saying so. */
function motoPath() {
  return process.env.DW_MOTO_PYTHONPATH || null;
}

/**
 * Starts moto on a free loopback port; stopped when the test ends.
 * @returns {Promise<{ endpoint: string }>}
 */
async function startMoto(t) {
  const proc = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', '0'], {
    env: { ...process.env, PYTHONPATH: motoPath() },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.teardown(() => proc.kill('SIGKILL'));
  const port = await new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`moto did not start:\n${seen}`)), 30_000);
    proc.stderr.on('data', (d) => {
      seen += d;
      const m = /Running on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`moto exited (${code}):\n${seen}`));
    });
  });
  // Its access log goes on: read, so the pipe never fills.
  proc.stderr.resume();
  const endpoint = `http://127.0.0.1:${port}`;
  for (const started = Date.now(); ; await new Promise((r) => setTimeout(r, 50))) {
    try {
      if ((await fetch(`${endpoint}/`)).status === 200) break;
    } catch {}
    if (Date.now() - started > 30_000) throw new Error('moto did not answer');
  }
  return { endpoint };
}

/** An S3Client for moto at `endpoint`. */
function client(endpoint) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const { S3Client } = require('@aws-sdk/client-s3');
  return new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
}

module.exports = { motoPath, startMoto, client };
