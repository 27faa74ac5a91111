#!/usr/bin/env node
'use strict';
// The release workflow's publish step: every platform package first, the main
// package last, so that no one can install a durable-workers whose
// optionalDependencies are not on the registry yet.
//
//   node .github/scripts/publish.js <tarballs.json> [--dry-run]
//
// <tarballs.json> is what `node scripts/pack.js --json` printed: the tarballs' paths,
// as an array or an object holding them, from the checkout's root. Each tarball's own package.json says
// what it is. Refuses to publish when the main package's version is not the
// tag's (on a tag: GITHUB_REF_NAME, `v` + version), when a version differs between
// tarballs, or when the main package lists an optional dependency that is not
// among them. A version already on the registry is skipped, so a rerun after
// a partial failure finishes the job. --dry-run prints the commands instead.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const MAIN = 'durable-workers';

function tarballsIn(value, out = []) {
  if (typeof value === 'string') {
    if (value.endsWith('.tgz')) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) tarballsIn(v, out);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) tarballsIn(v, out);
  }
  return out;
}

function manifestOf(tgz) {
  return JSON.parse(execFileSync('tar', ['-xOzf', tgz, 'package/package.json'], { encoding: 'utf8' }));
}

function fail(message) {
  console.error(`publish: ${message}`);
  process.exit(1);
}

function onRegistry(name, version) {
  try {
    const out = execFileSync('npm', ['view', `${name}@${version}`, 'version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.trim() === version;
  } catch {
    return false; // E404: not published yet
  }
}

function main() {
  const args = process.argv.slice(2);
  const dryRun = args.includes('--dry-run');
  const listFile = args.find((a) => !a.startsWith('--'));
  if (!listFile) fail('usage: publish.js <tarballs.json> [--dry-run]');
  // Paths as pack.js printed them (from the checkout's root); a tarball that
  // moved with the list (another job's download) is looked for beside it.
  const besideList = path.dirname(path.resolve(listFile));
  const tarballs = tarballsIn(JSON.parse(fs.readFileSync(listFile, 'utf8'))).map((p) => {
    const asPrinted = path.resolve(p);
    return fs.existsSync(asPrinted) ? asPrinted : path.join(besideList, path.basename(p));
  });
  if (tarballs.length === 0) fail(`${listFile} names no .tgz file`);

  const packages = tarballs.map((file) => ({ file, ...manifestOf(file) }));
  const mains = packages.filter((p) => p.name === MAIN);
  const platforms = packages.filter((p) => p.name.startsWith(`${MAIN}-`));
  const strangers = packages.filter((p) => !mains.includes(p) && !platforms.includes(p));
  if (mains.length !== 1) fail(`expected one ${MAIN} tarball, found ${mains.length}`);
  if (strangers.length > 0) fail(`not ours: ${strangers.map((p) => p.name).join(', ')}`);
  if (platforms.length === 0) fail('no platform package: the main package alone carries no addon');
  const [top] = mains;

  const tag = process.env.GITHUB_REF_TYPE === 'tag' ? process.env.GITHUB_REF_NAME : undefined;
  if (tag !== undefined && tag !== `v${top.version}`) fail(`tag ${tag} is not v${top.version} (package.json's version)`);
  for (const p of platforms) {
    if (p.version !== top.version) fail(`${p.name} is ${p.version}, ${MAIN} is ${top.version}`);
  }
  const packed = new Set(platforms.map((p) => p.name));
  for (const [name, range] of Object.entries(top.optionalDependencies ?? {})) {
    if (!name.startsWith(`${MAIN}-`)) continue;
    if (!packed.has(name)) fail(`${MAIN} lists ${name} in optionalDependencies, but no tarball carries it`);
    if (range !== top.version) fail(`${MAIN} lists ${name}@${range}, not its own version ${top.version}`);
  }

  for (const p of [...platforms.sort((a, b) => a.name.localeCompare(b.name)), top]) {
    const cmd = ['publish', p.file, '--provenance', '--access', 'public'];
    if (dryRun) {
      console.log(`npm ${cmd.join(' ')}   # ${p.name}@${p.version}`);
      continue;
    }
    if (onRegistry(p.name, p.version)) {
      console.log(`${p.name}@${p.version} is on the registry already: skipped`);
      continue;
    }
    console.log(`publishing ${p.name}@${p.version}`);
    execFileSync('npm', cmd, { stdio: 'inherit' });
  }
}

main();
