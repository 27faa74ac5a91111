'use strict';
// Loads the storage core. In order: the file DURABLE_WORKERS_ADDON names; a
// source build in the package's native/ (`npx durable-workers build-addon`,
// or `npm run build` in a checkout); the platform package npm installed
// beside this one. When none loads, the error says which platform this is,
// which prebuilt packages exist, and how to build one.
const path = require('node:path');
const { DurableError, codes } = require('../api/errors');
const { triple, sourceBuildPath, platformPackage, publishedTriples } = require('./platform');

const { version } = require('../../package.json');

/** Whether `err` means "there is nothing at this path", as opposed to "it is there and broken". */
function isMissing(err) {
  return err?.code === 'MODULE_NOT_FOUND' || err?.code === 'ENOENT';
}

/**
 * Tries one candidate.
 * @returns {{ addon?: object, why?: string }}
 */
function attempt(label, load, missing) {
  try {
    return { addon: load() };
  } catch (err) {
    if (isMissing(err)) return { why: `${label}: ${missing}` };
    // Present but unusable: another CPU, a newer glibc, a damaged file.
    return { why: `${label}: ${String(err?.message ?? err).split('\n')[0]}` };
  }
}

function fromPackage(t) {
  const name = platformPackage(t);
  const installed = require(`${name}/package.json`).version;
  if (installed !== version) {
    throw new Error(`version ${installed} is installed, durable-workers is ${version}; the two must match (reinstall durable-workers)`);
  }
  return require(name);
}

function load() {
  const t = triple();
  const tried = [];
  const built = sourceBuildPath(t);
  const override = process.env.DURABLE_WORKERS_ADDON;
  // A file named explicitly is the only one tried: falling back would hide the mistake.
  const candidates = override
    ? [[`DURABLE_WORKERS_ADDON=${override}`, () => require(path.resolve(override)), 'no such file']]
    : [
        [built, () => require(built), 'not built'],
        [platformPackage(t), () => fromPackage(t), 'not installed'],
      ];
  for (const [label, fn, missing] of candidates) {
    const { addon, why } = attempt(label, fn, missing);
    if (addon) return addon;
    tried.push(why);
  }
  throw noAddon(t, tried);
}

/** The error a user sees when no build loads: what was tried, what exists, what to run. */
function noAddon(t, tried) {
  const published = publishedTriples();
  const libc = t.endsWith('-musl') ? ', musl' : t.endsWith('-gnu') ? ', glibc' : '';
  const lines = [
    `durable-workers ${version} has no native build that loads on ${t} (Node ${process.versions.node}${libc}). Tried:`,
    ...tried.map((w) => `  - ${w}`),
    `Prebuilt packages exist for: ${published.join(', ') || 'none'}.`,
  ];
  if (published.includes(t)) {
    lines.push(
      `${platformPackage(t)} is one of them: npm skipped it. Reinstall without --omit=optional (or --no-optional), from a lockfile made on this platform or with npm's --os/--cpu/--libc set to it.`,
    );
  }
  lines.push('To build it from source (Rust 1.88 or newer, https://rustup.rs): npx durable-workers build-addon');
  return new DurableError(codes.NO_ADDON, lines.join('\n'));
}

module.exports = load();
