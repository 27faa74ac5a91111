'use strict';
// Inside workerd: the realm of one Peek worker. Each Peek worker of a
// deployment is its own workerd service, so its own V8 isolate
// (isolation: 'isolate-per-worker'); its module graph is bundled at deploy
// time as a factory function (./build.js), and every run calls the factory
// again, so every run evaluates the module graph afresh without eval.
//
// A run is one WebSocket from the host (Node), the protocol of
// ../../peek/node/child.js over JSON text frames in the wire codec:
//   in:  job { shape, domains }, invoke { name, trigger, deadline }, reply, abort
//   out: loaded, call, cast, net, result, settled
// `api` is built here from the host's shape description: its functions are
// messages back to the host, so the credential and the store never enter
// the isolate. Once the run is over (the socket closes), nothing the worker
// left behind (a timer) can reach the host any more.
const { buildFromShape } = require('../../peek/api-shape');
const { guardedFetch } = require('../../peek/node/guarded-fetch');
const { codes, peekError, toPlainError, fromPlainError } = require('../../peek/errors');
const wire = require('../wire');

// The platform's fetch, taken before any worker replaces globalThis.fetch.
const platformFetch = globalThis.fetch.bind(globalThis);

/**
 * The fetch handler of a worker's service.
 * @param {(require: (name: string) => unknown) => Record<string, unknown>} factory the bundled module graph
 * @param {Record<string, unknown>} builtins node: modules the graph imports, by specifier
 */
function realmHandler(factory, builtins) {
  const requireBuiltin = (name) => {
    const m = builtins[name] ?? builtins[`node:${name}`];
    if (m === undefined) throw new Error(`Cannot find module '${name}' (not in this worker's bundle)`);
    return m.default ?? m;
  };
  return {
    fetch(request) {
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return new Response('a Peek realm answers WebSocket runs only', { status: 426 });
      const [client, server] = Object.values(new WebSocketPair());
      server.accept();
      serve(server, () => factory(requireBuiltin));
      return new Response(null, { status: 101, webSocket: client });
    },
  };
}

function serve(ws, load) {
  let open = true;
  let mod = null;
  let api = null;
  let nextCall = 1;
  const pending = new Map();
  const abort = new AbortController();

  const send = (m) => {
    if (!open) return false;
    let text;
    try {
      text = wire.encode(m, () => `a ${m.t} message`);
    } catch (err) {
      if (m.t === 'result') text = wire.encode({ t: 'result', ok: false, error: toPlainError(err), pending: 0 });
      else throw err;
    }
    ws.send(text);
    return true;
  };
  const io = {
    call: (path, args) =>
      new Promise((resolve, reject) => {
        const id = nextCall++;
        pending.set(id, { resolve, reject });
        try {
          if (!send({ t: 'call', id, path, args })) throw peekError(codes.CLOSED, 'the run has ended');
        } catch (err) {
          pending.delete(id);
          reject(err);
        }
      }),
    cast: (path, args) => {
      try {
        send({ t: 'cast', path, args });
      } catch {
        // An argument that cannot cross: a log line is not worth failing the run.
      }
    },
    locals: {},
  };

  const onJob = (job) => {
    io.locals.fetch = guardedFetch({ domains: job.domains, signal: abort.signal, report: (r) => send({ t: 'net', ...r }), fetch: platformFetch });
    api = buildFromShape(job.shape, io);
    // Installed before the module graph is evaluated: a module that reads
    // window.app on its first line must find this run's api.
    globalThis.app = api;
    globalThis.window = { app: api };
    globalThis.fetch = io.locals.fetch;
    try {
      mod = load();
    } catch (err) {
      send({ t: 'loaded', ok: false, error: toPlainError(err) });
      return;
    }
    send({ t: 'loaded', ok: true, exports: Object.keys(mod).map((name) => [name, typeof mod[name]]) });
  };

  const onInvoke = async ({ name, trigger, deadline }) => {
    const waits = [];
    const ctx = Object.freeze({
      trigger,
      deadline,
      signal: abort.signal,
      waitUntil(p) {
        waits.push(Promise.resolve(p));
      },
    });
    // A run reads the globals of its own run: set them again (another run of
    // the same worker in this isolate may have replaced them meanwhile).
    globalThis.app = api;
    globalThis.window = { app: api };
    globalThis.fetch = io.locals.fetch;
    let result;
    try {
      const value = await mod[name](api, ctx);
      result = { t: 'result', ok: true, value, pending: waits.length };
    } catch (err) {
      result = { t: 'result', ok: false, error: toPlainError(err), pending: 0 };
    }
    send(result);
    if (result.ok && waits.length > 0) {
      const settled = await Promise.allSettled(waits);
      send({ t: 'settled', errors: settled.filter((s) => s.status === 'rejected').map((s) => toPlainError(s.reason)) });
    }
  };

  const end = () => {
    open = false;
    if (!abort.signal.aborted) abort.abort(peekError(codes.CLOSED, 'the run has ended'));
    for (const p of pending.values()) p.reject(peekError(codes.CLOSED, 'the run has ended'));
    pending.clear();
  };

  ws.addEventListener('message', (event) => {
    let m;
    try {
      m = wire.decode(typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data));
    } catch {
      return;
    }
    switch (m.t) {
      case 'job':
        onJob(m);
        break;
      case 'invoke':
        onInvoke(m);
        break;
      case 'reply': {
        const p = pending.get(m.id);
        if (!p) return;
        pending.delete(m.id);
        if (m.ok) p.resolve(m.value);
        else p.reject(fromPlainError(m.error));
        break;
      }
      case 'abort':
        abort.abort(fromPlainError(m.reason));
        break;
    }
  });
  ws.addEventListener('close', () => {
    end();
    try {
      ws.close(1000, 'run over');
    } catch {}
  });
  ws.addEventListener('error', end);
}

module.exports = { realmHandler };
