'use strict';
// Which native build this process needs, named the way napi-rs names them:
// `linux-x64-gnu`, `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`. The
// name picks the file a source build writes (native/durable-workers.<t>.node)
// and the platform package npm installs (durable-workers-<t>).
const fs = require('node:fs');
const path = require('node:path');

const PACKAGE_ROOT = path.join(__dirname, '..', '..');

/** Whether this process runs on musl rather than glibc. */
function isMusl() {
  // The report names the glibc this process runs on; musl has none. Asking
  // the process rather than /usr/bin/ldd: a musl Node can run on a glibc
  // system (and the reverse), and the addon must match the process.
  const report = process.report;
  if (typeof report?.getReport !== 'function') return false;
  // Without excludeNetwork the report looks up the peer of every open socket.
  const excluded = report.excludeNetwork;
  report.excludeNetwork = true;
  try {
    return !report.getReport().header?.glibcVersionRuntime;
  } finally {
    report.excludeNetwork = excluded;
  }
}

/**
 * The napi-rs name of the build this process loads.
 * @param {{ platform?: string, arch?: string, musl?: boolean }} [of] another platform's (for tests and tooling)
 * @returns {string}
 */
function triple(of = {}) {
  const platform = of.platform ?? process.platform;
  const arch = of.arch ?? process.arch;
  if (platform === 'linux') return `linux-${arch}-${(of.musl ?? isMusl()) ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** @param {string} t a triple @returns {string} where a source build of the package puts it */
function sourceBuildPath(t) {
  return path.join(PACKAGE_ROOT, 'native', `durable-workers.${t}.node`);
}

/** @param {string} t a triple @returns {string} the npm package carrying that build */
function platformPackage(t) {
  return `durable-workers-${t}`;
}

/** The platform packages this version of the package lists, by triple. */
function publishedTriples() {
  const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8'));
  return Object.keys(pkg.optionalDependencies ?? {})
    .filter((name) => name.startsWith('durable-workers-'))
    .map((name) => name.slice('durable-workers-'.length));
}

module.exports = { PACKAGE_ROOT, triple, isMusl, sourceBuildPath, platformPackage, publishedTriples };
