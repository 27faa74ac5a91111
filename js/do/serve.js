'use strict';
// `serve()`: a Wrangler project's Worker and its Durable Objects over HTTP,
// in this process, as `wrangler dev` runs them on workerd.
//
// Guarantees:
// * Startup refuses, with ERR_DURABLE_CONFIG naming the key, binding or class,
//   whatever it cannot provide (./config.js), a bound class the entry does not
//   export, and a TypeScript entry with neither type stripping nor esbuild
//   (./entry.js). A directory another process serves is refused with
//   ERR_DURABLE_LOCKED before the port is taken.
// * A response reaches the client only after the object writes it depends
//   on are durable: that is the objects' output gate (./turns.js); nothing
//   here answers on an object's behalf or before the app's fetch resolved.
// * `close()` stops accepting, lets the requests in flight finish (bounded:
//   after `drainMs` their connections are cut), waits for `ctx.waitUntil`
//   work (same bound), then closes every object, so every commit that was
//   started has landed before the directory is released.
//
// Mechanism: the entry is imported (./entry.js: TypeScript compiled where
// Node cannot strip it) after the `cloudflare:workers` hook is registered
// (./register.js); the module's exported classes go to
// openObjects (./host.js); the bindings are copied into the `env` that
// `cloudflare:workers` exports, which is one object per process: two serves
// in one process share it, the last one started wins (a test concern only).
//
// WebSocket upgrades go to the Worker's fetch; a 101 with `webSocket` is
// completed and coupled to the pair's client end (./upgrade.js). `close()`
// closes open WebSockets with 1001 (going away). Not gated: the Worker itself
// (as on workerd, only objects are).

// The host's own timers: never counted as an object's (./timers.js).
const { setTimeout, clearTimeout } = require('node:timers');
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { DurableError, codes } = require('../api/errors');
const { loadConfig } = require('./config');
const { openObjects } = require('./host');
const { registerCloudflareModules } = require('./register');
const workers = require('./workers-module');
const { requestListener, refuseUpgrade, toRequest } = require('./http');
const { installGlobals } = require('./globals');
const { importEntry, TS } = require('./entry');
const { upgradeListener } = require('./upgrade');

const JS = new Set(['.js', '.mjs']);

/**
 * Loads the Wrangler project, opens its Durable Objects and serves its
 * Worker over HTTP.
 * @param {{ entry?: string, config?: string, cwd?: string, dir?: string, port?: number, host?: string,
 *           durability?: 'full' | 'relaxed', drainMs?: number, maxOpenFiles?: number, maxLive?: number, evictAfterMs?: number,
 *           hibernateAfterMs?: number, archive?: object, control?: boolean,
 *           log?: (line: string) => void }} [o]
 *   entry: the Worker module (default: the config's `main`); config: the Wrangler config (default: searched from cwd);
 *   dir: the durable directory (default `.data`, relative to cwd); port: 0 picks a free one;
 *   drainMs: how long close() waits for requests in flight (default 10 s); log: where app errors go (default stderr);
 *   maxOpenFiles: object files kept open at most (default 128; see openObjects); maxLive, evictAfterMs,
 *   hibernateAfterMs: when idle objects leave memory (see openObjects);
 *   archive: the continuous archive, as open()'s (docs/backups.md); control: answer `durable-workers backup`
 *   on the directory's control socket (default true)
 * @returns {Promise<{ url: string, port: number, host: string, warnings: string[], backup(dest: string): Promise<object>, close(): Promise<void> }>}
 * @throws {DurableError} ERR_DURABLE_CONFIG (the project cannot be served, the message says why),
 *   ERR_DURABLE_LOCKED (another process serves `dir`); an Error with code EADDRINUSE when the port is taken
 */
