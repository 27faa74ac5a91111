'use strict';
// The program of a run's process (forked by realm.js). It boots with nothing
// of any worker loaded: registers the loader hooks and says 'ready'. That is
// the warm spare. When a job arrives it builds `api` from the parent's shape
// description, installs globalThis.app, window.app and the guarded fetch,
// imports the worker, and runs the entry the parent names. One job per
// process: the parent kills it when the run ends.
//
// Messages in:  job, invoke, reply, abort.
// Messages out: ready, loaded, call, cast, net, result, settled.
const { register } = require('node:module');
const { pathToFileURL } = require('node:url');
const path = require('node:path');
const { buildFromShape } = require('../api-shape');
const { guardedFetch } = require('./guarded-fetch');
const { toPlainError, fromPlainError } = require('../errors');
const { codes: durableCodes } = require('../../errors');

const now = () => performance.timeOrigin + performance.now();

register(pathToFileURL(path.join(__dirname, 'hooks.mjs')));

// A run never outlives its supervisor: if the parent dies (even SIGKILLed),
// the channel closes and so does this process.
process.on('disconnect', () => process.exit(70));

let api = null;
let mod = null;
const abort = new AbortController();
const pending = new Map();
let nextCall = 1;

function send(message) {
  try {
    process.send(message);
  } catch (err) {
    // A value that cannot be cloned: report that instead of the value.
    if (message.t === 'call' || message.t === 'cast' || message.t === 'result') {
      const e = toPlainError(Object.assign(new Error(`a value could not be sent to the host: ${err.message}`), { code: durableCodes.UNCLONEABLE }));
      if (message.t === 'result') process.send({ t: 'result', ok: false, error: e, pending: 0, at: now() });
      else if (message.t === 'call') pending.get(message.id)?.reject(fromPlainError(e));
      return;
    }
    throw err;
  }
}

const io = {
  call: (callPath, args) =>
    new Promise((resolve, reject) => {
      const id = nextCall++;
      pending.set(id, { resolve, reject });
      send({ t: 'call', id, path: callPath, args });
    }),
  cast: (callPath, args) => {
    send({ t: 'cast', path: callPath, args });
  },
  locals: {},
};

async function onJob(job) {
  const start = now();
  io.locals.fetch = guardedFetch({
    domains: job.domains,
    signal: abort.signal,
    report: (r) => send({ t: 'net', ...r }),
  });
  api = buildFromShape(job.shape, io);
  // Installed before the import: a module that reads window.app on its first
  // line (as bundled features do) must find this run's api, and bare fetch()
  // must be the guarded one.
  globalThis.app = api;
  globalThis.window = { app: api };
  globalThis.fetch = io.locals.fetch;
  const importStart = now();
  try {
    mod = await import(job.href);
  } catch (err) {
    send({ t: 'loaded', ok: false, error: toPlainError(err), timing: { start, importStart, importEnd: now() } });
    return;
  }
  const exportsList = Object.keys(mod).map((name) => [name, typeof mod[name]]);
  send({ t: 'loaded', ok: true, exports: exportsList, timing: { start, importStart, importEnd: now() } });
}

async function onInvoke({ name, trigger, deadline }) {
  const waits = [];
  const ctx = Object.freeze({
    trigger,
    deadline,
    signal: abort.signal,
    waitUntil(p) {
      waits.push(Promise.resolve(p));
    },
  });
  const runStart = now();
  let result;
  try {
    const value = await mod[name](api, ctx);
    result = { t: 'result', ok: true, value, pending: waits.length, timing: { runStart, runEnd: now() } };
  } catch (err) {
    result = { t: 'result', ok: false, error: toPlainError(err), pending: 0, timing: { runStart, runEnd: now() } };
  }
  send(result);
  if (result.ok && waits.length > 0) {
    const settled = await Promise.allSettled(waits);
    send({ t: 'settled', errors: settled.filter((s) => s.status === 'rejected').map((s) => toPlainError(s.reason)) });
  }
}

process.on('message', (m) => {
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

send({ t: 'ready', origin: performance.timeOrigin, at: now() });
