'use strict';
// Inside workerd: the gateway service of a Peek deployment, and its two
// Durable Object classes.
//
//   PeekHub       one object ("hub"): the hibernating WebSockets. The host
//                 (the Node supervisor running createWorkerHost) holds one
//                 tagged 'host', over which schedules ask it to run a worker;
//                 channels hold ones tagged 'channel' (the pubsub protocol of
//                 ../../peek/channel-ws.js).
//   PeekWorker    one object per Peek worker: the Node adapter's class
//                 (../../peek/schedule-worker.js) as a Durable Object
//                 (toDurableObject), so its schedule is a `state.schedule`
//                 mapped onto the object's alarm, retried with the package's
//                 backoff (not the platform's six retries), and one run of
//                 the worker at a time (schedules and dispatched commands
//                 alike). Its runs go to the host through the hub.
//   PeekLog       one object per Peek worker: its runs' kept api.log records
//                 (../../peek/log-keeper.js, toDurableObject), written and read
//                 by the host at /peek/logs/<name>.
//   the store     the embedded store's PeekStore class, unchanged, as a
//                 Durable Object (toDurableObject), reached at
//                 POST /datastore/<method> with the worker's credential.
//
// Credentials are text bindings of this service (PEEK_CREDENTIAL_<NAME>,
// set by a deploy as `wrangler secret put` is), never bindings of a
// worker's service: a worker's isolate has no way to read them.
// Every other route needs the deployment's admin token.
const wire = require('../wire');
const { hostOf } = require('../calls');
const { PeekStore } = require('../../peek/store-embedded');
const { STORE_METHODS } = require('../../peek/store-methods');
const { peekWorkerClass } = require('../../peek/schedule-worker');
const { PeekLog } = require('../../peek/log-keeper');
const { matches } = require('../../peek/topics');
const { PING_PATH } = require('../ready');

const CREDENTIAL_PREFIX = 'PEEK_CREDENTIAL_';
/** What the host may ask of a worker's PeekLog. */
const LOG_OPS = new Set(['begin', 'append', 'read']);

const json = (v, status = 200) => new Response(JSON.stringify(v), { status, headers: { 'content-type': 'application/json' } });
const bearer = (request) => /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? null;
const hubOf = (env) => env.PEEK_HUB.get(env.PEEK_HUB.idFromName('hub'));

/** Constant-time enough for equal-length secrets. */
function same(a, b) {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}

/**
 * The gateway of a deployment.
 * @param {{ DurableObject: new (ctx: any, env: any) => object, toDurableObject: Function, env: object }} platform
 *   from cloudflare:workers and ../workerd.mjs; `env` is read only when a run starts
 */
function gateway({ DurableObject, toDurableObject, env }) {
  const PeekWorker = peekWorkerClass({
    run: (name, manifestPath, trigger) => hubOf(env).run(name, manifestPath, trigger),
    get retries() {
      return Number(env.PEEK_RETRIES ?? 3);
    },
    log: (record) => console.warn(JSON.stringify(record)),
  });
  const workerOf = (name) => hostOf(env).get(PeekWorker, name);
  return {
    PeekHub: hubClass(DurableObject, workerOf),
    PeekWorkerObject: toDurableObject(PeekWorker, { binding: 'PEEK_WORKER' }),
    PeekLogObject: toDurableObject(PeekLog, { binding: 'PEEK_LOG' }),
    fetch: (request, env) => fetchHandler(request, env, workerOf),
  };
}

async function fetchHandler(request, env, workerOf) {
  const url = new URL(request.url);
  if (url.pathname === PING_PATH) return new Response(env.PEEK_READY_TOKEN ?? '');
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'datastore' && parts.length === 2 && request.method === 'POST') return datastore(request, env, parts[1]);
  if (parts[0] !== 'peek') return new Response('not found', { status: 404 });
  // The token only ever in a header: a URL ends up in access logs.
  const token = bearer(request);
  if (!same(token, env.PEEK_ADMIN_TOKEN)) return new Response('unauthorized', { status: 401 });
  const [, what, name] = parts;
  switch (what) {
    case 'credential': {
      const suffix = String(name)
        .toUpperCase()
        .replace(/[^A-Z0-9]/g, '_');
      const v = env[CREDENTIAL_PREFIX + suffix];
      return typeof v === 'string' && v.length > 0 ? json({ credential: v }) : json({ credential: null }, 404);
    }
    case 'realm': {
      const binding = JSON.parse(env.PEEK_WORKERS)[name];
      if (binding === undefined) return json({ error: `worker ${name} is not in this deployment` }, 404);
      return env[binding].fetch(request);
    }
    case 'host':
    case 'channel':
      return hubOf(env).fetch(request);
    case 'schedule': {
      const w = workerOf(name);
      if (request.method === 'PUT') return json(await w.setSchedule(await request.json()));
      if (request.method === 'DELETE') return json(await w.cancelSchedule());
      return json(await w.schedule());
    }
    case 'logs': {
      const { op, args } = wire.decode(await request.text());
      if (request.method !== 'POST' || !LOG_OPS.has(op) || !Array.isArray(args)) return new Response('not a log operation', { status: 400 });
      const log = hostOf(env).get(PeekLog, name);
      return new Response(wire.encode(await log[op](...args)));
    }
    case 'dispatch': {
      const body = wire.decode(await request.text());
      return new Response(wire.encode(await workerOf(name).dispatch(body.manifestPath, body.trigger)));
    }
    default:
      return new Response('not found', { status: 404 });
  }
}