async function serve(o = {}) {
  const opts = checkOptions(o);
  const config = loadConfig({ cwd: opts.cwd, config: o.config });
  const entry = entryOf(o.entry, opts.cwd, config);
  registerCloudflareModules();
  // Before the app's modules run: partyserver reads WebSocket at load.
  installGlobals();
  let mod;
  try {
    mod = await importEntry(entry, path.dirname(config.file));
  } catch (err) {
    if (typeof err?.code === 'string' && err.code.startsWith('ERR_DURABLE_')) throw err;
    throw new Error(`cannot import ${entry}: ${err?.message ?? err}`, { cause: err });
  }
  const bindings = {};
  for (const { binding, className, sql } of config.objects) {
    const Class = mod[className];
    if (typeof Class !== 'function') {
      throw new DurableError(
        codes.CONFIG,
        `${entry} does not export the class "${className}" that Durable Object binding "${binding}" names (${config.file}): export it from the entry, as in \`export class ${className} extends DurableObject {}\``,
      );
    }
    bindings[binding] = { class: Class, sql };
  }
  const warnings = [...config.warnings];
  const handler = fetchHandler(mod.default, entry, warnings);

  const objects = await openObjects({
    dir: opts.dir,
    name: config.name ?? undefined,
    bindings,
    vars: config.vars,
    durability: o.durability,
    maxOpenFiles: o.maxOpenFiles,
    maxLive: o.maxLive,
    evictAfterMs: o.evictAfterMs,
    hibernateAfterMs: o.hibernateAfterMs,
    archive: o.archive,
    control: o.control ?? true,
    log: opts.log,
  });
  const env = objects.env;
  const token = claimEnv(env);

  /** Requests being answered, each settling once written or abandoned. */
  const inflight = new Set();
  /** `ctx.waitUntil` work not yet settled. */
  const background = new Set();
  let closing = null;
  let listener = null; // made once the port is known: requests without a Host header get this origin
  const server = http.createServer((req, res) => {
    if (closing !== null) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
      res.end('Service Unavailable: the server is shutting down\n');
      return;
    }
    const p = listener(req, res);
    inflight.add(p);
    p.finally(() => inflight.delete(p));
  });
  /** Open WebSockets (the `ws` sockets), closed with 1001 by close(): each settles once its object handled the close. */
  const sockets = new Map();
  let upgrader = null;
  server.on('upgrade', (req, socket, head) => {
    if (closing !== null) {
      refuseUpgrade(socket, 503, 'Service Unavailable', 'Service Unavailable: the server is shutting down\n');
      return;
    }
    const p = upgrader(req, socket, head);
    inflight.add(p);
    p.finally(() => inflight.delete(p));
  });
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });

  try {
    await listen(server, opts.port, opts.host);
  } catch (err) {
    await objects.close();
    forget(token, env);
    if (err?.code === 'EADDRINUSE') err.message = `port ${opts.port} on ${opts.host} is in use (choose another with --port): ${err.message}`;
    throw err;
  }
  const port = server.address().port;
  const url = `http://${hostPort(opts.host, port)}`;
  listener = requestListener((request) => handler(request, env, executionContext(background, opts.log)), { origin: url, log: opts.log });
  upgrader = upgradeListener((request) => handler(request, env, executionContext(background, opts.log)), { origin: url, log: opts.log, toRequest, sockets });

  async function shutdown() {
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    for (const ws of sockets.keys()) ws.close(1001, 'server shutting down');
    const drained = await within(opts.drainMs, Promise.all([...inflight]));
    // A client that does not answer the close handshake is cut at the drain
    // bound; either way its object's close handler runs before the objects close.
    if (!(await within(drained ? opts.drainMs : 0, Promise.all([...sockets.values()])))) {
      for (const ws of sockets.keys()) ws.terminate();
      await within(opts.drainMs, Promise.all([...sockets.values()]));
    }
    // Requests still running past the bound lose their connection; their
    // objects still finish the commits they started before close() below.
    server.closeAllConnections();
    await closed;
    await within(drained ? opts.drainMs : 0, Promise.all([...background]));
    forget(token, env);
    await objects.close();
  }

  return {
    url,
    port,
    host: opts.host,
    warnings,
    /** A snapshot of the objects' directory into `dest` while they serve (docs/backups.md). */
    backup: (dest) => objects.backup(dest),
    /** Stops accepting, lets requests in flight finish (bounded), closes the objects. Idempotent. */
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}

