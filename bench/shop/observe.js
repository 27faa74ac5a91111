'use strict';
// Observers for the shop's server in the bench (DW_SHOP_OBSERVE): what
// subscribing to the diagnostics channels costs, with a subscriber that does
// nothing, and with OpenTelemetry spans made and exported to nowhere.
const dc = require('node:diagnostics_channel');

const TRACING = ['call', 'commit', 'alarm', 'socket'];
const PLAIN = ['evict', 'shard'];

/** Subscribes `kind` ('channels' | 'otel'); nothing for undefined. */
function observe(kind) {
  if (kind === undefined || kind === '') return;
  if (kind === 'channels') {
    const nothing = () => {};
    const handlers = { start: nothing, end: nothing, asyncStart: nothing, asyncEnd: nothing, error: nothing };
    for (const name of TRACING) dc.tracingChannel(`durable-workers:${name}`).subscribe(handlers);
    for (const name of PLAIN) dc.subscribe(`durable-workers:${name}`, nothing);
    return;
  }
  if (kind === 'otel') {
    const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
    const api = require('@opentelemetry/api');
    const nowhere = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} };
    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(nowhere)] });
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.trace.setGlobalTracerProvider(provider);
    require('../../js/observe/otel').instrument({ tracerProvider: provider });
    return;
  }
  throw new Error(`DW_SHOP_OBSERVE: channels or otel, not ${JSON.stringify(kind)}`);
}

module.exports = { observe };
