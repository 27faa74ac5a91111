'use strict';
// The worker host, written once for every platform. Given a worker and a
// trigger it: reads the manifest; takes the credential from the adapter and
// opens the store over it (the credential goes no further); builds `api` from
// the grant; sets the deadline; has the adapter's realm install the globals
// and the guarded fetch, load the module and run the entry with a RunContext;
// and reports one RunResult. A throw out of the entry ends the run with
// { ok: false }: the realm is closed, never reused. Whether a failed run is
// retried is the adapter's declared policy, not decided here.
const { EventEmitter } = require('node:events');
const { buildApi } = require('./api');
const { checkTrigger } = require('./trigger');
const { resolveRef } = require('./manifest');
const { codes, peekError, toPlainError } = require('./errors');
const { makeRunContext } = require('./run-context');
const { settingsReader, settingsFile } = require('./settings');
const { RunLog } = require('./run-log');

/** Between the signal aborting at the deadline and the kill: time for the abort to reach the run's process. */
const ABORT_GRACE_MS = 200;
/** How long a run stopped during its setup (credential, store) waits for that step before reporting. */
const SETUP_SETTLE_MS = 1000;

/** The supervisor's way to hold a reply topic (not part of WorkerHost's public shape). */
const HOLD_REPLY = Symbol.for('durable-workers.peek.holdReply');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * @param {{ adapter: import('../../peek').PlatformAdapter, settings?: string | ((worker: string) => object | undefined) }} options
 *   settings: the operator's values for the workers' settings (./settings.js)
 * @returns {import('../../peek').WorkerHost}
 */