async function datastore(request, env, method) {
  const token = bearer(request);
  const granted = token !== null && Object.keys(env).some((k) => k.startsWith(CREDENTIAL_PREFIX) && same(env[k], token));
  if (!granted) return json({ error: 'the credential is not one this deployment holds' }, 401);
  if (!STORE_METHODS.includes(method)) return json({ error: `${method} is not a datastore method` }, 404);
  let args;
  try {
    ({ args = [] } = await request.json());
  } catch {
    return json({ error: 'the body must be JSON { "args": [...] }' }, 400);
  }
  const [user, profile] = JSON.parse(env.PEEK_STORE_SESSION);
  try {
    const store = hostOf(env).get(PeekStore, JSON.stringify([user, profile]));
    return json({ data: await store[method](...args) });
  } catch (err) {
    return json({ error: String(err?.message ?? err) }, 400);
  }
}

/**
 * @param {new (ctx: any, env: any) => object} DurableObject from cloudflare:workers
 * @param {(name: string) => any} workerOf a Peek worker's PeekWorker stub
 */
function hubClass(DurableObject, workerOf) {
  return class PeekHub extends DurableObject {
    #pending = new Map();
    #next = 1;

    async fetch(request) {
      const url = new URL(request.url);
      if (request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return new Response('expected a WebSocket upgrade', { status: 426 });
      const [client, server] = Object.values(new WebSocketPair());
      if (url.pathname.endsWith('/host')) {
        this.ctx.acceptWebSocket(server, ['host']);
        // Schedules that fell due while no host was connected run now.
        const waiting = (await this.ctx.storage.get('waiting')) ?? [];
        await this.ctx.storage.delete('waiting');
        for (const name of waiting)
          this.ctx.waitUntil(
            workerOf(name)
              .wake()
              .catch(() => {}),
          );
      } else {
        this.ctx.acceptWebSocket(server, ['channel']);
        server.serializeAttachment({ topics: [] });
      }
      return new Response(null, { status: 101, webSocket: client });
    }

    /** Asks the connected host to run a worker; { noHost: true } when none is connected. */
    async run(name, manifestPath, trigger) {
      const host = this.ctx.getWebSockets('host')[0];
      if (host === undefined) {
        const waiting = (await this.ctx.storage.get('waiting')) ?? [];
        if (!waiting.includes(name)) await this.ctx.storage.put('waiting', [...waiting, name]);
        return { noHost: true };
      }
      const id = this.#next++;
      const answer = new Promise((resolve) => this.#pending.set(id, { resolve, ws: host }));
      host.send(wire.encode({ t: 'run', id, name, manifestPath, trigger }));
      return answer;
    }

    webSocketMessage(ws, data) {
      const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
      if (this.ctx.getTags(ws).includes('host')) {
        const m = wire.decode(text);
        if (m.t !== 'ran') return;
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        p?.resolve(m.result);
        return;
      }
      let m;
      try {
        m = JSON.parse(text);
      } catch {
        return;
      }
      const att = ws.deserializeAttachment() ?? { topics: [] };
      if (m.type === 'subscribe' || m.type === 'unsubscribe') {
        const topics = new Set(att.topics);
        for (const t of m.topics ?? []) m.type === 'subscribe' ? topics.add(String(t)) : topics.delete(String(t));
        ws.serializeAttachment({ topics: [...topics] });
      } else if (m.type === 'publish' && typeof m.topic === 'string') {
        const out = JSON.stringify({ type: 'message', topic: m.topic, message: m.message });
        for (const other of this.ctx.getWebSockets('channel')) {
          const subs = other.deserializeAttachment()?.topics ?? [];
          if (matches(subs, m.topic)) other.send(out);
        }
      }
    }

    webSocketClose(ws, code) {
      this.#hostGone(ws);
      try {
        ws.close(code === 1005 ? 1000 : code, 'closing');
      } catch {
        // Already closed.
      }
    }

    webSocketError(ws) {
      this.#hostGone(ws);
    }

    #hostGone(ws) {
      for (const [id, p] of this.#pending) {
        if (p.ws !== ws) continue;
        this.#pending.delete(id);
        p.resolve({ ok: false, error: { name: 'Error', code: 'ERR_PEEK_CLOSED', message: 'the host disconnected during the run' }, ms: 0 });
      }
    }
  };
}

module.exports = { gateway };
