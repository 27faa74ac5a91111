'use strict';
// Manifests: read once per run (so an edited or newly installed worker is
// picked up without a restart), checked field by field, refused with the
// field's path in the message. A manifest that loads is one the host can run.
const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { codes, peekError } = require('./errors');
const { parseSchedule } = require('./schedule-spec');
const { domainProblem } = require('./domains');
const { STORE_METHODS, DEFAULT_METHODS } = require('./store-methods');

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOP_LEVEL = new Set(['name', 'description', 'version', 'worker', 'schedule', 'capabilities', 'limits', 'commands', 'settings']);
const CAPABILITIES = new Set(['network', 'datastore', 'pubsub', 'log', 'lifecycle']);
/** Bytes of a manifest's settings (defaults), as JSON: settings configure, they do not carry data. */
const MAX_SETTINGS_BYTES = 64 * 1024;
const TOPIC = /^[^\s]{1,256}$/;

/**
 * Reads and checks a manifest file.
 * @param {string} manifestPath a manifest.json
 * @returns {import('../../peek').Manifest}
 */
function loadManifest(manifestPath) {
  if (typeof manifestPath !== 'string' || manifestPath.length === 0) {
    throw new TypeError('loadManifest(manifestPath): manifestPath must be the path of a manifest.json');
  }
  const file = path.resolve(manifestPath);
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw peekError(codes.MANIFEST, `${file}: cannot read the manifest (${err.code ?? err.message})`, { cause: err });
  }
  let raw;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw peekError(codes.MANIFEST, `${file}: not valid JSON (${err.message})`, { cause: err });
  }
  return checkManifest(raw, file);
}

/**
 * Checks a parsed manifest; `file` is where it came from (its directory
 * anchors worker.url).
 * @returns {import('../../peek').Manifest}
 */
