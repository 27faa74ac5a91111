'use strict';
// cloudflareAdapter(): the Peek PlatformAdapter on workerd (and, deployed the
// same way, Cloudflare). The shared host (../../peek/host.js) stays in Node,
// as with nodeAdapter; what the platform supplies is in workerd:
//
//   loadWorkerModule  a build-time map (codeLoad 'deploy'): every worker is
//                     bundled into the deployment as a factory, in its own
//                     service (isolation 'isolate-per-worker'); a run is a
//                     WebSocket to that service (./realm.js, ./realm-client.js)
//   readCredential    a text binding of the gateway (a secret), read by the host
//   ensureSchedule    the schedule of the worker's PeekWorker Durable Object
//   openChannel       hibernating WebSockets on the PeekHub Durable Object
//   runLog, readLogs  the worker's PeekLog Durable Object (kept api.log records)
//   the datastore     the embedded store's class as a Durable Object
//
// The adapter builds the deployment in `dir` and, unless given a `url`,
// runs it on the pinned local workerd.
const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { loadManifest, resolveRef, deepFreeze } = require('../../peek/manifest');
const { credentialReader, credentialEnvName } = require('../../peek/credentials');
const { remoteStore } = require('../../peek/store-remote');
const { WsHub } = require('../../peek/channel-ws');
const { codes, peekError, toPlainError, fromPlainError } = require('../../peek/errors');
const { commonOptions, schedulerDeclaration, scheduleInterval, channelTopics } = require('../../peek/adapter-common');
const wire = require('../wire');
const { bundle, writeConfig } = require('./build');
const { WorkerdRealm } = require('./realm-client');

