'use strict';
// Where a worker's grant credential comes from: an environment variable or a
// JSON file, both keyed by the worker's name. Read in the supervisor (the
// parent process) on every run, so a rotated credential takes effect at the
// next run; never passed to a run's process (see node/realm.js: the child's
// environment is an allowlist, and api calls are messages back to here).
const fs = require('node:fs');
const { codes, peekError } = require('./errors');

const DEFAULT_PREFIX = 'PEEK_CREDENTIAL_';

/** `PEEK_CREDENTIAL_` + the worker name in upper case, other characters as `_`. */
function credentialEnvName(name, prefix = DEFAULT_PREFIX) {
  return prefix + name.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/**
 * A reader for one configuration.
 * @param {{ file?: string, envPrefix?: string | false }} [options]
 *   file: JSON `{ "<worker name>": "<credential>" }`, readable by its owner only;
 *   envPrefix: the variable prefix, or false to ignore the environment;
 *   values: credentials already read (`peek serve --credentials -` reads them from stdin once).
 * @returns {(name: string) => string | undefined}
 */
function credentialReader(options = {}) {
  const { file, envPrefix = DEFAULT_PREFIX, values } = options;
  if (values !== undefined && (values === null || typeof values !== 'object')) throw new TypeError('credentials.values must be an object { "<worker>": "<credential>" }');
  if (file !== undefined && (typeof file !== 'string' || file.length === 0)) {
    throw new TypeError('credentials.file must be the path of a JSON file');
  }
  if (envPrefix !== false && typeof envPrefix !== 'string') throw new TypeError('credentials.envPrefix must be a string or false');
  return (name) => {
    if (envPrefix !== false) {
      const v = process.env[credentialEnvName(name, envPrefix)];
      if (v) return v;
    }
    if (values !== undefined && Object.hasOwn(values, name)) return values[name];
    return file === undefined ? undefined : fromFile(file, name);
  };
}

function fromFile(file, name) {
  let st;
  try {
    st = fs.statSync(file);
  } catch (err) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: cannot read it (${err.code ?? 'stat failed'})`);
  }
  // Same rule as ssh for a private key: a secret others can read is refused
  // rather than used, so the mistake is found before the secret spreads.
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
    throw peekError(codes.CREDENTIAL, `credentials file ${file} is readable or writable by group or others (mode ${mode}); run: chmod 600 ${file}`);
  }
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: cannot read it (${err.code ?? 'read failed'})`);
  }
  let all;
  try {
    all = JSON.parse(text);
  } catch (err) {
    // V8's message quotes the text around the mistake, which is the secret:
    // say where, never what, and keep the parser's error out (no cause).
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: not valid JSON (${jsonErrorPlace(err, text)})`);
  }
  const v = all && typeof all === 'object' ? all[name] : undefined;
  if (v !== undefined && (typeof v !== 'string' || v.length === 0)) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: the entry for ${JSON.stringify(name)} must be a non-empty string`);
  }
  return v;
}

/** Parses credentials JSON text (from stdin), with the same error rule: where, never what. */
function parseCredentials(text, where) {
  let all;
  try {
    all = JSON.parse(text);
  } catch (err) {
    throw peekError(codes.CREDENTIAL, `credentials from ${where}: not valid JSON (${jsonErrorPlace(err, text)})`);
  }
  if (!all || typeof all !== 'object' || Array.isArray(all)) throw peekError(codes.CREDENTIAL, `credentials from ${where}: must be a JSON object { "<worker>": "<credential>" }`);
  for (const [name, v] of Object.entries(all)) {
    if (typeof v !== 'string' || v.length === 0) throw peekError(codes.CREDENTIAL, `credentials from ${where}: the entry for ${JSON.stringify(name)} must be a non-empty string`);
  }
  return all;
}

/** Where a JSON.parse error is, as "line L, column C", from the position its message gives; nothing of the text. */
function jsonErrorPlace(err, text) {
  const m = /position (\d+)/.exec(String(err?.message));
  if (m === null) return /end of (JSON|data) input/i.test(String(err?.message)) ? 'it ends too soon' : 'a syntax error';
  const pos = Math.min(Number(m[1]), text.length);
  const before = text.slice(0, pos);
  const line = before.split('\n').length;
  const column = pos - before.lastIndexOf('\n');
  return `a syntax error at line ${line}, column ${column}`;
}

module.exports = { credentialReader, credentialEnvName, parseCredentials };
