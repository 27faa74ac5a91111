'use strict';
// The import refusal where it is a walk of the worker's graph (Node before
// 22.15, js/peek/node/prescan.js) rather than a loader thread: through
// relative modules, packages resolved by their exports and imports maps,
// require() of an ES module, import() (which the walk hands to the loader
// hooks), and without refusing anything it should not. On a Node with
// module.registerHooks these pass by the hooks instead: the promise is the
// same. Serial: forks compete for 2 cores.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { codes } = require('durable-workers/peek');
const { worker, setup, command } = require('../helpers/peek');

/** Writes `files` ({ relative path: text }) under `dir`. */
function files(dir, tree) {
  for (const [name, text] of Object.entries(tree)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), typeof text === 'string' ? text : JSON.stringify(text));
  }
}

test.serial('a network import three modules deep is refused before any of the graph runs, naming it and its importer', async (t) => {
  const { dir, host } = setup(t);
  const marker = path.join(dir, 'ran');
  files(dir, {
    'a.js': `import { b } from './lib/b.mjs';\nexport const a = b;\n`,
    'lib/b.mjs': `export { c as b } from './c.mjs';\n`,
    'lib/c.mjs': `import * as tls from 'tls';\nexport const c = typeof tls;\n`,
  });
  const file = worker(dir, 'deep', `import fs from 'node:fs';\nfs.writeFileSync(${JSON.stringify(marker)}, 'x');\nimport { a } from './a.js';\nexport default async () => a;\n`);
  const r = await host.run(file, command());
  t.false(r.ok);
  t.is(r.error.code, codes.IMPORT_REFUSED);
  t.regex(r.error.message, /import of "tls" refused \(imported by file:.*lib\/c\.mjs\)/);
  t.false(fs.existsSync(marker), 'no module of the graph was evaluated');
});

test.serial("a package's module is walked through its exports map, and an imports map onto net is seen through, imported or import()ed", async (t) => {
  const { dir, host } = setup(t);
  files(dir, {
    'node_modules/chatty/package.json': { name: 'chatty', type: 'module', exports: { '.': { require: './no.cjs', import: './esm/index.js' } } },
    'node_modules/chatty/no.cjs': 'module.exports = 1;\n',
    'node_modules/chatty/esm/index.js': `import https from 'node:https';\nexport default https;\n`,
    'mapped/package.json': { type: 'module', imports: { '#socket': 'net' } },
    'mapped/w.js': `import net from '#socket';\nexport default async () => typeof net;\n`,
    'mapped/w.json': { name: 'mapped', worker: { url: 'w.js' } },
    'mapped/later.js': `export default async () => { try { await import('#socket'); return 'loaded'; } catch (err) { return err.message; } };\n`,
    'mapped/later.json': { name: 'later', worker: { url: 'later.js' } },
  });
  const pkg = await host.run(worker(dir, 'pkg', `import chatty from 'chatty';\nexport default async () => typeof chatty;\n`), command());
  t.is(pkg.error?.code, codes.IMPORT_REFUSED);
  t.regex(pkg.error.message, /"node:https" refused \(imported by file:.*node_modules\/chatty\/esm\/index\.js\)/);
  const mapped = await host.run(path.join(dir, 'mapped', 'w.json'), command());
  t.is(mapped.error?.code, codes.IMPORT_REFUSED);
  t.regex(mapped.error.message, /import of "#socket" \(node:net\) refused \(imported by file:.*mapped\/w\.js\)/);
  // Node's resolve hooks see the name the module wrote: where they refuse
  // (module.registerHooks from 22.15, module.register's loader thread
  // before), what it resolves to is checked too.
  const later = await host.run(path.join(dir, 'mapped', 'later.json'), command());
  t.true(later.ok, later.error?.message);
  // A message the worker returns as a value names the file it ran: in a sandbox, its copy under /peek/worker.
  t.regex(later.value, /import of "#socket" \(node:net\) refused \(imported by file:.*(mapped|\/peek\/worker)\/later\.js\)/);
});

