'use strict';
// `durable-workers build-addon`: builds the storage core from the Rust sources
// the package ships (src/, vendor/, Cargo.toml, Cargo.lock, build.rs, .cargo/) into the
// package's native/, which the loader tries before any platform package. For
// a platform with no prebuilt package, or a user who wants their own build.
// No install script does this: it runs only when asked.
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { parse, withUsage, UsageError } = require('./args');
const { PACKAGE_ROOT, triple, sourceBuildPath } = require('../native/platform');

const help = `usage: durable-workers build-addon [--debug]

Builds the native addon of this installed copy of durable-workers from its
Rust sources with cargo (Rust 1.88 or newer: https://rustup.rs, and a C
compiler for the bundled SQLite), then checks that it loads. The result is
native/durable-workers.<platform>.node inside the package, which is used in
place of any prebuilt platform package. CARGO_TARGET_DIR is honoured; by
default cargo builds under the package's target/.

  --debug   an unoptimised build (faster to build, slower to run)

exit codes:
  0  built and loaded
  1  cargo is missing, the build failed, or the result does not load
  2  usage error`;

/** The cdylib cargo wrote, from its JSON messages on stdout. */
function cdylibOf(messages) {
  let file = null;
  for (const line of messages.split('\n')) {
    if (!line.startsWith('{')) continue;
    const m = JSON.parse(line);
    if (m.reason === 'compiler-artifact' && m.target?.kind?.includes('cdylib')) {
      file = m.filenames.find((f) => /\.(so|dylib|dll)$/.test(f)) ?? file;
    }
  }
  return file;
}

/** Runs cargo with stderr passed through (its progress), collecting stdout. */
function cargo(args, io) {
  return new Promise((resolve, reject) => {
    const child = spawn('cargo', args, { cwd: PACKAGE_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
    child.stderr.on('data', (d) => io.stderr.write(d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out }));
  });
}

/**
 * `build-addon [--debug]`.
 * @param {string[]} args the arguments after `build-addon`
 * @param {{ stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream }} io
 * @returns {Promise<number>} the exit code
 */
async function run(args, io) {
  return withUsage(help, io, async () => {
    const { values, positionals } = parse(args, { debug: { type: 'boolean' } });
    if (positionals.length > 0) throw new UsageError(`build-addon takes no arguments (got ${positionals.join(' ')})`);
    if (!fs.existsSync(path.join(PACKAGE_ROOT, 'Cargo.toml'))) {
      io.stderr.write(`durable-workers build-addon: no Rust sources in ${PACKAGE_ROOT} (Cargo.toml is missing)\n`);
      return 1;
    }
    const version = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
    if (version.error || version.status !== 0) {
      io.stderr.write('durable-workers build-addon: cargo was not found on PATH; install Rust 1.88 or newer from https://rustup.rs and run this again\n');
      return 1;
    }
    io.stderr.write(`building the addon with ${version.stdout.trim()} in ${PACKAGE_ROOT}\n`);
    const cargoArgs = ['build', '--lib', '--locked', '--message-format=json-render-diagnostics'];
    if (!values.debug) cargoArgs.push('--release');
    const { status, out } = await cargo(cargoArgs, io);
    const built = status === 0 ? cdylibOf(out) : null;
    if (built === null) {
      io.stderr.write(`durable-workers build-addon: cargo ${status === 0 ? 'reported no library' : `exited ${status}`}\n`);
      return 1;
    }
    const dest = sourceBuildPath(triple());
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    // Copied to a temporary name and renamed, so a process loading the
    // addon meanwhile never sees half a file.
    fs.copyFileSync(built, `${dest}.tmp`);
    fs.renameSync(`${dest}.tmp`, dest);
    const check = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(dest)})`], { encoding: 'utf8' });
    if (check.status !== 0) {
      io.stderr.write(`durable-workers build-addon: ${dest} was built but does not load:\n${check.stderr}`);
      return 1;
    }
    io.stdout.write(`${dest}\n`);
    return 0;
  });
}

module.exports = { name: 'build-addon', summary: 'build the native addon from the Rust sources the package ships', help, run };
