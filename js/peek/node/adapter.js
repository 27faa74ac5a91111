'use strict';
// The Node platform adapter: fork per run, schedules as durable-worker
// alarms in `dir`, credentials from a file or the environment, a WebSocket
// or in-process channel, and a log sink. It supplies primitives; the shared
// host (../host.js) decides what a run is.
const path = require('node:path');
const { open } = require('../../index');
const { Spares } = require('./spares');
const { sandboxStatus, UidPool, DEFAULT_UIDS } = require('./sandbox');
const { refuseRunHeldPort } = require('./port-holder');
const { MAX_IN_FLIGHT } = require('./fetch-relay');
const { NodeRealm } = require('./realm');
const { peekWorkerClass } = require('../schedule-worker');
const { PeekLog, readKept } = require('../log-keeper');
const { register } = require('../../control/operations');
const { DurableError, codes: durableCodes } = require('../../api/errors');
const { PeekStore, embeddedStore } = require('../store-embedded');
const { remoteStore } = require('../store-remote');
const { credentialReader, credentialEnvName } = require('../credentials');
const { resolveRef, deepFreeze } = require('../manifest');
const { Bus } = require('../channel-bus');
const { WsHub } = require('../channel-ws');
const { codes, peekError, fromPlainError } = require('../errors');
const { commonOptions, schedulerDeclaration, scheduleInterval, channelTopics } = require('../adapter-common');

/**
 * @param {import('../../../peek').NodeAdapterOptions} [options]
 * @returns {import('../../../peek').NodeAdapter}
 */
