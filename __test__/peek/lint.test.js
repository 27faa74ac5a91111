'use strict';
// The Peek worker linter (js/peek/lint): one fixture per rule, each finding
// pinned to its rule, file and line; a worker full of the same constructs
// used portably, and the shipped examples, lint clean; and the CLI:
// `peek lint`'s output and exit codes, and `peek run` / `peek serve`
// printing findings before they run, or refusing with --strict.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { lintWorker, lintReport } = require('../../js/peek/lint');
const { NAMESPACES } = require('../../js/peek/lint/namespaces');
const { tmpDir } = require('../helpers/tmp');

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'peek-lint');
const BIN = path.join(__dirname, '..', '..', 'bin', 'durable-workers.js');
const fixture = (name) => path.join(FIXTURES, name, 'manifest.json');
/** rule, file, line (and column) of each finding, in order: what a test pins. */
const where = (findings) => findings.map((f) => `${f.rule} ${f.file}:${f.line}:${f.column}`);

function cli(...args) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
}

test('node-import: import and require() of built-ins, with and without node:, through the module graph', (t) => {
  const findings = lintWorker(fixture('node-import'));
  t.deepEqual(where(findings), ['node-import worker.mjs:2:1', 'node-import helper.cjs:2:12', 'node-import helper.cjs:3:14']);
  t.is(findings[0].message, 'import of node:fs: not available on every target');
  t.is(findings[0].severity, 'warning');
  // node:http is refused by the Node host itself: an error, not a portability warning.
  t.like(findings[2], { severity: 'error', message: 'require() of node:http: refused on every Peek host, Node included (ERR_PEEK_IMPORT_REFUSED)' });
  t.regex(findings[2].hint, /fetch/);
});

test('node-import: re-exports and import() with a literal count; a package under node_modules is named, not read', (t) => {
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name: 'deps', worker: { url: 'worker.js' } }));
  fs.writeFileSync(
    path.join(dir, 'worker.js'),
    [
      "export * from 'node:path';",
      "import dep from 'dep';",
      'export default async function run() {',
      "  const { randomUUID } = await import('node:crypto');",
      '  return dep(randomUUID());',
      '}',
      '',
    ].join('\n'),
  );
  fs.mkdirSync(path.join(dir, 'node_modules', 'dep'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'node_modules', 'dep', 'package.json'), '{ "name": "dep", "main": "index.js" }');
  fs.writeFileSync(path.join(dir, 'node_modules', 'dep', 'index.js'), "const fs = require('node:fs');\nmodule.exports = (x) => fs && x;\n");
  const report = lintReport(path.join(dir, 'manifest.json'));
  t.deepEqual(where(report.findings), ['node-import worker.js:1:1', 'node-import worker.js:4:32']);
  t.is(report.findings[0].message, 're-export of node:path: not available on every target');
  t.is(report.findings[1].message, 'import() of node:crypto: not available on every target');
  t.deepEqual(report.files, ['worker.js']);
  t.deepEqual(report.packages, ['dep']);
});

test('module-timer: setInterval and globalThis.setTimeout at module level', (t) => {
  const findings = lintWorker(fixture('module-timer'));
  t.deepEqual(where(findings), ['module-timer worker.mjs:3:1', 'module-timer worker.mjs:6:1']);
  t.regex(findings[0].message, /^setInterval at module level/);
  t.regex(findings[1].message, /^setTimeout at module level/);
  t.regex(findings[0].hint, /inside the entry function/);
});

test('window: window.location, and window handed around as a value', (t) => {
  const findings = lintWorker(fixture('window'));
  t.deepEqual(where(findings), ['window worker.mjs:4:17', 'window worker.mjs:5:34']);
  t.regex(findings[0].message, /^window\.location: /);
  t.regex(findings[1].message, /^window used as a value/);
});

test('eval: new Function() and eval()', (t) => {
  const findings = lintWorker(fixture('eval'));
  t.deepEqual(where(findings), ['eval worker.mjs:3:18', 'eval worker.mjs:4:23']);
  t.regex(findings[0].message, /^new Function\(\): .*Cloudflare/);
  t.regex(findings[1].message, /^eval\(\): .*Cloudflare/);
});

