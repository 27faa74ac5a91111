'use strict';
// Lets `import … from 'cloudflare:workers'` load in this process (./hooks.mjs).
// Idempotent; call before importing an app's modules.

const { register } = require('node:module');
const { pathToFileURL } = require('node:url');

let registered = false;

/** Registers the resolve hook once per process. */
function registerCloudflareModules() {
  if (registered) return;
  register('./hooks.mjs', pathToFileURL(__filename));
  registered = true;
}

module.exports = { registerCloudflareModules };