function nodeAdapter(options = {}) {
  const o = checkOptions(options);
  const sandbox = sandboxFor(o);
  const spares = new Spares({ memoryMb: o.memoryMb, size: o.spares, uid: o.uid, gid: o.gid, sandbox });
  const readCredential = credentialReader(o.credentials);
  // Without the sandbox, runs as another user share this loopback: no credential goes to a port they hold.
  const refusePortOfRuns = (url, code) => refuseRunHeldPort(url, sandbox === null ? o.uid : undefined, (message) => peekError(code, message));
  const log = o.log;
  let host = null;
  let durable = null; // Promise<Host> while open
  let alarms = null;
  let hub = null;
  let closed = false;

  const PeekWorker = peekWorkerClass({
    run: (name, manifestPath, trigger) => {
      if (host === null) return Promise.resolve({ ok: false, error: peekError(codes.CLOSED, 'no worker host is attached to this adapter (createWorkerHost({ adapter }))'), ms: 0 });
      return host.run(manifestPath, trigger);
    },
    retries: o.retries,
    log: (record) => log(record),
  });

  const declares = deepFreeze({
    // Bare Node and a container are one adapter: what differs is who
    // supervises the process and where its directory lives (a volume).
    name: o.target,
    scheduler: schedulerDeclaration(o),
    run: {
      maxWallClockMs: o.maxWallClockMs,
      maxCpuMs: 'unbounded',
      memoryMb: o.memoryMb,
      singleFlight: true,
      maxOutboundConcurrency: sandbox === null ? 'unbounded' : MAX_IN_FLIGHT,
      clockAdvancesWithoutIo: true,
    },
    // Sandboxed, a run has no network and its fetches are made by the supervisor.
    network: { enforcement: sandbox === null ? 'guard-rail' : 'egress-control' },
    install: { codeLoad: 'runtime' },
    isolation: 'process-per-run',
  });

  const need = (what) => {
    if (closed) throw peekError(codes.CLOSED, 'the adapter is closed');
    if (o.dir === undefined) throw new TypeError(`nodeAdapter({ dir }) is required for ${what}: the directory where schedules and the embedded store live`);
  };
  const durableHost = () => {
    need('schedules and the embedded datastore');
    if (durable === null) {
      durable = open({ dir: o.dir });
      durable.then(
        (h) =>
          h.on('alarmFailed', (err, info) =>
            log({ level: 'warn', worker: info.id, args: [`run failed (attempt ${info.attempt}); retrying at ${new Date(info.retryAt).toISOString()}:`, err?.message ?? String(err)] }),
          ),
        () => {
          durable = null;
        },
      );
    }
    return durable;
  };
  const workerStub = async (name) => (await durableHost()).get(PeekWorker, name);
  const channels = () => {
    if (closed) throw peekError(codes.CLOSED, 'the adapter is closed');
    hub ??= o.channelUrl
      ? new WsHub(o.channelUrl, { log, headers: o.channelHeaders, ...o.channelBackoff, beforeConnect: () => (o.channelHeaders ? refusePortOfRuns(o.channelUrl, codes.CHANNEL) : undefined) })
      : new Bus();
    return hub;
  };

  const adapter = {
    declares,
    dir: o.dir,
    /** Whether runs are sandboxed, and if not, why (`peek serve` prints it once). */
    sandbox: sandbox === null ? { on: false, reason: o.sandbox === 'off' ? "turned off (sandbox: 'off')" : sandboxStatus().reason } : { on: true, mode: sandbox.status.mode },

    attachHost(h) {
      host = h;
    },

    async readCredential(manifest) {
      return readCredential(manifest.name);
    },

    credentialHint(manifest) {
      const env = o.credentials.envPrefix === false ? null : credentialEnvName(manifest.name, o.credentials.envPrefix);
      const file = o.credentials.file ? `an entry "${manifest.name}" in ${o.credentials.file}` : o.credentials.values ? `an entry "${manifest.name}" in the credentials read at start` : null;
      return `set ${[env, file].filter(Boolean).join(' or ')}`;
    },

    async openStore(manifest, credential) {
      if (o.store.remoteUrl) return remoteStore({ url: o.store.remoteUrl, credential, beforeSend: () => refusePortOfRuns(o.store.remoteUrl, codes.STORE) });
      return embeddedStore(await durableHost(), { user: o.store.user, profile: o.store.profile });
    },

    async openRealm(manifest, { signal, hidden = [] }) {
      if (closed) throw peekError(codes.CLOSED, 'the adapter is closed');
      const exclude = [o.dir, o.credentials.file, ...hidden].filter((p) => typeof p === 'string');
      const realm = new NodeRealm(spares.take(), manifest, { signal, log, memoryMb: o.memoryMb, exclude });
      await realm.ready();
      return realm;
    },

    async ensureSchedule(ref, spec) {
      const manifest = resolveRef(ref);
      const intervalMs = scheduleInterval(manifest, spec);
      return (await workerStub(manifest.name)).setSchedule({ manifestPath: manifest.manifestPath, spec: spec.trim(), intervalMs });
    },

    async cancelSchedule(ref) {
      const name = typeof ref === 'string' && !ref.endsWith('.json') ? ref : resolveRef(ref).name;
      return (await workerStub(name)).cancelSchedule();
    },

    /** Where a run's api.log records are kept: a PeekLog worker in `dir` (none without one). */
    runLog(name) {
      if (o.dir === undefined || closed) return null;
      const keeper = async () => (await durableHost()).get(PeekLog, name);
      return { begin: async (what) => (await keeper()).begin(what), append: async (run, records) => (await keeper()).append(run, records) };
    },

    /** A worker's kept records, oldest first: { runs, records: [{ seq, run, at, level, text }] }. */
    async readLogs(name, query) {
      return readKept(await durableHost(), name, query);
    },

    /** Every stored schedule: { name, spec, manifestPath, next }. */
    async schedules() {
      const d = await durableHost();
      const out = [];
      for await (const name of d.ids(PeekWorker)) {
        const s = await d.get(PeekWorker, name).schedule();
        if (s) out.push({ name, spec: s.spec, manifestPath: s.manifestPath, next: s.next });
      }
      return out;
    },

    /**
     * Runs a worker for a trigger through its durable worker's mailbox: one
     * run of a worker at a time, whatever the triggers.
     */
    async dispatch(ref, trigger) {
      const manifest = resolveRef(ref);
      const r = await (await workerStub(manifest.name)).dispatch(manifest.manifestPath, trigger);
      return r.ok ? r : { ok: false, error: fromPlainError(r.error), ms: r.ms };
    },

    async openChannel(subscription, onMessage) {
      const topics = channelTopics(subscription, onMessage);
      return channels().open(topics, onMessage);
    },

    log(record) {
      log(record);
    },

    /** Owns the directory and fires schedules; forks the warm spare. */
    async start() {
      need('start()');
      spares.warm();
      if (alarms === null) alarms = (await durableHost()).startAlarms({ classes: [PeekWorker] });
      await alarms;
    },

    /** Stops firing schedules and releases the directory (the schedules stay on disk). */
    async stop() {
      const a = alarms;
      alarms = null;
      if (a !== null) await (await a).stop();
      const d = durable;
      durable = null;
      if (d !== null) await (await d.catch(() => null))?.close();
    },

    /** stop(), and the spare process and the channel too. */
    async close() {
      if (closed) return;
      await adapter.stop();
      closed = true;
      await spares.close();
      if (hub !== null) await hub.close();
    },
  };
  return adapter;
}