/** Manifest paths from a list of paths and directories (<dir>/*.json and <dir>/<name>/manifest.json). */
function manifestPaths(workers) {
  const out = [];
  for (const w of [workers].flat()) {
    const p = path.resolve(String(w));
    if (fs.statSync(p, { throwIfNoEntry: false })?.isDirectory()) {
      for (const e of fs.readdirSync(p, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
        if (e.isFile() && e.name.endsWith('.json') && e.name !== 'package.json') out.push(path.join(p, e.name));
        else if (e.isDirectory() && fs.existsSync(path.join(p, e.name, 'manifest.json'))) out.push(path.join(p, e.name, 'manifest.json'));
      }
    } else out.push(p);
  }
  return out;
}

/**
 * @param {import('../../../cloudflare').CloudflareAdapterOptions} options
 * @returns {import('../../../cloudflare').CloudflareAdapter}
 */
function cloudflareAdapter(options = {}) {
  const o = checkOptions(options);
  const log = o.log;
  const readLocalCredential = credentialReader(o.credentials);
  const secretOverrides = new Map();
  let deployment = null; // { workers, outDir, dataDir, port, adminToken }
  let deploying = null;
  let workerd = null; // the local workerd process, when this adapter runs it
  let url = o.url;
  let host = null;
  let hostSocket = null; // { close() }
  let started = false;
  let hub = null;
  let closed = false;

  const declares = deepFreeze({
    name: 'cloudflare-workerd',
    scheduler: schedulerDeclaration(o),
    run: {
      maxWallClockMs: o.maxWallClockMs,
      // Local workerd enforces no CPU or memory limit (Cloudflare: 30 s CPU
      // by default, 128 MB per isolate) and no outbound cap (Cloudflare: 6).
      maxCpuMs: 'unbounded',
      memoryMb: 'unbounded',
      singleFlight: true,
      maxOutboundConcurrency: 'unbounded',
      // Measured on local workerd; Cloudflare's edge pins the clock between I/O.
      clockAdvancesWithoutIo: true,
    },
    network: { enforcement: 'guard-rail' },
    install: { codeLoad: 'deploy' },
    isolation: 'isolate-per-worker',
  });

  const alive = () => {
    if (closed) throw peekError(codes.CLOSED, 'the adapter is closed');
  };
  const wsBase = () => url.replace(/^http/, 'ws');
  const admin = (p, init = {}) => {
    alive();
    return fetch(`${url}${p}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${deployment.adminToken}` } });
  };
  /** An operation on a worker's PeekLog object, through the gateway. */
  const logOp = async (name, op, args) => {
    await ready();
    const res = await admin(`/peek/logs/${encodeURIComponent(name)}`, { method: 'POST', body: wire.encode({ op, args }) });
    if (!res.ok) throw new Error(`${name}: its kept log (${op}): workerd answered ${res.status}: ${await res.text()}`);
    return wire.decode(await res.text());
  };
  const secrets = () => {
    const out = {};
    for (const name of Object.keys(deployment.workers)) {
      const v = secretOverrides.has(name) ? secretOverrides.get(name) : readLocalCredential(name);
      if (v) out[name] = v;
    }
    return out;
  };
  const configure = () =>
    writeConfig({
      outDir: deployment.outDir,
      dataDir: deployment.dataDir,
      port: deployment.port,
      workers: deployment.workers,
      secrets: secrets(),
      adminToken: deployment.adminToken,
      retries: o.retries,
      session: [o.store.user, o.store.profile],
      allowLocalNetwork: o.allowLocalNetwork,
    });

  async function deploy() {
    alive();
    if (deployment === null) {
      deploying ??= (async () => {
        const manifests = manifestPaths(o.workers).map((p) => loadManifest(p));
        const outDir = path.join(o.dir, 'build');
        fs.rmSync(outDir, { recursive: true, force: true });
        const { workers } = await bundle({ manifests, outDir });
        const tokenFile = path.join(o.dir, 'admin-token');
        const adminToken = fs.existsSync(tokenFile) ? fs.readFileSync(tokenFile, 'utf8').trim() : randomBytes(24).toString('hex');
        fs.writeFileSync(tokenFile, adminToken, { mode: 0o600 });
        const port = o.port ?? (await require('../process').freePort());
        deployment = { workers, outDir, dataDir: path.join(o.dir, 'data'), port, adminToken };
        if (o.url === undefined) url = `http://127.0.0.1:${port}`;
      })();
      try {
        await deploying;
      } finally {
        deploying = null;
      }
    }
    const config = configure();
    if (o.url === undefined && workerd !== null) {
      // A new config is a new deployment: restart workerd on it. workerd
      // drains open sockets on SIGTERM; the host's is closed first and
      // opened again after, a channel's reconnects by itself.
      const wasStarted = started;
      if (wasStarted) await adapter.stop();
      await workerd.stop(500);
      workerd = null;
      await runWorkerd(config);
      if (wasStarted) await adapter.start();
    }
    return config;
  }

  async function runWorkerd(config) {
    const { startWorkerd } = require('../process');
    workerd = await startWorkerd({ config, port: deployment.port, onOutput: (line) => log({ level: 'warn', worker: 'workerd', args: [line] }) });
  }

  /** The host's control socket: the hub sends { t: 'run' } over it for schedules and dispatches. */
  function connectHost() {
    const WebSocket = require('ws');
    let ws = null;
    let stopped = false;
    let delay = 100;
    let timer = null;
    const connect = () => {
      if (stopped) return;
      ws = new WebSocket(`${wsBase()}/peek/host`, { headers: { authorization: `Bearer ${deployment.adminToken}` } });
      ws.on('open', () => {
        delay = 100;
      });
      ws.on('message', async (data) => {
        const m = wire.decode(String(data));
        if (m.t !== 'run') return;
        let result;
        if (host === null) result = { ok: false, error: toPlainError(peekError(codes.CLOSED, 'no worker host is attached to this adapter (createWorkerHost({ adapter }))')), ms: 0 };
        else {
          const r = await host.run(m.manifestPath, m.trigger).catch((error) => ({ ok: false, error, ms: 0 }));
          result = r.ok ? r : { ok: false, error: toPlainError(r.error), ms: r.ms };
        }
        const current = ws;
        if (current.readyState === 1) {
          try {
            current.send(wire.encode({ t: 'ran', id: m.id, result }));
          } catch (err) {
            current.send(wire.encode({ t: 'ran', id: m.id, result: { ok: false, error: toPlainError(err), ms: result.ms } }));
          }
        }
      });
      ws.on('error', () => {});
      ws.on('close', () => {
        if (stopped) return;
        timer = setTimeout(connect, delay);
        delay = Math.min(delay * 2, 2000);
      });
    };
    const opened = new Promise((resolve) => {
      connect();
      const check = () => (ws.readyState === 1 ? resolve() : stopped ? resolve() : setTimeout(check, 10));
      check();
    });
    return {
      opened,
      async close() {
        stopped = true;
        clearTimeout(timer);
        if (ws && ws.readyState <= 1) {
          const done = new Promise((r) => ws.once('close', r));
          ws.close();
          const t = setTimeout(() => ws.terminate(), 1000);
          await done;
          clearTimeout(t);
        }
      },
    };
  }

  const ready = async () => {
    alive();
    if (deployment === null) await deploy();
    if (o.url === undefined && workerd === null) await runWorkerd(configure());
  };

  const adapter = {
    declares,
    get dir() {
      return o.dir;
    },
    /** The gateway's URL (after deploy()/start()). */
    get url() {
      return url;
    },
    /** The deployed workers: name → { service, path, manifestPath, builtins }. */
    get workers() {
      return deployment?.workers ?? null;
    },

    attachHost(h) {
      host = h;
    },

    /** Bundles every worker and writes the config (and restarts a running local workerd on it). */
    deploy,

    /**
     * Sets a worker's credential binding and redeploys (a restart of the
     * local workerd, as `wrangler secret put` is a new deployment). Resolves
     * to a function that puts the previous value back the same way.
     */
    async putSecret(name, value) {
      const had = secretOverrides.has(name);
      const before = secretOverrides.get(name);
      secretOverrides.set(name, value);
      if (deployment !== null) await deploy();
      return async () => {
        if (had) secretOverrides.set(name, before);
        else secretOverrides.delete(name);
        if (deployment !== null && !closed) await deploy();
      };
    },

    async readCredential(manifest) {
      await ready();
      const res = await admin(`/peek/credential/${encodeURIComponent(manifest.name)}`);
      if (res.status === 404) return undefined;
      if (!res.ok) throw peekError(codes.CREDENTIAL, `worker ${manifest.name}: workerd answered ${res.status} for its credential`);
      return (await res.json()).credential;
    },

    credentialHint(manifest) {
      return `set ${credentialEnvName(manifest.name)} (or adapter.putSecret(${JSON.stringify(manifest.name)}, value)) and redeploy: the credential is a binding of the deployment`;
    },

    async openStore(manifest, credential) {
      await ready();
      return remoteStore({ url, credential });
    },

    async openRealm(manifest, { signal }) {
      await ready();
      const w = deployment.workers[manifest.name];
      if (w === undefined || w.path !== manifest.worker.path) {
        throw peekError(
          codes.MANIFEST,
          `worker ${manifest.name} (${manifest.worker.path}) is not in this deployment: on workerd code is loaded at deploy time (codeLoad 'deploy'); add it to cloudflareAdapter({ workers }) and deploy`,
        );
      }
      const realm = new WorkerdRealm(`${wsBase()}/peek/realm/${encodeURIComponent(manifest.name)}`, deployment.adminToken, manifest, { signal, log });
      await realm.ready();
      return realm;
    },

    async ensureSchedule(ref, spec) {
      const manifest = resolveRef(ref);
      const intervalMs = scheduleInterval(manifest, spec);
      await ready();
      const res = await admin(`/peek/schedule/${encodeURIComponent(manifest.name)}`, { method: 'PUT', body: JSON.stringify({ manifestPath: manifest.manifestPath, spec: spec.trim(), intervalMs }) });
      if (!res.ok) throw peekError(codes.SCHEDULE, `${manifest.name}: workerd answered ${res.status}: ${await res.text()}`);
      return res.json();
    },

    async cancelSchedule(ref) {
      const name = typeof ref === 'string' && !ref.endsWith('.json') ? ref : resolveRef(ref).name;
      await ready();
      const res = await admin(`/peek/schedule/${encodeURIComponent(name)}`, { method: 'DELETE' });
      return res.json();
    },

    /** A run's api.log records go to the worker's PeekLog object. */
    runLog(name) {
      if (closed) return null;
      return { begin: (what) => logOp(name, 'begin', [what]), append: (run, records) => logOp(name, 'append', [run, records]) };
    },

    /** A worker's kept records, oldest first: { runs, records: [{ seq, run, at, level, text }] }. */
    readLogs(name, query = {}) {
      return logOp(name, 'read', [query]);
    },

    /** Runs a worker through its PeekWorker object: one run of a worker at a time, whatever the triggers. */
    async dispatch(ref, trigger) {
      const manifest = resolveRef(ref);
      await ready();
      const res = await admin(`/peek/dispatch/${encodeURIComponent(manifest.name)}`, { method: 'POST', body: wire.encode({ manifestPath: manifest.manifestPath, trigger }) });
      const r = wire.decode(await res.text());
      return r.ok ? r : { ok: false, error: fromPlainError(r.error), ms: r.ms };
    },

    async openChannel(subscription, onMessage) {
      const topics = channelTopics(subscription, onMessage);
      await ready();
      hub ??= new WsHub(`${wsBase()}/peek/channel`, { log, headers: { authorization: `Bearer ${deployment.adminToken}` } });
      return hub.open(topics, onMessage);
    },

    log(record) {
      log(record);
    },

    /** Deploys if needed, runs the local workerd, and connects the host: schedules fire from now on. */
    async start() {
      await ready();
      if (started) return;
      started = true;
      hostSocket = connectHost();
      await hostSocket.opened;
    },

    /** Disconnects the host. workerd keeps the schedules; a slot due meanwhile waits and runs once at start(). */
    async stop() {
      started = false;
      const s = hostSocket;
      hostSocket = null;
      await s?.close();
    },

    /** stop(), the channel, and the local workerd. */
    async close() {
      if (closed) return;
      await adapter.stop();
      closed = true;
      if (hub !== null) await hub.close();
      if (workerd !== null) await workerd.stop();
      workerd = null;
    },
  };
  return adapter;
}

function checkOptions(options) {
  const common = commonOptions('cloudflareAdapter', options);
  if (typeof options.dir !== 'string' || options.dir.length === 0) throw new TypeError('cloudflareAdapter({ dir }) is required: where the deployment is built and workerd keeps its data');
  if (options.workers === undefined) throw new TypeError('cloudflareAdapter({ workers }) is required: the manifests (or directories of them) to deploy');
  if (options.url !== undefined && !/^https?:\/\//.test(options.url)) throw new TypeError('cloudflareAdapter({ url }): must be an http(s) URL');
  return {
    dir: path.resolve(options.dir),
    workers: options.workers,
    url: options.url?.replace(/\/+$/, ''),
    port: options.port === undefined ? undefined : common.positive('port', options.port),
    maxWallClockMs: common.maxWallClockMs,
    precisionMs: common.precisionMs,
    retries: common.retries,
    allowLocalNetwork: options.allowLocalNetwork ?? false,
    credentials: common.credentials,
    store: common.store,
    log: common.log,
  };
}

module.exports = { cloudflareAdapter, manifestPaths };
