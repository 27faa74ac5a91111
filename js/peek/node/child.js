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
if (typeof Module.registerHooks === 'function') {
  // Node ≥ 22.15 / 23.5: synchronous hooks in this thread see both.
  Module.registerHooks({
    resolve(specifier, context, nextResolve) {
      if (isRefused(specifier)) throw refusal(specifier, context.parentURL, context.conditions?.includes('require') ? 'require' : 'import');
      return nextResolve(specifier, context);
    },
  });
} else {
  // Older Node: module.register's hooks (a loader thread) see ESM imports
  // only, so require() is refused by wrapping Module._load, which every
  // require() of a CommonJS module goes through.
  Module.register(pathToFileURL(path.join(__dirname, 'hooks.mjs')));
  const load = Module._load;
  Module._load = function _load(request, parent, isMain) {
    if (isRefused(request)) throw refusal(request, parent?.filename ? pathToFileURL(parent.filename).href : undefined, 'require');
    return load.call(this, request, parent, isMain);
  };
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
  load: (job) => import(job.href),
});
process.on('message', (m) => runtime.onMessage(m));

process.send({ t: 'ready', origin: performance.timeOrigin, at: now() });
