'use strict';
// The node: modules a Peek worker may not load, and the error that says so.
// Shared by the loader hook (hooks.mjs, ESM imports), the require wrapper
// (child.js, CommonJS require) and module.registerHooks where Node has it.

const REFUSED = new Set([
  'net',
  'tls',
  'http',
  'https',
  'http2',
  'dgram',
  'dns',
  'dns/promises',
  'child_process',
  'cluster',
  'worker_threads',
  'inspector',
  'inspector/promises',
  // The legacy internals http and tls are built from, still loadable by name.
  '_http_agent',
  '_http_client',
  '_http_common',
  '_http_incoming',
  '_http_outgoing',
  '_http_server',
  '_tls_common',
  '_tls_wrap',
]);

/** Whether `specifier` names a refused module (with or without `node:`). */
function isRefused(specifier) {
  if (typeof specifier !== 'string') return false;
  return REFUSED.has(specifier.startsWith('node:') ? specifier.slice(5) : specifier);
}

/**
 * @param {string} specifier as the worker wrote it
 * @param {string | undefined} from the importing module's URL or file name
 * @param {'import' | 'require'} how
 * @param {string} [target] what it resolved to, when that is not the specifier (a package's imports map)
 */
function refusal(specifier, from, how = 'import', target) {
  const by = from ? ` (${how === 'require' ? 'required' : 'imported'} by ${from})` : '';
  const to = target && target !== specifier ? ` (${target})` : '';
  const err = new Error(`${how} of ${JSON.stringify(specifier)}${to} refused${by}: a Peek worker may not load network or process modules; ` + 'use fetch, allowed by capabilities.network.domains');
  err.code = 'ERR_PEEK_IMPORT_REFUSED';
  return err;
}

module.exports = { REFUSED, isRefused, refusal };
