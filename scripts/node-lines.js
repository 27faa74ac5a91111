#!/usr/bin/env node
'use strict';
// The Node.js lines this package is tested on, each a pinned version of the
// `node-linux-<arch>` package on the npm registry, unpacked into .nodes/ of
// the checkout. CI, the benchmarks and the tests that run another line all
// take their binaries from here, so nothing installed on the machine stands
// in for a line.
//
//   node scripts/node-lines.js path 24 [--arch arm64]   fetch if needed, print bin/node
//   node scripts/node-lines.js dir 24 [--arch arm64]    the unpacked package (include/node for node-gyp)
//   node scripts/node-lines.js fetch [lines…]           fetch every line (or those given)
//   node scripts/node-lines.js list                     line and version, one a line
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

/** The newest release of each line, the versions CI tests. */
const LINES = Object.freeze({ 20: '20.20.2', 22: '22.23.5', 24: '24.22.3', 26: '26.12.1' });

const ROOT = path.join(__dirname, '..');
const STORE = path.join(ROOT, '.nodes');

/** @param {string|number} line @returns {string} the pinned version */
function versionOf(line) {
  const v = LINES[String(line)];
  if (v === undefined) throw new Error(`no pinned Node.js version for line ${line} (lines: ${Object.keys(LINES).join(', ')})`);
  return v;
}

/**
 * The unpacked `node-linux-<arch>@<version>` package, fetched with `npm pack`
 * (through npm's cache and registry settings) the first time it is asked for.
 * @param {string|number} line
 * @param {{ arch?: string }} [options] `x64` or `arm64`; the machine's by default
 * @returns {string}
 */
function nodeDir(line, { arch = process.arch } = {}) {
  const version = versionOf(line);
  const dir = path.join(STORE, `${arch}-${version}`);
  if (fs.existsSync(path.join(dir, 'bin', 'node'))) return dir;
  fs.mkdirSync(STORE, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(STORE, '.fetch-'));
  try {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', tmp, `node-linux-${arch}@${version}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [{ filename }] = JSON.parse(out);
    const unpacked = path.join(tmp, 'package');
    execFileSync('tar', ['xzf', path.join(tmp, filename), '-C', tmp]);
    // Readable and runnable by every user: tests run children under other uids.
    fs.chmodSync(unpacked, 0o755);
    try {
      fs.renameSync(unpacked, dir);
    } catch (err) {
      // Another process unpacked the same line first: theirs is as good.
      if (!fs.existsSync(path.join(dir, 'bin', 'node'))) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

/** @param {string|number} line @param {{ arch?: string }} [options] @returns {string} the node binary */
function nodePath(line, options) {
  return path.join(nodeDir(line, options), 'bin', 'node');
}

module.exports = { LINES, versionOf, nodeDir, nodePath };

if (require.main === module) {
  const args = process.argv.slice(2);
  const archAt = args.indexOf('--arch');
  const arch = archAt === -1 ? process.arch : args.splice(archAt, 2)[1];
  const [command, ...rest] = args;
  try {
    if (command === 'path' && rest.length === 1) console.log(nodePath(rest[0], { arch }));
    else if (command === 'dir' && rest.length === 1) console.log(nodeDir(rest[0], { arch }));
    else if (command === 'fetch') for (const line of rest.length ? rest : Object.keys(LINES)) console.log(nodePath(line, { arch }));
    else if (command === 'list') for (const [line, v] of Object.entries(LINES)) console.log(`${line} ${v}`);
    else {
      console.error('usage: node scripts/node-lines.js path|dir <line> [--arch x64|arm64] | fetch [lines…] | list');
      process.exitCode = 2;
    }
  } catch (err) {
    console.error(`node-lines: ${err.message}`);
    process.exitCode = 1;
  }
}