function createWorkerHost({ adapter, settings } = {}) {
  for (const op of ['readCredential', 'openStore', 'openRealm', 'openChannel', 'log']) {
    if (typeof adapter?.[op] !== 'function') throw new TypeError(`createWorkerHost({ adapter }): the adapter has no ${op}() (use nodeAdapter() or another PlatformAdapter)`);
  }
  if (!adapter.declares || typeof adapter.declares.run?.maxWallClockMs !== 'number') {
    throw new TypeError('createWorkerHost({ adapter }): the adapter has no declares.run.maxWallClockMs');
  }
  const readSettings = settingsReader(settings);
  // Host files a run must not see: every worker's settings are in one file.
  const hidden = [settingsFile(settings)].filter((f) => f !== null);
  const events = new EventEmitter();
  let publisher = null;
  let closed = false;
  /** Runs in flight: each one's way to stop it, and its promise. */
  const inFlight = new Set();
  /**
   * The reply topics of the command runs in flight (topic → how many): no
   * other run may publish there, so a commander hears its own worker's
   * answer, not a forgery.
   */
  const replies = new Map();
  /** Reply topics the supervisor holds for commands heard but not yet run (topic → until when). */
  const held = new Map();
  const isReplyTopic = (topic) => {
    if (replies.has(topic)) return true;
    const until = held.get(topic);
    if (until === undefined) return false;
    if (until >= Date.now()) return true;
    held.delete(topic);
    return false;
  };
  const publish = async (topic, message) => {
    publisher ??= adapter.openChannel({ topics: [] }, () => {});
    await (await publisher).publish(topic, message);
  };

  const host = {
    declares: adapter.declares,
    /** Runs the worker once for `trigger`. Resolves with a RunResult; rejects only for a malformed trigger. */
    run(ref, trigger) {
      if (closed) return Promise.reject(peekError(codes.CLOSED, 'the worker host is closed'));
      let checked;
      try {
        checked = checkTrigger(trigger);
      } catch (err) {
        return Promise.reject(err);
      }
      const entry = { stop: null, done: null };
      const reply = checked.kind === 'command' ? checked.resultTopic : undefined;
      if (reply !== undefined) replies.set(reply, (replies.get(reply) ?? 0) + 1);
      entry.done = runOnce(ref, checked, entry).finally(() => {
        inFlight.delete(entry);
        if (reply !== undefined) {
          const n = replies.get(reply) - 1;
          if (n > 0) replies.set(reply, n);
          else replies.delete(reply);
        }
      });
      inFlight.add(entry);
      return entry.done;
    },
    /**
     * The supervisor's: `topic` is the reply topic of a command heard, until
     * `until` (epoch ms; Infinity while it waits or runs). No run but the
     * command's own may publish there meanwhile.
     */
    [HOLD_REPLY](topic, until) {
      held.set(topic, until);
      // A full pass: a held topic (Infinity while its command runs) may sit before expired ones.
      const now = Date.now();
      for (const [t, u] of held) if (u < now) held.delete(t);
    },
    on(event, listener) {
      events.on(event, listener);
      return host;
    },
    off(event, listener) {
      events.off(event, listener);
      return host;
    },
    /**
     * Refuses new runs, stops the ones in flight (their signal aborts with
     * ERR_PEEK_CLOSED, then their realm is closed) and waits for them.
     */
    async close() {
      closed = true;
      const running = [...inFlight];
      for (const r of running) r.stop?.(peekError(codes.CLOSED, 'the worker host was closed during the run'));
      await Promise.allSettled(running.map((r) => r.done));
      if (publisher !== null) await (await publisher.catch(() => null))?.close();
    },
  };

  async function runOnce(ref, trigger, handle) {
    const started = Date.now();
    let manifest = null;
    let opening = null;
    let aborted = false;
    const controller = new AbortController();
    const published = new Set();
    let timer = null;
    let outcome;
    let work = null;
    let runLog = null;
    // Stops the run from outside its own code: the deadline, or close().
    let stop;
    const stopped = new Promise((_, reject) => {
      stop = (err) => {
        if (controller.signal.aborted) return;
        aborted = true;
        controller.abort(err);
        reject(err);
      };
    });
    stopped.catch(() => {});
    handle.stop = stop;
    // After every await in the run's setup: a run stopped meanwhile opens
    // nothing more (no realm, no worker code running unsupervised).
    const stillOn = () => {
      if (controller.signal.aborted) throw controller.signal.reason;
    };
    try {
      manifest = resolveRef(ref);
      const keeper = adapter.runLog?.(manifest.name);
      if (keeper) {
        const name = manifest.name;
        runLog = new RunLog(keeper, (err) => adapter.log({ level: 'error', worker: name, args: ['keeping the run’s log failed:', err?.message ?? String(err)] }));
        runLog.start(describeTrigger(trigger));
      }
      const max = adapter.declares.run.maxWallClockMs;
      const budget = Math.min(manifest.limits.wallClockMs ?? max, max);
      const deadline = started + budget;
      const name = manifest.name;
      timer = setTimeout(() => stop(peekError(codes.DEADLINE, `worker ${name}: the run passed its deadline (${budget} ms) and was stopped`)), Math.max(0, deadline - Date.now()));
      const { ctx, waits } = makeRunContext({ trigger, deadline, signal: controller.signal });
      work = (async () => {
        const caps = manifest.capabilities;
        let store = null;
        if (caps.datastore) {
          const credential = await adapter.readCredential(manifest);
          stillOn();
          if (typeof credential !== 'string' || credential.length === 0) {
            throw peekError(codes.CREDENTIAL, `worker ${name} is granted the datastore but has no credential (${adapter.credentialHint?.(manifest) ?? 'see the adapter’s credentials option'})`);
          }
          store = await adapter.openStore(manifest, credential);
          stillOn();
        }
        const values = manifest.settings === null ? undefined : await readSettings(manifest, adapter.log);
        stillOn();
        opening = adapter.openRealm(manifest, { deadline, signal: controller.signal, hidden });
        const realm = await opening;
        stillOn();
        const fetch = realm.makeFetch(caps.network?.domains ?? [], controller.signal);
        const api = buildApi(manifest, {
          store,
          fetch,
          resultTopic: trigger.kind === 'command' ? trigger.resultTopic : undefined,
          isReplyTopic,
          settings: values,
          publish: (topic, message) => {
            published.add(topic);
            return publish(topic, message);
          },
          log: (level, args) => {
            const record = { level, worker: name, args };
            adapter.log(record);
            runLog?.add(level, args);
            events.emit('log', record);
          },
        });
        realm.installGlobals({ app: api, window: { app: api }, fetch });
        const mod = await realm.loadWorkerModule(manifest);
        stillOn();
        const entry = (manifest.worker.entry !== undefined ? mod[manifest.worker.entry] : undefined) ?? mod.default;
        if (typeof entry !== 'function') {
          throw peekError(
            codes.ENTRY,
            `worker ${name}: ${manifest.worker.url} exports no function ${manifest.worker.entry ? `named ${JSON.stringify(manifest.worker.entry)} and no default` : 'as its default'}`,
          );
        }
        const value = await entry(api, ctx);
        // waitUntil: the run is over when what it handed over has settled
        // too (or the deadline comes first). A rejection there is logged,
        // not fatal: the entry had already returned its value. A protocol
        // violation meanwhile is not the worker's waitUntil failing but the
        // run being ended: the run fails with it (ERR_PEEK_PROTOCOL, logged
        // by the realm), as it would have before the result.
        const settled = await Promise.allSettled(waits);
        if (realm.violation) throw realm.violation;
        for (const s of settled) {
          if (s.status === 'rejected') adapter.log({ level: 'error', worker: name, args: ['waitUntil rejected:', String(s.reason?.message ?? s.reason)] });
        }
        return value;
      })();
      work.catch(() => {});
      outcome = { ok: true, value: await Promise.race([work, stopped]) };
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      clearTimeout(timer);
      if (opening === null && work !== null && aborted) {
        // Stopped while the adapter read the credential or opened the store:
        // give that step a moment to finish (it opens no realm now, stillOn
        // sees to it), so nothing of the run is left behind its result.
        await Promise.race([work.catch(() => {}), sleep(SETUP_SETTLE_MS)]);
      }
      if (opening !== null) {
        const realm = await opening.catch(() => null);
        await realm?.close({ graceMs: aborted ? ABORT_GRACE_MS : 0 });
      }
      if (!controller.signal.aborted) controller.abort(peekError(codes.CLOSED, 'the run has ended'));
    }
    const result = { ...outcome, ms: Date.now() - started };
    const run = runLog === null ? null : await runLog.end(result);
    if (trigger.kind === 'command' && trigger.resultTopic !== undefined && !published.has(trigger.resultTopic)) {
      // The worker did not answer itself: the caller still hears how it went.
      const message = result.ok ? { ok: true, value: result.value, ms: result.ms } : { ok: false, error: toPlainError(result.error), ms: result.ms };
      await publish(trigger.resultTopic, message).catch((err) => adapter.log({ level: 'error', worker: manifest?.name ?? '?', args: ['publishing the result failed:', err.message] }));
    }
    events.emit('run', { worker: manifest?.name ?? null, trigger, result, run });
    return result;
  }

  adapter.attachHost?.(host);
  return host;
}

/** What started a run, in a line of its kept log. */
function describeTrigger(t) {
  if (t.kind === 'schedule') return `schedule, slot ${new Date(t.scheduledFor).toISOString()}`;
  if (t.kind === 'wake') return `wake on ${t.topic}`;
  return `command ${t.name}`;
}

module.exports = { createWorkerHost, HOLD_REPLY };
