'use strict';
// The realm protocol, realm side: what runs next to the worker (a forked
// Node process, node/child.js; a workerd service, cloudflare/peek/realm.js).
// It builds `api` from the host's shape description (its functions are
// messages back to the host, so the credential and the store never enter the
// realm), installs globalThis.app, window.app and the guarded fetch before the
// module graph loads, runs the entry the host names with a RunContext, and
// reports the result and, after it, the settling of ctx.waitUntil work. What
// the worker registers for the run (lifecycle hooks, handlers) is ./lifecycle.js.
//
// Messages in:  job { shape, domains, … }, invoke { name, trigger, deadline }, reply, abort.
// Messages out: loaded, call, cast, net, result, settled.
const { buildFromShape } = require('../api-shape');
const { guardedFetch } = require('../node/guarded-fetch');
const { makeRunContext } = require('../run-context');
const { Lifecycle } = require('./lifecycle');
const { codes, peekError, toPlainError, fromPlainError } = require('../errors');
const { codes: durableCodes } = require('../../api/errors');

const now = () => (typeof performance === 'object' ? (performance.timeOrigin ?? 0) + performance.now() : Date.now());

/**
 * @param {{
 *   send: (message: object) => boolean | void,  the transport; throws for a value it cannot carry, false once closed
 *   load: (job: object) => Promise<Record<string, unknown>> | Record<string, unknown>,  evaluates the worker's module graph
 *   platformFetch?: typeof fetch,
 *   relayFetch?: (io: { ask: Function, cancel: Function }) => typeof fetch,  a realm with no network: its fetch asks the host (../node/fetch-relay.js)
 * }} transport
 * @returns {{ onMessage: (m: object) => void, end: () => void }}
 */
function createRealmRuntime({ send: transportSend, load, platformFetch = globalThis.fetch, relayFetch = null }) {
  let mod = null;
  let api = null;
  let lifecycle = new Lifecycle();
  let nextCall = 1;
  const pending = new Map();
  const abort = new AbortController();
  const locals = {};

  // A value that cannot cross is reported instead of the value; a log line
  // (cast) is not worth failing the run.
  const send = (m) => {
    try {
      return transportSend(m) !== false;
    } catch (err) {
      if (m.t === 'cast') return false;
      const e = peekErrorLike(`a value could not be sent to the host: ${err?.message ?? err}`);
      if (m.t === 'result') return transportSend({ t: 'result', ok: false, error: e, pending: 0, timing: m.timing }) !== false;
      if (m.t === 'settled') return transportSend({ t: 'settled', errors: [e] }) !== false;
      throw fromPlainError(e);
    }
  };

  // A message that the host answers with a 'reply' of the same id.
  const ask = (message) => {
    const id = nextCall++;
    const answer = new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      try {
        if (!send({ ...message, id })) throw peekError(codes.CLOSED, 'the run has ended');
      } catch (err) {
        pending.delete(id);
        reject(err);
      }
    });
    return { id, answer };
  };
  const relay = {
    ask: (fields) => ask({ ...fields, t: 'fetch' }),
    cancel: (id) => {
      if (pending.delete(id)) send({ t: 'fetch-abort', id });
    },
  };

  const io = {
    call: (path, args) => ask({ t: 'call', path, args }).answer,
    cast: (path, args) => {
      send({ t: 'cast', path, args });
    },
    locals,
  };

  const installGlobals = () => {
    globalThis.app = api;
    globalThis.window = { app: api };
    globalThis.fetch = locals.fetch;
  };

  async function onJob(job) {
    const start = now();
    locals.fetch = relayFetch !== null ? relayFetch(relay) : guardedFetch({ domains: job.domains, signal: abort.signal, report: (r) => send({ t: 'net', ...r }), fetch: platformFetch });
    lifecycle = new Lifecycle(job.grants);
    Object.assign(locals, lifecycle.locals());
    api = buildFromShape(job.shape, io);
    // Installed before the module graph is evaluated: a module that reads
    // window.app on its first line (as bundled features do) must find this
    // run's api, and bare fetch() must be the guarded one.
    installGlobals();
    const importStart = now();
    try {
      mod = await load(job);
    } catch (err) {
      send({ t: 'loaded', ok: false, error: toPlainError(err), timing: { start, importStart, importEnd: now() } });
      return;
    }
    send({ t: 'loaded', ok: true, exports: Object.keys(mod).map((name) => [name, typeof mod[name]]), timing: { start, importStart, importEnd: now() } });
  }

  async function onInvoke({ name, trigger, deadline }) {
    const { ctx, waits } = makeRunContext({ trigger, deadline, signal: abort.signal });
    // A run reads the globals of its own run: set them again (in a realm
    // that outlives a run, another run may have replaced them meanwhile).
    installGlobals();
    const runStart = now();
    const ended = (ok, valueOrError) =>
      ok
        ? { t: 'result', ok: true, value: valueOrError, pending: waits.length, timing: { runStart, runEnd: now() } }
        : { t: 'result', ok: false, error: toPlainError(valueOrError), pending: 0, timing: { runStart, runEnd: now() } };
    let result;
    try {
      await lifecycle.initialize(ctx);
      const handler = lifecycle.handlerFor(trigger);
      result = ended(true, handler !== null ? await handler(ctx) : await mod[name](api, ctx));
    } catch (err) {
      result = ended(false, err);
    }
    if (!lifecycle.hasShutdown) {
      lifecycle.end();
      send(result);
      if (result.ok && waits.length > 0) send({ t: 'settled', errors: await settle(waits) });
      return;
    }
    // onShutdown hooks come last, after the waitUntil work (theirs too): the
    // result waits for them, since a throw there fails the run.
    const errors = result.ok ? await settle(waits) : [];
    const handedOver = waits.length;
    const failed = await lifecycle.shutdown(ctx);
    if (waits.length > handedOver) errors.push(...(await settle(waits.slice(handedOver))));
    if (failed !== null && result.ok) result = { ...ended(false, failed), timing: result.timing };
    if (result.ok) result.pending = waits.length;
    send(result);
    if (result.ok && waits.length > 0) send({ t: 'settled', errors });
  }

  return {
    onMessage(m) {
      if (!m || typeof m.t !== 'string') return;
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
    },
    /** The transport is gone: the signal aborts, pending api calls fail. */
    end() {
      if (!abort.signal.aborted) abort.abort(peekError(codes.CLOSED, 'the run has ended'));
      for (const p of pending.values()) p.reject(peekError(codes.CLOSED, 'the run has ended'));
      pending.clear();
    },
  };
}

async function settle(waits) {
  const settled = await Promise.allSettled(waits);
  return settled.filter((s) => s.status === 'rejected').map((s) => toPlainError(s.reason));
}

function peekErrorLike(message) {
  return toPlainError(Object.assign(new Error(message), { code: durableCodes.UNCLONEABLE }));
}

module.exports = { createRealmRuntime };
