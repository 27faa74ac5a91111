'use strict';
// The program of a run's process (forked by process.js). It boots with
// nothing of any worker loaded: puts the import refusal in place and says
// 'ready'. That is the warm spare. When a job arrives, the realm protocol
// (../protocol/realm-side.js, shared with the workerd adapter) builds `api`
// from the parent's shape description, installs globalThis.app, window.app
// and the guarded fetch, imports the worker, and runs the entry the parent
// names. One job per process: the parent kills it when the run ends.
// Messages go both ways as frames on fd 3 (../protocol/frames.js).
const Module = require('node:module');
// Loaded before the import refusal is in place: the frame pipe to the parent.
const net = require('node:net');
const { encodeFrame, frameReader } = require('../protocol/frames');
const { pathToFileURL } = require('node:url');
const path = require('node:path');
const { createRealmRuntime } = require('../protocol/realm-side');
const { isRefused, refusal } = require('./refused');
// In a sandbox (./sandbox.js) the worker's files come in the job (./bundle.js)
// and fetch is relayed to the supervisor (./fetch-relay.js): there is no network here.
const SANDBOXED = process.argv.includes('--sandboxed');
// A warm spare has time before its run: the guard's platform fetch is taken then.
const WARM = process.argv.includes('--warm');
const { writeBundle, WORKER_ROOT } = require('./bundle');
const { relayFetch } = require('./fetch-relay');

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

// The realm protocol's pipe to the parent (fd 3, process.js): frames both
// ways. There is no IPC channel: process.send does not exist here.
const pipe = new net.Socket({ fd: 3, readable: true, writable: true });
const send = (m) => {
  const frame = encodeFrame(m); // throws for a value that cannot cross
  if (pipe.destroyed || !pipe.writable) return false;
  pipe.write(frame);
  return true;
};

// A run never outlives its supervisor: if the parent dies (even SIGKILLed),
// the pipe closes and so does this process.
pipe.on('end', () => process.exit(70));
pipe.on('close', () => process.exit(70));
pipe.on('error', () => process.exit(70));

const runtime = createRealmRuntime({
  // encodeFrame throws for a value it cannot serialize: the runtime reports
  // that instead of the value.
  send,
  load: (job) => {
    const href = SANDBOXED ? writeBundle(WORKER_ROOT, job.bundle) : job.href;
    scan?.scan(href);
    return import(href);
  },
  relayFetch: SANDBOXED ? relayFetch : null,
});
// The parent is trusted; its frames are not budgeted.
const reader = frameReader({
  onMessage: (m) => runtime.onMessage(m),
  onViolation: (reason) => {
    process.stderr.write(`the run's process could not read its parent's frames: ${reason}\n`);
    process.exit(70);
  },
  budget: { framesPerSecond: Infinity, framesBurst: Infinity, bytesPerSecond: Infinity, bytesBurst: Infinity },
});
pipe.on('data', (chunk) => reader.push(chunk));

prepareScan().then(
  () => {
    if (WARM && !SANDBOXED) require('./guarded-fetch').preparePlatform();
    send({ t: 'ready', origin: performance.timeOrigin, at: now() });
  },
  (err) => {
    process.stderr.write(`the run's process could not prepare the import refusal: ${err?.stack ?? err}\n`);
    process.exit(70);
  },
);
