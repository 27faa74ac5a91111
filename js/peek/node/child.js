'use strict';
// The program of a run's process (forked by process.js). It boots with
// nothing of any worker loaded: puts the import refusal in place and says
// 'ready'. That is the warm spare. When a job arrives, the realm protocol
// (../protocol/realm-side.js, shared with the workerd adapter) builds `api`
// from the parent's shape description, installs globalThis.app, window.app
// and the guarded fetch, imports the worker, and runs the entry the parent
// names. One job per process: the parent kills it when the run ends.
const Module = require('node:module');
const { pathToFileURL } = require('node:url');
const path = require('node:path');
const { createRealmRuntime } = require('../protocol/realm-side');
const { isRefused, refusal } = require('./refused');

const now = () => performance.timeOrigin + performance.now();

// The import refusal, for ESM import and CommonJS require alike.
let scan = null; // Node < 22.15: the walk of the worker's graph (prescan.js)
let resolver = null; // and Node's resolver it walks with, once loaded
if (typeof Module.registerHooks === 'function') {
  // Node ≥ 22.15 / 23.5: synchronous hooks in this thread see both.
  // The specifier is checked, then what it resolves to: a package's
  // "imports" map may name net under a name of its own ("#socket": "net").
  Module.registerHooks({
    resolve(specifier, context, nextResolve) {
      const how = context.conditions?.includes('require') ? 'require' : 'import';
      if (isRefused(specifier)) throw refusal(specifier, context.parentURL, how);
      const resolved = nextResolve(specifier, context);
      if (isRefused(resolved.url)) throw refusal(specifier, context.parentURL, how, resolved.url);
      return resolved;
    },
  });
} else {
  // Older Node: ESM imports are refused by walking the worker's graph before
  // it loads (prescan.js; module.register's hooks, a loader thread, only
  // where the walk cannot follow), require() by wrapping Module._load, which
  // every require() goes through. A file it loads is walked too: an ES
  // module loaded by require() has imports of its own.
  const { ImportScan } = require('./prescan');
  const load = Module._load;
  Module._load = function _load(request, parent, isMain) {
    if (isRefused(request)) throw refusal(request, parent?.filename ? pathToFileURL(parent.filename).href : undefined, 'require');
    // Walked even once the hooks are in: module.register's hooks do not see
    // the imports of an ES module that require() loads.
    if (scan && !Module.isBuiltin(request)) {
      let file = null;
      try {
        file = Module._resolveFilename(request, parent, isMain);
      } catch {} // the load below reports it
      if (file && path.isAbsolute(file)) scan.scan(pathToFileURL(file).href);
    }
    return load.call(this, request, parent, isMain);
  };
  scan = new ImportScan(
    (specifier, parentURL) => resolver(specifier, parentURL),
    () => Module.register(pathToFileURL(path.join(__dirname, 'hooks.mjs'))),
  );
}

/** Loads what the walk needs (the lexer, Node's resolver) before 'ready'. */
async function prepareScan() {
  if (!scan) return;
  const [{ resolve }] = await Promise.all([import('./resolve.mjs'), scan.init()]);
  // Without --experimental-import-meta-resolve the parent argument is
  // ignored and every answer would be relative to resolve.mjs: then the
  // loader thread it is, now.
  const probe = 'file:///peek-probe/a/b.js';
  if (resolve('./c.js', probe) === 'file:///peek-probe/a/c.js') resolver = resolve;
  else scan.fallBack('this Node ignores the parent argument of import.meta.resolve');
}

// Network globals other than the guarded fetch are not the floor a worker
// may rely on, and would route around the guard: a worker does not see them.
for (const name of ['WebSocket', 'EventSource']) {
  try {
    delete globalThis[name];
  } catch {}
}

// A run never outlives its supervisor: if the parent dies (even SIGKILLed),
// the channel closes and so does this process.
process.on('disconnect', () => process.exit(70));

const runtime = createRealmRuntime({
  // process.send throws for a value it cannot serialize: the runtime reports
  // that instead of the value.
  send: (m) => process.send(m),
  load: (job) => {
    scan?.scan(job.href);
    return import(job.href);
  },
});
process.on('message', (m) => runtime.onMessage(m));

prepareScan().then(
  () => process.send({ t: 'ready', origin: performance.timeOrigin, at: now() }),
  (err) => {
    process.stderr.write(`the run's process could not prepare the import refusal: ${err?.stack ?? err}\n`);
    process.exit(70);
  },
);
