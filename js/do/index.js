'use strict';
// durable-workers/do: Durable Object classes written for Cloudflare, run by
// this engine in a Node process. `serve` runs a Wrangler project over HTTP
// (what `npx durable-workers serve` does); `openObjects` binds classes in
// process, for tests and embedding.

const { serve } = require('./serve');
const { openObjects } = require('./host');
const { registerCloudflareModules } = require('./register');

module.exports = { serve, openObjects, registerCloudflareModules };