test('ungranted-api: namespaces the manifest does not grant, through the entry parameter, destructuring, app and window.app', (t) => {
  const findings = lintWorker(fixture('ungranted-api'));
  // io.log is granted (capabilities.log); initialize, network, publish and datastore are not.
  t.deepEqual(where(findings), ['ungranted-api worker.mjs:3:1', 'ungranted-api worker.mjs:7:21', 'ungranted-api worker.mjs:8:11', 'ungranted-api worker.mjs:9:9']);
  t.regex(findings[0].message, /^api\.initialize is not granted/);
  t.regex(findings[0].hint, /capabilities\.lifecycle/);
  t.regex(findings[1].message, /^api\.network is not granted/);
  t.regex(findings[1].hint, /capabilities\.network/);
  t.regex(findings[2].message, /^api\.publish is not granted/);
  t.regex(findings[3].message, /^api\.datastore is not granted/);
});

test('ungranted-api: the namespace table follows buildApi for the grants it decides', (t) => {
  const { buildApi } = require('../../js/peek/api');
  const { checkManifest } = require('../../js/peek/manifest');
  const manifest = checkManifest(
    {
      name: 'all',
      worker: { url: path.relative(FIXTURES, path.join(FIXTURES, 'clean', 'worker.mjs')) },
      commands: ['all'],
      settings: { greeting: 'hello' },
      capabilities: { network: { domains: ['api.example.com'] }, datastore: {}, pubsub: { subscribe: ['t'] }, log: {}, lifecycle: {} },
    },
    path.join(FIXTURES, 'all.json'),
  );
  const api = buildApi(manifest, { store: {}, fetch: () => {}, publish: async () => {}, log: () => {} });
  // Every namespace buildApi makes is in the table and counted as granted, and the table has no other.
  t.deepEqual(Object.keys(api).sort(), Object.keys(NAMESPACES).sort());
  for (const name of Object.keys(api)) t.true(NAMESPACES[name].granted(manifest), name);
  const bare = checkManifest({ name: 'bare', worker: { url: 'clean/worker.mjs' } }, path.join(FIXTURES, 'bare.json'));
  const none = buildApi(bare, { store: null, fetch: () => {}, publish: async () => {}, log: () => {} });
  for (const [name, ns] of Object.entries(NAMESPACES)) if (!ns.granted(bare)) t.false(name in none, name);
});

test('parse: a file that does not parse is a finding with its line, not a crash', (t) => {
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name: 'broken', worker: { url: 'worker.mjs' } }));
  fs.writeFileSync(path.join(dir, 'worker.mjs'), "import './ok.mjs';\nexport default async function run() {\n  return 1 +;\n}\n");
  fs.writeFileSync(path.join(dir, 'ok.mjs'), 'setInterval(() => {}, 1);\n');
  const findings = lintWorker(path.join(dir, 'manifest.json'));
  t.deepEqual(
    findings.map((f) => `${f.rule} ${f.file}:${f.line}`),
    ['parse worker.mjs:3'],
  );
  t.is(findings[0].severity, 'error');
  t.regex(findings[0].message, /Unexpected token/);
});

test('no false positives: a timer in the entry, window.app, granted and checked namespaces, node: in strings and comments', (t) => {
  const report = lintReport(fixture('clean'));
  t.deepEqual(report.findings, []);
  t.deepEqual(report.files, ['worker.mjs', 'lib/format.mjs'], 'the helper module was read too');
});

test('the Peek examples lint clean', (t) => {
  const root = path.join(__dirname, '..', '..', 'examples');
  const manifests = [];
  const find = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) find(full);
      else if (e.name === 'manifest.json') manifests.push(full);
    }
  };
  find(root);
  t.true(manifests.length >= 2, `found ${manifests.join(', ')}`);
  for (const m of manifests) t.deepEqual(where(lintWorker(m)), [], path.relative(root, m));
});