test.serial('an ES module loaded by require() is walked; import() with a computed name is still refused when it runs', async (t) => {
  const { dir, host } = setup(t);
  const cjs = path.join(dir, 'cjs');
  files(cjs, { 'helper.mjs': `import dgram from 'node:dgram';\nexport default dgram;\n` });
  const required = await host.run(worker(cjs, 'req', `const h = require('./helper.mjs');\nmodule.exports = async () => typeof h;\n`, {}, { type: 'commonjs' }), command());
  t.is(required.error?.code, codes.IMPORT_REFUSED);
  t.regex(required.error.message, /import of "node:dgram" refused \(imported by file:.*helper\.mjs\)/);

  const esm = path.join(dir, 'esm');
  fs.mkdirSync(esm);
  const computed = await host.run(
    worker(esm, 'computed', `export default async () => { try { await import('node:' + ['ht', 'tp'].join('')); return 'loaded'; } catch (err) { return err.code; } };\n`),
    command(),
  );
  t.true(computed.ok, computed.error?.message);
  t.is(computed.value, codes.IMPORT_REFUSED);
  const literal = await host.run(worker(esm, 'literal', `export default async () => { try { await import('node:child_process'); return 'loaded'; } catch (err) { return err.code; } };\n`), command());
  t.is(literal.value, codes.IMPORT_REFUSED);
});

test.serial('a graph of allowed modules, builtins, a package and JSON runs; a missing module is Node’s own error', async (t) => {
  const { dir, host } = setup(t);
  files(dir, {
    'node_modules/calm/package.json': { name: 'calm', type: 'module', exports: './index.js' },
    'node_modules/calm/index.js': `import { createHash } from 'node:crypto';\nexport const hash = (s) => createHash('sha256').update(s).digest('hex').slice(0, 8);\n`,
    'data.json': { n: 3 },
    'util.js': `import { URL } from 'node:url';\nexport const host = (u) => new URL(u).host;\n`,
  });
  const ok = await host.run(
    worker(
      dir,
      'fine',
      `import { hash } from 'calm';\nimport data from './data.json' with { type: 'json' };\nimport { host } from './util.js';\nimport path from 'node:path';\nexport default async () => [hash('x'), data.n, host('http://a.example/'), path.sep, import.meta.url.endsWith('fine.js')];\n`,
    ),
    command(),
  );
  t.true(ok.ok, ok.error?.message);
  t.deepEqual(ok.value, ['2d711642', 3, 'a.example', '/', true]);
  const missing = await host.run(worker(dir, 'missing', `import './nowhere.js';\nexport default async () => 1;\n`), command());
  t.false(missing.ok);
  t.regex(missing.error.message, /nowhere\.js/);
  t.not(missing.error.code, codes.IMPORT_REFUSED);
});

// Which of the two the run's process uses is decided by the Node line:
// module.registerHooks arrived in 22.15 and 23.5. Every test above passes by
// either; this one says which it was, so a line that lost (or gained) the
// hooks cannot pass them by the other unnoticed.
test.serial('the refusal is module.registerHooks from Node 22.15 / 23.5 and the walk before: the run says which', async (t) => {
  const [major, minor] = process.versions.node.split('.').map(Number);
  const hooks = major > 23 || (major === 23 && minor >= 5) || (major === 22 && minor >= 15);
  t.is(typeof require('node:module').registerHooks === 'function', hooks, `Node ${process.versions.node}`);
  const { dir, host } = setup(t);
  const r = await host.run(
    worker(
      dir,
      'which',
      `export default async () => ({ hooks: typeof process.getBuiltinModule('node:module').registerHooks, resolveFlag: process.execArgv.includes('--experimental-import-meta-resolve') });\n`,
    ),
    command(),
  );
  t.true(r.ok, r.error?.message);
  // The walk resolves with import.meta.resolve's parent argument, behind a flag; the hooks need none.
  t.deepEqual(r.value, hooks ? { hooks: 'function', resolveFlag: false } : { hooks: 'undefined', resolveFlag: true });
});

// The walk itself, in this process: when it calls for the loader hooks (time,
// never the refusal) and when it must not (the whole point of it).
const { ImportScan } = require('../../js/peek/node/prescan');
const { pathToFileURL } = require('node:url');
const { isBuiltin } = require('node:module');
const { tmpDir } = require('../helpers/tmp');

/** A walk over `tree` in a fresh directory; relative and builtin specifiers resolve as in ESM. */
async function walk(t, tree) {
  const dir = tmpDir(t);
  files(dir, tree);
  const fallbacks = [];
  const resolve = (s, parent) => {
    if (s.startsWith('./') || s.startsWith('../')) return new URL(s, parent).href;
    if (s.startsWith('data:')) return s;
    if (isBuiltin(s)) return s.startsWith('node:') ? s : `node:${s}`;
    throw Object.assign(new Error(`cannot resolve ${s}`), { code: 'ERR_MODULE_NOT_FOUND' });
  };
  const scan = new ImportScan(resolve, (why) => fallbacks.push(why));
  await scan.init();
  const url = (name) => pathToFileURL(path.join(dir, name)).href;
  return { dir, scan, fallbacks, url };
}

