#!/usr/bin/env node
'use strict';
// Cross-builds the addon into native/ under napi's names
// (native/durable-workers.linux-arm64-gnu.node, …), with cargo-zigbuild and
// zig as linker and C compiler: one toolchain for glibc and musl targets, and a
// glibc floor chosen here rather than taken from the build machine.
//
//   node scripts/build-targets.js <rust-triple…>
//   e.g. aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl
//
// What is missing is installed first: the Rust target's standard library
// (rustup target add), and pinned ziglang + cargo-zigbuild from PyPI into
// .cross/ of the checkout (which is gitignored), where zig's caches live too.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const CROSS = path.join(ROOT, '.cross');
const TOOLS = path.join(CROSS, 'zig');
/** Pinned so that every machine links with the same toolchain. */
const PIP_PACKAGES = ['ziglang==0.17.1', 'cargo-zigbuild==0.24.1'];
/** The oldest glibc a `*-linux-gnu` build may need (napi-rs's own cross toolchain uses the same). */
const GLIBC_FLOOR = '2.17';

/** @param {string} cmd @param {string[]} args @param {import('node:child_process').ExecFileSyncOptions} [options] */
function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { stdio: 'inherit', cwd: ROOT, ...options });
}

/** @param {string} triple Installs the target's standard library unless rustup has it. */
function ensureRustTarget(triple) {
  const installed = execFileSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).split('\n');
  if (!installed.includes(triple)) run('rustup', ['target', 'add', triple]);
}

/**
 * Installs the pinned zig and cargo-zigbuild into .cross/zig unless they are
 * there already (a stamp names what was installed).
 * @returns {{ zig: string, zigbuildBin: string }}
 */
function ensureZig() {
  const stamp = path.join(TOOLS, '.installed');
  const zig = path.join(TOOLS, 'ziglang', 'zig');
  const zigbuildBin = path.join(TOOLS, 'bin');
  const want = PIP_PACKAGES.join(' ');
  const have = fs.existsSync(zig) && fs.existsSync(stamp) ? fs.readFileSync(stamp, 'utf8') : null;
  if (have !== want) {
    fs.rmSync(TOOLS, { recursive: true, force: true });
    // pip's output to stderr: a caller may be reading ours (`node -p …ensureZig().zig`).
    run('python3', ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-warn-script-location', '--root-user-action=ignore', '--target', TOOLS, ...PIP_PACKAGES], {
      stdio: ['ignore', 2, 2],
    });
    fs.writeFileSync(stamp, want);
  }
  return { zig, zigbuildBin };
}

/**
 * The target as cargo-zigbuild takes it: a glibc target carries its floor.
 * @param {string} triple
 */
function zigTarget(triple) {
  return triple.endsWith('-linux-gnu') ? `${triple}.${GLIBC_FLOOR}` : triple;
}

/**
 * Builds one target into native/.
 * @param {string} triple a Rust target triple
 * @param {{ zig: string, zigbuildBin: string }} tools
 */
function build(triple, { zig, zigbuildBin }) {
  ensureRustTarget(triple);
  const env = {
    ...process.env,
    PATH: `${zigbuildBin}${path.delimiter}${process.env.PATH}`,
    CARGO_ZIGBUILD_ZIG_PATH: zig,
    CARGO_ZIGBUILD_CACHE_DIR: path.join(CROSS, 'cache', 'cargo-zigbuild'),
    ZIG_GLOBAL_CACHE_DIR: path.join(CROSS, 'cache', 'zig'),
    ZIG_LOCAL_CACHE_DIR: path.join(CROSS, 'cache', 'zig-local'),
  };
  const napi = path.join(ROOT, 'node_modules', '.bin', 'napi');
  // The same flags as `npm run build`, plus the target and -x (cargo zigbuild).
  run(napi, ['build', '--platform', '--release', '--output-dir', 'native', '--no-js', '--dts', 'native.d.ts', '--target', zigTarget(triple), '--cross-compile'], { env });
  if (triple.endsWith('-linux-gnu')) checkGlibcFloor(triple);
}

/** The glibc a built -gnu addon needs at most, from its versioned symbols; throws above GLIBC_FLOOR. */
function checkGlibcFloor(triple) {
  const arch = { x86_64: 'x64', aarch64: 'arm64' }[triple.split('-')[0]];
  const file = path.join(ROOT, 'native', `durable-workers.linux-${arch}-gnu.node`);
  const symbols = execFileSync('objdump', ['-T', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const parse = (v) => v.split('.').map(Number);
  const newer = (a, b) => (a[0] !== b[0] ? a[0] > b[0] : (a[1] ?? 0) > (b[1] ?? 0));
  let needs = parse(GLIBC_FLOOR);
  for (const [, v] of symbols.matchAll(/GLIBC_(\d+\.\d+)/g)) if (newer(parse(v), needs)) needs = parse(v);
  if (needs.join('.') !== GLIBC_FLOOR) throw new Error(`${file} needs glibc ${needs.join('.')}, above the floor ${GLIBC_FLOOR}`);
  console.error(`${path.relative(ROOT, file)}: ${fs.statSync(file).size} bytes, needs glibc ${GLIBC_FLOOR} at most`);
}

if (require.main === module) {
  const triples = process.argv.slice(2);
  if (triples.length === 0 || triples.some((t) => !/^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+(-[a-z0-9_]+)?$/.test(t))) {
    console.error('usage: node scripts/build-targets.js <rust-triple…>   e.g. aarch64-unknown-linux-gnu x86_64-unknown-linux-musl');
    process.exit(2);
  }
  try {
    const tools = ensureZig();
    for (const triple of triples) build(triple, tools);
  } catch (err) {
    console.error(`build-targets: ${err.message}`);
    process.exit(1);
  }
}

module.exports = { GLIBC_FLOOR, ensureRustTarget, ensureZig, zigTarget, build, checkGlibcFloor };