/**
 * The sandbox runs start in, or null for none: 'auto' takes it where it
 * works, 'required' refuses to make an adapter without it.
 */
function sandboxFor(o) {
  if (o.sandbox === 'off') return null;
  const status = sandboxStatus();
  if (!status.ok) {
    if (o.sandbox === 'required') throw peekError(codes.SANDBOX, `nodeAdapter({ sandbox: 'required' }): runs cannot be sandboxed here: ${status.reason}`);
    return null;
  }
  return { status, pool: status.mode === 'root' ? new UidPool(o.sandboxUids) : null };
}

function checkOptions(options) {
  const common = commonOptions('nodeAdapter', options);
  const { positive } = common;
  const dir = options.dir === undefined ? undefined : path.resolve(String(options.dir));
  const store = options.store ?? {};
  if (store.remoteUrl !== undefined && !/^https?:\/\//.test(store.remoteUrl)) throw new TypeError('nodeAdapter({ store: { remoteUrl } }): must be an http(s) URL');
  if (options.channelUrl !== undefined && !/^wss?:\/\//.test(options.channelUrl)) throw new TypeError('nodeAdapter({ channelUrl }): must be a ws:// or wss:// URL');
  const headers = options.channelHeaders;
  if (headers !== undefined && (headers === null || typeof headers !== 'object' || Object.values(headers).some((v) => typeof v !== 'string'))) {
    throw new TypeError('nodeAdapter({ channelHeaders }): an object of header names to string values');
  }
  const id = (name) => {
    const v = options[name];
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || v < 0 || v > 2 ** 32 - 2) throw new RangeError(`nodeAdapter({ ${name} }): a numeric ${name === 'uid' ? 'user' : 'group'} id, got ${v}`);
    return v;
  };
  const sandbox = options.sandbox ?? 'auto';
  if (!['auto', 'required', 'off'].includes(sandbox)) throw new TypeError(`nodeAdapter({ sandbox }): 'auto', 'required' or 'off', got ${JSON.stringify(sandbox)}`);
  const uids = options.sandboxUids ?? DEFAULT_UIDS;
  if (!Array.isArray(uids) || uids.length !== 2 || !Number.isInteger(uids[0]) || !Number.isInteger(uids[1]) || uids[0] < 1 || uids[1] < 1 || uids[0] + uids[1] > 2 ** 32 - 2) {
    throw new RangeError('nodeAdapter({ sandboxUids }): [first, count], positive integers with first + count below 2^32 - 1');
  }
  const target = options.target ?? 'node';
  if (target !== 'node' && target !== 'container') throw new TypeError(`nodeAdapter({ target }): 'node' or 'container', got ${JSON.stringify(target)}`);
  const warm = options.warm ?? true;
  const spares = options.spares ?? (warm ? 1 : 0);
  if (!Number.isInteger(spares) || spares < 0 || spares > 16) throw new RangeError(`nodeAdapter({ spares }): an integer from 0 to 16, got ${spares}`);
  return {
    dir,
    target,
    memoryMb: positive('memoryMb', options.memoryMb, 128),
    maxWallClockMs: common.maxWallClockMs,
    precisionMs: common.precisionMs,
    retries: common.retries,
    spares: warm ? spares : 0,
    uid: id('uid'),
    gid: id('gid'),
    sandbox,
    sandboxUids: [uids[0], uids[1]],
    credentials: { ...common.credentials, values: options.credentials?.values },
    store: { ...common.store, remoteUrl: store.remoteUrl },
    channelUrl: options.channelUrl,
    channelHeaders: headers === undefined ? undefined : { ...headers },
    channelBackoff: options.channelBackoff ?? {},
    log: common.log,
  };
}

// `durable-workers peek logs` asks the process serving the directory.
register('peek.logs', (host, params) => {
  if (typeof params.worker !== 'string' || params.worker.length === 0) throw new DurableError(durableCodes.CONTROL, 'params.worker must be a Peek worker’s name');
  return readKept(host, params.worker, { run: params.run, after: params.after, limit: params.limit });
});

module.exports = { nodeAdapter, PeekStore };
