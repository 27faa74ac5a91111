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
 *   envPrefix: the variable prefix, or false to ignore the environment.
 * @returns {(name: string) => string | undefined}
 */
function credentialReader(options = {}) {
  const { file, envPrefix = DEFAULT_PREFIX } = options;
  if (file !== undefined && (typeof file !== 'string' || file.length === 0)) {
    throw new TypeError('credentials.file must be the path of a JSON file');
  }
  if (envPrefix !== false && typeof envPrefix !== 'string') throw new TypeError('credentials.envPrefix must be a string or false');
  return (name) => {
    if (envPrefix !== false) {
      const v = process.env[credentialEnvName(name, envPrefix)];
      if (v) return v;
    }
    return file === undefined ? undefined : fromFile(file, name);
  };
}

function fromFile(file, name) {
  let st;
  try {
    st = fs.statSync(file);
  } catch (err) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: cannot read it (${err.code ?? err.message})`, { cause: err });
  }
  // Same rule as ssh for a private key: a secret others can read is refused
  // rather than used, so the mistake is found before the secret spreads.
  if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(3, '0');
    throw peekError(codes.CREDENTIAL, `credentials file ${file} is readable or writable by group or others (mode ${mode}); run: chmod 600 ${file}`);
  }
  let all;
  try {
    all = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: not valid JSON (${err.message})`, { cause: err });
  }
  const v = all && typeof all === 'object' ? all[name] : undefined;
  if (v !== undefined && (typeof v !== 'string' || v.length === 0)) {
    throw peekError(codes.CREDENTIAL, `credentials file ${file}: the entry for ${JSON.stringify(name)} must be a non-empty string`);
  }
  return v;
}

module.exports = { credentialReader, credentialEnvName };