test('a static graph of files and allowed builtins is walked without the loader hooks', async (t) => {
  const w = await walk(t, {
    'w.js': `\uFEFFimport a from './a.js';\nimport { sep } from 'node:path';\nexport * from './b.mjs';\nexport default a + sep;\n`,
    'a.js': `import data from './data.json' with { type: 'json' };\nexport default data.n + import.meta.url.length;\n`,
    'b.mjs': `export { createHash } from 'node:crypto';\n`,
    'data.json': { n: 1 },
  });
  w.scan.scan(w.url('w.js'));
  t.deepEqual(w.fallbacks, []);
  t.false(w.scan.hooked);
});

test('what the lexer cannot see calls for the hooks, and the walk goes on to refuse a static import behind it', async (t) => {
  const cases = {
    'import()': `const later = () => import('./x.js');\n`,
    'import() in a string (new Function)': `const load = new Function('s', 'return import(s)');\n`,
    'a data: module': `import 'data:text/javascript,export default 1';\n`,
    'a line separator': `const a = 1;\u2028\n`,
    'an ideographic space': `const a =\u30001;\n`,
    'a file that does not lex': `import { from './a.js';\n`,
  };
  for (const [what, head] of Object.entries(cases)) {
    const w = await walk(t, { 'w.js': `import './dep.js';\n${head}export default 1;\n`, 'dep.js': `import 'node:dgram';\n` });
    if (what === 'a file that does not lex') {
      w.scan.scan(w.url('w.js'));
    } else {
      const err = t.throws(() => w.scan.scan(w.url('w.js')), { code: 'ERR_PEEK_IMPORT_REFUSED' }, what);
      t.regex(err.message, /"node:dgram" refused \(imported by file:.*dep\.js\)/, what);
    }
    t.is(w.fallbacks.length, 1, what);
    t.true(w.scan.hooked, what);
  }
});

test('a refused module is refused again on its next load; a symlinked entry is walked where it points', async (t) => {
  const w = await walk(t, { 'evil.mjs': `import './deeper.mjs';\n`, 'deeper.mjs': `export { get } from 'node:https';\n`, 'real/w.js': `import './dep.js';\n`, 'real/dep.js': `import 'node:net';\n` });
  for (let i = 0; i < 2; i++) t.throws(() => w.scan.scan(w.url('evil.mjs')), { code: 'ERR_PEEK_IMPORT_REFUSED', message: /deeper\.mjs/ });
  fs.mkdirSync(path.join(w.dir, 'pub'));
  fs.symlinkSync(path.join(w.dir, 'real', 'w.js'), path.join(w.dir, 'pub', 'w.js'));
  t.throws(() => w.scan.scan(w.url('pub/w.js')), { code: 'ERR_PEEK_IMPORT_REFUSED', message: /real\/dep\.js/ });
  t.deepEqual(w.fallbacks, []);
});

test.serial('in a run: a symlinked worker, a byte-order mark, import() built by new Function, a require() retried after its refusal', async (t) => {
  const { dir, host } = setup(t);
  files(dir, {
    'real/package.json': { type: 'module' },
    'real/w.js': `import { connect } from './dep.js';\nexport default async () => typeof connect;\n`,
    'real/dep.js': `\uFEFFexport { connect } from 'node:net';\n`,
    'pub/w.json': { name: 'linked', worker: { url: 'w.js' } },
  });
  fs.symlinkSync(path.join(dir, 'real', 'w.js'), path.join(dir, 'pub', 'w.js'));
  const linked = await host.run(path.join(dir, 'pub', 'w.json'), command());
  t.is(linked.error?.code, codes.IMPORT_REFUSED);
  t.regex(linked.error.message, /real\/dep\.js/);

  const esm = path.join(dir, 'esm');
  fs.mkdirSync(esm);
  const built = await host.run(
    worker(esm, 'built', `export default async () => { try { await new Function("return import('node:net')")(); return 'loaded'; } catch (err) { return err.code; } };\n`),
    command(),
  );
  t.is(built.value, codes.IMPORT_REFUSED);

  const cjs = path.join(dir, 'cjs');
  files(cjs, { 'evil.mjs': `import net from 'node:net';\nexport default typeof net.connect;\n` });
  const retried = await host.run(
    worker(
      cjs,
      'retry',
      `module.exports = async () => { const codes = []; for (let i = 0; i < 2; i++) { try { require('./evil.mjs'); codes.push('loaded'); } catch (err) { codes.push(err.code); } } return codes; };\n`,
      {},
      { type: 'commonjs' },
    ),
    command(),
  );
  t.deepEqual(retried.value, [codes.IMPORT_REFUSED, codes.IMPORT_REFUSED]);
});
