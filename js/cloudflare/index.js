'use strict';
// durable-workers/cloudflare, as Node loads it. Inside a bundle for workerd
// the package resolves to ./workerd.mjs instead (the `durable-workers
// workerd` command does this; see docs/cloudflare.md for wrangler). Here,
// toDurableObject only explains itself; the Node-side tools are real:
// buildWorkerd / startWorkerd (a local workerd), and cloudflareAdapter, the
// Peek PlatformAdapter on workerd (./peek/adapter.js, docs/cloudflare.md).
const { DurableError, codes } = require('../api/errors');
const { hostOf, handleCall, isWorkerClass } = require('./calls');
const { buildWorkerd, workerdBinary, WORKERD_VERSION, COMPATIBILITY_DATE } = require('./build');
const { startWorkerd, freePort } = require('./process');
const wire = require('./wire');
const { cloudflareAdapter } = require('./peek/adapter');

/** Inside workerd this makes a Durable Object class; in Node it can only say so. */
function toDurableObject(Class) {
  throw new DurableError(
    codes.METHOD,
    `toDurableObject(${Class?.name ?? ''}) makes a Durable Object class and runs inside workerd or on Cloudflare; bundle the module with \`npx durable-workers workerd <module>\` (or alias durable-workers/cloudflare to durable-workers/js/cloudflare/workerd.mjs in wrangler)`,
  );
}

module.exports = {
  toDurableObject,
  cloudflareAdapter,
  hostOf,
  handleCall,
  isWorkerClass,
  wire,
  buildWorkerd,
  startWorkerd,
  freePort,
  workerdBinary,
  WORKERD_VERSION,
  COMPATIBILITY_DATE,
};
