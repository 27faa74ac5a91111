#!/usr/bin/env node
'use strict';
// The release, as tarballs: one per platform package under npm/<triple>/ whose
// addon is among the artifacts, and the main package with every platform
// package listed in optionalDependencies at its own version. With --publish,
// each is published (platform packages first, so the main package never
// names a version that is not there yet) to npm's configured registry.
//
//   node scripts/pack.js [--artifacts native] [--out dist] [--require-all] [--publish] [--json]
//
// --artifacts   where the built addons are (durable-workers.<triple>.node)
// --require-all fail unless every platform package has its addon (a release)
// --publish     npm publish each tarball, with npm's own settings (registry,
//               token); needs --require-all. The release workflow publishes
//               with .github/scripts/publish.js instead (provenance, reruns).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { parseArgs } = require('node:util');

const ROOT = path.join(__dirname, '..');
const NPM_DIR = path.join(ROOT, 'npm');

/** Runs npm, returning stdout; npm's own stderr goes to ours. */
function npm(args, cwd, env = process.env) {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...env, npm_config_update_notifier: 'false' } });
}

/** `npm pack` of `dir` into `out`: the tarball's path and npm's figures. */
function packDir(dir, out, extra = []) {
  const [info] = JSON.parse(npm(['pack', '--json', '--loglevel=warn', '--pack-destination', out, ...extra], dir));
  return { tarball: path.join(out, info.filename), size: info.size, unpackedSize: info.unpackedSize, files: info.files.map((f) => f.path) };
}

/** Every platform package in npm/, by triple, with its manifest. */
function platforms() {
  return fs
    .readdirSync(NPM_DIR, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => ({ triple: e.name, dir: path.join(NPM_DIR, e.name), manifest: JSON.parse(fs.readFileSync(path.join(NPM_DIR, e.name, 'package.json'), 'utf8')) }))
    .sort((a, b) => a.triple.localeCompare(b.triple));
}

/**
 * Packs the release.
 * @param {{ artifacts?: string, out: string, requireAll?: boolean }} options
 * @returns {{ main: object, platforms: object[], missing: string[] }}
 */
function pack({ artifacts = path.join(ROOT, 'native'), out, requireAll = false }) {
  const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  fs.mkdirSync(out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-pack-'));
  try {
    const packed = [];
    const missing = [];
    for (const p of platforms()) {
      if (p.manifest.name !== `durable-workers-${p.triple}`) throw new Error(`npm/${p.triple}/package.json is named ${p.manifest.name}`);
      if (p.manifest.version !== root.version) throw new Error(`npm/${p.triple} is version ${p.manifest.version}, durable-workers is ${root.version}`);
      const addon = path.join(artifacts, p.manifest.main);
      if (!fs.existsSync(addon)) {
        missing.push(p.triple);
        continue;
      }
      const dir = path.join(stage, p.triple);
      fs.cpSync(p.dir, dir, { recursive: true });
      fs.copyFileSync(addon, path.join(dir, p.manifest.main));
      fs.copyFileSync(path.join(ROOT, 'LICENSE'), path.join(dir, 'LICENSE'));
      packed.push({ triple: p.triple, name: p.manifest.name, ...packDir(dir, out) });
    }
    if (requireAll && missing.length > 0) throw new Error(`no addon in ${artifacts} for: ${missing.join(', ')}`);

    // The main package: exactly what `files` selects, with the platform
    // packages added as optional dependencies (the checkout has none, so its
    // own `npm ci` never asks the registry for them).
    const listed = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT))[0].files.map((f) => f.path);
    const mainDir = path.join(stage, 'main');
    for (const f of listed) fs.cpSync(path.join(ROOT, f), path.join(mainDir, f));
    const manifest = { ...root, optionalDependencies: Object.fromEntries(platforms().map((p) => [p.manifest.name, root.version])) };
    // The checkout's build step: a registry install runs no script of ours.
    delete manifest.scripts.prepare;
    fs.writeFileSync(path.join(mainDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const main = { name: root.name, ...packDir(mainDir, out, ['--ignore-scripts']) };
    return { main, platforms: packed, missing };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

/**
 * Publishes the packed tarballs, platform packages first.
 * @param {{ main: object, platforms: object[] }} packed what pack() returned
 * @param {NodeJS.ProcessEnv} [env] npm's environment (its registry and token settings)
 */
function publish({ main, platforms: packed }, env = process.env) {
  for (const p of [...packed, main]) npm(['publish', p.tarball, '--access', 'public', '--loglevel=warn'], ROOT, env);
}

const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;

module.exports = { pack, publish, platforms };

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      artifacts: { type: 'string' },
      out: { type: 'string', default: path.join(ROOT, 'dist') },
      'require-all': { type: 'boolean' },
      publish: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  try {
    // A published main package names every platform package: publishing
    // with one missing would promise a version that is not there.
    if (values.publish && !values['require-all']) throw new Error('--publish needs --require-all: every platform package must be packed');
    const result = pack({ artifacts: values.artifacts && path.resolve(values.artifacts), out: path.resolve(values.out), requireAll: values['require-all'] });
    if (values.publish) publish(result);
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      for (const p of [result.main, ...result.platforms]) console.log(`${p.tarball}  ${kib(p.size)} packed, ${kib(p.unpackedSize)} unpacked`);
      if (result.missing.length > 0) console.log(`not packed (no addon built): ${result.missing.join(', ')}`);
    }
  } catch (err) {
    console.error(`pack: ${err.message}`);
    process.exitCode = 1;
  }
}