function checkManifest(raw, file) {
  const fail = (field, problem) => {
    throw peekError(codes.MANIFEST, `${file}: ${field} ${problem}`);
  };
  if (!isObject(raw)) fail('(the manifest)', 'must be a JSON object');
  for (const key of Object.keys(raw)) {
    if (!TOP_LEVEL.has(key)) fail(key, `is not a manifest field (known: ${[...TOP_LEVEL].join(', ')})`);
  }
  if (typeof raw.name !== 'string' || !NAME.test(raw.name)) fail('name', 'must be 1–64 characters of A–Z, a–z, 0–9, _ and -');
  for (const key of ['description', 'version']) {
    if (raw[key] !== undefined && typeof raw[key] !== 'string') fail(key, 'must be a string');
  }

  if (!isObject(raw.worker)) fail('worker', 'is required: { "url": "worker.js", "entry"?: "<export name>" }');
  for (const key of Object.keys(raw.worker)) {
    if (key !== 'url' && key !== 'entry') fail(`worker.${key}`, 'is not a worker field (known: url, entry)');
  }
  if (typeof raw.worker.url !== 'string' || raw.worker.url.length === 0) fail('worker.url', 'is required: the worker module, relative to the manifest');
  const dir = path.dirname(file);
  const modulePath = path.resolve(dir, raw.worker.url);
  const rel = path.relative(dir, modulePath);
  if (rel.startsWith('..') || path.isAbsolute(rel)) fail('worker.url', `must stay inside the manifest's directory (${JSON.stringify(raw.worker.url)} leaves it)`);
  if (!fs.statSync(modulePath, { throwIfNoEntry: false })?.isFile()) fail('worker.url', `names no file (${modulePath})`);
  if (raw.worker.entry !== undefined && (typeof raw.worker.entry !== 'string' || raw.worker.entry.length === 0)) {
    fail('worker.entry', 'must be the name of an exported function');
  }

  let intervalMs = null;
  if (raw.schedule !== undefined) {
    try {
      intervalMs = parseSchedule(raw.schedule);
    } catch (err) {
      fail('schedule', err.message.replace(/^schedule: /, ''));
    }
  }

  const caps = raw.capabilities ?? {};
  if (!isObject(caps)) fail('capabilities', 'must be an object');
  for (const key of Object.keys(caps)) {
    if (!CAPABILITIES.has(key)) fail(`capabilities.${key}`, `is not a capability (known: ${[...CAPABILITIES].join(', ')})`);
    if (!isObject(caps[key])) fail(`capabilities.${key}`, 'must be an object');
  }
  const capabilities = {};
  if (caps.network) {
    onlyKeys(caps.network, ['domains'], 'capabilities.network', fail);
    const domains = caps.network.domains;
    if (!Array.isArray(domains)) fail('capabilities.network.domains', 'must be an array of host names');
    domains.forEach((d, i) => {
      const problem = domainProblem(d);
      if (problem) fail(`capabilities.network.domains[${i}]`, problem);
    });
    capabilities.network = { domains: [...domains] };
  }
  if (caps.datastore) {
    onlyKeys(caps.datastore, ['methods'], 'capabilities.datastore', fail);
    const methods = caps.datastore.methods ?? DEFAULT_METHODS;
    if (!Array.isArray(methods)) fail('capabilities.datastore.methods', 'must be an array of method names');
    methods.forEach((m, i) => {
      if (!STORE_METHODS.includes(m)) fail(`capabilities.datastore.methods[${i}]`, `${JSON.stringify(m)} is not a datastore method (known: ${STORE_METHODS.join(', ')})`);
    });
    capabilities.datastore = { methods: [...new Set(methods)] };
  }
  if (caps.pubsub) {
    onlyKeys(caps.pubsub, ['subscribe', 'commands'], 'capabilities.pubsub', fail);
    const topics = caps.pubsub.subscribe ?? [];
    if (!Array.isArray(topics)) fail('capabilities.pubsub.subscribe', 'must be an array of topics');
    topics.forEach((topic, i) => {
      // cmd: topics are the supervisor's: commands carry params and reply
      // topics, replies carry results. No worker hears them, not even through
      // a prefix that covers them ("*", "c*", "cmd*").
      if (typeof topic !== 'string' || !TOPIC.test(topic) || topic.startsWith('cmd:') || coversCommands(topic)) {
        fail(`capabilities.pubsub.subscribe[${i}]`, 'must be a topic: 1–256 characters, no spaces, not starting with "cmd:" nor a prefix that covers "cmd:" ("*", "c*", "cm*", "cmd*")');
      }
    });
    // The commands this worker may send (publish to cmd:execute:<command>):
    // exact names, none unless listed.
    const send = caps.pubsub.commands ?? [];
    if (!Array.isArray(send)) fail('capabilities.pubsub.commands', 'must be an array of command names');
    send.forEach((c, i) => {
      if (typeof c !== 'string' || !NAME.test(c)) fail(`capabilities.pubsub.commands[${i}]`, 'must be a command name: 1–64 characters of A–Z, a–z, 0–9, _ and - (no wildcard)');
    });
    capabilities.pubsub = { subscribe: [...topics], ...(send.length > 0 ? { commands: [...new Set(send)] } : {}) };
  }
  if (caps.log) {
    onlyKeys(caps.log, [], 'capabilities.log', fail);
    capabilities.log = {};
  }
  if (caps.lifecycle) {
    onlyKeys(caps.lifecycle, [], 'capabilities.lifecycle', fail);
    capabilities.lifecycle = {};
  }

  // The worker's settings and their defaults; the operator's values replace
  // them per run (./settings.js). Declared keys only: a setting the worker
  // does not know is a typo, not a setting.
  let settings = null;
  if (raw.settings !== undefined) {
    if (!isObject(raw.settings)) fail('settings', 'must be an object of setting names and their default values');
    for (const key of Object.keys(raw.settings)) {
      if (!NAME.test(key)) fail(`settings.${key}`, 'is not a setting name: 1–64 characters of A–Z, a–z, 0–9, _ and -');
    }
    if (Buffer.byteLength(JSON.stringify(raw.settings)) > MAX_SETTINGS_BYTES) fail('settings', `must be at most ${MAX_SETTINGS_BYTES} bytes as JSON`);
    settings = structuredClone(raw.settings);
  }

  const limits = raw.limits ?? {};
  if (!isObject(limits)) fail('limits', 'must be an object');
  onlyKeys(limits, ['wallClockMs'], 'limits', fail);
  if (limits.wallClockMs !== undefined && !(Number.isInteger(limits.wallClockMs) && limits.wallClockMs > 0)) {
    fail('limits.wallClockMs', 'must be a positive integer (ms)');
  }

  const commands = raw.commands ?? [raw.name];
  if (!Array.isArray(commands) || commands.length === 0) fail('commands', 'must be a non-empty array of command names');
  commands.forEach((c, i) => {
    if (typeof c !== 'string' || !NAME.test(c)) fail(`commands[${i}]`, 'must be 1–64 characters of A–Z, a–z, 0–9, _ and -');
  });

  return deepFreeze({
    name: raw.name,
    description: raw.description,
    manifestPath: file,
    dir,
    worker: { url: raw.worker.url, entry: raw.worker.entry, path: modulePath, href: pathToFileURL(modulePath).href },
    schedule: raw.schedule === undefined ? null : raw.schedule.trim(),
    intervalMs,
    capabilities,
    limits: { wallClockMs: limits.wallClockMs },
    commands: [...commands],
    // Whether `commands` was written: api.commands is granted by naming them.
    commandsDeclared: raw.commands !== undefined,
    settings,
  });
}

/** A subscription ending in '*' whose prefix also begins "cmd:" topics. */
function coversCommands(topic) {
  return topic.endsWith('*') && 'cmd:'.startsWith(topic.slice(0, -1));
}

function onlyKeys(obj, known, where, fail) {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) fail(`${where}.${key}`, known.length ? `is not a field here (known: ${known.join(', ')})` : 'is not a field here (takes none)');
  }
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function deepFreeze(o) {
  for (const v of Object.values(o)) if (v && typeof v === 'object') deepFreeze(v);
  return Object.freeze(o);
}

/**
 * A WorkerRef, a manifest path or a loaded Manifest, as a fresh Manifest.
 * Loaded again every time: a worker installed or edited a moment ago runs
 * as it is now, with no restart (install.codeLoad = 'runtime').
 * @param {string | { manifestPath: string }} ref
 */
function resolveRef(ref) {
  if (typeof ref === 'string') return loadManifest(ref);
  if (ref && typeof ref === 'object' && typeof ref.manifestPath === 'string') return loadManifest(ref.manifestPath);
  throw new TypeError('a worker ref is a manifest path or an object with manifestPath (a loaded Manifest will do)');
}

module.exports = { loadManifest, checkManifest, resolveRef, deepFreeze };
