'use strict';
// The addon loader (js/native/load.js) as a user meets it when something is off:
// a platform package of another version, a native/ file that is not a
// loadable library, DURABLE_WORKERS_ADDON naming a file. Each runs in a child
// against a copy of the package's JS, so what it finds is only what the test
// put there.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { triple, sourceBuildPath } = require('../../js/native/platform');
const { tmpDir } = require('../helpers/tmp');

const ROOT = path.join(__dirname, '..', '..');
const T = triple();

/** A copy of package.json and js/ in a fresh directory: a package with no addon. */
function bareCopy(t) {
  const dir = path.join(tmpDir(t), 'node_modules', 'durable-workers');
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  fs.cpSync(path.join(ROOT, 'js'), path.join(dir, 'js'), { recursive: true });
  return dir;
}

/** open() in a child, from `pkg`, on a directory beside it; its rejection's code and message, or { opened: true }. */
function openFrom(pkg, env = {}) {
  const dir = path.join(path.dirname(path.dirname(pkg)), 'data');
  const script = `require(${JSON.stringify(pkg)}).open({ dir: ${JSON.stringify(dir)} })
    .then(async (h) => { await h.close(); console.log(JSON.stringify({ opened: true })); }, (e) => console.log(JSON.stringify({ code: e.code, message: e.message })));`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { ...process.env, DURABLE_WORKERS_ADDON: '', ...env } });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

test('a platform package of another version is refused by name and version, not loaded', (t) => {
  const pkg = bareCopy(t);
  const platform = path.join(path.dirname(pkg), `durable-workers-${T}`);
  fs.mkdirSync(platform);
  fs.writeFileSync(path.join(platform, 'package.json'), JSON.stringify({ name: `durable-workers-${T}`, version: '9.9.9', main: 'x.node' }));
  const r = openFrom(pkg);
  t.is(r.code, 'ERR_DURABLE_NO_ADDON');
  t.regex(r.message, new RegExp(`durable-workers-${T}: version 9\\.9\\.9 is installed, durable-workers is \\d+\\.\\d+\\.\\d+; the two must match`));
});

test('a native/ file that is not a library is reported with the reason it did not load', (t) => {
  const pkg = bareCopy(t);
  const file = path.join(pkg, 'native', path.basename(sourceBuildPath(T)));
  fs.mkdirSync(path.dirname(file));
  fs.writeFileSync(file, 'not an ELF file');
  const r = openFrom(pkg);
  t.is(r.code, 'ERR_DURABLE_NO_ADDON');
  t.regex(r.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*(invalid ELF header|file too short|not a valid)`));
  t.regex(r.message, /npx durable-workers build-addon/);
});

test('DURABLE_WORKERS_ADDON is the only file tried when set: a wrong path fails even where a build exists; the right one opens', (t) => {
  const built = sourceBuildPath(T);
  if (!fs.existsSync(built)) return t.fail(`${built} is not built (npm run build)`);
  const pkg = bareCopy(t);
  fs.mkdirSync(path.join(pkg, 'native'));
  fs.copyFileSync(built, path.join(pkg, 'native', path.basename(built)));
  const wrong = openFrom(pkg, { DURABLE_WORKERS_ADDON: '/nonexistent/x.node' });
  t.is(wrong.code, 'ERR_DURABLE_NO_ADDON');
  t.regex(wrong.message, /DURABLE_WORKERS_ADDON=\/nonexistent\/x\.node: no such file/);
  t.notRegex(wrong.message, /not built/, 'native/ was not tried');
  t.deepEqual(openFrom(pkg, { DURABLE_WORKERS_ADDON: built }), { opened: true });
});
