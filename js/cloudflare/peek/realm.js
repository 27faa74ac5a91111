'use strict';
// Inside workerd: the realm of one Peek worker. Each Peek worker of a
// deployment is its own workerd service, so its own V8 isolate
// (isolation: 'isolate-per-worker'); its module graph is bundled at deploy
// time as a factory function (./build.js), and every run calls the factory
// again, so every run evaluates the module graph afresh without eval.
//
// A run is one WebSocket from the host (Node) speaking the realm protocol
// (../../peek/protocol/realm-side.js, the same module a Node run's process
// uses) over JSON text frames in the wire codec:
//   in:  job { shape, domains }, invoke { name, trigger, deadline }, reply, abort
//   out: loaded, call, cast, net, result, settled
// `api` is built there from the host's shape description: its functions are
// messages back to the host, so the credential and the store never enter
// the isolate. Once the run is over (the socket closes), nothing the worker
// left behind (a timer) can reach the host any more.
const { createRealmRuntime } = require('../../peek/protocol/realm-side');
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
  const runtime = createRealmRuntime({
    send: (m) => {
      if (!open) return false;
      ws.send(wire.encode(m, () => `a ${m.t} message`));
      return true;
    },
    load: () => load(),
    platformFetch,
  });
  const end = () => {
    open = false;
    runtime.end();
  };
  ws.addEventListener('message', (event) => {
    let m;
    try {
      m = wire.decode(typeof event.data === 'string' ? event.data : new TextDecoder().decode(event.data));
    } catch {
      return;
    }
    runtime.onMessage(m);
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
