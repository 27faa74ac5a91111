'use strict';
// Building `api` from a manifest's grant: the part of the host that must be
// identical on every platform, so it lives here once. A namespace exists
// exactly when the grant names it; nothing absent is stubbed (a stub would let
// a worker "succeed" at something it can never do). The credential is not an
// argument here: `store` closes over it, and api closes over `store`.
const { codes, peekError } = require('./errors');

/** Marks a function whose calls need no answer (logging): the run's process does not wait for one. */
const ONE_WAY = Symbol.for('durable-workers.peek.oneWay');
/**
 * Marks a function the run's own realm supplies (the guarded fetch): a realm
 * in another process uses its local copy rather than calling back here.
 */
const LOCAL = Symbol.for('durable-workers.peek.local');
/** Plain data (api.settings): sent to the realm as a copy, not described as namespaces. */
const data = new WeakSet();
const isData = (v) => v !== null && typeof v === 'object' && data.has(v);

/**
 * A function only the run's realm has (the lifecycle hooks, handler
 * registrations): they take the worker's own functions, which cannot cross
 * to the host. Present here so the grant decides that the namespace exists.
 */
function realmOnly(name) {
  const fn = () => {
    throw new TypeError(`api.${name} runs in the worker's realm`);
  };
  Object.defineProperty(fn, LOCAL, { value: name });
  return fn;
}

/**
 * @param {import('../../peek').Manifest} manifest
 * @param {{
 *   store: object | null,
 *   fetch: Function,
 *   publish: (topic: string, message: unknown) => Promise<void>,
 *   resultTopic?: string,
 *   isReplyTopic?: (topic: string) => boolean,
 *   log: (level: 'info' | 'warn' | 'error', args: unknown[]) => void,
 *   settings?: Record<string, unknown>,
 * }} parts
 * @returns {import('../../peek').WorkerApi}
 */
function buildApi(manifest, parts) {
  const caps = manifest.capabilities;
  const api = {};
  if (caps.datastore) api.datastore = datastoreNamespace(caps.datastore.methods, parts.store);
  if (caps.network) api.network = Object.freeze({ fetch: parts.fetch });
  if (caps.pubsub) {
    const publish = async (topic, message) => {
      if (typeof topic !== 'string' || topic.length === 0) throw new TypeError('api.publish(topic, message): topic must be a non-empty string');
      // This run's own reply topic (it was commanded with one): its answer.
      if (topic === parts.resultTopic) return parts.publish(topic, message);
      if (topic.startsWith(COMMAND_PREFIX)) return sendCommand(manifest, parts, topic, message);
      if (topic.startsWith('cmd:'))
        throw denied(manifest, `${topic}: cmd: topics other than cmd:execute:<command> belong to the supervisor and the commanders (a run answers only on its own ctx.trigger.resultTopic)`);
      if (parts.isReplyTopic?.(topic)) throw denied(manifest, `${topic} is the reply topic of another run's command`);
      await parts.publish(topic, message);
    };
    api.pubsub = Object.freeze({ publish });
    api.publish = publish;
    if (caps.pubsub.subscribe.length > 0) api.subscribe = realmOnly('subscribe');
  }
  if (manifest.commandsDeclared) api.commands = Object.freeze({ on: realmOnly('commands.on') });
  if (manifest.settings !== null && manifest.settings !== undefined) {
    const values = parts.settings ?? manifest.settings;
    data.add(values);
    api.settings = values;
  }
  if (caps.log) api.log = logFunction(parts.log);
  if (caps.lifecycle) {
    api.initialize = realmOnly('initialize');
    api.onShutdown = realmOnly('onShutdown');
  }
  return Object.freeze(api);
}

const COMMAND_PREFIX = 'cmd:execute:';
/** Where the supervisor sends a worker's reply: `cmd:reply:<worker>:<id>` wakes that worker alone. */
const REPLY_PREFIX = 'cmd:reply:';

function denied(manifest, why) {
  return peekError(codes.PUBSUB_DENIED, `worker ${manifest.name}: publish to ${why}`);
}

/**
 * A command sent by a worker: only one its grant names
 * (capabilities.pubsub.commands), and with a reply topic the host picks, never
 * the worker (a worker's reply topic could be a command, or someone else's
 * reply). Resolves with `{ resultTopic }`: the result wakes this worker with
 * that topic.
 */
async function sendCommand(manifest, parts, topic, message) {
  const command = topic.slice(COMMAND_PREFIX.length);
  const granted = manifest.capabilities.pubsub.commands ?? [];
  if (!granted.includes(command)) {
    throw denied(manifest, `${topic}: the command ${JSON.stringify(command)} is not granted (capabilities.pubsub.commands: ${JSON.stringify(granted)})`);
  }
  if (message !== undefined && (message === null || typeof message !== 'object' || Array.isArray(message))) {
    throw new TypeError(`api.publish(${JSON.stringify(topic)}, message): a command's message is { params }`);
  }
  if (message?.resultTopic !== undefined) throw denied(manifest, `${topic}: a worker does not choose a command's resultTopic; the host does, and api.publish resolves with it`);
  const resultTopic = `${REPLY_PREFIX}${manifest.name}:${globalThis.crypto.randomUUID()}`;
  await parts.publish(topic, { params: message?.params, resultTopic });
  return { resultTopic };
}

/**
 * The granted methods, each turning the store's throw into
 * `{ success: false, error }` and its value into `{ success: true, data }`.
 */
function datastoreNamespace(methods, store) {
  if (store === null) throw peekError(codes.CREDENTIAL, 'the datastore is granted but no store was opened');
  const ns = {};
  for (const name of methods) {
    ns[name] = async (...args) => {
      try {
        return { success: true, data: await store[name](...args) };
      } catch (err) {
        return { success: false, error: String(err?.message ?? err) };
      }
    };
  }
  return Object.freeze(ns);
}

/** `api.log(...)` logs at info; `api.log.warn(...)`, `api.log.error(...)` at their levels. */
function logFunction(sink) {
  const at = (level) => oneWay((...args) => sink(level, args));
  const log = at('info');
  log.info = at('info');
  log.warn = at('warn');
  log.error = at('error');
  return Object.freeze(log);
}

function oneWay(fn) {
  Object.defineProperty(fn, ONE_WAY, { value: true });
  return fn;
}

module.exports = { buildApi, ONE_WAY, LOCAL, REPLY_PREFIX, isData };
