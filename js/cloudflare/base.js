'use strict';
// What `require('durable-workers')` is inside a bundle for workerd: the base
// class and the error, nothing that needs the native addon.
const { DurableWorker } = require('../api/worker');
const { DurableError, codes } = require('../api/errors');

function open() {
  throw new DurableError(codes.METHOD, 'open() is the Node host; inside workerd, workers are Durable Objects (use hostOf(env) from durable-workers/cloudflare)');
}

module.exports = { DurableWorker, DurableError, codes, open };