test('peek lint: the human format and exit codes 0, 1 and 2', (t) => {
  const warnings = cli('peek', 'lint', fixture('module-timer'));
  t.is(warnings.status, 0, warnings.stderr);
  t.regex(warnings.stdout, /^worker\.mjs:3:1 module-timer {2}setInterval at module level: .+ \(start it inside the entry function.+\)$/m);
  t.regex(warnings.stdout, /^module-timer: 2 findings \(0 errors, 2 warnings\) in 1 file$/m);

  const strict = cli('peek', 'lint', fixture('module-timer'), '--strict');
  t.is(strict.status, 1);
  // An error (a module the Node host refuses too) fails without --strict.
  const error = cli('peek', 'lint', fixture('node-import'));
  t.is(error.status, 1);
  t.regex(error.stdout, /^helper\.cjs:3:14 node-import {2}require\(\) of node:http: refused/m);

  const clean = cli('peek', 'lint', fixture('clean'), '--strict');
  t.is(clean.status, 0, clean.stderr);
  t.is(clean.stdout, 'clean: no findings in 2 files\n');

  const json = cli('peek', 'lint', fixture('eval'), '--json');
  t.is(json.status, 0);
  t.deepEqual(where(JSON.parse(json.stdout)), ['eval worker.mjs:3:18', 'eval worker.mjs:4:23']);

  const none = cli('peek', 'lint');
  t.is(none.status, 2);
  t.regex(none.stderr, /peek lint takes one manifest[\s\S]*usage: durable-workers peek lint/);
  t.is(cli('peek', 'lint', fixture('eval'), '--fix').status, 2);
  const missing = cli('peek', 'lint', path.join(FIXTURES, 'no-such.json'));
  t.is(missing.status, 1);
  t.regex(missing.stderr, /ERR_PEEK_MANIFEST/);
});

test('peek run prints the findings to stderr and runs; with --strict it refuses and runs nothing', (t) => {
  const state = tmpDir(t);
  const ran = cli('peek', 'run', fixture('node-path'), '--json', '--sandbox', 'off', '--state', state);
  t.is(ran.status, 0, ran.stderr);
  t.regex(ran.stderr, /^\[node-path\] lint warning: worker\.mjs:2:1 node-import {2}import of node:path: not available on every target/m);
  t.like(JSON.parse(ran.stdout.trim().split('\n').at(-1)), { event: 'run', ok: true, value: 'linted/ran' });

  const refused = cli('peek', 'run', fixture('node-path'), '--json', '--sandbox', 'off', '--state', state, '--strict');
  t.is(refused.status, 1);
  t.is(refused.stdout, '', 'no run line: nothing ran');
  t.regex(refused.stderr, /^\[node-path\] lint warning: worker\.mjs:2:1 node-import/m);
  t.regex(refused.stderr, /refusing to run: 1 lint finding \(--strict\)/);

  const clean = cli('peek', 'run', fixture('clean'), '--json', '--sandbox', 'off', '--state', state, '--strict', '--trigger', 'command:clean');
  t.notRegex(clean.stderr, /lint|refusing/, 'a clean worker is not held back by --strict');
});

test('peek serve --strict refuses a directory with a finding before it starts', (t) => {
  const dir = tmpDir(t);
  fs.cpSync(path.join(FIXTURES, 'node-path'), path.join(dir, 'node-path'), { recursive: true });
  const r = cli('peek', 'serve', dir, '--strict', '--sandbox', 'off');
  t.is(r.status, 1);
  t.regex(r.stderr, /^\[node-path\] lint warning: worker\.mjs:2:1 node-import/m);
  t.regex(r.stderr, /refusing to run/);
  t.false(fs.existsSync(path.join(dir, '.peek-state')), 'the supervisor never started');
});

test('lintWorker is exported from durable-workers/peek (peek/types.test.js compiles its types)', (t) => {
  t.is(require('durable-workers/peek').lintWorker, lintWorker);
});

test('what a finding quotes from the worker’s source is printed escaped: an import cannot drive the terminal', (t) => {
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }');
  fs.writeFileSync(path.join(dir, 'w.js'), 'import "node:\\u001b[2J\\u001b]0;owned\\u0007fs";\nexport default async () => 1;\n');
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ name: 'esc', worker: { url: 'w.js' } }));
  const r = cli('peek', 'lint', path.join(dir, 'manifest.json'));
  t.true(lintWorker(path.join(dir, 'manifest.json')).some((f) => f.rule === 'node-import'));
  t.false(r.stdout.includes('\u001b') || r.stdout.includes('\u0007'), JSON.stringify(r.stdout));
  t.regex(r.stdout, /\\u001b\[2J/);
});
