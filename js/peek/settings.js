'use strict';
// A worker's settings for one run: the defaults its manifest declares,
// replaced key by key by the operator's values. The operator writes them (a
// JSON file, or a function given to createWorkerHost); the worker only reads
// them, as api.settings, a frozen copy taken when its run starts. So a change
// is seen by the next run, and never halfway through one.
const fs = require('node:fs');
const { codes, peekError } = require('./errors');
const { deepFreeze } = require('./manifest');

/** The settings file, if `source` is one: a path no run may see (the adapter keeps it out of a sandbox). */
function settingsFile(source) {
  return typeof source === 'string' ? source : null;
}

/**
 * Checks the host's `settings` option.
 * @param {undefined | string | ((worker: string) => Record<string, unknown> | undefined)} source
 *   a JSON file `{ "<worker>": { "<key>": value } }` read at every run, or a function
 * @returns {(manifest: import('../../peek').Manifest, log: (record: object) => void) => Promise<Record<string, unknown>>}
 */
function settingsReader(source) {
  if (source !== undefined && typeof source !== 'string' && typeof source !== 'function') {
    throw new TypeError('createWorkerHost({ settings }): must be the path of a JSON file or a function (worker name) → values');
  }
  return async (manifest, log) => {
    const values = { ...manifest.settings };
    const given = await operatorValues(source, manifest.name);
    for (const [key, value] of Object.entries(given ?? {})) {
      if (Object.hasOwn(values, key)) values[key] = value;
      else log({ level: 'warn', worker: manifest.name, args: [`setting ${JSON.stringify(key)} is not declared in the manifest's settings: ignored`] });
    }
    try {
      return deepFreeze(structuredClone(values));
    } catch (err) {
      throw peekError(codes.SETTINGS, `worker ${manifest.name}: its settings cannot be copied (${err?.message ?? err})`, { cause: err });
    }
  };
}

async function operatorValues(source, name) {
  if (source === undefined) return undefined;
  let all;
  if (typeof source === 'function') {
    try {
      const v = await source(name);
      if (v === undefined || v === null) return undefined;
      if (!isObject(v)) throw new TypeError('it must return an object of setting values, or undefined');
      return v;
    } catch (err) {
      throw peekError(codes.SETTINGS, `worker ${name}: the settings function failed: ${err?.message ?? err}`, { cause: err });
    }
  }
  let text;
  try {
    text = fs.readFileSync(source, 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return undefined; // no file yet: the defaults
    throw peekError(codes.SETTINGS, `${source}: cannot read the settings file (${err.code ?? err.message})`, { cause: err });
  }
  try {
    all = JSON.parse(text);
  } catch (err) {
    throw peekError(codes.SETTINGS, `${source}: not valid JSON (${err.message})`, { cause: err });
  }
  if (!isObject(all)) throw peekError(codes.SETTINGS, `${source}: must be a JSON object { "<worker>": { "<setting>": value } }`);
  const mine = Object.hasOwn(all, name) ? all[name] : undefined;
  if (mine === undefined) return undefined;
  if (!isObject(mine)) throw peekError(codes.SETTINGS, `${source}: ${name} must be an object of setting values`);
  return mine;
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

module.exports = { settingsReader, settingsFile };