/** Options checked, with messages that name them; paths resolved against cwd. */
function checkOptions(o) {
  if (o === null || typeof o !== 'object') throw new TypeError('serve() takes an options object');
  const cwd = path.resolve(o.cwd ?? process.cwd());
  const port = o.port ?? 8787;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`serve(): port must be an integer from 0 to 65535 (got ${port})`);
  const host = o.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host === '') throw new TypeError('serve(): host must be a non-empty string');
  const drainMs = o.drainMs ?? 10_000;
  if (!Number.isFinite(drainMs) || drainMs < 0) throw new RangeError(`serve(): drainMs must be a number of milliseconds, 0 or more (got ${drainMs})`);
  if (o.log !== undefined && typeof o.log !== 'function') throw new TypeError('serve(): log must be a function (line) => void');
  const log = o.log ?? ((line) => process.stderr.write(`durable-workers serve: ${line}\n`));
  return { cwd, port, host, drainMs, log, dir: path.resolve(cwd, o.dir ?? '.data') };
}

/** The entry module's absolute path: the argument, else the config's `main`; refused unless Node can import it. */
function entryOf(given, cwd, config) {
  if (given === undefined && config.main === null) {
    throw new DurableError(codes.CONFIG, `no entry module: pass one (serve <entry>) or set "main" in ${config.file}`);
  }
  const entry = given === undefined ? config.main : path.resolve(cwd, given);
  const ext = path.extname(entry);
  if (!JS.has(ext) && !TS.has(ext)) {
    throw new DurableError(codes.CONFIG, `${entry}: the entry must be an ES module ending in .js or .mjs, or TypeScript ending in .ts or .mts`);
  }
  if (!fs.statSync(entry, { throwIfNoEntry: false })?.isFile()) {
    throw new DurableError(codes.CONFIG, `the entry module ${entry} does not exist${given === undefined ? ` ("main" in ${config.file})` : ''}`);
  }
  return entry;
}

/**
 * The Worker's fetch as a function of (request, env, ctx): a default export
 * object's `fetch` (called as its method, as workerd does), or a
 * WorkerEntrypoint subclass instantiated per request with (ctx, env).
 */
function fetchHandler(def, entry, warnings) {
  if (typeof def === 'function' && def.prototype instanceof workers.WorkerEntrypoint) {
    if (typeof def.prototype.fetch !== 'function') warnings.push(`${entry}: the default export ${def.name} has no fetch(); every request will fail`);
    return (request, env, ctx) => {
      const instance = new def(ctx, env);
      if (typeof instance.fetch !== 'function') throw new TypeError('Handler does not export a fetch() function.');
      return instance.fetch(request);
    };
  }
  if (typeof def?.fetch !== 'function') {
    warnings.push(`${entry}: the default export has no fetch handler; every request will fail (export default { fetch(request, env, ctx) { … } })`);
    return () => {
      throw new TypeError('Handler does not export a fetch() function.');
    };
  }
  return (request, env, ctx) => def.fetch(request, env, ctx);
}

/** Resolves once listening; rejects with the listen error (EADDRINUSE, EACCES). */
function listen(server, port, host) {
  return new Promise((resolve, reject) => {
    const onError = (err) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** Whether `p` settled within `ms`. */
async function within(ms, p) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Which serve last filled `cloudflare:workers`'s env (a token per serve). */
let envOwner = null;

/** Puts this serve's bindings in the env `cloudflare:workers` exports (in place: apps hold that object). */
function claimEnv(env) {
  const token = {};
  envOwner = token;
  Object.assign(workers.env, env);
  return token;
}

/** Takes this serve's bindings out of `cloudflare:workers`'s env, unless a later serve has replaced them. */
function forget(token, env) {
  if (envOwner !== token) return;
  envOwner = null;
  for (const k of Object.keys(env)) delete workers.env[k];
}

/**
 * The `ctx` of one request to the Worker: `waitUntil` work is logged if it
 * fails and awaited (bounded) by close().
 */
function executionContext(background, log) {
  return {
    waitUntil(p) {
      const w = Promise.resolve(p).then(
        () => {},
        (err) => log(`waitUntil: ${err?.stack ?? err}`),
      );
      background.add(w);
      w.finally(() => background.delete(w));
    },
    // There is no origin behind this server to pass the request through to.
    passThroughOnException() {},
    props: {},
  };
}

function hostPort(host, port) {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

module.exports = { serve };
